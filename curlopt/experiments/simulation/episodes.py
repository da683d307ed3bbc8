"""The episode loop: run an episodic agent for K episodes, and its metrics computed exactly per episode.

Randomness, as in the infinite-horizon loop: the run's seed is split (``numpy.random.SeedSequence(seed).spawn(3)``)
into the environment's stream, the action stream and the agent's own stream. Episode k consumes H environment
uniforms (the first draws ``s_1`` from μ, the h-th, h >= 2, the transition from step h − 1 to step h) and H action
uniforms (one per step); a draw from a distribution ``p`` with uniform ``u`` is the first index whose cumulative sum
exceeds ``u``. The uniforms are drawn in blocks of episodes (``Generator.random`` yields the same numbers however
they are requested), so a trajectory depends only on the seed and the policies played.

Metrics (docs/math.md, "The episodic setting"), from the policy ``π_k`` played in each episode, exactly on the true
model (:func:`curlopt.models.episodic.episode_values`: per-episode totals λ^{π_k}, ζ^{π_k}):

* objective regret ``Σ_k f(λ*) − f(λ^{π_k})``, and the weaker ``K f(λ*) − K f((1/K) Σ_k λ^{π_k})`` (equal for linear
  f);
* strong violation ``Σ_k max_m (g_m(ζ^{π_k}))_+`` and weak violation ``max_m (Σ_k g_m(ζ^{π_k}))_+``;

and the same from the sampled trajectories (the realised totals ``Σ_h r_h(s_h, a_h)``, ``Σ_h c_h(s_h, a_h)``).
``f(λ*)`` is the known-model episodic optimum (the episodic occupancy program, solved on the "auto" backend:
HiGHS for LP-representable utilities) unless given.
"""

from __future__ import annotations

import json
import math
import time as clock
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ... import __version__
from ...agents.episodic.base import EpisodicAgent
from ...errors import CurloptError
from ...models.episodic import EpisodicCMDP, episode_values
from ...models.signals import check_noise, noisy_signals, signal_bounds

__all__ = ["run_episodes", "EpisodeTrace", "episodic_optimum", "episode_metrics", "MAX_EPISODES", "EPISODE_BLOCK"]

#: the most episodes a run takes
MAX_EPISODES = 10 ** 9
#: episodes whose uniforms are drawn at once
EPISODE_BLOCK = 4096


def episodic_optimum(model: EpisodicCMDP, backend: str = "auto") -> float:
    """``f(λ*)``: the optimal value of the known-model episodic occupancy program (per-episode totals).

    Raises
    ------
    CurloptError
        When the program has no optimal solution (an infeasible budget: no policy satisfies the constraints).
    """
    from ...backends import resolve_backend
    from ...programs import EpisodicOccupancyProgram

    program = EpisodicOccupancyProgram(model)
    solver = resolve_backend(backend, (model.objective, *model.constraints))
    result = solver.compile(program).solve()
    if not result.ok or result.fell_back:
        raise CurloptError(
            f"the known-model episodic program of model {model.name!r} has no optimal solution"
            f" ({result.tight_status.value}): {result.message or 'no policy satisfies the constraints'}; the metrics"
            " need f(λ*) (pass optimum=... to run_episodes to give it).")
    return float(result.objective)


