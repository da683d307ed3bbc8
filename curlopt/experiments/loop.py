"""The learning loop: run an agent on an environment for T steps and record a trace.

Randomness: the run's seed is split (``numpy.random.SeedSequence(seed).spawn(3)``)
into the environment's seed, the action stream and the agent's own stream. Each
step consumes one action uniform (``a = first index with cumulative π(·|s) > u``)
and one environment uniform (the environment's contract, see
:class:`curlopt.envs.TabularCMDPEnv`).

Two stepping paths give the identical trajectory for the same seed:

``generic``
    any Gymnasium environment with Discrete spaces: ``env.step`` per step;
``fast``
    an environment with a known kernel (``env.unwrapped.cumulative_kernel``):
    within an epoch the policy is fixed, so a tight loop over pre-drawn uniforms
    and cumulative tables runs until the trigger fires, drawing the environment's
    uniforms from its own generator in the same order ``env.step`` would.

Statistics (running averages at checkpoints, per-epoch counts) are computed the
same way on both paths, from the visited (s, a) pairs and the model's signal
tables, so traces are bit-identical across paths.
"""

from __future__ import annotations

import math
import time as clock
import warnings
from bisect import bisect_right
from typing import Any

import numpy as np

from .. import __version__
from ..agents.base import Agent
from ..errors import CurloptError
from ..model import CMDP, stationary_occupancy
from .streams import UniformStream
from .trace import EpochRecord, Trace

__all__ = ["run", "checkpoint_times"]

#: uniforms drawn at once by the fast path (at most), and in an epoch's first block
BLOCK = 8192
FIRST_BLOCK = 256
#: the largest horizon T a run accepts (10^12 steps: about 10 days at 10^6 steps per second); larger values
#: would overflow the 64-bit checkpoint times and counters long before a run could finish
MAX_STEPS = 10 ** 12
#: the most checkpoints a run records (the count is also capped at T: there is at most one per step)
MAX_CHECKPOINTS = 1_000_000


def checkpoint_times(steps: int, count: int = 100) -> np.ndarray:
    """About ``count`` log-spaced times in [1, steps], always including ``steps`` (``count`` is capped at ``steps``)."""
    count = max(2, min(int(count), int(steps)))
    times = np.unique(np.round(np.geomspace(1, steps, count)).astype(np.int64))
    return np.union1d(times, [steps])


def _validate(steps: Any, seed: Any, checkpoints: Any = 100) -> tuple[int, int, int]:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise CurloptError(f"steps must be an integer >= 1, got {steps!r}.")
    if steps > MAX_STEPS:
        raise CurloptError(f"steps must be at most {MAX_STEPS:.0e} (10^12), got {steps}.")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise CurloptError(f"seed must be an integer >= 0, got {seed!r}.")
    if isinstance(checkpoints, bool) or not isinstance(checkpoints, (int, np.integer)) or checkpoints < 2:
        raise CurloptError(f"checkpoints must be an integer >= 2, got {checkpoints!r}.")
    if checkpoints > MAX_CHECKPOINTS:
        raise CurloptError(f"checkpoints must be at most {MAX_CHECKPOINTS:,}, got {checkpoints:,}.")
    return int(steps), int(seed), int(checkpoints)


def _cumulative_rows(table: np.ndarray) -> list[list[float]]:
    """Cumulative sums along the last axis as lists, with the last entry lifted to 2.0.

    ``bisect_right(row, u)`` for ``u`` in [0, 1) then never passes the last index,
    which reproduces ``min(searchsorted(cumsum, u, 'right'), n - 1)`` exactly.
    """
    cum = np.cumsum(table, axis=-1)
    cum[..., -1] = 2.0
    return cum.reshape(-1, table.shape[-1]).tolist()


