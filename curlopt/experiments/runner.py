"""Running a study: its runs (resumable, on any executor), then its summary tables and figures.

Files under the study's output folder::

    study.json                                   the study after defaults, its profile (presets), the
                                                 curlopt version and the list of configurations
    runs/<setting>/<algorithm>/<configuration>/
        config.json                              the configuration: setting, algorithm, every option
        T<steps>-seed<seed:03d>.json.gz          one trace per run
    summary.csv, summary.md                      see curlopt.experiments.outputs.summary
    checkpoints.csv                              see curlopt.experiments.outputs.checkpoints
    figures/                                     see curlopt.experiments.outputs.figures.plots; every PNG records the
                                                 SHA-256 of summary.csv in its text chunk
                                                 ``curlopt-summary-sha256``
    report.html                                  see curlopt.experiments.outputs.report
    study.lock                                   only while a sweep runs: who writes the folder (pid, host,
                                                 start time); see curlopt.experiments.outputs.lock

``<configuration>`` is a key of every agent option of the configuration (see
:func:`curlopt.experiments.study.planning.configuration_key`), so changing an option
(K_ε, the backend, a trigger) writes new run files next to the earlier ones and
never over them.

Resuming: a run whose file exists, loads, and records the same task (the
trace's ``meta["sweep"]`` plus its ``env``, ``agent``, ``seed`` and ``steps``) is
not run again; a missing file is run; a corrupt, truncated or mismatched file is
reported and run again. Each run's trace is written atomically as soon as it
finishes, so an interrupted study loses only the runs in flight. The summary and
figures are rebuilt at the end from every finished run. Every file is written
atomically (a temporary file in the same folder, then a rename).

Memory: no trace is kept in the process that runs the study. A run's file is
written where the run ran, and its record comes back with the numbers the
outputs need of it (:mod:`curlopt.experiments.outputs.aggregate`); a finished
run found on resuming gives its numbers when its file is checked. Each
configuration's numbers become one aggregate of arrays, which the summary,
checkpoint table, figures and report read; the figures are drawn, written and
let go one at a time.

One writer per folder: a sweep holds ``study.lock`` in its output folder while
it runs (see :mod:`curlopt.experiments.outputs.lock`); a second sweep on the
same folder is refused with one line naming the holder (pid, host, start time),
or waits for it (``wait=True``, ``--wait``). The lock of a sweep that was killed
is taken over, with a note.

Sizes first: the study's counts are checked before its grid is expanded (see
:func:`curlopt.experiments.study.planning.plan_study`; ``max_runs``).

A run in which most epochs failed to solve (see
:mod:`curlopt.experiments.outputs.solve_failures`) is kept, listed in
``StudyResult.unsolved`` and warned about.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time as clock
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CurloptError
from ..fileio import WriteError, atomic_write_text, write_error
from .executors import LocalExecutor, RayExecutor, SavedRun, _check_jobs, make_executor
from .outputs.aggregate import AggregateBuilder
from .outputs.figures.style import SUMMARY_HASH_KEY
from .outputs.heap import give_back_memory
from .outputs.lock import FolderLock
from .outputs.runs import TraceCache
from .outputs.solve_failures import failed_solves_warning
from .study.planning import OPTION_NAMES, Configuration, Plan, Task, option_label, plan_study, value_label
from .study.reader import load_study
from .study.spec import EXECUTORS, Study

if TYPE_CHECKING:  # pragma: no cover
    from .outputs.aggregate import RunsAggregate
    from .outputs.runs import ConfigurationRuns

__all__ = ["StudyResult", "run_study", "task_status", "format_duration", "write_json"]



# -- one run's file ---------------------------------------------------------------------------------------------------
def task_status(task: Task, out: str | os.PathLike) -> tuple[str, str]:
    """``("done" | "missing" | "corrupt" | "mismatch", reason)`` of a task's run file under ``out``."""
    status, reason, _trace = _check_run_file(task, out)
    return status, reason


