"""Epoch triggers (docs/math.md §5) as small strategy objects.

A trigger is asked once, at the start of an epoch, for its limits: a per-pair
threshold array and a maximum epoch length. The epoch ends after the first step
at which some pair's within-epoch count ``ν_e(s,a)`` reaches its threshold, or
when the epoch has lasted ``max_length`` steps. Stating a trigger this way lets
the fast stepping path check it with one comparison per step.

A user-supplied trigger is any object with a ``limits(visits_before,
previous_epoch_visits, epoch_start)`` method returning ``(thresholds, max_length)``
(a name for records is taken from its ``name`` attribute when present, and a
one-line description of its rule from its ``rule`` attribute). A trigger that
keeps state between epochs also has a ``reset()`` method, which
:meth:`curlopt.agents.Agent.reset` calls at the start of every run; a trigger
without one is taken to be stateless.

The built-in rules, by name:

``doubling``
    the analysed schedule: an epoch ends when some pair's within-epoch count
    reaches ``max(1, N_e(s,a))``, its visits before the epoch.
``linear``
    the paper's linear schedule: each pair keeps a threshold ``ν̄(s,a)``,
    initially 1, and an epoch ends when some pair's within-epoch count reaches
    ``max(1, ν̄(s,a) + 1)``; a pair that reached its threshold takes its count
    as the new ``ν̄``, the others keep theirs (:class:`LinearTrigger`).
``linear-global``
    epoch ``e`` ends when some pair has been visited ``e`` times within it
    (:class:`GlobalLinearTrigger`; what ``linear`` meant in trace files of
    format version 1).
``linear-per-pair``
    an epoch ends when some pair's count reaches ``max(1, ν_{e-1}(s,a) + 1)``,
    its own count in the previous epoch (:class:`PerPairLinearTrigger`).

A minimum epoch length (the agents' option ``min_epoch_length``, off by default) bounds the number of
epochs, and so of re-solves, whatever the rule: the learning loop first checks the thresholds after that
many steps. On a model with thousands of pairs the rules above end an epoch at almost every step early in a
run (every pair not yet visited has threshold 1), and each epoch re-solves a large program. Epochs then last
at least ``L`` steps, so a run of T steps has at most ``T / L + 1`` of them; once the rule's own epochs are
longer than ``L`` nothing changes. The price is that a pair can be visited more than its threshold within an
epoch (the doubling analysis uses ``ν_e <= max(1, N_e)``) in the first ``O(S A L)`` steps.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import CurloptError

__all__ = ["EpochTrigger", "DoublingTrigger", "LinearTrigger", "GlobalLinearTrigger", "PerPairLinearTrigger",
           "FixedLengthTrigger", "TRIGGERS", "make_trigger", "trigger_rule", "reads_visits"]


@runtime_checkable
class EpochTrigger(Protocol):
    """What the learning loop asks of a trigger.

    A trigger whose rule does not read the visits before the epoch says so with a class attribute
    ``reads_visits = False`` next to its ``limits``; an agent then passes None for ``visits_before`` (summing the
    counts every epoch costs more than some rules). A trigger without the attribute is given them, and so is a
    subclass that overrides ``limits`` without declaring it again (:func:`reads_visits`).
    """

    def limits(self, visits_before: np.ndarray, previous_epoch_visits: np.ndarray, epoch_start: int) -> tuple[np.ndarray, float]:
        """Per-pair thresholds on ``ν_e`` (shape (S, A), ``inf`` for none) and a maximum epoch length."""


class DoublingTrigger:
    """End the epoch when some pair has ``ν_e(s,a) >= max(1, N_e(s,a))`` (the analysed schedule)."""

    name = "doubling"
    rule = "an epoch ends when some pair's visits within it reach max(1, its visits before it)"

    def limits(self, visits_before: np.ndarray, previous_epoch_visits: np.ndarray,
               epoch_start: int) -> tuple[np.ndarray, float]:
        return np.maximum(1.0, visits_before), math.inf


class LinearTrigger:
    """The paper's linear schedule: per-pair thresholds that grow by one each time the pair triggers.

    Each pair keeps a threshold ``ν̄(s,a)``, initially 1. Epoch ``e`` ends after the
    step at which some pair has ``ν_e(s,a) >= max(1, ν̄(s,a) + 1)`` (``ν_e`` counts
    visits within the epoch). Then every pair that met its threshold in that epoch
    takes ``ν̄(s,a) = ν_e(s,a)``; the others keep theirs. An epoch ends at the first
    step at which some pair reaches its threshold, and a step visits one pair, so
    exactly the triggering pair is updated (a horizon cut ends the last epoch
    before any pair reaches its threshold, and then none is): each pair's threshold
    grows by one every time it ends an epoch. The paper's appendix bounds the
    number of epochs by ``O(1 + sqrt(2 S A T))``.

    The trigger is stateful. It learns which pairs met their thresholds from what
    the loop passes at the next epoch start: ``previous_epoch_visits`` (the counts
    ``ν_{e-1}``) compared with the thresholds it returned for epoch ``e-1``. So
    :meth:`limits` must be called once per epoch, in order (a repeated call at the
    same epoch start returns the same thresholds), and :meth:`reset` before a new
    run (:meth:`curlopt.agents.Agent.reset` does both; an epoch start earlier than
    the last one also counts as a new run).
    """

    name = "linear"
    rule = ("per-pair thresholds ν̄(s,a), initially 1: an epoch ends when some pair's visits within it reach"
            " max(1, ν̄(s,a) + 1); each pair that reached its threshold takes its count as the new ν̄")
    #: the rule reads the previous epoch's counts only (see :class:`EpochTrigger`)
    reads_visits = False

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the thresholds (every ``ν̄(s,a)`` back to 1)."""
        self.bar: np.ndarray | None = None
        self._returned: np.ndarray | None = None
        self._start: int | None = None

    def limits(self, visits_before: np.ndarray, previous_epoch_visits: np.ndarray,
               epoch_start: int) -> tuple[np.ndarray, float]:
        if self._start is not None and epoch_start < self._start:
            # Time went back: a new run, even if nobody called reset() (e.g. a wrapper that does not forward it).
            self.reset()
        if self._start is not None and epoch_start == self._start and self._returned is not None:
            return self._returned.copy(), math.inf
        previous = np.asarray(previous_epoch_visits, dtype=float)
        if self.bar is None or self.bar.shape != previous.shape:
            self.bar = np.ones(previous.shape)
            self._returned = None
        if self._returned is not None:
            met = previous >= self._returned
            self.bar[met] = previous[met]
        self._returned = np.maximum(1.0, self.bar + 1.0)
        self._start = epoch_start
        return self._returned.copy(), math.inf


