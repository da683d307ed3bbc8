"""Traces: what a run records, and its file format.

File format (``Trace.save`` / :func:`load_trace`): one JSON document (gzip-compressed
when the file name ends in ``.gz``), written atomically by :func:`curlopt.fileio.atomic_write_bytes`
(unique temporary file, fsync, rename). Non-finite numbers are written as Python's ``json`` module writes them
(``Infinity``, ``-Infinity``, ``NaN``), so they round-trip exactly. Keys:

``format``
    ``"curlopt-trace"``; ``version`` the format version (2).
``meta``
    The run: ``env``, ``agent``, ``trigger`` (the epoch rule's name) and
    ``trigger_rule`` (the rule in words), ``backend``, ``backend_version`` (the packages behind the backend, e.g.
    "highspy 1.15.1"), ``tightness``, ``seed``,
    ``steps``, ``path`` (``fast`` or ``generic``), ``curlopt_version`` and the
    agent's other options.
``optimum``
    ``objective`` f(λ*), ``rewards`` λ*, ``costs`` ζ*, ``constraint_values``,
    ``status`` and ``program`` of the known-model optimum (null without a model). ``program`` is ``fallback``
    when the model's constraints are infeasible: the optimum (and the regret) is then the one without them.
``checkpoints``
    Columns over the checkpoint times: ``t``, ``rewards`` λ^(t) (n×K), ``costs``
    ζ^(t) (n×d), ``objective`` f(λ^(t)), ``constraints`` g_m(ζ^(t)) (n×M),
    ``regret`` R(t) = f(λ*) − f(λ^(t)), ``violation`` C(t) = max_m (g_m(ζ^(t)))_+.
``epochs``
    One record per epoch (see :class:`EpochRecord`).
``wall_time``
    Seconds for the whole run.
``sha256``
    The SHA-256 (hex) of the document without this key, as :meth:`Trace.save` writes it (compact JSON, keys in
    the order above): a file edited by hand, or damaged in a way JSON still parses, no longer matches it, and
    :func:`load_trace` refuses it (a study then runs it again, and says so). Files written before the key existed
    have none and are read without the check.

Version history. Version 2 changed the meaning of the trigger name ``linear``
(now the paper's per-pair rule; the rule version 1 called ``linear`` is now
``linear-global``), added ``meta["trigger_rule"]`` and the epoch records'
``unreached`` count. :func:`load_trace` still reads version 1: it renames the
trigger ``linear`` to ``linear-global`` and notes it in
``meta["trigger_renamed_from"] = "linear"``, fills ``meta["trigger_rule"]`` for
the built-in rules, and leaves ``unreached`` None in its epoch records.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import re
import zlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import CurloptError
from ...fileio import atomic_write_bytes, read_bytes_limited

__all__ = ["EpochRecord", "Trace", "load_trace", "read_json_document", "TRACE_FORMAT", "TRACE_VERSION", "READABLE_VERSIONS"]

TRACE_FORMAT = "curlopt-trace"
TRACE_VERSION = 2
#: versions :func:`load_trace` reads (older ones are upgraded on loading)
READABLE_VERSIONS = (1, 2)
CHECKPOINT_COLUMNS = ("t", "rewards", "costs", "objective", "constraints", "regret", "violation")
#: :func:`load_trace` refuses a file, or a decompressed document, larger than this (1 GiB)
MAX_TRACE_BYTES = 2 ** 30


@dataclass
class EpochRecord:
    """One epoch of a run.

    Attributes
    ----------
    index : int
        0-based epoch number.
    start : int
        ``t_e``, the step (counted from 1) at which the epoch starts.
    length : int
        Steps played in the epoch.
    epsilon : float or None
        The tightness ε_e (None for agents without a program).
    source : str
        Where the policy came from: ``tight``, ``fallback``, ``least-violation``, ``kept-previous``,
        ``uniform-initial`` or ``update-rule`` (see :class:`curlopt.agents.PlanSource`).
    status : str
        The solver's status (empty for agents without a program).
    solve_time : float
        Seconds spent planning.
    iterations : int or None
        Solver iterations when reported.
    message : str
        What happened when it was not a plain optimal solve.
    exact_rewards, exact_costs : list of float or None
        Long-run λ and ζ of the epoch's policy on the true kernel (no sampling noise).
    exact_objective : float or None
        ``f`` of ``exact_rewards``.
    exact_constraints : list of float or None
        ``g_m`` of ``exact_costs``.
    unreached : int or None
        States with (numerically) zero mass in the plan's occupancy, whose policy
        rows were filled by the agent's ``unreached`` rule; None when the policy
        did not come from an occupancy (and in version-1 trace files).
    """

    index: int
    start: int
    length: int
    epsilon: float | None
    source: str
    status: str = ""
    solve_time: float = 0.0
    iterations: int | None = None
    message: str = ""
    exact_rewards: list[float] | None = None
    exact_costs: list[float] | None = None
    exact_objective: float | None = None
    exact_constraints: list[float] | None = None
    unreached: int | None = None


@dataclass
class Trace:
    """A run's record: metadata, the optimum, checkpoints and epochs."""

    meta: dict[str, Any]
    optimum: dict[str, Any] | None
    checkpoints: dict[str, np.ndarray]
    epochs: list[EpochRecord] = field(default_factory=list)
    wall_time: float = 0.0

    # -- summary --------------------------------------------------------------
    @property
    def fallback_epochs(self) -> int:
        """Epochs whose ε-tight program was infeasible (``fallback``, or safe mode's ``least-violation``)."""
        return sum(1 for e in self.epochs if e.source in ("fallback", "least-violation"))

    @property
    def failed_epochs(self) -> int:
        return sum(1 for e in self.epochs if e.source in ("kept-previous", "uniform-initial"))

    @property
    def optimum_infeasible(self) -> bool:
        """Whether the model's constraints are infeasible: its optimum is that of the program without them (the
        fallback), so ``optimum.objective`` and the regret are measured against the *unconstrained* optimum."""
        optimum = self.optimum
        return isinstance(optimum, dict) and (optimum.get("program") == "fallback"
                                              or optimum.get("status") == "infeasible")

    def summary(self) -> dict[str, Any]:
        """Final f(λ^), R(T), each g_m(ζ^), C(T), epochs, fallbacks, failures and wall time; ``optimum_infeasible``
        says whether the optimum (and so R(T)) is the one without constraints, the model's being infeasible."""
        c = self.checkpoints
        return {
            "steps": int(c["t"][-1]),
            "objective": float(c["objective"][-1]),
            "optimum": None if self.optimum is None else self.optimum.get("objective"),
            "optimum_infeasible": self.optimum_infeasible,
            "regret": float(c["regret"][-1]),
            "constraints": [float(v) for v in c["constraints"][-1]],
            "violation": float(c["violation"][-1]),
            "rewards": [float(v) for v in c["rewards"][-1]],
            "costs": [float(v) for v in c["costs"][-1]],
            "epochs": len(self.epochs),
            "fallback_epochs": self.fallback_epochs,
            "failed_epochs": self.failed_epochs,
            "wall_time": self.wall_time,
        }

    # -- files ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": TRACE_FORMAT,
            "version": TRACE_VERSION,
            "meta": self.meta,
            "optimum": self.optimum,
            "checkpoints": {k: np.asarray(v).tolist() for k, v in self.checkpoints.items()},
            "epochs": [_record_dict(e) for e in self.epochs],
            "wall_time": self.wall_time,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], checksum_checked: bool = False) -> Trace:
        """The trace of a document; its ``sha256`` is checked unless ``checksum_checked`` (the caller checked the
        bytes it was read from, as :func:`load_trace` does)."""
        if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
            raise CurloptError("not a curlopt trace (the 'format' key is missing or wrong).")
        if not checksum_checked:
            _check_checksum(data)
        version = data.get("version")
        if isinstance(version, bool) or version not in READABLE_VERSIONS:
            raise CurloptError(
                f"trace format version {version!r} is not supported (this is {TRACE_VERSION}; readable:"
                f" {', '.join(map(str, READABLE_VERSIONS))})."
            )
        try:
            if version == 1:
                data = _upgrade_version_1(data)
            for key in ("meta", "optimum", "checkpoints", "epochs", "wall_time"):
                if key not in data:
                    raise _Malformed(f"the key {key!r} is missing")
            meta, optimum = data["meta"], data["optimum"]
            if not isinstance(meta, dict):
                raise _Malformed(f"'meta' must be an object, got {_kind(meta)}")
            _check_optimum(optimum)
            checkpoints = _checkpoint_columns(data["checkpoints"], optimum)
            epochs = _epoch_records(data["epochs"])
            wall_time = data["wall_time"]
            if not _is_number(wall_time) or not math.isfinite(wall_time) or wall_time < 0:
                raise _Malformed(f"'wall_time' must be a finite number >= 0, got {_short(wall_time)}")
            return cls(meta, optimum, checkpoints, epochs, float(wall_time))
        except (_Malformed, KeyError, TypeError, ValueError, OverflowError, RecursionError) as exc:
            text = str(exc) if isinstance(exc, _Malformed) else f"{type(exc).__name__}: {exc}"
            raise CurloptError(f"the trace is incomplete or malformed ({text}).") from None

    def file_bytes(self, compress: bool = False) -> bytes:
        """The bytes :meth:`save` writes: the document as compact JSON with its ``sha256`` key last (gzip-compressed
        with a zero time stamp when ``compress``, at zlib's default level 6: level 9, gzip's default, took 2.4 times
        as long for 1% smaller files, and a study writes hundreds of them; the checksum is over the JSON, not these
        bytes)."""
        document = self.to_dict()
        payload = _compact(document)
        payload = payload[:-1] + b',"sha256":' + json.dumps(hashlib.sha256(payload).hexdigest()).encode() + b"}"
        return gzip.compress(payload, compresslevel=6, mtime=0) if compress else payload

    def save(self, path: str | os.PathLike) -> Path:
        """Write the trace atomically (gzip when the name ends in ``.gz``), creating its folder.

        Raises
        ------
        OSError
            When the file cannot be written (no temporary file is left behind).
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, self.file_bytes(compress=path.suffix == ".gz"))
        return path


def _record_dict(record: EpochRecord) -> dict[str, Any]:
    """``dataclasses.asdict(record)``, field by field: its fields are numbers, words and lists of numbers, so a copy
    of each list is the deep copy ``asdict`` makes through ``copy.deepcopy`` (which costs more than writing the
    file, at thousands of epochs a run)."""
    out = dict(vars(record))
    if tuple(out) != _RECORD_FIELDS:  # attributes added to the record, or a subclass's: its fields alone, in order
        out = {name: getattr(record, name) for name in _RECORD_FIELDS}
    for name, value in out.items():
        if isinstance(value, list):
            out[name] = list(value)
    return out


#: the fields of an epoch record, in their order
_RECORD_FIELDS = tuple(f.name for f in fields(EpochRecord))


def _compact(document: dict[str, Any]) -> bytes:
    """The document as :meth:`Trace.save` serialises it (the bytes its checksum is taken over)."""
    return json.dumps(document, separators=(",", ":")).encode()


def _check_checksum(data: dict[str, Any]) -> None:
    """Refuse a document whose ``sha256`` does not match its content (a document without one is not checked).

    JSON read back and written again with the same settings gives the same bytes (floats round-trip through
    ``repr``, keys keep their order), so the digest is taken over the document as it was written.
    """
    if "sha256" not in data:
        return
    recorded = data["sha256"]
    rest = {key: value for key, value in data.items() if key != "sha256"}
    try:
        actual = hashlib.sha256(_compact(rest)).hexdigest()
    except (TypeError, ValueError, RecursionError) as exc:
        raise CurloptError(f"the trace's content cannot be checked against its checksum ({type(exc).__name__}).") \
            from None
    if recorded != actual:
        raise CurloptError("the trace's content does not match its sha256 checksum: it was changed after it was"
                           " written (edited by hand, or damaged).")


#: the end of a document as :meth:`Trace.file_bytes` writes it: the checksum key, 64 hex digits, the closing brace
_CHECKSUM_TAIL = re.compile(rb',"sha256":"([0-9a-f]{64})"\}\s*\Z')


def _bytes_match_checksum(raw: bytes) -> bool:
    """Whether ``raw`` is a document as :meth:`Trace.file_bytes` wrote it, unchanged: the bytes before its
    ``sha256`` key, closed, hash to the recorded digest (the digest is taken over exactly those bytes). False
    when the layout differs or the digest does not match: :func:`_check_checksum` then decides on the parsed
    document (a file written otherwise, e.g. indented, is checked that way)."""
    match = _CHECKSUM_TAIL.search(raw, max(0, len(raw) - 100))
    if match is None:
        return False
    return hashlib.sha256(raw[:match.start()] + b"}").hexdigest() == match.group(1).decode()


def _upgrade_version_1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 trace dictionary in version-2 form (a shallow copy; the input is not changed).

    In version 1 the trigger ``linear`` was one global threshold (epoch e ends at
    some pair's e-th visit), which version 2 calls ``linear-global``.
    """
    from ...agents.triggers import TRIGGERS, make_trigger, trigger_rule

    data = dict(data)
    meta = data.get("meta")
    if not isinstance(meta, dict):
        raise TypeError(f"meta must be an object, got {type(meta).__name__}")
    meta = dict(meta)
    if meta.get("trigger") == "linear":
        meta["trigger"] = "linear-global"
        meta["trigger_renamed_from"] = "linear"
    name = meta.get("trigger")
    if "trigger_rule" not in meta and isinstance(name, str) and name in TRIGGERS:
        meta["trigger_rule"] = trigger_rule(make_trigger(name))
    data["meta"] = meta
    return data


