"""The program instances compared: one simulated run on the model's true kernel, its counts taken at log-spaced
times (the optimistic program on each, or one posterior sample per snapshot), or the true kernel itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...errors import CurloptError
from ...models.cmdp import CMDP
from ...programs.occupancy import OccupancyProgram
from ...programs.optimistic import OptimisticProgram
from ...programs.support import Support
from ...programs.tightness import tightness
from ..simulation.loop import ChainSimulator

__all__ = ["PROGRAMS", "MAX_INSTANCES", "instance_count", "program_instances"]

PROGRAMS = ("optimum", "optimistic", "sampled")
#: the most instances a comparison takes (each one is 2,000 more simulated steps and a solve per solver)
MAX_INSTANCES = 1_000
#: simulated steps per instance asked
_STEPS_PER_INSTANCE = 2_000


def _snapshot_times(model: CMDP, steps: int, snapshots: int) -> np.ndarray:
    """The distinct log-spaced times at which the simulated run's counts are taken."""
    start = max(10, model.n_states * model.n_actions)  # about one visit per pair
    return np.unique(np.geomspace(start, max(steps, 10 * start), snapshots).astype(int))


def _simulate_counts(model: CMDP, steps: int, snapshots: int, rng: np.random.Generator) -> list[tuple[int, Any]]:
    """Counts of a fixed random policy's run, taken at ``snapshots`` log-spaced times.

    The run is the learning loop's own simulator (:class:`~curlopt.experiments.simulation.loop.ChainSimulator`),
    with action and transition streams spawned from ``rng``. The counts are an (S, A, S) array, or for a model
    stored sparse a CSR (S·A, S) matrix (a dense array would hold S²·A entries).
    """
    S, A = model.n_states, model.n_actions
    policy = rng.dirichlet(np.ones(A), size=S)
    actions, transitions = rng.spawn(2)
    simulator = ChainSimulator(model.transitions if model.sparse else model.kernel, actions, transitions)
    times = _snapshot_times(model, steps, snapshots)
    counts: Any = sp.csr_array((S * A, S)) if model.sparse else np.zeros(S * A * S)
    out = []
    done = 0
    for t in times:
        pairs, nexts = simulator.play(policy, int(t) - done)
        if model.sparse:
            counts = sp.csr_array(counts + sp.csr_array((np.ones(pairs.size), (pairs, nexts)), shape=(S * A, S)))
            counts.sum_duplicates()
            out.append((int(t) + 1, counts.copy()))
        else:
            counts += np.bincount(pairs * S + nexts, minlength=S * A * S)
            out.append((int(t) + 1, counts.reshape(S, A, S).copy()))
        done = int(t)
    return out


def _criterion(model: CMDP) -> str:
    """The model's criterion: ``average``, or ``episodic``/``discounted`` for a model played under one."""
    return str(getattr(model, "criterion", "average"))


def _check_instance_arguments(model: CMDP, program: str, epochs: Any) -> None:
    if program not in PROGRAMS:
        raise CurloptError(f"program must be one of {', '.join(PROGRAMS)}, got {program!r}.")
    if not model.has_kernel:
        raise CurloptError(f"model {model.name!r} has no kernel to simulate from.")
    criterion = _criterion(model)
    if criterion != "average" and program != "optimum":
        raise CurloptError(f"model {model.name!r} is under the {criterion} criterion: compare-solvers takes its"
                           f" known-model program (program 'optimum'), not the {program!r} one of the long-run"
                           " average's learning agents.")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or not 1 <= epochs <= MAX_INSTANCES:
        raise CurloptError(f"the number of instances must be an integer between 1 and {MAX_INSTANCES:,}, got"
                           f" {epochs!r}.")


def instance_count(model: CMDP, program: str, epochs: int) -> int:
    """How many instances :func:`program_instances` gives, without simulating (same checks, same errors)."""
    _check_instance_arguments(model, program, epochs)
    if program == "optimum":
        return 1
    return len(_snapshot_times(model, _STEPS_PER_INSTANCE * epochs, epochs))


def program_instances(model: CMDP, program: str, epochs: int, seed: int = 0) -> tuple[type, list[dict[str, Any]]]:
    """The program class and the list of ``update`` keyword sets defining each instance.

    ``optimum`` on an episodic or discounted model (its ``criterion``) is the known-model program of that criterion
    (:func:`curlopt.optimum.known_model_program`) on the model's own kernel; the other programs are the long-run
    average's and refuse such a model.

    For a model stored sparse the kernel is its CSR :attr:`~curlopt.models.cmdp.CMDP.transitions`, the counts
    CSR matrices, and the posterior samples CSR matrices on the model's pattern.
    """
    _check_instance_arguments(model, program, epochs)
    if program == "optimum" and _criterion(model) != "average":
        # the known-model program of the model's criterion (episodic or discounted), on the model's own kernel
        from ...optimum import known_model_program

        return type(known_model_program(model)), [{"epsilon": 0.0}]
    if program == "optimum":
        return OccupancyProgram, [{"kernel": model.transitions if model.sparse else model.kernel, "epsilon": 0.0}]
    rng = np.random.default_rng(seed)
    snapshots = _simulate_counts(model, steps=_STEPS_PER_INSTANCE * epochs, snapshots=epochs, rng=rng)
    if program == "optimistic":
        return OptimisticProgram, [{"counts": n, "time": t, "epsilon": tightness(t)} for t, n in snapshots]
    support = Support.of_model(model) if model.sparse else None
    return OccupancyProgram, [{"kernel": _dirichlet(rng, n, support), "epsilon": tightness(t)} for t, n in snapshots]


def _dirichlet(rng: np.random.Generator, counts: Any, support: Support | None) -> Any:
    # the agents' own samplers, so the instances are PS-CURL's (over the allowed successors on a sparse support)
    from ...agents.estimates import posterior_kernel, sample_posterior_kernel

    if support is None:
        return sample_posterior_kernel(rng, 1.0 + counts)
    return posterior_kernel(rng, support, support.gather(counts, "counts"), 1.0)