class GlobalLinearTrigger:
    """Epoch ``e`` ends when some pair has been visited ``e`` times within it (one global count).

    The threshold of every pair is ``max(1, max_{s',a'} ν_{e-1}(s',a') + 1)``: the
    previous epoch's largest per-pair count plus one. The previous epoch ended when
    its triggering pair reached that epoch's threshold, so the threshold of epoch
    ``e`` is ``e``: epoch lengths grow linearly and there are ``O(sqrt(S A T))``
    epochs. This is what ``linear`` meant before it became the paper's per-pair
    rule (:class:`LinearTrigger`); trace files of format version 1 that say
    ``linear`` load as ``linear-global``.
    """

    name = "linear-global"
    rule = "epoch e ends when some pair has been visited e times within it (one threshold for all pairs)"

    def limits(self, visits_before: np.ndarray, previous_epoch_visits: np.ndarray,
               epoch_start: int) -> tuple[np.ndarray, float]:
        largest = float(np.max(previous_epoch_visits)) if np.size(previous_epoch_visits) else 0.0
        return np.full(np.shape(visits_before), max(1.0, largest + 1.0)), math.inf


class PerPairLinearTrigger:
    """Threshold from the same pair's previous-epoch count: ``ν_e(s,a) >= max(1, ν_{e-1}(s,a) + 1)``.

    Kept for comparison. A pair not visited in the previous epoch gets threshold 1,
    so one short epoch makes the next one short too: epochs collapse to a few steps
    once the policy spreads over several pairs (on the queue, 92,501 epochs in
    100,000 steps). Not the paper's rule (:class:`LinearTrigger`), whose thresholds
    only grow.
    """

    name = "linear-per-pair"
    rule = "an epoch ends when some pair's visits within it reach max(1, its own visits in the previous epoch + 1)"
    #: the rule reads the previous epoch's counts only (see :class:`EpochTrigger`)
    reads_visits = False

    def limits(self, visits_before: np.ndarray, previous_epoch_visits: np.ndarray,
               epoch_start: int) -> tuple[np.ndarray, float]:
        return np.maximum(1.0, previous_epoch_visits + 1.0), math.inf


