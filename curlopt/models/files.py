"""Model files: a CMDP as one JSON document.

Format (``save_model`` writes it, ``load_model`` reads and validates it)::

    {
      "format": "curlopt-model", "version": 1,
      "name": "my-model",
      "rewards": [[[...]]],            # (K, S, A)
      "costs": [[[...]]],              # (d, S, A), may be []
      "kernel": [[[...]]],             # (S, A, S), or null when unknown, or a sparse kernel (below)
      "initial": [...],                # (S,), or null for uniform
      "objective": {"type": "Linear", "weights": [1.0]},
      "constraints": [{"type": "LinearBound", "weights": [-1.0, 0.0], "bound": 0.0}]
    }

A model whose kernel is stored sparse (:attr:`curlopt.CMDP.sparse`) is written in version 2, with its kernel as
the CSR arrays of the (S·A, S) matrix whose row ``s·A + a`` holds ``P(·|s,a)``::

      "kernel": {"format": "csr", "shape": [S·A, S], "indptr": [...], "indices": [...], "data": [...]}

(``indptr`` of length S·A + 1, ``indices`` the successors, ``data`` their probabilities), and it is read back
sparse, with the same arrays. A dense model is written as before, in version 1, so a file written by an older
curlopt reads the same and an older curlopt reads every dense model file. One JSON document keeps the atomic
write; its size limit (below) bounds a sparse model at about three million nonzeros (with its signals).

A model of another criterion than the long-run average is written in version 3, with its keys::

      "horizon": H,                    # an episodic model (curlopt.EpisodicCMDP)
      "safe_policy": [[[...]]],        # (H, S, A), or null when none is declared
      "step_kernels": [...],           # H − 1 kernels (dense or CSR, as "kernel"), with "kernel": null, when the
                                       # kernel changes with the step
      "rewards": [[[[...]]]],          # (H, K, S, A) when the signals change with the step (costs likewise)
      "discount": γ,                   # a discounted model (curlopt.models.DiscountedCMDP), 0 < γ < 1

so an older curlopt refuses such a file rather than reading another problem from it.

A utility is ``{"type": <class name>, <constructor arguments>}``, written by its
``to_spec()`` and read by its class's ``from_spec()``, for the utility types in
:data:`curlopt.utilities.library.UTILITY_TYPES` (the built-in Linear, SumOfLogs,
AlphaFairness, MinOfLinear, Entropy, LinearBound, MaxOfLinear, ConvexQuadratic,
Norm, and any type registered with :func:`curlopt.utilities.library.register_utility`).
A utility of the user's own is named by import path, ``{"type": "package.module:Name", "args": {...}}``, and built
as ``Name(**args)`` where the file is loaded (so ``compare-solvers`` and studies take it); a utility class writes
itself that way when its ``to_spec()`` returns that form. A :class:`~curlopt.utilities.library.CustomUtility` made
of callables cannot be written to a file.
Every problem is a :class:`ModelError` naming the key (and nothing else escapes
``load_model``: deeply nested JSON, huge integers, wrong types). A file larger
than :data:`curlopt.fileio.MAX_READ_BYTES` (64 MiB), or an endless one such as a
link to ``/dev/zero``, is refused after reading that much. ``save_model`` writes
atomically through :mod:`curlopt.fileio`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import CurloptError, ModelError, UtilityError
from ..fileio import MAX_READ_BYTES, atomic_write_text, read_bytes_limited
from ..utilities import library as U
from .cmdp import CMDP
from .discounted import DiscountedCMDP
from .episodic import EpisodicCMDP

__all__ = ["save_model", "load_model", "utility_to_spec", "utility_from_spec", "MODEL_FORMAT"]

MODEL_FORMAT = "curlopt-model"
#: version 1: dense kernels only; version 2: the kernel may be a CSR matrix. Each file is written in the lowest
#: version that holds it.
_VERSION = 1
_SPARSE_VERSION = 2
#: version 3: a criterion other than the long-run average (the keys horizon, step kernels, per-step signals,
#: safe_policy, or discount), so that an older curlopt refuses such a file instead of reading another problem
_CRITERION_VERSION = 3
_VERSIONS = (_VERSION, _SPARSE_VERSION, _CRITERION_VERSION)


def utility_to_spec(utility: U.Utility) -> dict[str, Any]:
    """The JSON description of a utility of a registered type (:data:`curlopt.utilities.library.UTILITY_TYPES`).

    Raises
    ------
    ModelError
        For a utility of another type (e.g. a :class:`~curlopt.utilities.library.CustomUtility`).
    """
    try:
        return utility.to_spec()
    except UtilityError:
        raise ModelError(
            f"{utility!r} is not a built-in utility and cannot be written to a model file; build the model in Python."
        ) from None


def utility_from_spec(spec: Any, where: str) -> U.Utility:
    """Build a utility from its JSON description (``where`` names it in errors)."""
    if not isinstance(spec, dict) or "type" not in spec:
        raise ModelError(f"{where} must be an object with a 'type' key, got {spec!r}.")
    kind = spec["type"]
    if isinstance(kind, str) and ":" in kind:
        return _imported_utility(kind, spec, where)
    builder = U.UTILITY_TYPES.get(kind) if isinstance(kind, str) else None
    if builder is None:
        raise ModelError(f"{where}: unknown utility type {kind!r}; known: {', '.join(sorted(U.UTILITY_TYPES))}.")
    try:
        return builder.from_spec(spec)
    except TypeError as exc:
        raise ModelError(f"{where} ({kind}): {exc}") from None
    except CurloptError as exc:
        raise ModelError(f"{where} ({kind}): {exc}") from None
    except (ValueError, OverflowError, RecursionError, ZeroDivisionError) as exc:  # e.g. a 400-digit integer
        raise ModelError(f"{where} ({kind}): invalid arguments ({type(exc).__name__}: {exc}).") from None


def _imported_utility(kind: str, spec: dict[str, Any], where: str) -> U.Utility:
    """A utility named by import path, ``{"type": "package.module:Name", "args": {...}}``: ``Name(**args)``.

    ``Name`` is a Utility class or a function returning a Utility, importable where the model is loaded (it runs
    that code, as an ``import`` in a script would: load only model files you trust)."""
    import importlib

    module_name, _, attribute = kind.partition(":")
    extra = sorted(set(spec) - {"type", "args"})
    if extra:
        raise ModelError(f"{where} ({kind}): a utility named by import path takes only 'type' and 'args', got"
                         f" {', '.join(map(repr, extra))}.")
    args = spec.get("args", {})
    if not isinstance(args, dict) or not all(isinstance(key, str) for key in args):
        raise ModelError(f"{where} ({kind}): 'args' must be an object of keyword arguments, got {args!r}.")
    if not module_name or not attribute.isidentifier():
        raise ModelError(f"{where}: a utility named by import path is 'package.module:Name', got {kind!r}.")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except ImportError as exc:
        raise ModelError(f"{where}: cannot import the module of utility {kind!r} ({exc}); is it on the Python"
                         " path where the model is loaded?") from None
    except AttributeError:
        raise ModelError(f"{where}: module {module_name!r} has no {attribute!r} (utility {kind!r}).") from None
    try:
        utility = factory(**args)
    except CurloptError as exc:
        raise ModelError(f"{where} ({kind}): {exc}") from None
    except Exception as exc:  # the user's constructor: any failure is a bad argument list for this model file
        raise ModelError(f"{where} ({kind}): building it with args {args!r} raised {type(exc).__name__}: {exc}") from None
    if not isinstance(utility, U.Utility):
        raise ModelError(f"{where}: {kind}(**args) must give a curlopt Utility, got {type(utility).__name__}.")
    return utility


def save_model(model: CMDP, path: str | os.PathLike) -> Path:
    """Write ``model`` as a JSON model file, atomically (:func:`curlopt.fileio.atomic_write_text`).

    Concurrent saves of the same path never fail and a concurrent reader sees
    the old file or the new one, never a partial file; a failed write (e.g. a
    full disk) leaves no temporary file.

    Raises
    ------
    ModelError
        For something that is not a model, or a model with a custom utility.
    OSError
        When the file cannot be written.
    """
    if not isinstance(model, CMDP):
        raise ModelError(f"model must be a curlopt CMDP, got {type(model).__name__}.")
    path = _path_argument(path)
    data = {
        "format": MODEL_FORMAT, "version": _SPARSE_VERSION if model.sparse else _VERSION, "name": model.name,
        "rewards": model.rewards.tolist(), "costs": model.costs.tolist(),
        "kernel": _kernel_to_json(model),
        "initial": model.initial.tolist(),
        "objective": utility_to_spec(model.objective),
        "constraints": [utility_to_spec(g) for g in model.constraints],
    }
    criterion = _criterion_to_json(model)
    if criterion:
        data.update(criterion, version=_CRITERION_VERSION)
    return atomic_write_text(path, json.dumps(data))


def _path_argument(path: Any) -> Path:
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or not str(os.fspath(path)).strip():
        raise ModelError(f"path must be a file path (a non-empty str or os.PathLike), got {path!r}.")
    return Path(path)


def load_model(path: str | os.PathLike) -> CMDP:
    """Read and validate a JSON model file.

    Raises
    ------
    ModelError
        If the file is missing, is not JSON, is not a curlopt model, or holds invalid data.
    """
    path = _path_argument(path)
    try:
        text = read_bytes_limited(path, MAX_READ_BYTES, "model file").decode("utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise ModelError(f"no model file at {path}.") from None
    except IsADirectoryError:
        raise ModelError(f"{path} is a directory, not a model file.") from None
    except CurloptError as exc:  # larger than MAX_READ_BYTES (e.g. a link to /dev/zero)
        raise ModelError(str(exc)) from None
    except OSError as exc:
        raise ModelError(f"the model file {path} cannot be read ({exc.strerror or exc}).") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise ModelError(f"the model file {path} is not valid JSON ({reason}).") from None
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        raise ModelError(f"{path} is not a curlopt model file (expected \"format\": \"{MODEL_FORMAT}\").")
    version = data.get("version")
    if isinstance(version, bool) or version not in _VERSIONS:
        raise ModelError(f"{path}: model file version {version!r} is not supported (this curlopt reads versions"
                         f" {', '.join(map(str, _VERSIONS))}).")
    for key in ("rewards", "objective"):
        if key not in data:
            raise ModelError(f"{path}: the key {key!r} is missing.")
    costs = data.get("costs")
    if isinstance(costs, list) and not _holds_a_number(costs):
        costs = None  # [] or [[], ...]: no cost signals
    constraints = data.get("constraints") or []
    if not isinstance(constraints, list):
        raise ModelError(f"{path}: 'constraints' must be a list of utilities.")
    name = data.get("name", path.stem)
    if not isinstance(name, str):
        raise ModelError(f"{path}: 'name' must be a string, got {type(name).__name__}.")
    kernel = _kernel_from_json(data.get("kernel"), path)
    _check_signals_against_kernel(data["rewards"], kernel, path)
    arguments = dict(
        rewards=data["rewards"],
        costs=costs,
        objective=utility_from_spec(data["objective"], "objective"),
        constraints=[utility_from_spec(g, f"constraints[{m}]") for m, g in enumerate(constraints)],
        kernel=kernel,
        initial=data.get("initial"),
        name=name,
    )
    return _model_of_criterion(data, arguments, path)


def _kernel_sizes(kernel: Any) -> tuple[int, int] | None:
    """(S, A) as the kernel gives them: a CSR matrix of shape (S·A, S), or nested lists (S, A, S) read along their
    first entries (the model checks the rest); None when the kernel does not say."""
    if sp.issparse(kernel):
        pairs, states = kernel.shape
        return (states, pairs // states) if states and pairs % states == 0 else None
    sizes: list[int] = []
    node = kernel
    while isinstance(node, list) and node and len(sizes) < 3:
        sizes.append(len(node))
        node = node[0]
    return (sizes[0], sizes[1]) if len(sizes) == 3 and sizes[0] == sizes[2] else None


def _check_signals_against_kernel(rewards: Any, kernel: Any, path: Path) -> None:
    """Refuse rewards whose (S, A) is not the kernel's, naming the rewards (the model would take S and A from them
    and blame the costs or the kernel)."""
    sizes = _kernel_sizes(kernel)
    if sizes is None:
        return
    try:
        shape = np.asarray(rewards, dtype=float).shape
    except (TypeError, ValueError, OverflowError, RecursionError):
        return  # not an array of numbers: the model says so
    if len(shape) in (2, 3) and shape[-2:] != sizes:
        count = f"{shape[0]}, " if len(shape) == 3 else ""
        raise ModelError(f"{path}: rewards has shape {shape}, but the kernel has S={sizes[0]} states and"
                         f" A={sizes[1]} actions: expected ({count}{sizes[0]}, {sizes[1]}).")


def _holds_a_number(value: Any) -> bool:
    """Whether nested lists hold anything but lists (iteratively deep enough for any array the model takes)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if not isinstance(item, list):
            return True
        stack.extend(item)
    return False


