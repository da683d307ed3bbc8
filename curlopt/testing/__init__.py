"""Testing tools that ship with curlopt: the backend conformance suite and what it is built from.

* :func:`run_conformance` — checks a backend (ours or one written elsewhere) against
  independently computed answers, and reports which check failed;
* :mod:`curlopt.testing.reference` — reference solvers written again from the
  formulas of docs/math.md on ``scipy.optimize.linprog`` (imports nothing of curlopt),
  and :func:`model_optimum` for numbers such as the queue's optimum;
* :mod:`curlopt.testing.cases` — random problem instances (:class:`Case`) from a seed;
* :mod:`curlopt.testing.strategies` — Hypothesis strategies over those instances. It is
  the only module here that imports Hypothesis, and only when it is imported itself.

``import curlopt`` imports none of this; ``import curlopt.testing`` imports no solver,
no Hypothesis and no pytest (names below are loaded on first use).
"""

from __future__ import annotations

from .. import _lazy_api

_API = {
    "run_conformance": "curlopt.testing.conformance",
    "ConformanceReport": "curlopt.testing.conformance",
    "ConformanceError": "curlopt.testing.conformance",
    "CheckResult": "curlopt.testing.conformance",
    "Tolerances": "curlopt.testing.conformance",
    "CHECK_NAMES": "curlopt.testing.conformance",
    "check_solution": "curlopt.testing.conformance",
    "Case": "curlopt.testing.cases",
    "draw_case": "curlopt.testing.cases",
    "random_case": "curlopt.testing.cases",
    "model_optimum": "curlopt.testing.reference",
    "solve_reference": "curlopt.testing.reference",
}

__all__ = sorted(_API)


__getattr__, __dir__ = _lazy_api(__name__, _API, __all__)
