"""curlopt: concave-utility constrained RL with zero constraint violations.

The optimisation layer (models, utilities, programs, backends, the optimum) is
importable alone: ``import curlopt`` loads numpy and scipy only. Names are
resolved lazily on first use; agents, environments and plotting live in
subpackages imported only when asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API = {
    # model and utilities
    "CMDP": "curlopt.model",
    "stationary_occupancy": "curlopt.model",
    "Utility": "curlopt.utilities",
    "Linear": "curlopt.utilities",
    "SumOfLogs": "curlopt.utilities",
    "AlphaFairness": "curlopt.utilities",
    "MinOfLinear": "curlopt.utilities",
    "Entropy": "curlopt.utilities",
    "LinearBound": "curlopt.utilities",
    "MaxOfLinear": "curlopt.utilities",
    "ConvexQuadratic": "curlopt.utilities",
    "Norm": "curlopt.utilities",
    "CustomUtility": "curlopt.utilities",
    "diagnose": "curlopt.diagnostics",
    # programs
    "OccupancyProgram": "curlopt.program",
    "OptimisticProgram": "curlopt.program",
    "BoxOptimisticProgram": "curlopt.program",
    "tightness": "curlopt.program",
    # backends and results
    "Backend": "curlopt.backends",
    "get_backend": "curlopt.backends",
    "register_backend": "curlopt.backends",
    "installed_backends": "curlopt.backends",
    "backend_names": "curlopt.backends",
    "choose_backend": "curlopt.backends",
    "SolveResult": "curlopt.results",
    "Status": "curlopt.results",
    "ProgramVariant": "curlopt.results",
    "policy_from_occupancy": "curlopt.results",
    "solve_optimum": "curlopt.optimum",
    "build_model": "curlopt.models",
    "save_model": "curlopt.modelfile",
    "load_model": "curlopt.modelfile",
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


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'curlopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