def _kernel_to_json(model: CMDP) -> Any:
    """The kernel as nested lists (S, A, S), as the CSR arrays of a sparse one, or None when unknown."""
    matrix = model.transitions if model.sparse else None
    if matrix is not None:
        return {"format": "csr", "shape": list(matrix.shape), "indptr": matrix.indptr.tolist(),
                "indices": matrix.indices.tolist(), "data": matrix.data.tolist()}
    return None if model.kernel is None else model.kernel.tolist()


def _kernel_from_json(value: Any, path: Path) -> Any:
    """The file's kernel: nested lists as they are (the CMDP checks them), a CSR object as a scipy matrix."""
    if not isinstance(value, dict):
        return value
    if value.get("format") != "csr" or set(value) != {"format", "shape", "indptr", "indices", "data"}:
        raise ModelError(f"{path}: a sparse 'kernel' must be an object with the keys format (\"csr\"), shape,"
                         f" indptr, indices and data, got the keys {sorted(value)}.")
    shape = value["shape"]
    if not isinstance(shape, list) or len(shape) != 2 or not all(_is_count(n) for n in shape):
        raise ModelError(f"{path}: kernel.shape must be [S·A, S] (two integers >= 0), got {shape!r}.")
    if max(shape) > _MAX_DIMENSION:
        raise ModelError(f"{path}: kernel.shape {shape!r} is larger than any model (each of S·A and S at most"
                         f" {_MAX_DIMENSION:,}).")
    indptr = _integers(value["indptr"], f"{path}: kernel.indptr")
    indices = _integers(value["indices"], f"{path}: kernel.indices")
    data = value["data"]
    if not isinstance(data, list) or len(data) != indices.size:
        raise ModelError(f"{path}: kernel.data must be a list of as many numbers as kernel.indices ({indices.size}).")
    if indptr.size != shape[0] + 1 or (indptr.size and (indptr[0] != 0 or indptr[-1] != indices.size)) \
            or np.any(np.diff(indptr) < 0):
        raise ModelError(f"{path}: kernel.indptr must rise from 0 to len(indices) = {indices.size} in"
                         f" shape[0] + 1 = {shape[0] + 1} steps, never decreasing.")
    if np.any((indices < 0) | (indices >= shape[1])):
        raise ModelError(f"{path}: kernel.indices must be successor states in 0..{shape[1] - 1}.")
    # numbers only: numpy would read "0.4" as 0.4 and true as 1.0
    wrong = [v for v in data if isinstance(v, bool) or not isinstance(v, (int, float))]
    if wrong:
        raise ModelError(f"{path}: kernel.data must be a list of numbers, got {wrong[0]!r}.")
    try:
        numbers = np.array(data, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ModelError(f"{path}: kernel.data must be a list of numbers ({exc}).") from None
    _refuse_duplicates(indptr, indices, shape, path)
    return sp.csr_array((numbers, indices, indptr), shape=tuple(shape))


#: the largest S·A or S a sparse kernel's shape may give (index arrays are 32-bit in scipy below this)
_MAX_DIMENSION = 2 ** 31 - 1


def _refuse_duplicates(indptr: np.ndarray, indices: np.ndarray, shape: list[int], path: Path) -> None:
    """Refuse a row that lists a successor twice: scipy would add the two entries silently."""
    rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(indptr))
    keys = rows * max(shape[1], 1) + indices
    order = np.argsort(keys, kind="stable")
    twice = np.flatnonzero(np.diff(keys[order]) == 0)
    if twice.size:
        entry = order[twice[0]]
        raise ModelError(f"{path}: kernel row {int(rows[entry])} (s·A + a) lists the successor {int(indices[entry])}"
                         " more than once: give each successor once, with its whole probability.")


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _integers(value: Any, where: str) -> np.ndarray:
    """A JSON list of integers as an int64 array (booleans and fractions refused, not converted)."""
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ModelError(f"{where} must be a list of integers.")
    try:
        return np.array(value, dtype=np.int64).reshape(-1)
    except OverflowError:
        raise ModelError(f"{where} holds an integer too large for an index.") from None