class _Recorder:
    """Running statistics from the visited pairs; the same arithmetic on both paths."""

    def __init__(self, model: CMDP, steps: int, checkpoints: int, optimum_value: float | None):
        self.model = model
        S, A = model.n_states, model.n_actions
        self.rewards = model.rewards.reshape(model.n_rewards, S * A)
        self.costs = model.costs.reshape(model.n_costs, S * A)
        self.totals = np.zeros(S * A, dtype=np.int64)
        self.times = checkpoint_times(steps, checkpoints)
        self.next_checkpoint = 0
        self.optimum_value = optimum_value
        self.rows: dict[str, list] = {k: [] for k in ("t", "rewards", "costs", "objective", "constraints", "regret", "violation")}

    def epoch(self, start: int, pairs: np.ndarray) -> None:
        """Record the checkpoints inside the epoch ``[start, start + len(pairs))`` and add its visits."""
        end = start + pairs.size
        n_pairs = self.totals.size
        while self.next_checkpoint < self.times.size and self.times[self.next_checkpoint] < end:
            t = int(self.times[self.next_checkpoint])
            counts = self.totals + np.bincount(pairs[: t - start + 1], minlength=n_pairs)
            self._checkpoint(t, counts)
            self.next_checkpoint += 1
        self.totals += np.bincount(pairs, minlength=n_pairs)

    def _checkpoint(self, t: int, counts: np.ndarray) -> None:
        model = self.model
        lam = self.rewards @ counts / t
        zeta = self.costs @ counts / t
        f = float(model.objective.value(lam))
        g = model.constraint_values(zeta)
        rows = self.rows
        rows["t"].append(t)
        rows["rewards"].append(lam)
        rows["costs"].append(zeta)
        rows["objective"].append(f)
        rows["constraints"].append(g)
        rows["regret"].append(math.nan if self.optimum_value is None else self.optimum_value - f)
        rows["violation"].append(float(max(0.0, g.max())) if g.size else 0.0)

    def columns(self) -> dict[str, np.ndarray]:
        model, n = self.model, len(self.rows["t"])
        out = {k: np.asarray(v, dtype=float) for k, v in self.rows.items()}
        out["t"] = np.asarray(self.rows["t"], dtype=np.int64)
        out["constraints"] = out["constraints"].reshape(n, model.n_constraints)
        out["rewards"] = out["rewards"].reshape(n, model.n_rewards)
        out["costs"] = out["costs"].reshape(n, model.n_costs)
        return out


def _fast_epoch(state, policy_rows, kernel_rows, thresholds, cap, actions: UniformStream, transitions: UniformStream,
                n_actions):
    """Step the chain until a pair reaches its threshold or ``cap`` steps; return (pairs, next states, state).

    The hot loop of the toolkit: locals only, a list for the visit counts, and two
    ``bisect`` calls per step.
    """
    pairs: list[int] = []
    nexts: list[int] = []
    add_pair, add_next = pairs.append, nexts.append
    visits = [0] * len(thresholds)
    done = 0
    ended = False
    s = state
    # Epochs are often far shorter than BLOCK (thousands of ~100-step epochs per run): converting a whole block
    # to lists every epoch cost more than the stepping. Start small — an epoch lasts at least its smallest
    # threshold — and grow. The streams hand out the same numbers however they are read.
    size = int(min(BLOCK, max(FIRST_BLOCK, min(thresholds, default=1))))
    while done < cap and not ended:
        block = min(cap - done, size)
        size = min(BLOCK, 4 * size)
        ua = actions.peek(block).tolist()
        us = transitions.peek(block).tolist()
        used = block
        for i in range(block):
            sa = s * n_actions + bisect_right(policy_rows[s], ua[i])
            s = bisect_right(kernel_rows[sa], us[i])
            add_pair(sa)
            add_next(s)
            v = visits[sa] + 1
            visits[sa] = v
            if v >= thresholds[sa]:
                used = i + 1
                ended = True
                break
        actions.advance(used)
        transitions.advance(used)
        done += used
    return np.asarray(pairs, dtype=np.int64), np.asarray(nexts, dtype=np.int64), s


