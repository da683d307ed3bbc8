"""What a run did that its numbers alone do not say: an infeasible model (regret against the optimum without
constraints), epochs that played a fallback policy, a final violation. One sentence each, said by ``curlopt run``
under its summary, and by a study's summary and report for every configuration it concerns."""

from __future__ import annotations

from typing import Any

__all__ = ["infeasible_optimum_text", "run_findings"]


def infeasible_optimum_text(optimum: float | None) -> str:
    """The sentence for a model whose constraints are infeasible."""
    value = "" if optimum is None else f" f = {optimum:.6g}"
    return ("the model's constraints are infeasible (the occupancy program with them has no point): the optimum"
            f"{value} is that of the program without constraints, and the regret R(t) is measured against it")


def run_findings(trace: Any) -> list[tuple[str, str]]:
    """``(label, sentence)`` for each thing to say about a run: ``infeasible``, ``fallback``, ``violating``.

    ``infeasible``: the model's optimum is the one without constraints; ``fallback``: some epochs' ε-tight
    programs were infeasible and their policy was planned without the constraints (or, in safe mode, to violate
    least); ``violating``: the run ends with C(T) > 0 (which constraints, by how much).
    """
    out: list[tuple[str, str]] = []
    summary = trace.summary()
    if trace.optimum_infeasible:
        out.append(("infeasible", infeasible_optimum_text(summary["optimum"])))
    fallbacks, epochs = summary["fallback_epochs"], summary["epochs"]
    if fallbacks:
        out.append(("fallback", f"{fallbacks} of {epochs} epochs played a fallback policy: their ε-tight program was"
                                " infeasible, so the policy was planned without the constraint rows (safe mode: to"
                                " violate least)"))
    if summary["violation"] > 0:
        broken = [f"g_{m + 1} = {value:.3g}" for m, value in enumerate(summary["constraints"]) if value > 0]
        out.append(("violating", f"C(T) = {summary['violation']:.3g} > 0: the average costs after T steps violate"
                                 f" {', '.join(broken)}"))
    return out
