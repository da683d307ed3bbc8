"""Utilities: the concave objectives f and convex constraints g (the protocol and the library), their
backend-neutral forms (:mod:`curlopt.utilities.forms`, compiled by each backend), and safe mode's augmented
utilities. Imports numpy only.

The forms are not re-exported here (several share a name with a utility, e.g. ``Entropy``): import them from
:mod:`curlopt.utilities.forms`.
"""

from __future__ import annotations

from .augmented import AugmentedUtility
from .library import (
    UTILITY_TYPES,
    AlphaFairness,
    ConvexQuadratic,
    CustomUtility,
    Entropy,
    Linear,
    LinearBound,
    MaxOfLinear,
    MinOfLinear,
    Norm,
    SumOfLogs,
    Utility,
    curvature_violation,
    onto_domain,
    register_utility,
)

__all__ = [
    "Utility",
    "UTILITY_TYPES",
    "register_utility",
    "Linear",
    "SumOfLogs",
    "AlphaFairness",
    "MinOfLinear",
    "Entropy",
    "LinearBound",
    "MaxOfLinear",
    "ConvexQuadratic",
    "Norm",
    "CustomUtility",
    "curvature_violation",
    "onto_domain",
    "AugmentedUtility",
]
