"""``curlopt run`` on an episodic model: the episodic agents and the episode loop (``--steps`` counts episodes)."""

from __future__ import annotations

import json
from typing import Any

import typer

__all__ = ["run_episodic"]


def run_episodic(model: Any, env: str, agent: str, episodes: int, seed: int, options: dict[str, Any],
                 out: str | None, as_json: bool, path: str = "auto", optimum_backend: str | None = None,
                 progress: bool | None = None) -> None:
    """For an episodic ``model``: run the episodic agent ``agent`` for ``episodes`` episodes, print the summary and
    end the command (``typer.Exit(0)``); for any other model, return at once (the caller's run goes on).

    ``options`` are the agent's (``--backend``, ``--tightness``, ``--prior`` and ``--option`` merged by the caller);
    ``out`` is the file that receives the per-episode CSV (:meth:`EpisodeTrace.to_csv`). ``optimum_backend`` solves
    the reference optimum f(λ*) (default auto), ``progress`` shows the loop's bar; ``path`` must stay ``auto`` (the
    episode loop has one path), so a flag of the long-run run is applied or refused, never silently dropped.

    Raises
    ------
    CurloptError
        For options the episodic agents do not take (``--epochs``: they plan every episode; ``--path``; an
        ``episodes`` option other than ``--steps``), an unknown agent, or anything the loop refuses.
    """
    if getattr(model, "criterion", None) != "episodic":
        return
    from ..agents.episodic import EPISODIC_AGENTS, make_episodic_agent
    from ..errors import CurloptError
    from ..experiments.simulation.episodes import episodic_optimum, run_episodes

    if "trigger" in options:
        raise CurloptError(f"model {env!r} is episodic (H = {model.horizon}): its agents plan every episode and take"
                           " no --epochs trigger.")
    if agent not in EPISODIC_AGENTS:
        raise CurloptError(f"model {env!r} is episodic (H = {model.horizon}); its agents are"
                           f" {', '.join(EPISODIC_AGENTS)}, not {agent!r}.")
    from ..experiments.simulation.episodes import MAX_EPISODES

    if episodes > MAX_EPISODES:
        raise CurloptError(f"--steps counts episodes on an episodic model (H = {model.horizon}): at most"
                           f" {MAX_EPISODES:,}, got {episodes:,}.")
    if path != "auto":
        raise CurloptError(f"model {env!r} is episodic (H = {model.horizon}): its run has one stepping path, the"
                           f" episode loop; drop --path {path}.")
    if "episodes" in options and options["episodes"] != episodes:
        # the agent's K (its confidence widths) must be the number of episodes the loop plays
        raise CurloptError(f"{agent}'s number of episodes K is --steps ({episodes}) on an episodic model; drop"
                           f" --option episodes={options['episodes']!r} and set --steps instead.")
    learner = make_episodic_agent(agent, model, **options)
    optimum, infeasible = _optimum(model, optimum_backend or "auto", episodic_optimum)
    trace = run_episodes(model, learner, episodes=episodes, seed=seed, optimum=optimum, progress=bool(progress))
    if out is not None:
        trace.to_csv(out)
    finding = None
    if infeasible:  # said on stdout (and in the JSON) and as the run's warning, as the long-run run says it
        finding = (f"no policy satisfies the constraints of model {env!r}: the regret is against the optimum without"
                   f" them, and the policies line says what {agent} played instead")
        from .logs import warn

        warn(finding)
    _print(trace, env, agent, model.horizon, out, as_json, finding)
    raise typer.Exit(code=0)


def _optimum(model: Any, backend: str, constrained: Any) -> tuple[float, bool]:
    """``(f(λ*), infeasible)``: the constrained optimum ``constrained(model, backend)`` (the loop's own, so the
    value is the one the loop would compute), or, when no policy satisfies the constraints, the optimum of the
    program without them and True.

    Raises
    ------
    CurloptError
        When the program has no optimal solution for another reason (a solver failure), with the loop's message.
    """
    from ..errors import CurloptError
    from ..optimum import solve_optimum

    try:
        return float(constrained(model, backend)), False
    except CurloptError:
        result = solve_optimum(model, backend)  # the same program: its labelled fallback when the rows are infeasible
        if result.ok and result.fell_back and result.objective is not None:
            return float(result.objective), True
        raise


def _print(trace: Any, env: str, agent: str, horizon: int, out: str | None, as_json: bool,
           finding: str | None = None) -> None:
    summary, episodes, seed = trace.summary, trace.summary["episodes"], trace.meta["seed"]
    if as_json:
        document = {"meta": trace.meta, "summary": summary, "trace": out}
        if finding is not None:
            document["findings"] = {"infeasible": finding}
        typer.echo(json.dumps(document, indent=2, default=str))
        return
    which = "optimum without the constraints, which are infeasible: " if finding else ""
    typer.echo(f"run          {agent} on {env} (episodic, H = {horizon}), K = {episodes} episodes, seed {seed}")
    typer.echo(f"optimum      {which}f(λ*) = {summary['optimum']:.6g} per episode")
    typer.echo(f"regret       {summary['regret']:.6g}   (weak: {summary['weak_regret']:.6g})"
               + ("   (against the optimum without constraints)" if finding else ""))
    typer.echo(f"violation    strong {summary['strong_violation']:.6g}, weak {summary['weak_violation']:.6g},"
               f" {summary['violating_episodes']} violating episodes")
    typer.echo(f"policies     {summary['sources']}")
    typer.echo(f"wall time    {summary['wall_time']:.2f} s")
    if out is not None:
        typer.echo(f"trace        {out}")