def _generic_epoch(env, state, policy_rows, thresholds, cap, actions: UniformStream, n_actions, model: CMDP):
    """Step ``env`` one action at a time; same trigger arithmetic as the fast path."""
    pairs: list[int] = []
    nexts: list[int] = []
    visits: dict[int, int] = {}
    s = state
    for _ in range(int(cap)):
        a = bisect_right(policy_rows[s], actions.take())
        obs, _reward, terminated, truncated, info = env.step(a)
        if terminated or truncated:
            raise CurloptError("the environment ended an episode; the learning loop needs an infinite-horizon (never-ending) environment.")
        sa = s * n_actions + a
        # Signals are functions of (s, a): checking each pair's first visit in an epoch is enough.
        if sa not in visits and "rewards" in info \
                and not np.array_equal(np.asarray(info["rewards"], dtype=float), model.rewards[:, s, a]):
            raise CurloptError(
                f"the environment's reward signals at (s={s}, a={a}) differ from the agent's model; give the agent the"
                " model that describes this environment."
            )
        s = int(obs)
        pairs.append(sa)
        nexts.append(s)
        v = visits.get(sa, 0) + 1
        visits[sa] = v
        if v >= thresholds[sa]:
            break
    return np.asarray(pairs, dtype=np.int64), np.asarray(nexts, dtype=np.int64), s


def _optimum_backend(model: CMDP, agent: Agent) -> str:
    """The agent's backend by registry name, else the ``auto`` choice for the model."""
    from ..backends.registry import backend_names, choose_backend

    name = getattr(getattr(agent, "backend", None), "name", None)
    return name if name in backend_names() else choose_backend((model.objective, *model.constraints))


def _optimum(model: CMDP, agent: Agent) -> dict[str, Any] | None:
    if model.kernel is None:
        return None
    from ..optimum import solve_optimum

    result = solve_optimum(model, _optimum_backend(model, agent))
    return {
        "objective": float(result.objective) if result.ok else None,
        "rewards": None if result.rewards is None else result.rewards.tolist(),
        "costs": None if result.costs is None else result.costs.tolist(),
        "constraint_values": None if result.constraint_values is None else result.constraint_values.tolist(),
        "status": result.status.value,
        "program": result.program.value,
        "backend": result.backend,
        "message": result.message,
    }