def _check_run_file(task: Task, out: str | os.PathLike, cache: TraceCache | None = None) -> tuple[str, str, Any]:
    """:func:`task_status`, and the trace it loaded when the run is done (held in ``cache`` when given, so the
    summary need not read it again while the cache has room)."""
    from .simulation.trace import load_trace

    path = Path(out) / task.relative_path
    if path.is_dir():
        return "corrupt", "it is a directory, not a run file (it will be moved aside)", None
    if not path.exists():
        return "missing", "", None
    try:
        trace = load_trace(path)
    except CurloptError as exc:  # load_trace raises only this, for any unreadable or inconsistent file
        return "corrupt", str(exc), None
    meta = trace.meta if isinstance(trace.meta, dict) else {}
    expected = {"env": task.setting.name, "agent": task.algorithm.agent, "seed": task.seed, "steps": task.steps}
    for key, value in expected.items():
        if meta.get(key) != value:
            return "mismatch", f"its {key} is {meta.get(key)!r}, the task's is {value!r}", None
    if _jsonable(meta.get("sweep")) != _jsonable(task.identity()):
        return "mismatch", "it was written with other options, checkpoints or model", None
    if int(trace.checkpoints["t"][-1]) != task.steps:
        return "corrupt", f"its last checkpoint is t={int(trace.checkpoints['t'][-1])}, not T={task.steps}", None
    if cache is not None:
        cache.put(path, trace)
    return "done", "", trace


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