def read_json_document(path: Path, what: str, gzipped: bool) -> tuple[Any, bytes]:
    """A run's JSON document (trace or episodic run file) and its bytes, read within :data:`MAX_TRACE_BYTES` before and
    after decompression; every failure is one :class:`CurloptError` naming the file as ``what``."""
    try:
        raw = read_bytes_limited(path, MAX_TRACE_BYTES, what)
        if gzipped:
            with gzip.GzipFile(fileobj=io.BytesIO(raw), mode="rb") as stream:
                raw = stream.read(MAX_TRACE_BYTES + 1)
            if len(raw) > MAX_TRACE_BYTES:
                raise CurloptError(f"the {what} {path} decompresses to more than"
                                   f" {MAX_TRACE_BYTES // 2 ** 20} MiB; refusing to read it.")
        return json.loads(raw), raw
    except FileNotFoundError:
        raise CurloptError(f"no {what} at {path}.") from None
    except IsADirectoryError:
        raise CurloptError(f"{path} is a directory, not a {what}.") from None
    except CurloptError:
        raise
    except (OSError, EOFError, ValueError, zlib.error, RecursionError, MemoryError) as exc:
        raise CurloptError(f"the {what} {path} is corrupt or truncated ({type(exc).__name__}: {exc}).") from None


