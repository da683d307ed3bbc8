"""Running an episodic study (``curlopt sweep`` on a study of episodic models): its runs, resumable, on any
executor, then its summary, figures and report.

Files under the study's output folder, as for an infinite-horizon study (:mod:`curlopt.experiments.runner`)::

    study.json                                   the study after defaults and its configurations
    runs/<setting>/<algorithm>/<configuration>/
        config.json                              the configuration
        K<episodes>-seed<seed:03d>.json.gz       one run: per-episode metrics, checksummed
                                                 (curlopt.experiments.outputs.episodic_runs)
    summary.csv, summary.md                      curlopt.experiments.outputs.episodic_summary
    figures/<setting>-regret.png, -frontier.png  curlopt.experiments.outputs.figures.episodic
    report.html                                  curlopt.experiments.outputs.episodic_report

Resuming: a run whose file loads (checksum and shapes checked) and records the same task (its ``meta["sweep"]``)
is not run again; a missing file is run; a corrupt or mismatched one is reported and run again. Runs execute
through the study's executor (:func:`curlopt.experiments.executors.execute_task` runs an
:class:`~curlopt.experiments.study.episodic.EpisodicTask`), each written by the process that ran it as soon as
it finishes; one sweep at a time holds the folder (``study.lock``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import CurloptError
from ..fileio import WriteError, atomic_write_text, write_error
from .executors import LocalExecutor, RayExecutor, SavedRun, make_executor
from .outputs.episodic_runs import EpisodicRun, load_episodic_run
from .outputs.episodic_summary import EpisodicRuns, write_episodic_summary
from .outputs.figures.style import SUMMARY_HASH_KEY
from .outputs.lock import FolderLock
from .study.episodic import EpisodicTask, plan_episodic_study
from .study.planning import Plan

if TYPE_CHECKING:  # pragma: no cover
    from .runner import StudyResult

__all__ = ["run_episodic_study", "episodic_task_status"]


def _check(task: EpisodicTask, out: Path) -> tuple[str, str, EpisodicRun | None]:
    path = out / task.relative_path
    if path.is_dir():
        return "corrupt", "it is a directory, not a run file (it will be moved aside)", None
    if not path.exists():
        return "missing", "", None
    try:
        run = load_episodic_run(path)
    except CurloptError as exc:
        return "corrupt", str(exc), None
    if run.meta.get("sweep") != _plain(task.identity()):
        return "mismatch", "it was written with other options, episodes or model", None
    if run.episodes != task.episodes:
        return "corrupt", f"it holds {run.episodes} episodes, not K={task.episodes}", None
    return "done", "", run


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def episodic_task_status(task: EpisodicTask, out: str | os.PathLike) -> tuple[str, str]:
    """``("done" | "missing" | "corrupt" | "mismatch", reason)`` of an episodic task's run file under ``out``."""
    status, reason, _run = _check(task, Path(out))
    return status, reason


def run_episodic_study(result: StudyResult, *, jobs: int | None, address: str | None, progress: bool | None,
                       figures: bool, say: Callable[[str], None], max_runs: int | None, wait: bool) -> None:
    """Plan, run (or resume) and summarise an episodic study, filling ``result`` (what
    :func:`~curlopt.experiments.runner.run_study` does for a study whose ``[study]`` gives ``episodes``; ``result``
    holds the study, its output folder, executor and whether this is a dry run; the other arguments are
    ``run_study``'s, resolved)."""
    study, out = result.study, result.out
    assert study is not None and study.episodes is not None  # run_study's hook sets both
    plan = plan_episodic_study(study, say, max_runs=max_runs)
    tasks = cast(list[EpisodicTask], plan.tasks)
    result.tasks, result.notes, result.configurations = plan.tasks, list(plan.notes), plan.configurations
    _announce(plan, say)
    if result.dry_run:
        say(f"plan ({len(plan.configurations)} configurations, {len(plan.tasks)} runs), under {out}:")
        for configuration in plan.configurations:
            mine = [t for t in tasks if t.configuration is configuration]
            done = sum(1 for t in mine if _check(t, out)[0] == "done")
            say(f"  {configuration.relative_dir}/  {configuration.label}: {len(mine)} runs"
                f" K{study.episodes}-seed<seed>.json.gz" + (f", {done} already finished" if done else ""))
        say("dry run: nothing was run or written.")
        return
    runner = make_executor(result.executor, jobs=jobs, address=address)
    with FolderLock(out, wait=wait, say=say):
        _run_plan(plan, runner, out, result, progress, figures, say)


def _write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON atomically, leaving a file that already holds the same untouched."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    except OSError as exc:  # before any run: an unwritable output folder stops here, in one line
        raise write_error(path, exc) from None