def write_json(path: Path, data: Any) -> bool:
    """Write ``data`` as JSON atomically; leave the file untouched when it already holds the same. True if written."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    except OSError as exc:  # before any run: an unwritable, full or misnamed output folder stops here, in one line
        raise write_error(path, exc) from None
    return True


# -- the result -----------------------------------------------------------------------------------------------------
@dataclass
class StudyResult:
    """What :func:`run_study` (and ``reproduce``) did and wrote.

    Attributes
    ----------
    experiment : str
        The study's name.
    out : Path
        The output folder.
    steps : int
    seeds : list of int
    backend : str
        The backend of the configurations that have one (comma-separated when several; empty when none).
    executor : str
    tasks : list of Task
        Every run of the study.
    executed : list of Task
        Runs executed by this call (missing, corrupt or mismatched files).
    skipped : list of Task
        Runs whose file was already finished.
    repaired : list of str
        One line per run file found corrupt or mismatched (and run again).
    failed : list of (Task, str)
        Runs that raised; their files are absent and the summary leaves them out.
    unsolved : list of (Task, str)
        Finished runs (kept, and in the summary) in which more than half of the epochs failed to solve, with the
        warning saying so (:mod:`curlopt.experiments.outputs.solve_failures`).
    notes : list of str
        What was left out or not expanded (agents refusing a model, options an agent does not take).
    rows : list of dict
        The summary table (see :mod:`curlopt.experiments.outputs.summary`).
    summary_csv, summary_md : Path
    checkpoints_csv : Path
        The mean curves at every checkpoint (see :mod:`curlopt.experiments.outputs.checkpoints`).
    figures : list of Path
    wall_time : float
        Seconds for the whole call.
    study : Study
    configurations : list of Configuration
        In study order (settings, then algorithms in file order, then grid order).
    groups : list of ConfigurationRuns
        The finished runs of each configuration, as given to the summary and figures.
    profile : str or None
        The preset's profile (``reproduce``), None for a study file.
    dry_run : bool
        Planned only: nothing was run or written.
    report : Path or None
        The HTML report (``report.html``, see :mod:`curlopt.experiments.outputs.report`); None when it was not written.
    run_cpu_time : float
        CPU seconds of the runs executed by this call (each measured in the process that ran it): what the
        runner's own overhead is measured against.
    """

    experiment: str
    out: Path
    steps: int
    seeds: list[int]
    backend: str
    executor: str
    tasks: list[Task]
    executed: list[Task] = field(default_factory=list)
    skipped: list[Task] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    failed: list[tuple[Task, str]] = field(default_factory=list)
    unsolved: list[tuple[Task, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    summary_csv: Path | None = None
    summary_md: Path | None = None
    checkpoints_csv: Path | None = None
    figures: list[Path] = field(default_factory=list)
    wall_time: float = 0.0
    study: Study | None = None
    configurations: list[Configuration] = field(default_factory=list)
    groups: list[Any] = field(default_factory=list)
    profile: str | None = None
    dry_run: bool = False
    report: Path | None = None
    run_cpu_time: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


# -- the runner -----------------------------------------------------------------------------------------------------
def run_study(
    study: Study | str | os.PathLike,
    *,
    jobs: int | None = None,
    executor: str | None = None,
    address: str | None = None,
    out: str | os.PathLike | None = None,
    progress: bool | None = None,
    figures: bool = True,
    dry_run: bool = False,
    echo: Callable[[str], None] | None = print,
    heading: str = "",
    max_runs: int | None = None,
    wait: bool = False,
) -> StudyResult:
    """Run (or resume) a study, then write its summary tables and figures.

    Parameters
    ----------
    study : Study or path
        A parsed study, or the path of a study file (:func:`load_study`).
    jobs, executor, address, out : optional
        Override the study's ``[study]`` values (``jobs=1`` runs in this process;
        ``executor`` is ``"local"`` or ``"ray"``; ``address`` a Ray cluster).
    progress : bool, optional
        Progress bars on stderr (default on); per-run bars only on a terminal.
    figures : bool, default True
        Write the figures (needs matplotlib; skipped with a note without it).
    dry_run : bool, default False
        Check and plan only: print the configurations, runs and where they go; run and write nothing.
    echo : callable, optional
        Where messages go (default ``print``; None for silence).
    heading : str
        Text added to the first line (the presets say their scale here).
    max_runs : int, optional
        Allow a study of up to this many runs (default: the study's ``max_runs``, else
        :data:`~curlopt.experiments.study.spec.DEFAULT_MAX_RUNS`); a larger one is refused before its grid is
        expanded.
    wait : bool, default False
        When another sweep holds the output folder, wait for it instead of refusing.

    Returns
    -------
    StudyResult

    Notes
    -----
    The whole study is checked before anything runs or is written (see
    :func:`curlopt.experiments.study.planning.plan_study`). The local pool starts its workers with ``spawn``, so a
    script calling this with ``jobs > 1`` needs the ``if __name__ == "__main__":`` guard. Runs that raise are
    reported in ``failed`` and left out of the summary; the next call retries them.

    Raises
    ------
    FolderInUseError
        When another sweep holds the output folder and ``wait`` is False.
    """
    started = clock.perf_counter()
    say = echo or (lambda _message: None)
    study, executor, jobs, address, out = _run_settings(study, jobs, executor, address, out)
    if study.episodic:  # episodic models: their runs, summary and figures are curlopt.experiments.episodic_runner's
        return _episodic(study, executor, jobs, address, out, progress, figures, dry_run, say, max_runs, wait, started)
    plan = plan_study(study, say, max_runs=max_runs)
    runner = None if dry_run else make_executor(executor, jobs=jobs, address=address)
    result = _new_result(plan, out, executor, dry_run)
    _announce(plan, say, heading)

    if runner is None:  # a dry run
        _print_plan(plan, out, say)
        result.wall_time = clock.perf_counter() - started
        return result

    with FolderLock(out, wait=wait, say=say):  # one writer per folder, from the first file to the last
        _run_plan(plan, runner, out, result, progress, figures, say)
    result.wall_time = clock.perf_counter() - started
    say(f"ran {len(result.executed)} runs ({len(result.skipped)} were already finished"
        + (f", {len(result.failed)} failed" if result.failed else "")
        + (f", {len(result.unsolved)} with most epochs unsolved" if result.unsolved else "")
        + f") in {format_duration(result.wall_time)}")
    return result


def _episodic(study: Study, executor: str, jobs: int | None, address: str | None, out: Path,
              progress: bool | None, figures: bool, dry_run: bool, say: Callable[[str], None],
              max_runs: int | None, wait: bool, started: float) -> StudyResult:
    """:func:`run_study` of an episodic study (:mod:`curlopt.experiments.episodic_runner` does the work)."""
    from .episodic_runner import run_episodic_study

    result = StudyResult(study.name, out, int(study.episodes or 0), list(study.seeds), "", executor, [], study=study,
                         dry_run=dry_run)
    run_episodic_study(result, jobs=jobs, address=address, progress=progress, figures=figures, say=say,
                       max_runs=max_runs, wait=wait)
    result.wall_time = clock.perf_counter() - started
    if not dry_run:
        say(f"ran {len(result.executed)} runs ({len(result.skipped)} were already finished"
            + (f", {len(result.failed)} failed" if result.failed else "")
            + f") in {format_duration(result.wall_time)}")
    return result


def _run_plan(plan: Plan, runner: LocalExecutor | RayExecutor, out: Path, result: StudyResult, progress: bool | None, figures: bool,
              say: Callable[[str], None]) -> None:
    """Describe the study in ``out``, run its pending tasks, then write the summary (under the folder's lock)."""
    from .outputs.study_folder import check_one_study

    check_one_study(out, plan.study.name, plan.study.profile)  # a folder holds one study: never replace another's
    _write_descriptions(plan, out)
    # Traces are never held: each run's file is written where it ran, and only its record comes back, with the
    # numbers the outputs need of it (outputs/aggregate.py), gathered per configuration; a finished run found on
    # resuming gives its numbers when it is checked. So the outputs read no run file again, and what is kept is
    # arrays of numbers, not traces. The cache keeps no trace (limit 0): a configuration whose numbers are not all
    # there is read from its files, one at a time.
    cache = TraceCache(limit=0)
    builders: dict[int, AggregateBuilder] = {id(c): AggregateBuilder() for c in plan.configurations}
    unsolved: dict[str, str] = {}  # task key -> the warning of a finished run in which most epochs failed to solve
    pending = _pending_tasks(plan, out, result, unsolved, say, cache, builders)
    say(f"{len(result.skipped)} runs already finished in {out}, {len(pending)} to run; executor {runner.describe()}")
    _execute(pending, runner, out, result, progress, say, plan.study.name, unsolved, builders)
    result.unsolved = [(task, unsolved[task.key]) for task in plan.tasks if task.key in unsolved]
    _summarise(result, plan, out, cache, figures, say, builders)


def _run_settings(study: Study | str | os.PathLike, jobs: int | None, executor: str | None, address: str | None,
                  out: str | os.PathLike | None) -> tuple[Study, str, int | None, str | None, Path]:
    """The study and the call's executor, jobs, address and output folder.

    Each is the argument where given, else the study's ``[study]`` value; a study given as a path is loaded.
    """
    if not isinstance(study, Study):
        study = load_study(study)
    executor = executor if executor is not None else study.executor
    jobs = _check_jobs(jobs if jobs is not None else study.jobs)  # a dry run refuses --jobs 0 as a run does
    address = address if address is not None else (study.address if executor == study.executor else None)
    if executor not in EXECUTORS:
        raise CurloptError(f"executor must be 'local' or 'ray', got {executor!r}.")
    if address is not None and executor != "ray":
        raise CurloptError("--address is for the Ray executor; add --executor ray.")
    return study, executor, jobs, address, Path(out) if out is not None else study.default_out


def _new_result(plan: Plan, out: Path, executor: str, dry_run: bool) -> StudyResult:
    """The :class:`StudyResult` of a planned study before anything runs."""
    study = plan.study
    backends = sorted({str(dict(c.options)["backend"]) for c in plan.configurations if "backend" in dict(c.options)})
    return StudyResult(study.name, out, study.steps, list(study.seeds), ", ".join(backends), executor, plan.tasks,
                       notes=list(plan.notes), study=study, configurations=plan.configurations,
                       profile=(study.profile or {}).get("name"), dry_run=dry_run)


def _pending_tasks(plan: Plan, out: Path, result: StudyResult, unsolved: dict[str, str],
                   say: Callable[[str], None], cache: TraceCache,
                   builders: Mapping[int, AggregateBuilder] | None = None) -> list[Task]:
    """The tasks to run, seed-major; a finished run goes to ``result.skipped`` (and its warning to ``unsolved``
    when most of its epochs failed to solve).

    A corrupt or mismatched run file is noted in ``result.repaired`` and its task run again.
    """
    pending: list[Task] = []
    for task in plan.tasks:
        status, reason, trace = _check_run_file(task, out, cache)
        if status == "done":
            result.skipped.append(task)
            if builders is not None:
                builders[id(task.configuration)].add(trace)
            warning = failed_solves_warning(trace)
            if warning is not None:
                unsolved[task.key] = warning
            continue
        if status in ("corrupt", "mismatch"):
            what = "corrupt" if status == "corrupt" else "from another configuration"
            line = f"run file {out / task.relative_path} is {what} ({reason}); running it again"
            result.repaired.append(line)
            say(f"note: {line}")
        pending.append(task)
    # Seed-major order: every configuration progresses from the start (partial studies are balanced, the ETA honest).
    rank = {c.name: i for i, c in enumerate(plan.configurations)}
    seed_rank = {seed: i for i, seed in enumerate(plan.study.seeds)}
    pending.sort(key=lambda task: (seed_rank[task.seed], rank[task.configuration.name]))
    return pending


def _summarise(result: StudyResult, plan: Plan, out: Path, cache: TraceCache, figures: bool,
               say: Callable[[str], None], builders: Mapping[int, AggregateBuilder] | None = None) -> None:
    """Group the finished runs by configuration and write the tables, figures and report (when any run finished)."""
    study = plan.study
    result.groups = collect_runs(plan, out, {task.key for task, _ in result.failed}, cache, builders)
    give_back_memory()  # the records' and builders' freed memory, before the outputs' peaks
    empty = [c.label for c, g in zip(plan.configurations, result.groups, strict=True) if g is None]
    result.groups = [g for g in result.groups if g is not None]
    notes = list(plan.notes) + [f"{label}: no finished run." for label in empty]
    if study.profile:
        notes = list(study.profile.get("notes", [])) + notes
    result.notes = notes
    if result.groups:
        _write_outputs(result, study, out, notes, figures, say)


def _announce(plan: Plan, say: Callable[[str], None], heading: str) -> None:
    study = plan.study
    settings = {c.setting.name for c in plan.configurations}
    say(f"{study.name}: {len(plan.configurations)} configurations on {len(settings)} setting(s) x {len(study.seeds)}"
        f" seeds ="
        f" {len(plan.tasks)} runs, T={study.steps:,}" + (f", {heading}" if heading else ""))
    if study.profile:
        say(f"profile {study.profile['name']}: {study.profile['description']}")
    for algorithm in study.algorithms:
        mine = [c for c in plan.configurations if c.algorithm.key == algorithm.key]
        if not mine:
            continue
        axes: dict[str, list] = {}
        for configuration in mine:
            for name, value in configuration.varied:
                if value not in axes.setdefault(name, []):
                    axes[name].append(value)
        fixed = {k: v for k, v in mine[0].chosen_options().items() if k not in axes}
        text = f"  {algorithm.key}: {algorithm.label} = {algorithm.agent}"
        text += (" with " + ", ".join(option_label(k, v) for k, v in sorted(fixed.items()))) if fixed else \
            " with its default options"
        if "horizon" in mine[0].automatic:
            text += ", horizon = T"
        if axes:
            text += "; grid " + ", ".join(f"{OPTION_NAMES.get(k, k)} in [{', '.join(value_label(v) for v in vs)}]"
                                          for k, vs in axes.items())
            text += f" ({len({c.key for c in mine})} configurations)"
        say(text)
    for note in plan.notes:
        say(f"note: {note}")


def _print_plan(plan: Plan, out: Path, say: Callable[[str], None]) -> None:
    study = plan.study
    say(f"plan ({len(plan.configurations)} configurations, {len(plan.tasks)} runs), under {out}:")
    runs = _tasks_by_configuration(plan)
    for configuration in plan.configurations:
        mine = runs[id(configuration)]
        done = sum(1 for t in mine if task_status(t, out)[0] == "done")
        say(f"  {configuration.relative_dir}/  {configuration.label}: {len(mine)} runs"
            f" T{study.steps}-seed<seed>.json.gz" + (f", {done} already finished" if done else ""))
    say("dry run: nothing was run or written.")


def _tasks_by_configuration(plan: Plan) -> dict[int, list[Task]]:
    """Each configuration's tasks (keyed by the configuration's ``id``), in plan order: one pass over the tasks."""
    runs: dict[int, list[Task]] = {id(c): [] for c in plan.configurations}
    for task in plan.tasks:
        runs[id(task.configuration)].append(task)
    return runs


def _write_descriptions(plan: Plan, out: Path) -> None:
    from .. import __version__

    study = plan.study
    configurations = []
    for configuration in plan.configurations:
        record = configuration.record()
        write_json(out / configuration.relative_dir / "config.json", record)
        configurations.append({"path": str(configuration.relative_dir), **record})
    write_json(out / "study.json", {
        "format": "curlopt-study", "version": 1, "curlopt_version": __version__,
        "study": {**study.describe(), "out": str(out)}, "profile": study.profile,
        "notes": plan.notes, "configurations": configurations,
    })


def _execute(pending: list[Task], runner: LocalExecutor | RayExecutor, out: Path, result: StudyResult,
             progress: bool | None, say: Callable[[str], None], name: str, unsolved: dict[str, str],
             builders: Mapping[int, AggregateBuilder] | None = None) -> None:
    """Run the pending tasks; each run's file is written as it finishes (by the executor), and only its record kept.

    A run file that could not be written (a full disk) stops the study with one line,
    ``could not write <path>: <reason>``: the runs already saved are kept, and running the same command again
    resumes.
    """
    if not pending:
        return
    show = True if progress is None else bool(progress)
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(result.tasks), initial=len(result.skipped), desc=f"{name} runs", unit="run",
                   dynamic_ncols=True, position=0, leave=True)
    per_run = show and _stderr_is_terminal()
    write = bar.write if bar is not None else say
    try:
        for task, record, error in runner.run(pending, per_run_progress=per_run, out=out):
            if isinstance(record, SavedRun):  # the run's trace is in its file; only this record comes back
                for note in record.notes:
                    write(note)
                if record.write_error is not None:
                    raise WriteError(record.write_error)
                result.executed.append(task)
                result.run_cpu_time += record.cpu_time
                if record.unsolved is not None:
                    unsolved[task.key] = record.unsolved
                if builders is not None and record.numbers is not None:
                    builders[id(task.configuration)].add_numbers(record.numbers)
            else:
                error = error or "the run gave neither a trace nor an error"
                result.failed.append((task, error))
                write(f"error: run {task.key} failed: {error}")
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()