def episode_metrics(model: EpisodicCMDP, optimum: float, rewards: np.ndarray, costs: np.ndarray) -> dict[str, Any]:
    """The per-episode and summed metrics from per-episode totals ``rewards`` (K, n_rewards), ``costs`` (K, d).

    Returns the per-episode arrays ``objective`` f(λ_k), ``constraints`` g(ζ_k) (K, M), ``regret`` f* − f(λ_k),
    ``violation`` max_m (g_m(ζ_k))_+ and the sums ``regret_total``, ``weak_regret`` (K f* − K f(mean λ)),
    ``strong_violation`` and ``weak_violation``.
    """
    rewards = np.atleast_2d(np.asarray(rewards, dtype=float))
    costs = np.asarray(costs, dtype=float).reshape(rewards.shape[0], model.n_costs)
    K = rewards.shape[0]
    objective = np.array([float(model.objective.value(lam)) for lam in rewards])
    M = model.n_constraints
    constraints = np.array([model.constraint_values(z) for z in costs]).reshape(K, M)
    regret = optimum - objective
    violation = np.maximum(constraints.max(axis=1), 0.0) if M else np.zeros(K)
    mean_f = float(model.objective.value(rewards.mean(axis=0))) if K else math.nan
    return {
        "objective": objective, "constraints": constraints, "regret": regret, "violation": violation,
        "regret_total": float(regret.sum()),
        "weak_regret": float(K * optimum - K * mean_f),
        "strong_violation": float(violation.sum()),
        "weak_violation": float(max(constraints.sum(axis=0).max(), 0.0)) if M else 0.0,
    }


@dataclass
class EpisodeTrace:
    """What a run of K episodes recorded.

    Attributes
    ----------
    columns : dict of str to ndarray
        Per-episode arrays (length K): ``episode``; exact ``rewards`` (K, n_rewards) and ``costs`` (K, d) of the
        policy played, ``objective``, ``regret``, ``violation``; realised ``realised_rewards``, ``realised_costs``,
        ``realised_regret``, ``realised_violation``; ``solve_time``, ``epsilon``.
    sources, statuses : list of str
        Where each episode's policy came from (:class:`curlopt.agents.episodic.EpisodeSource` values) and the
        solver's status ("" where nothing was solved).
    messages : dict of int to str
        Non-empty plan messages by episode (1-based).
    summary : dict
        The sums (exact and realised), the optimum, counts of sources, wall time.
    meta : dict
        Model, agent options, seed, versions.
    """

    columns: dict[str, np.ndarray]
    sources: list[str]
    statuses: list[str]
    messages: dict[int, str]
    summary: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_csv(self, path: str | Path) -> Path:
        """Write the per-episode columns (one row per episode) to ``path``."""
        from ...fileio import atomic_write_text

        cols = self.columns
        K = cols["episode"].size
        header, blocks = [], []
        for name, array in cols.items():
            array = np.asarray(array)
            if array.ndim == 2:
                header += [f"{name}_{i}" for i in range(array.shape[1])]
                blocks += [array[:, i] for i in range(array.shape[1])]
            else:
                header.append(name)
                blocks.append(array)
        lines = [",".join(header + ["source", "status"])]
        for k in range(K):
            cells = [repr(int(b[k])) if np.issubdtype(b.dtype, np.integer) else repr(float(b[k])) for b in blocks]
            lines.append(",".join(cells + [self.sources[k], self.statuses[k]]))
        return atomic_write_text(path, "\n".join(lines) + "\n")

    def save(self, directory: str | Path) -> Path:
        """Write ``episodes.csv`` and ``summary.json`` (the summary, meta and plan messages) into ``directory``."""
        from ...fileio import atomic_write_text

        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        self.to_csv(folder / "episodes.csv")
        payload = {"summary": self.summary, "meta": self.meta,
                   "messages": {str(k): v for k, v in self.messages.items()}}
        atomic_write_text(folder / "summary.json", json.dumps(payload, indent=2, default=json_plain) + "\n")
        return folder