def _announce(plan: Plan, say: Callable[[str], None]) -> None:
    study = plan.study
    settings = {c.setting.name for c in plan.configurations}
    say(f"{study.name}: {len(plan.configurations)} configurations on {len(settings)} episodic setting(s) x"
        f" {len(study.seeds)} seeds = {len(plan.tasks)} runs, K={study.episodes:,} episodes")
    for note in plan.notes:
        say(f"note: {note}")


def _run_plan(plan: Plan, runner: LocalExecutor | RayExecutor, out: Path, result: StudyResult,
              progress: bool | None, figures: bool, say: Callable[[str], None]) -> None:
    from .. import __version__
    from .outputs.study_folder import check_one_study

    study = plan.study
    check_one_study(out, study.name, None)
    described = []
    for configuration in plan.configurations:
        record = {**configuration.record(), "automatic": {}}
        _write_json(out / configuration.relative_dir / "config.json", record)
        described.append({"path": str(configuration.relative_dir), **record})
    _write_json(out / "study.json", {"format": "curlopt-study", "version": 1, "curlopt_version": __version__,
                                    "study": {**study.describe(), "out": str(out)}, "profile": None,
                                    "notes": plan.notes, "configurations": described})
    pending: list[EpisodicTask] = []
    for task in cast(list[EpisodicTask], plan.tasks):
        status, reason, _run = _check(task, out)
        if status == "done":
            result.skipped.append(task)  # type: ignore[arg-type]
            continue
        if status in ("corrupt", "mismatch"):
            line = f"run file {out / task.relative_path} is {status} ({reason}); running it again"
            result.repaired.append(line)
            say(f"note: {line}")
        pending.append(task)
    say(f"{len(result.skipped)} runs already finished in {out}, {len(pending)} to run; executor {runner.describe()}")
    seed_rank = {seed: i for i, seed in enumerate(study.seeds)}
    rank = {c.name: i for i, c in enumerate(plan.configurations)}
    pending.sort(key=lambda task: (seed_rank[task.seed], rank[task.configuration.name]))
    _execute(pending, runner, out, result, progress, say, study.name)
    _summarise(plan, out, result, figures, say)


def _execute(pending: list[EpisodicTask], runner: LocalExecutor | RayExecutor, out: Path, result: StudyResult,
             progress: bool | None, say: Callable[[str], None], name: str) -> None:
    if not pending:
        return
    bar = None
    if progress is None or progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(result.tasks), initial=len(result.skipped), desc=f"{name} runs", unit="run",
                   dynamic_ncols=True)
    write = bar.write if bar is not None else say
    try:
        for task, record, error in runner.run(pending, per_run_progress=False, out=out):  # type: ignore[arg-type]
            if isinstance(record, SavedRun):
                for note in record.notes:
                    write(note)
                if record.write_error is not None:
                    raise WriteError(record.write_error)
                result.executed.append(task)
                result.run_cpu_time += record.cpu_time
            else:
                result.failed.append((task, error or "the run gave neither a result nor an error"))
                write(f"error: run {task.key} failed: {error}")
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()


def _summarise(plan: Plan, out: Path, result: StudyResult, figures: bool, say: Callable[[str], None]) -> None:
    """Read every configuration's finished runs, then write the summary, figures and report."""
    study = plan.study
    failed = {task.key for task, _ in result.failed}
    groups: list[EpisodicRuns] = []
    empty = []
    for configuration in plan.configurations:
        runs = []
        for task in sorted((t for t in plan.tasks if t.configuration is configuration), key=lambda t: t.seed):
            if task.key in failed or not (out / task.relative_path).is_file():
                continue
            runs.append(load_episodic_run(out / task.relative_path))
        if runs:
            groups.append(EpisodicRuns(configuration.setting.name, configuration.algorithm.key,
                                       configuration.algorithm.agent, configuration.label, configuration.key, runs))
        else:
            empty.append(configuration.label)
    notes = list(plan.notes) + [f"{label}: no finished run." for label in empty]
    result.notes = notes
    result.groups = groups
    if not groups:
        return
    result.summary_csv, result.summary_md, result.rows = write_episodic_summary(
        groups, out, title=study.name, description=study.description, notes=notes)
    digest = hashlib.sha256(result.summary_csv.read_bytes()).hexdigest()
    if figures:
        try:
            from .outputs.figures.episodic import plot_episodic_study

            result.figures = plot_episodic_study(groups, result.rows, out / "figures", {SUMMARY_HASH_KEY: digest})
        except CurloptError as exc:  # matplotlib missing
            say(f"note: figures skipped: {exc}")
    try:
        from .outputs.episodic_report import write_episodic_report

        result.report = write_episodic_report(out, result.rows, result.figures, study.name, study.description, notes)
    except Exception as exc:  # any: a report failure is one line, whatever it is
        say(f"note: report skipped: {' '.join(str(exc).split()) or type(exc).__name__}")