def _criterion_to_json(model: CMDP) -> dict[str, Any]:
    """The keys of an episodic model (horizon, per-step arrays, safe policy) or a discounted one (discount)."""
    if isinstance(model, DiscountedCMDP):
        return {"discount": model.discount}
    if not isinstance(model, EpisodicCMDP):
        return {}
    keys: dict[str, Any] = {"horizon": model.horizon,
                            "safe_policy": None if model.safe_policy is None else model.safe_policy.tolist()}
    if model.signals_per_step:
        keys["rewards"], keys["costs"] = model.step_rewards.tolist(), model.step_costs.tolist()
    if not model.time_homogeneous:
        keys["kernel"] = None
        keys["step_kernels"] = [_one_kernel_to_json(model.step_kernel(h)) for h in range(model.horizon - 1)]
    return keys


def _one_kernel_to_json(kernel: Any) -> Any:
    if sp.issparse(kernel):
        return {"format": "csr", "shape": list(kernel.shape), "indptr": kernel.indptr.tolist(),
                "indices": kernel.indices.tolist(), "data": kernel.data.tolist()}
    return np.asarray(kernel).tolist()


def _model_of_criterion(data: dict, arguments: dict[str, Any], path: Path) -> CMDP:
    """A CMDP, an EpisodicCMDP (a "horizon" key) or a DiscountedCMDP (a "discount" key) from the file's keys."""
    if "horizon" in data and "discount" in data:
        raise ModelError(f"{path}: a model has a horizon or a discount, not both.")
    keys = sorted(key for key in ("horizon", "discount", "step_kernels", "safe_policy") if key in data)
    if keys and data.get("version") != _CRITERION_VERSION:
        # an older curlopt reads a version-1 or 2 file without these keys: the same file would be another problem
        raise ModelError(f"{path}: the key {keys[0]!r} needs \"version\": {_CRITERION_VERSION}, got version"
                         f" {data.get('version')!r}: a curlopt that reads only that version would ignore the key and"
                         " read a long-run average model from the same file.")
    if "discount" in data:
        return DiscountedCMDP(**arguments, discount=data["discount"])
    if "horizon" not in data:
        for key in ("step_kernels", "safe_policy"):
            if key in data:
                raise ModelError(f"{path}: the key {key!r} belongs to an episodic model, which needs a 'horizon'.")
        return CMDP(**arguments)
    steps = data.get("step_kernels")
    if steps is not None:
        if not isinstance(steps, list):
            raise ModelError(f"{path}: 'step_kernels' must be a list of H − 1 kernels.")
        if arguments["kernel"] is not None:
            raise ModelError(f"{path}: give 'kernel' (time-homogeneous) or 'step_kernels', not both.")
        arguments["kernel"] = [_step_kernel_from_json(kernel, path, h) for h, kernel in enumerate(steps)]
    return EpisodicCMDP(**arguments, horizon=data["horizon"], safe_policy=data.get("safe_policy"))


def _step_kernel_from_json(value: Any, path: Path, h: int) -> Any:
    """:func:`_kernel_from_json` for ``step_kernels[h]``, its errors naming the step (as the model's do)."""
    try:
        return _kernel_from_json(value, path)
    except ModelError as exc:
        prefix = f"{path}: "
        text = str(exc)[len(prefix):] if str(exc).startswith(prefix) else str(exc)
        raise ModelError(f"{path}: the kernel of step {h + 1} (step_kernels[{h}]): {text}") from None