def json_plain(value: Any) -> Any:
    """``json.dumps``'s ``default`` for the values episode files hold: numpy scalars and arrays as Python ones,
    anything else as its text."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _cumulative(table: np.ndarray) -> np.ndarray:
    """Cumulative sums along the last axis with the last entry lifted to 2.0, so a draw never passes the last
    index (a uniform is < 1)."""
    cum = np.cumsum(table, axis=-1)
    cum[..., -1] = 2.0
    return cum


def _validate(model: Any, agent: Any, episodes: Any, seed: Any) -> tuple[int, int]:
    if not isinstance(model, EpisodicCMDP):
        raise CurloptError(f"run_episodes needs an episodic model (EpisodicCMDP), got {type(model).__name__}.")
    if not isinstance(agent, EpisodicAgent):
        raise CurloptError(f"run_episodes needs an episodic agent (curlopt.agents.episodic), got {type(agent).__name__}.")
    if agent.model is not model and (agent.model.n_states, agent.model.n_actions, agent.model.horizon) != (
            model.n_states, model.n_actions, model.horizon):
        raise CurloptError(
            f"the agent was built for a model of (S, A, H) = ({agent.model.n_states}, {agent.model.n_actions},"
            f" {agent.model.horizon}), the run's model has ({model.n_states}, {model.n_actions}, {model.horizon}).")
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or not 1 <= episodes <= MAX_EPISODES:
        raise CurloptError(f"episodes must be an integer in [1, {MAX_EPISODES:.0e}], got {episodes!r}.")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise CurloptError(f"seed must be an integer >= 0, got {seed!r}.")
    return int(episodes), int(seed)


def _given_optimum(optimum: Any) -> float:
    """A given ``f(λ*)`` as a finite float: a NaN or infinite one would make every regret NaN or infinite."""
    ok = not isinstance(optimum, bool) and isinstance(optimum, (int, float, np.integer, np.floating))
    value = float(optimum) if ok else math.nan
    if not math.isfinite(value):
        raise CurloptError(f"optimum must be a finite number (the known-model f(λ*) per episode), got {optimum!r}.")
    return value


def _check_policy(policy: Any, shape: tuple[int, int, int], name: str, k: int) -> np.ndarray:
    array = np.asarray(policy, dtype=float)
    if array.shape != shape:
        raise CurloptError(f"{name} returned a policy of shape {array.shape} in episode {k}, expected (H, S, A) = {shape}.")
    if not (np.all(array >= -1e-12) and np.allclose(array.sum(axis=2), 1.0, atol=1e-8)):
        raise CurloptError(f"{name} returned a policy in episode {k} whose rows are not distributions.")
    return array


def simulate_episode(initial_cum: np.ndarray, kernel_cum: np.ndarray, policy_cum: np.ndarray, env_u: np.ndarray,
                     act_u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One episode's states and actions (length H) from cumulative tables and its H + H uniforms.

    ``kernel_cum`` has shape (H − 1, S, A, S) (``P_h`` per transition step), ``policy_cum`` (H, S, A).
    """
    H = policy_cum.shape[0]
    states = np.empty(H, dtype=np.int64)
    actions = np.empty(H, dtype=np.int64)
    s = int(np.searchsorted(initial_cum, env_u[0], side="right"))
    for h in range(H):
        a = int(np.searchsorted(policy_cum[h, s], act_u[h], side="right"))
        states[h], actions[h] = s, a
        if h < H - 1:
            s = int(np.searchsorted(kernel_cum[h, s, a], env_u[h + 1], side="right"))
    return states, actions