def load_trace(path: str | os.PathLike) -> Trace:
    """Read a trace written by :meth:`Trace.save`.

    Everything is checked: the gzip stream and its checksum, the JSON, and every
    field's type and shape (each checkpoint column has one row per time in ``t``,
    ``t`` is a non-empty increasing list of integer times, ``rewards`` and
    ``costs`` are finite, the final ``objective``, ``constraints``, ``violation``
    (and ``regret`` when there is an optimum) are not NaN, ``optimum`` is an
    object or null, the epoch records have their fields' types). Files over
    :data:`MAX_TRACE_BYTES` (compressed or not) are refused unread.

    Raises
    ------
    CurloptError
        If the file is missing, a directory, too large, truncated, corrupt,
        inconsistent or not a trace — and no other exception.
    """
    path = Path(path)
    data, raw = read_json_document(path, "trace file", gzipped=path.suffix == ".gz")
    try:  # the checksum checked on the bytes read when they are as written (no second serialisation)
        return Trace.from_dict(data, checksum_checked=_bytes_match_checksum(raw))
    except CurloptError as exc:
        raise CurloptError(f"{path}: {exc}") from None


# -- validation of a trace document ---------------------------------------------------------------------------------
class _Malformed(Exception):
    """A field of a trace document has the wrong type or shape (the message says which)."""


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_optimum(optimum: Any) -> None:
    if optimum is None:
        return
    if not isinstance(optimum, dict):
        raise _Malformed(f"'optimum' must be an object or null, got {_kind(optimum)}")
    objective = optimum.get("objective")
    if objective is not None and not (_is_number(objective) and not math.isnan(objective)):
        raise _Malformed(f"'optimum.objective' must be a number or null, got {_short(objective)}")


