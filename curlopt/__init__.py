"""curlopt: concave-utility constrained RL with zero constraint violations.

The optimisation layer (models, utilities, programs, backends, the optimum) is
importable alone: ``import curlopt`` loads numpy and scipy only. Names are
resolved lazily on first use; agents, environments and plotting live in
subpackages imported only when asked for.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__version__ = "0.1.0"

_API = {
    # model and utilities
    "CMDP": "curlopt.models.cmdp",
    "EpisodicCMDP": "curlopt.models.episodic",
    "DiscountedCMDP": "curlopt.models.discounted",
    "stationary_occupancy": "curlopt.models.cmdp",
    "Utility": "curlopt.utilities.library",
    "Linear": "curlopt.utilities.library",
    "SumOfLogs": "curlopt.utilities.library",
    "AlphaFairness": "curlopt.utilities.library",
    "MinOfLinear": "curlopt.utilities.library",
    "Entropy": "curlopt.utilities.library",
    "LinearBound": "curlopt.utilities.library",
    "MaxOfLinear": "curlopt.utilities.library",
    "ConvexQuadratic": "curlopt.utilities.library",
    "Norm": "curlopt.utilities.library",
    "CustomUtility": "curlopt.utilities.library",
    "diagnose": "curlopt.diagnostics",
    # programs
    "OccupancyProgram": "curlopt.programs.occupancy",
    "OptimisticProgram": "curlopt.programs.optimistic",
    "BoxOptimisticProgram": "curlopt.programs.optimistic",
    "tightness": "curlopt.programs.tightness",
    # backends and results
    "Backend": "curlopt.backends",
    "get_backend": "curlopt.backends",
    "register_backend": "curlopt.backends",
    "installed_backends": "curlopt.backends",
    "backend_names": "curlopt.backends",
    "choose_backend": "curlopt.backends",
    "SolveResult": "curlopt.backends.results",
    "Status": "curlopt.backends.results",
    "ProgramVariant": "curlopt.backends.results",
    "policy_from_occupancy": "curlopt.programs.policy",
    "solve_optimum": "curlopt.optimum",
    "build_model": "curlopt.models",
    "save_model": "curlopt.models.files",
    "load_model": "curlopt.models.files",
    # errors
    "CurloptError": "curlopt.errors",
    "ModelError": "curlopt.errors",
    "UtilityError": "curlopt.errors",
    "ProgramError": "curlopt.errors",
    "BackendError": "curlopt.errors",
    "UnsupportedUtilityError": "curlopt.errors",
    "BackendNotInstalledError": "curlopt.errors",
    "EnvError": "curlopt.errors",
    "AgentError": "curlopt.errors",
    "UnsupportedModelError": "curlopt.errors",
}

__all__ = sorted(_API) + ["__version__"]


def _lazy_api(package: str, api: dict[str, str], names: list[str]) -> tuple[Any, Any]:
    """``__getattr__`` and ``__dir__`` for ``package``: each name of ``api`` is imported from its module on
    first use and then kept in the package (also used by :mod:`curlopt.testing`, which imports nothing else)."""

    def __getattr__(name: str) -> Any:
        module = api.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return names

    return __getattr__, __dir__


__getattr__, __dir__ = _lazy_api(__name__, _API, __all__)
