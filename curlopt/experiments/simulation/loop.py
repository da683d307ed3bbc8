"""The learning loop: run an agent on an environment for T steps and record a trace.

Randomness: the run's seed is split (``numpy.random.SeedSequence(seed).spawn(4)``)
into the environment's seed, the action stream, the agent's own stream and the noisy signals' stream
(:mod:`.observed`; the first three children are those of ``spawn(3)``, so every trajectory is as it was). Each
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
    uniforms from its own generator in the same order ``env.step`` would. A model
    stored sparse is stepped from its CSR rows (cumulative sums over each row's
    stored successors), as its environment steps it.

Statistics (running averages at checkpoints, per-epoch counts) are computed the
same way on both paths, from the visited (s, a) pairs and the model's signal
tables, so traces are bit-identical across paths.
"""

from __future__ import annotations

import math
import time as clock
import warnings
from bisect import bisect_right
from typing import Any, cast

import numpy as np
import scipy.sparse as sp

from ... import __version__
from ...agents.base import Agent, StepLearner
from ...errors import CurloptError
from ...models.cmdp import CMDP, stationary_occupancy
from ...models.sampling import cumulative_transitions
from ...models.signals import check_noise
from .observed import ObservedSignals
from .streams import UniformStream
from .trace import EpochRecord, Trace

__all__ = ["run", "checkpoint_times", "ChainSimulator"]

#: uniforms drawn at once by the fast path (at most), and in an epoch's first block (at least)
BLOCK = 8192
FIRST_BLOCK = 64
#: the largest horizon T a run accepts (10^12 steps: about 10 days at 10^6 steps per second); larger values
#: would overflow the 64-bit checkpoint times and counters long before a run could finish
MAX_STEPS = 10 ** 12
#: the most checkpoints a run records (the count is also capped at T: there is at most one per step)
MAX_CHECKPOINTS = 1_000_000


def checkpoint_times(steps: int, count: int = 100) -> np.ndarray:
    """About ``count`` log-spaced times in [1, steps], always including ``steps``; every step when ``count >= steps``.

    Rounded log-spaced times collide near 1 and skip integers near ``steps``, so ``steps`` of them would not be one
    per step (T = 11,000 gave 3,819): a count that reaches the horizon takes every step instead.
    """
    if int(count) >= int(steps):
        return np.arange(1, int(steps) + 1, dtype=np.int64)
    count = max(2, int(count))
    times = np.unique(np.round(np.geomspace(1, steps, count)).astype(np.int64))
    return np.union1d(times, [steps])


def _validate(steps: Any, seed: Any, checkpoints: Any = 100, signals: Any = "mean") -> tuple[int, int, int]:
    check_noise(signals)
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
    cum = np.add.accumulate(table, axis=-1)  # what np.cumsum calls
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

    def epoch(self, start: int, pairs: np.ndarray, visits: np.ndarray | None = None) -> None:
        """Record the checkpoints inside the epoch ``[start, start + len(pairs))`` and add its visits.

        ``visits``, the epoch's visits per pair (``bincount(pairs)``), when the caller has it already.
        """
        end = start + pairs.size
        n_pairs = self.totals.size
        while self.next_checkpoint < self.times.size and self.times[self.next_checkpoint] < end:
            t = int(self.times[self.next_checkpoint])
            counts = self.totals + np.bincount(pairs[: t - start + 1], minlength=n_pairs)
            self._checkpoint(t, counts)
            self.next_checkpoint += 1
        self.totals += np.bincount(pairs, minlength=n_pairs) if visits is None else visits

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


