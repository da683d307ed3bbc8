"""Model files: a CMDP as one JSON document.

Format (``save_model`` writes it, ``load_model`` reads and validates it)::

    {
      "format": "curlopt-model", "version": 1,
      "name": "my-model",
      "rewards": [[[...]]],            # (K, S, A)
      "costs": [[[...]]],              # (d, S, A), may be []
      "kernel": [[[...]]],             # (S, A, S), or null when unknown
      "initial": [...],                # (S,), or null for uniform
      "objective": {"type": "Linear", "weights": [1.0]},
      "constraints": [{"type": "LinearBound", "weights": [-1.0, 0.0], "bound": 0.0}]
    }

A utility is ``{"type": <class name>, <constructor arguments>}`` for the built-in
utilities (Linear, SumOfLogs, AlphaFairness, MinOfLinear, Entropy, LinearBound,
MaxOfLinear, ConvexQuadratic, Norm). Custom utilities cannot be written to a file:
build such models in Python. Every problem is a :class:`ModelError` naming the key.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from . import utilities as U
from .errors import CurloptError, ModelError
from .model import CMDP

__all__ = ["save_model", "load_model", "utility_to_spec", "utility_from_spec", "MODEL_FORMAT"]

MODEL_FORMAT = "curlopt-model"
_VERSION = 1


def utility_to_spec(utility: U.Utility) -> dict[str, Any]:
    """The JSON description of a built-in utility."""
    t = type(utility).__name__
    if isinstance(utility, U.Linear):
        return {"type": t, "weights": utility.weights.tolist(), "offset": float(utility.offset[0])}
    if isinstance(utility, U.LinearBound):
        return {"type": t, "weights": utility.weights.tolist(), "bound": utility.bound}
    if isinstance(utility, U.SumOfLogs):
        return {"type": t, "weights": utility.weights.tolist(), "shift": utility.shift}
    if isinstance(utility, U.AlphaFairness):
        return {"type": t, "alpha": utility.alpha, "weights": utility.weights.tolist(), "shift": utility.shift}
    if isinstance(utility, U.MinOfLinear):
        return {"type": t, "matrix": utility.matrix.tolist(), "offset": utility.offset.tolist()}
    if isinstance(utility, U.MaxOfLinear):
        return {"type": t, "matrix": utility.matrix.tolist(), "bounds": (-utility.offset).tolist()}
    if isinstance(utility, U.Entropy):
        return {"type": t, "dim": utility.dim, "shift": utility.shift}
    if isinstance(utility, U.ConvexQuadratic):
        return {"type": t, "matrix": utility.matrix.tolist(), "linear": utility.linear.tolist(),
                "constant": utility.constant}
    if isinstance(utility, U.Norm):
        return {"type": t, "center": utility.center.tolist(), "radius": utility.radius,
                "ord": "inf" if utility.ord == math.inf else utility.ord}
    raise ModelError(f"{utility!r} is not a built-in utility and cannot be written to a model file; build the model in Python.")


_BUILDERS = {name: getattr(U, name) for name in (
    "Linear", "LinearBound", "SumOfLogs", "AlphaFairness", "MinOfLinear", "MaxOfLinear", "Entropy",
    "ConvexQuadratic", "Norm")}


def utility_from_spec(spec: Any, where: str) -> U.Utility:
    """Build a utility from its JSON description (``where`` names it in errors)."""
    if not isinstance(spec, dict) or "type" not in spec:
        raise ModelError(f"{where} must be an object with a 'type' key, got {spec!r}.")
    kind = spec["type"]
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise ModelError(f"{where}: unknown utility type {kind!r}; known: {', '.join(sorted(_BUILDERS))}.")
    arguments = {k: v for k, v in spec.items() if k != "type"}
    if kind == "Norm" and arguments.get("ord") == "inf":
        arguments["ord"] = math.inf
    try:
        return builder(**arguments)
    except TypeError as exc:
        raise ModelError(f"{where} ({kind}): {exc}") from None
    except CurloptError as exc:
        raise ModelError(f"{where} ({kind}): {exc}") from None


def save_model(model: CMDP, path: str | os.PathLike) -> Path:
    """Write ``model`` as a JSON model file (atomically)."""
    data = {
        "format": MODEL_FORMAT, "version": _VERSION, "name": model.name,
        "rewards": model.rewards.tolist(), "costs": model.costs.tolist(),
        "kernel": None if model.kernel is None else model.kernel.tolist(),
        "initial": model.initial.tolist(),
        "objective": utility_to_spec(model.objective),
        "constraints": [utility_to_spec(g) for g in model.constraints],
    }
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data))
    os.replace(temporary, path)
    return path


def load_model(path: str | os.PathLike) -> CMDP:
    """Read and validate a JSON model file.

    Raises
    ------
    ModelError
        If the file is missing, is not JSON, is not a curlopt model, or holds invalid data.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ModelError(f"no model file at {path}.") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelError(f"the model file {path} is not valid JSON ({exc}).") from None
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        raise ModelError(f"{path} is not a curlopt model file (expected \"format\": \"{MODEL_FORMAT}\").")
    if data.get("version") != _VERSION:
        raise ModelError(f"{path}: model file version {data.get('version')!r} is not supported (this is {_VERSION}).")
    for key in ("rewards", "objective"):
        if key not in data:
            raise ModelError(f"{path}: the key {key!r} is missing.")
    costs = data.get("costs")
    if costs is not None and np.size(np.asarray(costs, dtype=object)) == 0:
        costs = None
    constraints = data.get("constraints") or []
    if not isinstance(constraints, list):
        raise ModelError(f"{path}: 'constraints' must be a list of utilities.")
    return CMDP(
        rewards=data["rewards"],
        costs=costs,
        objective=utility_from_spec(data["objective"], "objective"),
        constraints=[utility_from_spec(g, f"constraints[{m}]") for m, g in enumerate(constraints)],
        kernel=data.get("kernel"),
        initial=data.get("initial"),
        name=str(data.get("name", path.stem)),
    )
