"""What an ergodicity check finds (:func:`curlopt.models.chains.check_ergodicity`, on a dense or a sparse kernel),
and the names of its methods: one record for both checks, below the modules that run them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ErgodicityCheck", "SUFFICIENT_CHECK", "EXACT_CHECK", "UNDECIDED_CHECK", "MAX_EXACT_ROUNDS"]

#: The exact ergodicity search on a sparse kernel stops after this many deletion rounds (each a few sparse
#: operations over the deleted states' predecessors; about 30 µs): the answer is then "not decided" (a second or so).
MAX_EXACT_ROUNDS = 50_000

#: the graph of the transitions possible under every action decided
SUFFICIENT_CHECK = "sufficient: the graph of transitions possible under every action is strongly connected"


#: the closed-set search decided
EXACT_CHECK = "exact: closed-set search over all deterministic policies"


#: the closed-set search ran out of rounds
UNDECIDED_CHECK = (f"not decided: the sufficient check failed and the exact search on this sparse kernel stopped"
                   f" after {MAX_EXACT_ROUNDS:,} deletion rounds")


@dataclass
class ErgodicityCheck:
    """Outcome of :func:`curlopt.models.chains.check_ergodicity`.

    Attributes
    ----------
    ergodic : bool or None
        Every deterministic stationary policy's chain is irreducible; ``None`` when not decided (a large sparse
        kernel on which the exact search ran out of rounds: :data:`UNDECIDED_CHECK`).
    communicating : bool
        Some policy's chain is irreducible (the graph of transitions possible
        under some action is strongly connected).
    method : str
        Which check decided (:data:`SUFFICIENT_CHECK` or :data:`EXACT_CHECK`).
    policy : tuple of int or None
        When not ergodic: a deterministic policy (action per state) whose chain is reducible.
    recurrent_classes : list of list of int or None
        That policy's recurrent classes.
    transient_states : list of int or None
        That policy's transient states.
    """

    ergodic: bool | None
    communicating: bool
    method: str
    policy: tuple[int, ...] | None = None
    recurrent_classes: list[list[int]] | None = None
    transient_states: list[int] | None = None