def run(
    agent: Agent,
    env: Any,
    steps: int,
    seed: int = 0,
    path: str = "auto",
    checkpoints: int = 100,
    progress: bool | None = None,
    model: CMDP | None = None,
    env_name: str | None = None,
) -> Trace:
    """Run ``agent`` on ``env`` for ``steps`` steps and return its :class:`Trace`.

    Parameters
    ----------
    agent : Agent
        Built for the environment's model (e.g. with :func:`curlopt.agents.make_agent`).
    env : gymnasium.Env or str
        An environment, or a built-in name for :func:`curlopt.envs.make`.
    steps : int
        The horizon 1 <= T <= :data:`MAX_STEPS` (10^12; the agents never see it).
    seed : int, default 0
        The run's seed (environment, actions and the agent's own draws).
    path : {"auto", "fast", "generic"}, default "auto"
        Stepping path; ``auto`` takes ``fast`` when the environment has a kernel.
    checkpoints : int, default 100
        About this many log-spaced checkpoints (the last step always included), 2 to
        :data:`MAX_CHECKPOINTS`; more than ``steps`` gives one per step.
    progress : bool, optional
        Show a progress bar on stderr; default: for runs of 50,000 steps or more.
    model : CMDP, optional
        The true model, for the optimum and the exact per-epoch performance;
        default ``env.unwrapped.model`` when present.
    env_name : str, optional
        A label for the trace.

    Returns
    -------
    Trace
    """
    steps, seed, checkpoints = _validate(steps, seed, checkpoints)
    if env is None or isinstance(env, (bytes, int, float)):
        raise CurloptError(f"env must be a Gymnasium environment or a built-in model name, got {env!r}.")
    if model is not None and not isinstance(model, CMDP):
        raise CurloptError(f"model must be a curlopt CMDP or None, got {type(model).__name__}.")
    if env_name is not None and not isinstance(env_name, str):
        raise CurloptError(f"env_name must be a string or None, got {type(env_name).__name__}.")
    if isinstance(env, str):
        from ..envs import make

        env_name = env_name or env
        env = make(env)
    if path not in ("auto", "fast", "generic"):
        raise CurloptError(f"path must be 'auto', 'fast' or 'generic', got {path!r}.")
    if not isinstance(agent, Agent):
        raise CurloptError(f"agent must be a curlopt Agent, got {type(agent).__name__}.")
    unwrapped = getattr(env, "unwrapped", None)
    if unwrapped is None or not hasattr(env, "observation_space") or not hasattr(env, "action_space"):
        raise CurloptError(f"env must be a Gymnasium environment (with observation and action spaces), got"
                           f" {type(env).__name__}.")
    model = model if model is not None else getattr(unwrapped, "model", None)
    has_kernel = model is not None and model.kernel is not None and hasattr(unwrapped, "cumulative_kernel")
    if path == "auto":
        path = "fast" if has_kernel else "generic"
    if path == "fast" and not has_kernel:
        raise CurloptError("the fast path needs a tabular environment with a known kernel; use path='generic'.")
    known = agent.model
    S, A = known.n_states, known.n_actions
    if getattr(env.observation_space, "n", None) != S or getattr(env.action_space, "n", None) != A:
        raise CurloptError(
            f"the agent's model has S={S}, A={A} but the environment's spaces are {env.observation_space} and {env.action_space}."
        )
    if model is not None and model.kernel is not None:
        from ..diagnostics import ergodicity_warning

        message = ergodicity_warning(model)
        if message:
            warnings.warn(message, RuntimeWarning, stacklevel=2)

    started = clock.perf_counter()
    env_seq, action_seq, agent_seq = np.random.SeedSequence(seed).spawn(3)
    state, _ = env.reset(seed=int(env_seq.generate_state(1)[0]))
    state = int(state)
    actions = UniformStream(np.random.default_rng(action_seq))
    transitions = UniformStream(unwrapped.np_random) if path == "fast" else None
    kernel_rows = _cumulative_rows(model.kernel) if path == "fast" else None
    agent.reset(agent_seq)
    optimum = _optimum(model, agent) if model is not None else None
    recorder = _Recorder(known, steps, checkpoints, None if optimum is None else optimum["objective"])

    show = progress if progress is not None else steps >= 50_000
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc=f"{agent.name} ({agent.trigger_name})", unit="step", unit_scale=True,
                   leave=False, mininterval=0.5)
    epochs: list[EpochRecord] = []
    t = 1
    try:
        while t <= steps:
            plan = agent.begin_epoch(t)
            thresholds, max_length = agent.limits(t)
            cap = int(min(max_length, steps - t + 1))
            policy_rows = _cumulative_rows(plan.policy)
            limit = np.asarray(thresholds, dtype=float).reshape(-1).tolist()
            if path == "fast":
                pairs, nexts, state = _fast_epoch(state, policy_rows, kernel_rows, limit, cap, actions, transitions, A)
            else:
                pairs, nexts, state = _generic_epoch(env, state, policy_rows, limit, cap, actions, A, known)
            recorder.epoch(t, pairs)
            counts = np.bincount(pairs * S + nexts, minlength=S * A * S).reshape(S, A, S).astype(float)
            visits = counts.sum(axis=2).reshape(-1)
            epochs.append(_epoch_record(len(epochs), t, pairs.size, plan, model))
            agent.end_epoch(counts, recorder.rewards @ visits, recorder.costs @ visits, int(pairs.size))
            t += pairs.size
            if bar is not None:
                bar.update(pairs.size)
    finally:
        if bar is not None:
            bar.close()
    meta = {
        "env": env_name or getattr(model, "name", type(unwrapped).__name__),
        **agent.describe(),
        "seed": seed,
        "steps": steps,
        "path": path,
        "curlopt_version": __version__,
    }
    return Trace(meta, optimum, recorder.columns(), epochs, clock.perf_counter() - started)


def _epoch_record(index: int, start: int, length: int, plan, model: CMDP | None) -> EpochRecord:
    record = EpochRecord(
        index=index, start=start, length=length, epsilon=plan.epsilon, source=plan.source, status=plan.status,
        solve_time=plan.solve_time, iterations=plan.iterations, message=plan.message,
        unreached=getattr(plan, "unreached", None),
    )
    if model is not None and model.kernel is not None:
        rho = stationary_occupancy(model.kernel, plan.policy)
        lam, zeta = model.average_rewards(rho), model.average_costs(rho)
        record.exact_rewards = lam.tolist()
        record.exact_costs = zeta.tolist()
        record.exact_objective = float(model.objective.value(lam))
        record.exact_constraints = model.constraint_values(zeta).tolist()
    return record