def collect_runs(plan: Plan, out: Path, failed: Set[str] = frozenset(), cache: TraceCache | None = None,
                 builders: Mapping[int, AggregateBuilder] | None = None) -> list[ConfigurationRuns | None]:
    """One :class:`ConfigurationRuns` per configuration (None for one without a finished run), in study order.

    Each configuration's runs are its run files (sorted by seed), read when used through ``cache`` (a new
    :class:`~curlopt.experiments.outputs.runs.TraceCache` when not given): nothing is read here. ``builders``
    (keyed by the configuration's ``id``) hold the numbers of runs already gathered: a configuration whose
    builder has every one of its finished runs gets its aggregate from it, and its files are not read.
    """
    from .outputs.runs import ConfigurationRuns, TraceFiles

    cache = cache if cache is not None else TraceCache()
    groups: list[ConfigurationRuns | None] = []
    runs = _tasks_by_configuration(plan)
    for configuration in plan.configurations:
        mine = sorted((task for task in runs[id(configuration)]
                       if task.key not in failed and (out / task.relative_path).is_file()), key=lambda task: task.seed)
        groups.append(ConfigurationRuns(
            setting=configuration.setting, algorithm=configuration.algorithm.key, agent=configuration.algorithm.agent,
            label=configuration.label, key=configuration.key, options=dict(configuration.options),
            varied=dict(configuration.varied),
            traces=TraceFiles([out / task.relative_path for task in mine], cache),
            aggregate=_gathered(builders, configuration, mine)) if mine else None)
    return groups