class FixedLengthTrigger:
    """Epochs of a fixed number of steps, whatever the counts (UCRL-CMDP and primal-dual baselines).

    Parameters
    ----------
    length : int
        Steps per epoch, >= 1.
    """

    name = "fixed"
    #: the rule reads no counts, only the shape of the previous epoch's (see :class:`EpochTrigger`)
    reads_visits = False

    def __init__(self, length: int):
        if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 1:
            raise CurloptError(f"the epoch length must be an integer >= 1, got {length!r}.")
        self.length = int(length)
        self.rule = f"epochs of {self.length} steps, whatever the counts"

    def limits(self, visits_before: np.ndarray, previous_epoch_visits: np.ndarray,
               epoch_start: int) -> tuple[np.ndarray, float]:
        return np.full(np.shape(previous_epoch_visits), math.inf), float(self.length)


def reads_visits(trigger: Any) -> bool:
    """Whether ``trigger.limits`` reads its ``visits_before``: the ``reads_visits`` attribute of the class that
    defines the ``limits`` the trigger uses (True without one, for a ``limits`` set on the object itself, and for a
    subclass that overrides ``limits`` without declaring the attribute again)."""
    if "limits" in getattr(trigger, "__dict__", {}):
        return True
    cls = type(trigger)
    known = _READS_VISITS.get(cls)
    if known is None:  # looked up once per class (an agent asks at every epoch)
        known = _READS_VISITS[cls] = next(
            (bool(vars(klass).get("reads_visits", True)) for klass in cls.__mro__ if "limits" in vars(klass)), True)
    return known


#: :func:`reads_visits` of each trigger class asked so far
_READS_VISITS: dict[type, bool] = {}


#: triggers by name (the CLI's --epochs choices)
TRIGGERS: dict[str, type[EpochTrigger]] = {"doubling": DoublingTrigger, "linear": LinearTrigger, "linear-global": GlobalLinearTrigger,
            "linear-per-pair": PerPairLinearTrigger}


def make_trigger(trigger: str | EpochTrigger) -> EpochTrigger:
    """A trigger by name (a key of :data:`TRIGGERS`) or a trigger object (checked for ``limits``).

    A name gives a new trigger object each time, so agents never share a stateful trigger.
    """
    if isinstance(trigger, str):
        try:
            return TRIGGERS[trigger]()
        except KeyError:
            raise CurloptError(
                f"unknown epoch trigger {trigger!r}; use one of {', '.join(TRIGGERS)} or a trigger object."
            ) from None
    if not callable(getattr(trigger, "limits", None)):
        raise CurloptError(
            f"a trigger must be one of {', '.join(TRIGGERS)} or an object with a limits(visits_before,"
            f" previous_epoch_visits, epoch_start) method; got {type(trigger).__name__}."
        )
    return trigger


def trigger_rule(trigger: EpochTrigger) -> str:
    """A one-line description of ``trigger``'s rule: its ``rule`` attribute, else a generic one."""
    rule = getattr(trigger, "rule", None)
    if isinstance(rule, str) and rule:
        return rule
    return f"user trigger {type(trigger).__name__} (no rule attribute)"