def _numeric(value: Any, name: str) -> np.ndarray:
    """A JSON array of numbers (nested lists) as floats; strings, booleans, nulls and huge integers are refused."""
    array = np.asarray(value)  # an empty list is a float array; mixed or huge values give an object array
    if array.dtype.kind not in "iuf":
        raise _Malformed(f"checkpoints.{name} must be an array of numbers")
    return array.astype(float)


def _checkpoint_columns(columns: Any, optimum: Any) -> dict[str, np.ndarray]:
    """The checkpoint columns, each checked against ``t``: shapes, types, and the final row's values."""
    if not isinstance(columns, dict):
        raise _Malformed(f"'checkpoints' must be an object, got {_kind(columns)}")
    for name in CHECKPOINT_COLUMNS:
        if name not in columns:
            raise _Malformed(f"the checkpoint column {name!r} is missing")
    t = _numeric(columns["t"], "t")
    if t.ndim != 1 or t.size == 0:
        raise _Malformed(f"checkpoints.t must be a non-empty list of times, got shape {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(t < 1) or np.any(t != np.round(t)) or np.any(t > 2.0 ** 62):
        raise _Malformed("checkpoints.t must hold integer times >= 1")
    if t.size > 1 and np.any(np.diff(t) <= 0):
        raise _Malformed("checkpoints.t must be increasing")
    n = t.size
    out: dict[str, np.ndarray] = {"t": t.astype(np.int64)}
    for name in ("rewards", "costs", "constraints"):
        array = _numeric(columns[name], name)
        if array.ndim != 2 or array.shape[0] != n:
            raise _Malformed(f"checkpoints.{name} must have one row per checkpoint time ({n}), got shape {array.shape}")
        out[name] = array
    if out["rewards"].shape[1] < 1:
        raise _Malformed("checkpoints.rewards must have at least one column")
    for name in ("objective", "regret", "violation"):
        array = _numeric(columns[name], name)
        if array.shape != (n,):
            raise _Malformed(f"checkpoints.{name} must have one value per checkpoint time ({n}), got shape {array.shape}")
        out[name] = array
    for name in ("rewards", "costs"):  # running averages of finite signals: always finite
        if not np.all(np.isfinite(out[name])):
            raise _Malformed(f"checkpoints.{name} holds a NaN or infinite value")
    # The final values (what summaries read) are never NaN; f and g may be infinite at the edge of their domain.
    for name in ("objective", "constraints", "violation"):
        if np.any(np.isnan(out[name][-1])):
            raise _Malformed(f"the final value of checkpoints.{name} is NaN")
    has_optimum = isinstance(optimum, dict) and optimum.get("objective") is not None
    if has_optimum and math.isnan(out["regret"][-1]):
        raise _Malformed("the final value of checkpoints.regret is NaN although the trace has an optimum")
    return out


#: the type of each epoch-record field: "int", "number", "str", "numbers" (a list of numbers), and whether None is allowed
_EPOCH_FIELDS = {
    "index": ("int", False), "start": ("int", False), "length": ("int", False), "epsilon": ("number", True),
    "source": ("str", False), "status": ("str", False), "solve_time": ("number", False),
    "iterations": ("int", True), "message": ("str", False), "exact_rewards": ("numbers", True),
    "exact_costs": ("numbers", True), "exact_objective": ("number", True), "exact_constraints": ("numbers", True),
    "unreached": ("int", True),
}


def _field_ok(value: Any, kind: str, nullable: bool) -> bool:
    if value is None:
        return nullable
    # JSON gives exactly int, float, str and list (a bool is its own type): compare types first, the common case;
    # other values (numpy numbers in a document built in memory) take the isinstance checks below.
    kind_of = type(value)
    if kind == "numbers" and kind_of is list and all(type(v) is float or type(v) is int for v in value):
        return True
    if (kind_of is float or kind_of is int) and kind == "number":
        return True
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == "number":
        return _is_number(value)
    if kind == "str":
        return isinstance(value, str)
    return isinstance(value, list) and all(_is_number(v) for v in value)


def _epoch_records(records: Any) -> list[EpochRecord]:
    if not isinstance(records, list):
        raise _Malformed(f"'epochs' must be a list, got {_kind(records)}")
    epochs = []
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise _Malformed(f"epochs[{i}] must be an object, got {_kind(record)}")
        for key, value in record.items():
            if key not in _EPOCH_FIELDS:
                raise _Malformed(f"epochs[{i}] has an unknown key {key!r}")
            if not _field_ok(value, *_EPOCH_FIELDS[key]):
                raise _Malformed(f"epochs[{i}].{key} has the wrong type: {_short(value)}")
        epochs.append(EpochRecord(**record))
    return epochs
