"""Traces: what a run records, and its file format.

File format (``Trace.save`` / :func:`load_trace`): one JSON document (gzip-compressed
when the file name ends in ``.gz``), written atomically (temporary file, then
rename). Non-finite numbers are written as Python's ``json`` module writes them
(``Infinity``, ``-Infinity``, ``NaN``), so they round-trip exactly. Keys:

``format``
    ``"curlopt-trace"``; ``version`` the format version (1).
``meta``
    The run: ``env``, ``agent``, ``trigger``, ``backend``, ``tightness``, ``seed``,
    ``steps``, ``path`` (``fast`` or ``generic``), ``curlopt_version`` and the
    agent's other options.
``optimum``
    ``objective`` f(λ*), ``rewards`` λ*, ``costs`` ζ*, ``constraint_values``,
    ``status`` and ``program`` of the known-model optimum (null without a model).
``checkpoints``
    Columns over the checkpoint times: ``t``, ``rewards`` λ^(t) (n×K), ``costs``
    ζ^(t) (n×d), ``objective`` f(λ^(t)), ``constraints`` g_m(ζ^(t)) (n×M),
    ``regret`` R(t) = f(λ*) − f(λ^(t)), ``violation`` C(t) = max_m (g_m(ζ^(t)))_+.
``epochs``
    One record per epoch (see :class:`EpochRecord`).
``wall_time``
    Seconds for the whole run.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CurloptError

__all__ = ["EpochRecord", "Trace", "load_trace", "TRACE_FORMAT", "TRACE_VERSION"]

TRACE_FORMAT = "curlopt-trace"
TRACE_VERSION = 1
CHECKPOINT_COLUMNS = ("t", "rewards", "costs", "objective", "constraints", "regret", "violation")


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
        Where the policy came from: ``tight``, ``fallback``, ``kept-previous``,
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
        return sum(1 for e in self.epochs if e.source == "fallback")

    @property
    def failed_epochs(self) -> int:
        return sum(1 for e in self.epochs if e.source in ("kept-previous", "uniform-initial"))

    def summary(self) -> dict[str, Any]:
        """Final f(λ^), R(T), each g_m(ζ^), C(T), epochs, fallbacks, failures and wall time."""
        c = self.checkpoints
        return {
            "steps": int(c["t"][-1]),
            "objective": float(c["objective"][-1]),
            "optimum": None if self.optimum is None else self.optimum.get("objective"),
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
            "epochs": [asdict(e) for e in self.epochs],
            "wall_time": self.wall_time,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trace":
        if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
            raise CurloptError("not a curlopt trace (the 'format' key is missing or wrong).")
        if data.get("version") != TRACE_VERSION:
            raise CurloptError(f"trace format version {data.get('version')!r} is not supported (this is {TRACE_VERSION}).")
        try:
            checkpoints = {k: np.asarray(data["checkpoints"][k], dtype=float) for k in CHECKPOINT_COLUMNS}
            checkpoints["t"] = checkpoints["t"].astype(np.int64)
            epochs = [EpochRecord(**e) for e in data["epochs"]]
            return cls(data["meta"], data["optimum"], checkpoints, epochs, float(data["wall_time"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise CurloptError(f"the trace is incomplete or malformed ({type(exc).__name__}: {exc}).") from None

    def save(self, path: str | os.PathLike) -> Path:
        """Write the trace atomically (gzip when the name ends in ``.gz``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps(self.to_dict(), separators=(",", ":")).encode()
        if path.suffix == ".gz":
            payload = gzip.compress(payload, mtime=0)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(payload)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return path


def load_trace(path: str | os.PathLike) -> Trace:
    """Read a trace written by :meth:`Trace.save`.

    Raises
    ------
    CurloptError
        If the file is missing, truncated, corrupt or not a trace.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        data = json.loads(raw)
    except FileNotFoundError:
        raise CurloptError(f"no trace file at {path}.") from None
    except (OSError, EOFError, ValueError) as exc:
        raise CurloptError(f"the trace file {path} is corrupt or truncated ({type(exc).__name__}: {exc}).") from None
    return Trace.from_dict(data)