def run_episodes(model: EpisodicCMDP, agent: EpisodicAgent, episodes: int, seed: int = 0,
                 optimum: float | None = None, progress: bool = False, signals: str = "mean") -> EpisodeTrace:
    """Run ``agent`` on ``model`` for ``episodes`` episodes and record the exact and realised metrics.

    Parameters
    ----------
    model : EpisodicCMDP
        The true model (its kernel drives the simulation and the exact values).
    agent : EpisodicAgent
        Reset with the run's agent stream and K = ``episodes`` (when it was built without K).
    episodes : int
        K >= 1.
    seed : int
        The run's seed (>= 0).
    optimum : float, optional
        ``f(λ*)``; default the known-model optimum (:func:`episodic_optimum`, backend "auto": HiGHS for
        LP-representable utilities).
    progress : bool
        Show a tqdm bar.
    signals : {"mean", "bernoulli", "gaussian"}, default "mean"
        What the agent observes at each step (:meth:`EpisodicAgent.observe_signals`): the model's means, or draws
        around them (:mod:`curlopt.models.signals`, each signal's range the model's minimum and maximum over steps,
        states and actions) from a fourth stream of the run's seed, so the trajectories are the same whatever the
        signals. The metrics are computed from the means either way.

    Returns
    -------
    EpisodeTrace

    Raises
    ------
    CurloptError
        For a non-episodic model or agent, mismatched sizes, a bad K or seed, a policy that is not (H, S, A) of
        distributions, or a model whose constraints no policy satisfies (when ``optimum`` is not given).
    """
    K, seed = _validate(model, agent, episodes, seed)
    check_noise(signals)
    f_star = episodic_optimum(model) if optimum is None else _given_optimum(optimum)
    # a fourth child (the signal stream) leaves the first three, and so every trajectory, as they were
    env_seq, action_seq, agent_seq, signal_seq = np.random.SeedSequence(seed).spawn(4)
    agent.reset(agent_seq, episodes=K)
    started = clock.perf_counter()
    noise = _EpisodeSignals(model, signals, signal_seq)
    played = _play(model, agent, K, np.random.default_rng(env_seq), np.random.default_rng(action_seq), progress,
                   noise)
    trace = _trace(model, agent, f_star, played, seed, clock.perf_counter() - started)
    if signals != "mean":  # recorded only when drawn: the records of mean signals are unchanged
        trace.meta["signals"] = signals
    return trace


class _Played:
    """What the episodes recorded: per-episode totals (exact and realised) and the plans' facts."""

    def __init__(self, model: EpisodicCMDP, K: int):
        self.rewards = np.empty((K, model.n_rewards))
        self.costs = np.empty((K, model.n_costs))
        self.realised_rewards = np.empty((K, model.n_rewards))
        self.realised_costs = np.empty((K, model.n_costs))
        self.solve_time = np.zeros(K)
        self.epsilon = np.zeros(K)
        self.planned = np.full(K, math.nan)
        self.sources: list[str] = []
        self.statuses: list[str] = []
        self.messages: dict[int, str] = {}

    def plan(self, k: int, plan: Any) -> None:
        self.solve_time[k], self.epsilon[k], self.planned[k] = plan.solve_time, plan.epsilon, plan.planned_value
        self.sources.append(str(getattr(plan.source, "value", plan.source)))
        self.statuses.append(plan.status)
        if plan.message:
            self.messages[k + 1] = plan.message


