"""An episodic study's run file: one run's per-episode metrics, written with a checksum and checked when read.

File format (:meth:`EpisodicRun.save` / :func:`load_episodic_run`): one JSON document, gzip-compressed (zero time
stamp), written atomically, with its ``sha256`` key last, taken over the document without it exactly as
infinite-horizon traces are (:mod:`curlopt.experiments.simulation.trace`). Keys:

``format``
    ``"curlopt-episodes"``; ``version`` 1.
``meta``
    The run: ``sweep`` (the task's identity, :meth:`~curlopt.experiments.study.episodic.EpisodicTask.identity`),
    ``env``, ``agent``, ``algorithm``, ``label``, ``configuration``, ``varied``, and the episode loop's meta
    (model, horizon, sizes, seed, the agent's description, curlopt version).
``summary``
    The episode loop's sums (:func:`curlopt.experiments.simulation.episodes.run_episodes`): ``episodes``,
    ``optimum`` f(λ*), ``regret``, ``weak_regret``, ``strong_violation``, ``weak_violation``,
    ``violating_episodes``, the realised ones, ``sources`` (where each episode's policy came from, counted),
    ``solve_time``, ``wall_time``.
``columns``
    Per-episode lists (length K): ``regret`` f* − f(λ_k), ``violation`` max_m (g_m(ζ_k))_+, ``objective``
    f(λ_k), ``rewards`` λ_k (K × n_rewards), ``constraints`` g_m(ζ_k) (K × M), ``realised_regret``,
    ``realised_violation``, ``solve_time``.
``wall_time``
    Seconds for the run.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import CurloptError
from ...fileio import atomic_write_bytes
from ..simulation.episodes import json_plain
from ..simulation.trace import _bytes_match_checksum, _check_checksum, _compact, read_json_document

if TYPE_CHECKING:  # pragma: no cover
    from ..study.episodic import EpisodicTask

__all__ = ["EpisodicRun", "run_episodic_task", "load_episodic_run", "EPISODIC_RUN_FORMAT", "EPISODIC_RUN_VERSION", "COLUMNS"]

EPISODIC_RUN_FORMAT = "curlopt-episodes"
EPISODIC_RUN_VERSION = 1
#: the per-episode columns of a run file: one value per episode, or one row per episode (``rewards``, ``constraints``)
COLUMNS = ("regret", "violation", "objective", "rewards", "constraints", "realised_regret", "realised_violation",
           "solve_time")
_SUMMARY_KEYS = ("episodes", "optimum", "regret", "weak_regret", "strong_violation", "weak_violation",
                 "violating_episodes", "realised_regret", "realised_strong_violation", "wall_time")


@dataclass
class EpisodicRun:
    """One episodic run as its file holds it: ``meta``, ``summary``, per-episode ``columns`` and ``wall_time``."""

    meta: dict[str, Any]
    summary: dict[str, Any]
    columns: dict[str, np.ndarray]
    wall_time: float

    #: what the executors' rule on unsolved epochs reads (:func:`~.solve_failures.failed_solves_warning`): an
    #: episodic run has no epoch records; where each episode's policy came from is counted in ``summary["sources"]``
    epochs: tuple[()] = ()
    failed_epochs: int = 0

    @classmethod
    def from_trace(cls, trace: Any, model: Any, meta: dict[str, Any]) -> EpisodicRun:
        """The run of an :class:`~curlopt.experiments.simulation.episodes.EpisodeTrace` on ``model``, with the
        study's ``meta`` added to the loop's."""
        cols = trace.columns
        constraints = np.array([model.constraint_values(z) for z in np.asarray(cols["costs"], dtype=float)])
        columns = {
            "regret": np.asarray(cols["regret"], dtype=float), "violation": np.asarray(cols["violation"], dtype=float),
            "objective": np.asarray(cols["objective"], dtype=float),
            "rewards": np.asarray(cols["rewards"], dtype=float),
            "constraints": constraints.reshape(len(cols["regret"]), model.n_constraints),
            "realised_regret": np.asarray(cols["realised_regret"], dtype=float),
            "realised_violation": np.asarray(cols["realised_violation"], dtype=float),
            "solve_time": np.asarray(cols["solve_time"], dtype=float),
        }
        return cls({**meta, **trace.meta}, dict(trace.summary), columns, float(trace.summary["wall_time"]))

    @property
    def episodes(self) -> int:
        return int(self.columns["regret"].size)

    def to_dict(self) -> dict[str, Any]:
        return {"format": EPISODIC_RUN_FORMAT, "version": EPISODIC_RUN_VERSION, "meta": self.meta,
                "summary": self.summary, "columns": {name: self.columns[name].tolist() for name in COLUMNS},
                "wall_time": self.wall_time}

    def file_bytes(self) -> bytes:
        """The bytes :meth:`save` writes: compact JSON with its ``sha256`` key last, gzip-compressed."""
        payload = _compact(json.loads(json.dumps(self.to_dict(), default=json_plain)))
        payload = payload[:-1] + b',"sha256":' + json.dumps(hashlib.sha256(payload).hexdigest()).encode() + b"}"
        return gzip.compress(payload, mtime=0)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the run atomically, creating its folder (raises OSError when it cannot be written)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, self.file_bytes())
        return path


def run_episodic_task(task: EpisodicTask, progress: bool | None = False) -> EpisodicRun:
    """Run one episodic task: its agent on its model for its K episodes (what every executor calls for it,
    through :func:`curlopt.experiments.executors.execute_task`)."""
    from ...agents.episodic import make_episodic_agent
    from ..simulation.episodes import episodic_optimum, run_episodes
    from ..study.episodic import episodic_model
    from ..study.spec import loop_signals

    model = episodic_model(task.setting)
    agent = make_episodic_agent(task.algorithm.agent, model, **dict(task.options))
    optimum = episodic_optimum(model, task.optimum_backend or "auto")
    trace = run_episodes(model, agent, task.episodes, seed=task.seed, optimum=optimum, progress=bool(progress),
                         signals=loop_signals(task.signals))
    configuration = task.configuration
    return EpisodicRun.from_trace(trace, model, {
        "sweep": task.identity(), "env": task.setting.name, "agent": task.algorithm.agent,
        "algorithm": task.algorithm.key, "label": configuration.label, "configuration": configuration.key,
        "varied": dict(configuration.varied),
    })


def load_episodic_run(path: str | os.PathLike) -> EpisodicRun:
    """Read a run file written by :meth:`EpisodicRun.save`, checking its checksum and every column's shape.

    Raises
    ------
    CurloptError
        If the file is missing, a directory, too large, truncated, corrupt, changed after it was written (its
        checksum), or not an episodic run file — and no other exception.
    """
    path = Path(path)
    data, raw = read_json_document(path, "run file", gzipped=True)
    try:
        return _from_dict(data, _bytes_match_checksum(raw))
    except CurloptError as exc:
        raise CurloptError(f"{path}: {exc}") from None


def _from_dict(data: Any, checksum_checked: bool) -> EpisodicRun:
    if not isinstance(data, dict) or data.get("format") != EPISODIC_RUN_FORMAT:
        raise CurloptError("not an episodic run file (the 'format' key is missing or wrong).")
    if data.get("version") != EPISODIC_RUN_VERSION:
        raise CurloptError(f"episodic run format version {data.get('version')!r} is not supported"
                           f" (this is {EPISODIC_RUN_VERSION}).")
    if not checksum_checked:
        if "sha256" not in data:
            raise CurloptError("the run file has no sha256 checksum.")
        _check_checksum(data)
    meta, summary, raw_columns = data.get("meta"), data.get("summary"), data.get("columns")
    if not isinstance(meta, dict) or not isinstance(summary, dict) or not isinstance(raw_columns, dict):
        raise CurloptError("the run file's meta, summary and columns must be objects.")
    for key in _SUMMARY_KEYS:
        if key not in summary:
            raise CurloptError(f"the run file's summary has no {key!r}.")
    episodes = summary["episodes"]
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise CurloptError(f"the run file's episodes must be an integer >= 1, got {episodes!r}.")
    columns: dict[str, np.ndarray] = {}
    for name in COLUMNS:
        try:
            array = np.asarray(raw_columns[name], dtype=float)
        except (KeyError, TypeError, ValueError):
            raise CurloptError(f"the run file's column {name!r} is missing or not numeric.") from None
        if array.shape[:1] != (episodes,) or array.ndim != (2 if name in ("rewards", "constraints") else 1):
            raise CurloptError(f"the run file's column {name!r} has shape {array.shape}, not one entry per episode"
                               f" ({episodes}).")
        columns[name] = array
    wall = data.get("wall_time")
    if isinstance(wall, bool) or not isinstance(wall, (int, float)) or not math.isfinite(wall):
        raise CurloptError(f"the run file's wall_time must be a number, got {wall!r}.")
    return EpisodicRun(meta, summary, columns, float(wall))