def _fast_epoch(state: int, policy_rows: list[list[float]], kernel_rows: list[list[float]], thresholds: Any,
                cap: int, actions: UniformStream, transitions: UniformStream, n_actions: int,
                successors: list[list[int]] | None = None, expected: float = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """Step the chain until a pair reaches its threshold or ``cap`` steps; return (pairs, next states, state).

    The hot loop of the toolkit: locals only, one list append and two ``bisect`` calls per
    step. The next states are not stored: step ``i``'s next state is step ``i + 1``'s state,
    ``pairs[i + 1] // n_actions``, and the last one is the returned state. ``successors`` (for a sparse
    kernel) lists each row's stored successors, ``kernel_rows`` then the cumulative sums over them.
    ``expected``, the steps the epoch is expected to last (a hint for the first block's size, e.g. a little more
    than the last epoch's length), changes no step: only how many uniforms are read at once.
    """
    pairs: list[int] = []
    done = 0
    ended = False
    s = state
    # A pair reaches its threshold v >= thresholds[sa] no sooner than its smallest threshold's step, so an epoch
    # whose cap comes first (fixed-length epochs: every threshold infinite) needs no per-step check.
    smallest = min(thresholds, default=math.inf)
    checked = not smallest > cap  # a NaN threshold (never reached) must not switch the check off
    visits = [0] * len(thresholds) if checked else None  # counted only where the thresholds are checked
    # Epochs are often far shorter than BLOCK (thousands of ~100-step epochs per run): converting a whole block
    # to lists every epoch cost more than the stepping. Start at what the epoch is expected to last — at least its
    # smallest threshold, and the caller's hint — and double. The streams hand out the same numbers however they
    # are read. (Measured on the queue's runs: about 1.5 to 1.8 uniforms read per step played, against 2.4 to 2.8
    # with a first block of 256 grown fourfold.)
    size = int(min(BLOCK, max(FIRST_BLOCK, smallest, expected)))
    while done < cap and not ended:
        block = min(cap - done, size)
        size = min(BLOCK, 2 * size)
        before = len(pairs)
        steps = zip(actions.peek(block).tolist(), transitions.peek(block).tolist(), strict=True)
        s, ended = _step_block(steps, s, policy_rows, kernel_rows, successors, n_actions, pairs, visits,
                               thresholds if checked else None)
        used = len(pairs) - before
        actions.advance(used)
        transitions.advance(used)
        done += used
    visited = np.asarray(pairs, dtype=np.int64)
    nexts = np.empty_like(visited)
    if visited.size:
        np.floor_divide(visited[1:], n_actions, out=nexts[:-1])
        nexts[-1] = s
    return visited, nexts, s


def _step_block(steps: Any, s: int, policy_rows: list[list[float]], kernel_rows: list[list[float]],
                successors: list[list[int]] | None, n_actions: int, pairs: list[int], visits: Any,
                thresholds: Any) -> tuple[int, bool]:
    """Play the block's uniform pairs from state ``s``, appending to ``pairs``; return (state, threshold reached).

    Four copies of one loop (dense or sparse kernel rows; with or without the threshold check), so that none
    tests per step what is fixed for the block.
    """
    add_pair = pairs.append
    if successors is None and thresholds is None:
        for ua, us in steps:
            sa = s * n_actions + bisect_right(policy_rows[s], ua)
            s = bisect_right(kernel_rows[sa], us)
            add_pair(sa)
    elif successors is None:
        for ua, us in steps:
            sa = s * n_actions + bisect_right(policy_rows[s], ua)
            s = bisect_right(kernel_rows[sa], us)
            add_pair(sa)
            v = visits[sa] + 1
            visits[sa] = v
            if v >= thresholds[sa]:
                return s, True
    elif thresholds is None:
        for ua, us in steps:
            sa = s * n_actions + bisect_right(policy_rows[s], ua)
            s = successors[sa][bisect_right(kernel_rows[sa], us)]
            add_pair(sa)
    else:
        for ua, us in steps:
            sa = s * n_actions + bisect_right(policy_rows[s], ua)
            s = successors[sa][bisect_right(kernel_rows[sa], us)]
            add_pair(sa)
            v = visits[sa] + 1
            visits[sa] = v
            if v >= thresholds[sa]:
                return s, True
    return s, False


def _sparse_rows(transitions: Any) -> tuple[list[list[float]], list[list[int]]]:
    """A sparse kernel's rows for the fast path: cumulative sums over the stored successors (the last lifted to
    2.0, as in :func:`_cumulative_rows`), and the successors themselves."""
    table = cumulative_transitions(transitions)
    cumulative = table.data.copy()
    cumulative[table.indptr[1:] - 1] = 2.0  # every row has a successor: the kernel's rows sum to 1
    cuts = table.indptr[1:-1]
    return ([row.tolist() for row in np.split(cumulative, cuts)],
            [row.tolist() for row in np.split(np.asarray(table.indices, dtype=np.int64), cuts)])


def _generic_epoch(env: Any, state: int, policy_rows: list[list[float]], thresholds: Any, cap: int,
                   actions: UniformStream, n_actions: int, model: CMDP) -> tuple[np.ndarray, np.ndarray, int]:
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
        # (an environment that draws noisy signals itself is not compared: the loop draws the agent's own)
        if sa not in visits and "rewards" in info and getattr(env.unwrapped, "signals", "mean") == "mean" \
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


def _optimum_backend(model: CMDP, agent: Agent, given: str | None = None) -> str:
    """The backend of the reference optimum: ``given`` (``"auto"``: the registry's rule for the model's occupancy
    program, :func:`curlopt.backends.registry.choose_backend`); by default the agent's backend by registry name,
    except on a large shallow chain (:func:`~curlopt.backends.registry.large_shallow_chain`), where the whole LP can
    take minutes and the rule takes ``mdp-columns``; the rule for an agent without a backend."""
    from ...backends.registry import backend_names, choose_backend, large_shallow_chain
    from ...programs.occupancy import OccupancyProgram

    if given is not None and given != "auto":
        return given
    name = getattr(getattr(agent, "backend", None), "name", None)
    if given is None and name in backend_names() and not large_shallow_chain(model):
        return name
    return choose_backend((model.objective, *model.constraints), model, OccupancyProgram)


def _check_optimum_backend(name: Any) -> None:
    """Refuse an ``optimum_backend`` that is not ``"auto"`` or a registered backend name (before the run starts)."""
    from ...backends.registry import backend_class

    if name is None or name == "auto":
        return
    if not isinstance(name, str):
        raise CurloptError(f"optimum_backend must be a backend name or 'auto', got {type(name).__name__}.")
    backend_class(name)  # raises BackendError (a CurloptError) naming the known backends


def _optimum(model: CMDP, agent: Agent, backend: str | None = None) -> dict[str, Any] | None:
    if not _known(model):
        return None
    from ...optimum import solve_optimum

    result = solve_optimum(model, _optimum_backend(model, agent, backend))
    _say_what_the_regret_is_against(result)
    return {
        "objective": float(result.objective) if result.ok else None,
        "rewards": None if result.rewards is None else result.rewards.tolist(),
        "costs": None if result.costs is None else result.costs.tolist(),
        "constraint_values": None if result.constraint_values is None else result.constraint_values.tolist(),
        "status": result.status.value,
        "program": result.program.value,
        "backend": result.backend,
        "solver_version": result.solver_version,
        "message": result.message,
    }


def _say_what_the_regret_is_against(result: Any) -> None:
    """Warn (``RuntimeWarning``, at :func:`run`'s caller) when the optimum is not the constrained one: the model's
    constraints are infeasible, so the optimum is the fallback's, without them, and so is the regret's reference."""
    from ...backends.results import ProgramVariant
    from .findings import infeasible_optimum_text

    if result.ok and result.program is ProgramVariant.FALLBACK:
        warnings.warn(infeasible_optimum_text(float(result.objective)) + ".", RuntimeWarning, stacklevel=4)


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
    optimum_backend: str | None = None,
    signals: str = "mean",
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
    optimum_backend : str, optional
        The backend (a registry name) of the reference optimum ``f(λ*)``; ``"auto"``: the registry's rule for the
        model's occupancy program (:func:`curlopt.backends.registry.choose_backend`). Default: the agent's backend,
        except on a large shallow chain (that rule's ``mdp-columns``), and that rule for an agent without one.
    signals : {"mean", "bernoulli", "gaussian"}, default "mean"
        What the agent observes: the model's means, or draws around them from the run's own stream (:mod:`.observed`).

    Returns
    -------
    Trace
    """
    steps, seed, checkpoints = _validate(steps, seed, checkpoints, signals)
    _check_optimum_backend(optimum_backend)
    env, unwrapped, model, env_name, path = _resolve_inputs(agent, env, model, env_name, path)
    started = clock.perf_counter()
    env_seq, action_seq, agent_seq, signal_seq = np.random.SeedSequence(seed).spawn(4)
    state, _ = env.reset(seed=int(env_seq.generate_state(1)[0]))
    actions = UniformStream(np.random.default_rng(action_seq))
    agent.reset(agent_seq)
    optimum = _optimum(model, agent, optimum_backend) if model is not None else None
    recorder = _Recorder(agent.model, steps, checkpoints, None if optimum is None else optimum["objective"])
    observed = ObservedSignals(recorder.rewards, recorder.costs, signals, signal_seq)
    evaluator = _ExactEvaluator(model) if model is not None and _known(model) else None
    step: ChainSimulator | _GenericStepper
    if path == "fast" and model is not None:  # _resolve_inputs refuses the fast path without a known model
        # Transitions come from the environment's own generator, in the order env.step would draw them.
        step = ChainSimulator(model.transitions if model.sparse else model.kernel, actions, unwrapped.np_random)
    else:
        step = _GenericStepper(env, agent.model, actions)
    bar = _progress_bar(agent, steps, progress)
    try:
        epochs = _play(agent, steps, int(state), step, recorder, evaluator, bar, observed)
    finally:
        if bar is not None:
            bar.close()
    meta = {
        "env": env_name or getattr(model, "name", type(unwrapped).__name__),
        **_with_backend_version(agent.describe(), agent),
        "seed": seed, "steps": steps, "path": path,
        **({"signals": signals} if signals != "mean" else {}),  # only when drawn: mean-signal traces unchanged
        "curlopt_version": __version__,
    }
    return Trace(meta, optimum, recorder.columns(), epochs, clock.perf_counter() - started)


def _with_backend_version(described: dict[str, Any], agent: Agent) -> dict[str, Any]:
    """``described`` with ``backend_version`` (the packages behind the agent's backend) after ``backend``."""
    from ...backends.base import Backend

    backend = getattr(agent, "backend", None)
    if "backend" not in described or not isinstance(backend, Backend):
        return described
    out: dict[str, Any] = {}
    for key, value in described.items():
        out[key] = value
        if key == "backend":
            out["backend_version"] = backend.version()
    return out


def _progress_bar(agent: Agent, steps: int, progress: bool | None) -> Any:
    """A tqdm bar over the run's steps on stderr, or None: ``progress``, by default for runs of 50,000 steps or more."""
    if not (progress if progress is not None else steps >= 50_000):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=steps, desc=f"{agent.name} ({agent.trigger_name})", unit="step", unit_scale=True, leave=False,
                mininterval=0.5)


def _resolve_inputs(agent: Agent, env: Any, model: CMDP | None, env_name: str | None,
                    path: str) -> tuple[Any, Any, CMDP | None, str | None, str]:
    """Check :func:`run`'s arguments; return ``(env, env.unwrapped, model, env_name, path)`` with ``auto`` resolved.

    Warns (``RuntimeWarning``, at :func:`run`'s caller) when the model is not ergodic.
    """
    if env is None or isinstance(env, (bytes, int, float)):
        raise CurloptError(f"env must be a Gymnasium environment or a built-in model name, got {env!r}.")
    if model is not None and not isinstance(model, CMDP):
        raise CurloptError(f"model must be a curlopt CMDP or None, got {type(model).__name__}.")
    if env_name is not None and not isinstance(env_name, str):
        raise CurloptError(f"env_name must be a string or None, got {type(env_name).__name__}.")
    if isinstance(env, str):
        from ...envs import make

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
    has_kernel = _known(model) and hasattr(unwrapped, "cumulative_kernel")
    if path == "auto":
        path = "fast" if has_kernel else "generic"
    if path == "fast" and not has_kernel:
        raise CurloptError("the fast path needs a tabular environment with a known kernel; use path='generic'.")
    S, A = agent.model.n_states, agent.model.n_actions
    if getattr(env.observation_space, "n", None) != S or getattr(env.action_space, "n", None) != A:
        raise CurloptError(
            f"the agent's model has S={S}, A={A} but the environment's spaces are {env.observation_space} and {env.action_space}."
        )
    if model is not None and _known(model):
        from ...models.chains import ergodicity_warning

        message = ergodicity_warning(model)
        if message:
            warnings.warn(message, RuntimeWarning, stacklevel=3)
    return env, unwrapped, model, env_name, path


def _known(model: CMDP | None) -> bool:
    """Whether ``model`` has a kernel (asked without building the dense view of a sparse one)."""
    return model is not None and (model.sparse or model.kernel is not None)


class ChainSimulator:
    """A chain with a known kernel, played epoch by epoch under fixed policies: the fast path of :func:`run`.

    Each step draws one action uniform and one transition uniform, in that order, from two
    separate streams (see the module docstring), so a run's trajectory is a function of the two
    generators' seeds alone. The learning loop steps its runs with this class; the benchmarks
    and :mod:`curlopt.experiments.compare` use it to gather counts without an agent.

    Parameters
    ----------
    kernel : ndarray of shape (S, A, S), or scipy sparse matrix of shape (S·A, S)
        The transition kernel ``P(s'|s,a)``; a sparse one is stepped from its rows' stored successors
        (:mod:`curlopt.models.sampling`: the same trajectory as its dense form, memory linear in its nonzeros).
    actions, transitions : numpy.random.Generator or UniformStream
        Where the action and the transition uniforms come from.
    state : int, default 0
        The state the first epoch of :meth:`play` starts in.
    """

    def __init__(self, kernel: Any, actions: np.random.Generator | UniformStream,
                 transitions: np.random.Generator | UniformStream, state: int = 0):
        if sp.issparse(kernel):
            self.n_states = int(kernel.shape[1])
            self.n_actions = int(kernel.shape[0]) // self.n_states
            self.kernel_rows, successors = _sparse_rows(sp.csr_array(kernel))
            self.successors: list[list[int]] | None = successors
        else:
            self.kernel_rows, self.successors = _cumulative_rows(kernel), None
            self.n_states, self.n_actions = int(kernel.shape[0]), int(kernel.shape[1])
        self.actions = actions if isinstance(actions, UniformStream) else UniformStream(actions)
        self.transitions = transitions if isinstance(transitions, UniformStream) else UniformStream(transitions)
        self.state = int(state)
        #: the next epoch's expected length, a quarter more than the last one's (only sizes the uniforms' blocks)
        self._expected = 0

    def play(self, policy: np.ndarray, steps: int, thresholds: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Play ``policy`` from the current state for ``steps`` steps, or until a pair reaches its threshold.

        Parameters
        ----------
        policy : ndarray, shape (S, A)
            ``π(a|s)``, rows summing to 1.
        steps : int
            The most steps of this epoch.
        thresholds : array_like, shape (S, A), optional
            The epoch ends at the step that brings a pair's visits in this epoch to its threshold;
            default: no threshold (the epoch lasts ``steps`` steps).

        Returns
        -------
        pairs, next_states : ndarray of int64
            The visited pairs ``s * A + a`` and the states they led to, one per step; the
            simulator's ``state`` is then the last next state.
        """
        limit = [math.inf] * (self.n_states * self.n_actions) if thresholds is None else \
            np.asarray(thresholds, dtype=float).reshape(-1).tolist()
        pairs, nexts, self.state = self(self.state, _cumulative_rows(np.asarray(policy, dtype=float)), limit,
                                        int(steps), self.n_actions)
        return pairs, nexts

    def learn(self, agent: StepLearner, state: int, cap: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``cap`` steps from ``state`` played and learned by an agent that learns at every step (its
        ``play_steps``, with the same uniforms, one action and one transition uniform per step)."""
        action_u, transition_u = self.actions.peek(cap).tolist(), self.transitions.peek(cap).tolist()
        visited, state = agent.play_steps(state, action_u, transition_u, self.kernel_rows, self.successors)
        self.actions.advance(cap)
        self.transitions.advance(cap)
        return _pairs_and_nexts(visited, state, self.n_actions)

    def __call__(self, state: int, policy_rows: list[list[float]], limit: Any, cap: int,
                 n_actions: int) -> tuple[np.ndarray, np.ndarray, int]:
        """One epoch from ``state`` with cumulative policy rows (the loop's stepping interface)."""
        pairs, nexts, state = _fast_epoch(state, policy_rows, self.kernel_rows, limit, cap, self.actions,
                                          self.transitions, n_actions, self.successors, self._expected)
        self._expected = pairs.size + pairs.size // 4
        return pairs, nexts, state


class _GenericStepper:
    """One epoch on the generic path: ``env.step`` per step."""

    def __init__(self, env: Any, known: CMDP, actions: UniformStream):
        self.env, self.known, self.actions = env, known, actions

    def learn(self, agent: StepLearner, state: int, cap: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``cap`` steps of ``env.step``, the agent choosing (``act``) and learning (``observe``) at each."""
        visited: list[int] = []
        s = state
        for _ in range(int(cap)):
            a = agent.act(s, self.actions.take())
            obs, _reward, terminated, truncated, _info = self.env.step(a)
            if terminated or truncated:
                raise CurloptError("the environment ended an episode; the learning loop needs an infinite-horizon"
                                   " (never-ending) environment.")
            agent.observe(s, a, int(obs))
            visited.append(s * agent.model.n_actions + a)
            s = int(obs)
        return _pairs_and_nexts(visited, s, agent.model.n_actions)

    def __call__(self, state: int, policy_rows: list[list[float]], limit: Any, cap: int,
                 n_actions: int) -> tuple[np.ndarray, np.ndarray, int]:
        return _generic_epoch(self.env, state, policy_rows, limit, cap, self.actions, n_actions, self.known)


def _pairs_and_nexts(visited: list[int], state: int, n_actions: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The visited pairs as an array, their next states (each the next pair's state, the last ``state``), and
    ``state``."""
    pairs = np.asarray(visited, dtype=np.int64)
    nexts = np.empty_like(pairs)
    if pairs.size:
        np.floor_divide(pairs[1:], n_actions, out=nexts[:-1])
        nexts[-1] = state
    return pairs, nexts, state


#: seconds of a run after which its epoch rate is looked at once (:class:`_EpochRate`)
EPOCH_RATE_CHECK_SECONDS = 10.0
#: a run expected to take longer than this (seconds, at its rate so far), mostly in its epochs, says so
EPOCH_RATE_WARN_SECONDS = 600.0


class _EpochRate:
    """Says once, after :data:`EPOCH_RATE_CHECK_SECONDS` of a run, when its epochs put its expected time far past a
    few minutes (:data:`EPOCH_RATE_WARN_SECONDS`), naming the option that bounds the number of epochs.

    The clock is read once an epoch (at its end), so the steps themselves are not slowed. The expected time is
    the time so far scaled to the run's steps; the epochs' share is the time outside the steps (planning,
    learning, evaluating). Early epochs are the shortest (the doubling rule starts one every few steps while the
    pairs are first visited), so the estimate is a warning, not a promise.
    """

    def __init__(self, agent: Agent, steps: int):
        self.agent, self.steps = agent, steps
        self.started = clock.perf_counter()
        self.stepping = 0.0
        self.done = False

    def after_epoch(self, t: int, epochs: int) -> None:
        """``t`` steps played so far (``epochs`` epochs); warns at most once, from the first epoch after the check
        time."""
        if self.done:
            return
        elapsed = clock.perf_counter() - self.started
        if elapsed < EPOCH_RATE_CHECK_SECONDS or t >= self.steps:
            return
        self.done = True
        expected = elapsed * self.steps / t
        in_epochs = max(0.0, elapsed - self.stepping)
        if expected <= EPOCH_RATE_WARN_SECONDS or in_epochs < 0.5 * elapsed:
            return
        per_epoch = in_epochs / max(1, epochs)
        bound = max(1000, 10 ** math.ceil(math.log10(max(1.0, self.steps / 1000))))
        warnings.warn(
            f"{self.agent.name}: {epochs:,} epochs in the first {t:,} steps ({elapsed:.0f} s, {1000 * per_epoch:.0f}"
            f" ms an epoch, {t / elapsed:,.0f} steps/s): at this rate the {self.steps:,} steps take about"
            f" {_duration(expected)}. min_epoch_length bounds the epochs (a run of T steps has at most"
            f" T / min_epoch_length + 1; e.g. min_epoch_length={bound:,}: at most {self.steps // bound + 1:,})"
            + (f"; this run has min_epoch_length={self.agent.min_epoch_length:,}" if self.agent.min_epoch_length > 1
               else "") + ".",
            RuntimeWarning, stacklevel=4)


def _duration(seconds: float) -> str:
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min"


def _play(agent: Agent, steps: int, state: int, step: Any, recorder: _Recorder, evaluator: _ExactEvaluator | None,
          bar: Any, observed: ObservedSignals) -> list[EpochRecord]:
    """The epochs of a run: plan, step until the trigger fires, record, learn; returns the epoch records.

    A run whose epochs make it slow says so once (:class:`_EpochRate`).
    """
    S, A = agent.model.n_states, agent.model.n_actions
    epochs: list[EpochRecord] = []
    rate = _EpochRate(agent, steps)
    # a policy that changed at every step has no one exact value: the record keeps none
    exact = None if evaluator is None or agent.learns_per_step else _BatchedEvaluations(evaluator)
    t = 1
    while t <= steps:
        plan = agent.begin_epoch(t)
        thresholds, max_length = agent.limits(t)
        cap = int(min(max_length, steps - t + 1))
        stepping = clock.perf_counter()
        if agent.learns_per_step:
            pairs, nexts, state = step.learn(cast(StepLearner, agent), state, cap)
        else:
            pairs, nexts, state = _epoch_steps(step, state, _cumulative_rows(plan.policy), thresholds, cap, A,
                                               agent.min_epoch_length)
        rate.stepping += clock.perf_counter() - stepping
        pair_visits = np.bincount(pairs, minlength=S * A)
        recorder.epoch(t, pairs, pair_visits)
        # counted in the agent's form: (S, A, S) on a dense support, on the support's entries for a sparse model
        counts = agent.transition_counts(pairs, nexts)
        visits = pair_visits.astype(float)  # = the counts' row sums: sums of integers, exact
        epochs.append(_epoch_record(len(epochs), t, pairs.size, plan))
        if exact is not None:
            exact.add(epochs[-1], plan.policy)
        reward_means, cost_means, reward_sum, cost_sum = observed.epoch(pairs, visits)
        agent.observe_signals(pair_visits, reward_means, cost_means)
        agent.end_epoch(counts, reward_sum, cost_sum, int(pairs.size))
        t += pairs.size
        if bar is not None:
            bar.update(pairs.size)
        rate.after_epoch(t - 1, len(epochs))
    if exact is not None:
        exact.flush()
    return epochs


def _epoch_steps(step: Any, state: int, policy_rows: list[list[float]], thresholds: Any, cap: int, n_actions: int,
                 minimum: int) -> tuple[np.ndarray, np.ndarray, int]:
    """One epoch's steps: until some pair's visits within the epoch reach its threshold, or ``cap`` steps.

    With ``minimum > 1`` (the agent's ``min_epoch_length``) the thresholds are first checked after ``minimum``
    steps: the epoch ends there if some pair reached its threshold meanwhile, else at the first later step at
    which one does (checked against the thresholds less the visits so far). The stepper is called once or
    twice; the streams hand out the same numbers however the steps are split, so the trajectory is the one
    of the same policy played step by step.
    """
    limit = np.asarray(thresholds, dtype=float).reshape(-1)
    if minimum <= 1:
        return step(state, policy_rows, limit.tolist(), cap, n_actions)
    first = min(minimum, cap)
    pairs, nexts, state = step(state, policy_rows, [math.inf] * limit.size, first, n_actions)
    if pairs.size == cap:
        return pairs, nexts, state
    within = np.bincount(pairs, minlength=limit.size)
    if np.any(within >= limit):
        return pairs, nexts, state
    more, more_nexts, state = step(state, policy_rows, (limit - within).tolist(), cap - first, n_actions)
    return np.concatenate([pairs, more]), np.concatenate([nexts, more_nexts]), state


class _ExactEvaluator:
    """The exact long-run performance of epoch policies on the true kernel, remembered by policy.

    The evaluation (:func:`curlopt.models.cmdp.stationary_occupancy` and the utilities) is a
    deterministic function of the kernel and the policy's bits, and consecutive epochs
    often play bit for bit the same policy (UCRL-CMDP on the queue: 60% of its epochs, a
    vertex of the same program), so a remembered value is exactly the value computed again.
    """

    #: distinct policies remembered at once (S·A·8 bytes each); the memory is emptied when full
    MEMORY = 256

    def __init__(self, model: CMDP):
        self.model = model
        self._known: dict[tuple, tuple] = {}

    def evaluate(self, policy: Any) -> tuple[list[float], list[float], float, list[float]]:
        """``(λ, ζ, f(λ), g(ζ))`` of ``policy``'s stationary occupancy, as fresh lists."""
        array = np.asarray(policy)
        key = (array.dtype.str, array.shape, array.tobytes())
        known = self._known.get(key)
        if known is None:
            model = self.model
            kernel: Any = model.transitions if model.sparse else model.kernel
            rho = stationary_occupancy(kernel, policy, initial=model.initial)
            lam, zeta = model.average_rewards(rho), model.average_costs(rho)
            known = (lam.tolist(), zeta.tolist(), float(model.objective.value(lam)),
                     model.constraint_values(zeta).tolist())
            if len(self._known) >= self.MEMORY:
                self._known.clear()
            self._known[key] = known
        rewards, costs, objective, constraints = known
        return list(rewards), list(costs), objective, list(constraints)


class _BatchedEvaluations:
    """The exact values of the epochs' policies (:class:`_ExactEvaluator`), computed a batch of epochs at a time.

    Evaluated between two solves, a policy's stationary law cost two to three times what it costs in a run of
    evaluations (measured on the queue: the solver's work between two epochs leaves the processor's caches cold
    for numpy's and LAPACK's code), so a copy of each epoch's policy is kept (an agent may change its policy array
    later) until :data:`BATCH_BYTES` of them or :data:`BATCH_EPOCHS` epochs are waiting, then they are evaluated in
    epoch order into their records. The values are the same bits: the evaluation is a deterministic function of the
    policy's bits. The run's loop evaluates the last batch (:meth:`flush`) before it returns; an evaluation that
    fails (a model error) stops the run when its batch is evaluated.
    """

    #: evaluate the waiting policies once they hold this many bytes ...
    BATCH_BYTES = 4 * 2 ** 20
    #: ... or once this many epochs wait
    BATCH_EPOCHS = 256

    def __init__(self, evaluator: _ExactEvaluator):
        self.evaluator = evaluator
        self._waiting: list[tuple[EpochRecord, np.ndarray]] = []
        self._bytes = 0

    def add(self, record: EpochRecord, policy: Any) -> None:
        """Fill ``record``'s exact values from ``policy`` (now or with its batch)."""
        kept = np.array(policy)  # a copy: the bits played this epoch, whatever becomes of the agent's array
        self._waiting.append((record, kept))
        self._bytes += kept.nbytes
        if self._bytes >= self.BATCH_BYTES or len(self._waiting) >= self.BATCH_EPOCHS:
            self.flush()

    def flush(self) -> None:
        """Evaluate every waiting policy into its record, in epoch order."""
        for record, policy in self._waiting:
            (record.exact_rewards, record.exact_costs, record.exact_objective,
             record.exact_constraints) = self.evaluator.evaluate(policy)
        self._waiting.clear()
        self._bytes = 0


def _epoch_record(index: int, start: int, length: int, plan: Any) -> EpochRecord:
    """The record of an epoch's plan (its exact values are filled by :class:`_BatchedEvaluations`)."""
    return EpochRecord(
        index=index, start=start, length=length, epsilon=plan.epsilon, source=plan.source, status=plan.status,
        solve_time=plan.solve_time, iterations=plan.iterations, message=plan.message,
        unreached=getattr(plan, "unreached", None),
    )
