"""csle's intrusion-response CMDP at s_max = 40, rebuilt here from its published transition formula.

The formula (csle's ``IntrusionResponseCmdpUtil``, as published): from state s under action a ∈ {0, 1}, the next state
is s' = s + a + δ with weight Σ over failures F, recoveries R in 0..s_max with R − F = δ of
``p_u^R (1 − p_u)^(s − R) (p_a + p_c)^F (1 − p_a − p_c)^(s − F)`` (s + δ kept in 0..s_max), each row normalised.
Reward −s, constraint cost −1{s ≥ f + 1} with bound −ε_A, uniform initial law.

At s_max = 20 with p_a = 0.4, p_c = 0.01, p_u = 0.4 it reproduces tests/data/peer/csle_ir_s20.json. The s_max = 40
model behind the reported exact optimum 39.4692240216 (as a cost; an exact rational LP outside curlopt) and its 1,280
kernel entries ≤ 1e-9 is p_a = 0.1, p_c = 0.01, p_u = 0.3 (the constraint does not bind there: f = 3, ε_A = 0.2).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from curlopt import CMDP, Linear, LinearBound, Status
from curlopt.optimum import solve_optimum

PEER = Path(__file__).parent / "data" / "peer"
#: the exact optimum (rational LP, 13 digits) of the s_max = 40 model, as a reward
EXACT_S40 = -39.4692240216


def csle_kernel(s_max: int, p_a: float, p_c: float, p_u: float) -> np.ndarray:
    S = s_max + 1
    kernel = np.zeros((S, 2, S))
    counts = np.arange(S, dtype=float)
    fail = p_a + p_c
    for a in (0, 1):
        for s in range(S):
            for target in range(S):
                delta = target - a - s
                if not 0 <= s + delta <= s_max:
                    continue
                recoveries = counts + delta
                ok = (recoveries >= 0) & (recoveries <= s_max)
                f, r = counts[ok], recoveries[ok]
                kernel[s, a, target] = np.sum(p_u ** r * (1 - p_u) ** (s - r) * fail ** f * (1 - fail) ** (s - f))
            kernel[s, a] /= kernel[s, a].sum()
    return kernel


def csle_model(s_max: int, p_a: float, p_c: float, p_u: float, f: int = 3, epsilon_a: float = 0.2) -> CMDP:
    states = np.arange(s_max + 1, dtype=float)
    rewards = np.repeat(-states[:, None], 2, axis=1)[None]
    costs = np.repeat(-(states >= f + 1).astype(float)[:, None], 2, axis=1)[None]
    return CMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], -epsilon_a)],
                csle_kernel(s_max, p_a, p_c, p_u), initial=np.full(s_max + 1, 1.0 / (s_max + 1)))


def test_the_builder_reproduces_the_s20_peer_file():
    stored = np.array(json.loads((PEER / "csle_ir_s20.json").read_text())["kernel"])
    np.testing.assert_allclose(csle_kernel(20, 0.4, 0.01, 0.4), stored, rtol=0, atol=1e-15)


def test_the_s40_model_has_the_reported_tiny_entries():
    kernel = csle_kernel(40, 0.1, 0.01, 0.3)
    assert int(((kernel > 0) & (kernel <= 1e-9)).sum()) == 1280


@pytest.mark.parametrize("backend", ["highs", "scipy", "highs-columns", "mdp-columns"])
def test_s40_optimum_on_the_exact_backends(backend):
    result = solve_optimum(csle_model(40, 0.1, 0.01, 0.3), backend)
    assert result.status is Status.OPTIMAL, result.message
    assert abs(result.objective - EXACT_S40) / abs(EXACT_S40) <= 1e-9, result.objective
