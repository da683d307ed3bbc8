"""Epoch triggers (SPEC §5) as small strategy objects.

A trigger is asked once, at the start of an epoch, for its limits: a per-pair
threshold array and a maximum epoch length. The epoch ends after the first step
at which some pair's within-epoch count ``ν_e(s,a)`` reaches its threshold, or
when the epoch has lasted ``max_length`` steps. Stating a trigger this way lets
the fast stepping path check it with one comparison per step.

A user-supplied trigger is any object with a ``limits(visits_before,
previous_epoch_visits, epoch_start)`` method returning ``(thresholds, max_length)``
(a name for records is taken from its ``name`` attribute when present).
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import CurloptError

__all__ = ["EpochTrigger", "DoublingTrigger", "LinearTrigger", "PerPairLinearTrigger", "FixedLengthTrigger", "TRIGGERS", "make_trigger"]


@runtime_checkable
class EpochTrigger(Protocol):
    """What the learning loop asks of a trigger."""

    def limits(self, visits_before: np.ndarray, previous_epoch_visits: np.ndarray, epoch_start: int) -> tuple[np.ndarray, float]:
        """Per-pair thresholds on ``ν_e`` (shape (S, A), ``inf`` for none) and a maximum epoch length."""


class DoublingTrigger:
    """End the epoch when some pair has ``ν_e(s,a) >= max(1, N_e(s,a))`` (the analysed schedule)."""

    name = "doubling"

    def limits(self, visits_before, previous_epoch_visits, epoch_start):
        return np.maximum(1.0, visits_before), math.inf


class LinearTrigger:
    """Linearly growing epochs: end when some pair has ``ν_e(s,a) >= max(1, max_{s',a'} ν_{e-1}(s',a') + 1)``.

    SPEC §5 writes the threshold as ``max(1, ν_{e-1}(s,a) + 1)`` and promises
    epochs whose lengths grow roughly linearly, ``O(SA + sqrt(SAT))`` of them.
    Read per pair, the rule does the opposite: a pair not visited in the previous
    epoch gets threshold 1, so one short epoch makes the next one short too (on
    the queue, 92,501 epochs in 100,000 steps). We read ``ν_{e-1}`` as the
    previous epoch's largest per-pair count. The previous epoch ended when its
    triggering pair reached that epoch's threshold, so epoch ``e`` ends when some
    pair has been visited ``e`` times: epoch lengths grow linearly and there are
    ``O(sqrt(SAT))`` epochs. The per-pair reading is :class:`PerPairLinearTrigger`.
    """

    name = "linear"

    def limits(self, visits_before, previous_epoch_visits, epoch_start):
        largest = float(np.max(previous_epoch_visits)) if np.size(previous_epoch_visits) else 0.0
        return np.full(np.shape(visits_before), max(1.0, largest + 1.0)), math.inf


class PerPairLinearTrigger:
    """SPEC §5's linear rule read per pair: ``ν_e(s,a) >= max(1, ν_{e-1}(s,a) + 1)``.

    Kept for comparison. Epochs collapse to a few steps once the policy spreads
    over several pairs (see :class:`LinearTrigger`).
    """

    name = "linear-per-pair"

    def limits(self, visits_before, previous_epoch_visits, epoch_start):
        return np.maximum(1.0, previous_epoch_visits + 1.0), math.inf


class FixedLengthTrigger:
    """Epochs of a fixed number of steps, whatever the counts (UCRL-CMDP and primal-dual baselines).

    Parameters
    ----------
    length : int
        Steps per epoch, >= 1.
    """

    name = "fixed"

    def __init__(self, length: int):
        if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 1:
            raise CurloptError(f"the epoch length must be an integer >= 1, got {length!r}.")
        self.length = int(length)

    def limits(self, visits_before, previous_epoch_visits, epoch_start):
        return np.full(np.shape(visits_before), math.inf), float(self.length)


#: triggers by name (the CLI's --epochs choices)
TRIGGERS = {"doubling": DoublingTrigger, "linear": LinearTrigger, "linear-per-pair": PerPairLinearTrigger}


def make_trigger(trigger: str | EpochTrigger) -> EpochTrigger:
    """A trigger by name (``"doubling"``, ``"linear"``, ``"linear-per-pair"``) or a trigger object (checked for ``limits``)."""
    if isinstance(trigger, str):
        try:
            return TRIGGERS[trigger]()
        except KeyError:
            raise CurloptError(
                f"unknown epoch trigger {trigger!r}; use one of {', '.join(TRIGGERS)} or a trigger object."
            ) from None
    if not callable(getattr(trigger, "limits", None)):
        raise CurloptError(
            f"a trigger must be 'doubling', 'linear' or an object with a limits(visits_before,"
            f" previous_epoch_visits, epoch_start) method; got {type(trigger).__name__}."
        )
    return trigger
