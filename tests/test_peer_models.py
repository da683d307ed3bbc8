"""Models from public CMDP codebases (danilprov/cmdp, csle) against their exact optima.

The files under tests/data/peer/ hold each peer's own kernel, signals and bounds as curlopt model files; the optima
below were computed outside curlopt by an exact rational-arithmetic LP over occupancy measures (fractions; the value is
the exact rational rounded to 13 digits). Every simplex-based backend must land within 1e-9 relative of it; the
interior-point backends (cvxpy's conic solvers, Ipopt) within 1e-8, the accuracy their settings promise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from curlopt.backends import installed_backends
from curlopt.backends.results import Status
from curlopt.models.files import load_model
from curlopt.optimum import solve_optimum

PEER = Path(__file__).parent / "data" / "peer"

#: exact optima (rational LP, rounded to 13 digits) of the peer models
EXACT = {
    "gridworld_4x4": -0.775,
    "marsrover_8x8": -0.9380952381,
    "toy": 0.5275,
    "server_queue_L1": -44.5954545455,
    "server_queue_L5": -5.5637430406,
    "csle_ir_s20": -8.7711720049,
    "csle_ir_s20_eps09": -10.1923164473,
}

#: backends that solve the LP by a simplex method (or columns priced exactly): vertex answers
EXACT_BACKENDS = ("highs", "scipy", "highs-columns", "highs-box-columns", "mdp-columns")
#: the rounding of the reference (13 significant digits) is below 1e-12 relative; an exact backend must be within
EXACT_TOLERANCE = 1e-9
INTERIOR_TOLERANCE = 1e-8


def test_every_peer_file_has_a_reference() -> None:
    assert sorted(p.stem for p in PEER.glob("*.json")) == sorted(EXACT)


@pytest.mark.parametrize("backend", installed_backends())
@pytest.mark.parametrize("name", sorted(EXACT))
def test_peer_model_optimum(name: str, backend: str) -> None:
    model = load_model(PEER / f"{name}.json")
    result = solve_optimum(model, backend=backend)
    assert result.status is Status.OPTIMAL, result.message
    tolerance = EXACT_TOLERANCE if backend in EXACT_BACKENDS else INTERIOR_TOLERANCE
    relative = abs(result.objective - EXACT[name]) / abs(EXACT[name])
    assert relative <= tolerance, f"{backend} on {name}: {result.objective!r} vs {EXACT[name]!r} ({relative:.2e})"
    # the point behind the value keeps every constraint of the model (to the solvers' feasibility tolerance)
    assert np.all(result.constraint_values <= 1e-7)