class _EpisodeSignals:
    """An episode's observed signals: the model's means at its steps, or noisy draws around them."""

    def __init__(self, model: EpisodicCMDP, noise: str, seed: Any):
        self.noise, self.n_rewards = noise, model.n_rewards
        table = np.concatenate([model.step_rewards, model.step_costs], axis=1)       # (H, K + d, S, A)
        self.low, self.high = signal_bounds(table.transpose(1, 0, 2, 3))
        self.generator = np.random.default_rng(seed)

    def observe(self, rewards: np.ndarray, costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(rewards (H, K), costs (H, d))`` observed around the means at the episode's steps."""
        if self.noise == "mean":
            return rewards, costs
        drawn = noisy_signals(np.concatenate([rewards, costs], axis=1).T, self.low, self.high, self.noise,
                              self.generator).T
        return drawn[:, :self.n_rewards], drawn[:, self.n_rewards:]


def _play(model: EpisodicCMDP, agent: EpisodicAgent, K: int, env_rng: np.random.Generator,
          act_rng: np.random.Generator, progress: bool, noise: _EpisodeSignals) -> _Played:
    """Play K episodes: plan, evaluate the policy exactly (once per distinct policy object), simulate, learn."""
    H, S, A = model.horizon, model.n_states, model.n_actions
    initial_cum = _cumulative(np.asarray(model.initial, dtype=float))
    kernel_cum = (np.stack([_cumulative(model.step_kernel_dense(h)) for h in range(H - 1)]) if H > 1
                  else np.zeros((0, S, A, S)))
    step_rewards = np.asarray(model.step_rewards)   # (H, K_r, S, A)
    step_costs = np.asarray(model.step_costs)       # (H, d, S, A)
    steps = np.arange(H)
    out = _Played(model, K)
    last: tuple[Any, np.ndarray, np.ndarray, np.ndarray] | None = None   # policy object, λ, ζ, cumulative table
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=K, unit="episode")
    env_block = act_block = np.zeros((0, H))
    for k in range(K):
        if k % EPISODE_BLOCK == 0:
            count = min(EPISODE_BLOCK, K - k)
            env_block, act_block = env_rng.random((count, H)), act_rng.random((count, H))
        plan = agent.begin_episode(k + 1)
        if last is None or plan.policy is not last[0]:
            policy = _check_policy(plan.policy, (H, S, A), agent.name, k + 1)
            lam, zeta = episode_values(model, policy)
            last = (plan.policy, lam, zeta, _cumulative(policy))
        states, actions = simulate_episode(initial_cum, kernel_cum, last[3], env_block[k % EPISODE_BLOCK],
                                           act_block[k % EPISODE_BLOCK])
        agent.observe_signals(states, actions, *noise.observe(step_rewards[steps, :, states, actions],
                                                              step_costs[steps, :, states, actions]))
        agent.end_episode(states, actions)
        out.rewards[k], out.costs[k] = last[1], last[2]
        out.realised_rewards[k] = step_rewards[steps, :, states, actions].sum(axis=0)
        out.realised_costs[k] = step_costs[steps, :, states, actions].sum(axis=0)
        out.plan(k, plan)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return out


def _trace(model: EpisodicCMDP, agent: EpisodicAgent, f_star: float, played: _Played, seed: int,
           wall: float) -> EpisodeTrace:
    """The trace of a run: per-episode columns, sums, sources and meta."""
    K = played.rewards.shape[0]
    exact = episode_metrics(model, f_star, played.rewards, played.costs)
    realised = episode_metrics(model, f_star, played.realised_rewards, played.realised_costs)
    columns = {
        "episode": np.arange(1, K + 1, dtype=np.int64),
        "rewards": played.rewards, "costs": played.costs, "objective": exact["objective"],
        "regret": exact["regret"], "violation": exact["violation"],
        "cumulative_regret": np.cumsum(exact["regret"]), "cumulative_violation": np.cumsum(exact["violation"]),
        "realised_rewards": played.realised_rewards, "realised_costs": played.realised_costs,
        "realised_regret": realised["regret"], "realised_violation": realised["violation"],
        "solve_time": played.solve_time, "epsilon": played.epsilon, "planned_value": played.planned,
    }
    source_counts: dict[str, int] = {}
    for source in played.sources:
        source_counts[source] = source_counts.get(source, 0) + 1
    summary = {
        "episodes": K, "optimum": f_star,
        "regret": exact["regret_total"], "weak_regret": exact["weak_regret"],
        "strong_violation": exact["strong_violation"], "weak_violation": exact["weak_violation"],
        "violating_episodes": int(np.count_nonzero(exact["violation"] > 0)),
        "realised_regret": realised["regret_total"], "realised_weak_regret": realised["weak_regret"],
        "realised_strong_violation": realised["strong_violation"],
        "realised_weak_violation": realised["weak_violation"],
        "sources": source_counts, "solve_time": float(played.solve_time.sum()), "wall_time": wall,
    }
    meta = {"model": model.name, "horizon": model.horizon, "n_states": model.n_states, "n_actions": model.n_actions,
            "seed": seed, "agent": agent.describe(), "curlopt": __version__, "values": "per-episode totals"}
    return EpisodeTrace(columns, played.sources, played.statuses, played.messages, summary, meta)
