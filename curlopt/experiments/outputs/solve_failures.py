"""Runs whose solver failed in most epochs: the rule the commands apply, and the warning they print.

An epoch *failed to solve* when its program's solve ended without a solution, so
the agent kept its previous policy (in the first epoch: the uniform policy);
:attr:`~curlopt.experiments.simulation.trace.Trace.failed_epochs` counts them.
A run in which more than half of the epochs failed (:data:`MAX_FAILED_SHARE`)
says little about its algorithm: ``curlopt run`` ends it with a warning and
exit status 1 (the trace is still written), and a sweep keeps its run file but
warns about it and exits 1.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_FAILED_SHARE", "most_epochs_failed", "failed_solves_warning"]

#: a run is reported when its failed epochs are more than this share of its epochs
MAX_FAILED_SHARE = 0.5
#: the first failure's message is shortened to this many characters in the warning
_MESSAGE_CHARS = 240
_FAILED_SOURCES = ("kept-previous", "uniform-initial")


def most_epochs_failed(trace: Any) -> bool:
    """True when more than :data:`MAX_FAILED_SHARE` of the run's epochs failed to solve."""
    epochs = len(trace.epochs)
    return epochs > 0 and trace.failed_epochs > MAX_FAILED_SHARE * epochs


def failed_solves_warning(trace: Any) -> str | None:
    """One line saying how many epochs failed and the first failure's status and message; None if at most half."""
    if not most_epochs_failed(trace):
        return None
    first = next(e for e in trace.epochs if e.source in _FAILED_SOURCES)
    message = " ".join(str(first.message).split())
    if len(message) > _MESSAGE_CHARS:
        message = message[: _MESSAGE_CHARS - 3] + "..."
    backend = trace.meta.get("backend") or "-"
    return (f"{trace.failed_epochs} of {len(trace.epochs)} epochs failed to solve (more than"
            f" {MAX_FAILED_SHARE:.0%}; backend {backend}, first failure in epoch {first.index}: {first.status or '?'}"
            + (f": {message}" if message else "") + "); in those epochs the agent kept its previous (or the uniform)"
            " policy, so this run says little about its algorithm: try another backend or solver")