def _gathered(builders: Mapping[int, AggregateBuilder] | None, configuration: Configuration,
              mine: list[Task]) -> RunsAggregate | None:
    """The aggregate of a configuration's finished runs from the numbers gathered, None unless they are all there."""
    builder = None if builders is None else builders.get(id(configuration))
    if builder is None or builder.seeds != [task.seed for task in mine]:
        return None
    return builder.finish()


def _write_outputs(result: StudyResult, study: Study, out: Path, notes: list[str], figures: bool,
                   say: Callable[[str], None]) -> None:
    from .outputs.checkpoints import write_checkpoint_table
    from .outputs.figures.plots import plot_study
    from .outputs.summary import write_study_summary

    title = study.name
    if study.profile:
        title = f"{study.name} (profile {study.profile['name']})"
    result.summary_csv, result.summary_md, result.rows = write_study_summary(
        result.groups, out, title=title, description=study.description, notes=notes)
    result.checkpoints_csv = write_checkpoint_table(result.groups, out)
    digest = hashlib.sha256(result.summary_csv.read_bytes()).hexdigest()
    if figures:
        try:  # every PNG records the summary it was drawn with (its text chunk), so copies can be traced to it
            result.figures = plot_study(result.groups, out / "figures", metadata={SUMMARY_HASH_KEY: digest})
        except CurloptError as exc:  # matplotlib missing
            say(f"note: figures skipped: {exc}")
    try:  # the HTML report of everything above; it never stops a study
        from .outputs.report import write_report

        result.report = write_report(out, groups=result.groups, rows=result.rows, figures=figures, notes=notes)
    except Exception as exc:  # any: a report failure is one line, whatever it is
        say(f"note: report skipped: {' '.join(str(exc).split()) or type(exc).__name__}")


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def format_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs:02d} s ({seconds:.1f} s)" if minutes else f"{seconds:.1f} s"
