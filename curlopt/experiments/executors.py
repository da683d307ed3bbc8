"""Executors: run a sweep's independent tasks in this process, a local process pool, or on a Ray cluster.

Every executor runs the same function, :func:`execute_task`,
on the same :class:`~curlopt.experiments.study.planning.Task` objects and hands the
traces back to the caller as they finish, so the results do not depend on the
executor: a run's trace is a function of its task (seed included), apart from the
measured wall and solve times.

Given an output folder (``run(tasks, out=...)``, what a study does), the run's
trace is written to its file (``out / task.relative_path``) as soon as it
finishes — by the worker process itself in a local pool, by this process for
Ray (whose workers may run on other machines) — and only a small
:class:`SavedRun` record comes back: the process that runs a study never holds
more than the runs in flight, whatever the number of runs.

``LocalExecutor(jobs)``
    ``jobs == 1`` runs the tasks one after the other in this process; otherwise a
    :class:`concurrent.futures.ProcessPoolExecutor` of ``jobs`` worker processes
    (``spawn`` start method: the same behaviour on every platform, and no fork of
    a process that already runs threads), fed from a window of at most
    :data:`IN_FLIGHT_PER_WORKER` tasks per worker: a task is submitted as a result is
    taken, so neither the pool's bookkeeping nor the wait for the next result grows
    with the number of runs. Each worker dies with the process that
    started it, even when that process is killed with SIGKILL (``prctl(PR_SET_PDEATHSIG)``
    on Linux, plus a thread that checks the parent every second), so no worker
    outlives an interrupted sweep; multiprocessing's resource tracker then reads
    end-of-file and exits too. ``jobs`` above the number of cores is reduced to it
    (more processes than cores only cost memory) unless forced (``force=True``,
    ``--force-jobs``, or the environment variable ``CURLOPT_FORCE_JOBS=1``);
    :meth:`LocalExecutor.describe` says so.
``RayExecutor(address, jobs)``
    Ray's own API: ``ray.init`` (``address``, else a local Ray with ``jobs`` CPUs),
    the task function wrapped with ``ray.remote(num_cpus=1)``, results collected
    with ``ray.wait`` as they finish. At most ``jobs`` tasks (default: the
    cluster's CPUs) are in flight, so an interrupted sweep loses only those.
    Ray is imported only here (``pip install 'curlopt[ray]'``); every node must
    have ``curlopt`` installed. A Ray session that was already initialised (e.g.
    by the caller) is used and left running; one started here is shut down.

Warnings: a warning raised in a worker process (a local pool's or Ray's) is
caught there and raised again in the process that runs the sweep, at its
original place (:func:`reissue_warnings`), so it goes through that process's
filters and logging: the command line prints it as one ``warning:`` line, and
a warning every worker raises (a model that is not ergodic) once, as when the
runs share one process. Ray's own log messages go to the ``curlopt.ray`` logger
while a sweep runs on Ray (:func:`ray_logs_to_curlopt`).

Per-run progress bars (the learning loop's bar, shown for runs of 50,000 steps
or more): in this process they nest under the overall bar; in a local pool,
each worker process draws its run's bar on its own line below the overall bar
(``position`` = worker slot, ``leave=False``, one shared tqdm write lock) — only
when stderr is a terminal; on Ray they are off (Ray forwards worker output line
by line to the driver, so bars would become log spam).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time as clock
import traceback
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import CurloptError

#: set to 1 to allow more local workers than cores (what ``--force-jobs`` does)
FORCE_JOBS_VARIABLE = "CURLOPT_FORCE_JOBS"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: tasks submitted to a local pool per worker process at any time (the rest wait in this process as tasks)
IN_FLIGHT_PER_WORKER = 4

if TYPE_CHECKING:  # pragma: no cover
    from .outputs.aggregate import RunNumbers
    from .simulation.trace import Trace
    from .study.planning import Task

__all__ = ["LocalExecutor", "RayExecutor", "make_executor", "default_jobs", "execute_task", "SavedRun", "save_run"]


@dataclass(frozen=True)
class SavedRun:
    """A finished run whose trace was written to its file: what an executor hands back instead of the trace.

    Attributes
    ----------
    path : str
        The run file.
    wall_time : float
        Seconds the run took (the trace's ``wall_time``).
    cpu_time : float
        CPU seconds of the process that ran it, over the run and the writing of its file (what a study's
        runs cost, against which the runner's own overhead is measured).
    unsolved : str or None
        The warning of a run in which most epochs failed to solve
        (:func:`curlopt.experiments.outputs.solve_failures.failed_solves_warning`), None otherwise.
    notes : tuple of str
        What happened on the way (a directory in the file's place moved aside).
    write_error : str or None
        The one-line message when the file could not be written (a full disk): the study stops with it.
    numbers : RunNumbers or None
        What the study's outputs need of the run (:func:`curlopt.experiments.outputs.aggregate.run_numbers`),
        taken where the trace is, so the study's process need not read the file again; not counted in
        ``cpu_time`` (it is the runner's own work).
    """

    path: str
    wall_time: float
    cpu_time: float
    unsolved: str | None = None
    notes: tuple[str, ...] = ()
    write_error: str | None = None
    numbers: RunNumbers | None = None


#: (task, trace — or its SavedRun when the executor wrote the file — or None, error message or None)
Outcome = tuple["Task", "Trace | SavedRun | None", "str | None"]


def default_jobs() -> int:
    """The number of cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _check_jobs(jobs: Any) -> int | None:
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise CurloptError(f"jobs must be an integer >= 1, got {jobs!r}.")
    return jobs


def _force_jobs(force: bool | None) -> bool:
    if force is not None:
        return bool(force)
    return os.environ.get(FORCE_JOBS_VARIABLE, "").strip().lower() in ("1", "true", "yes")


def _capped(jobs: int | None, force: bool | None) -> tuple[int | None, str]:
    """``jobs`` limited to the cores (unless forced), and a note saying so (empty when not capped)."""
    cores = default_jobs()
    if jobs is None or jobs <= cores or _force_jobs(force):
        return jobs, ""
    return cores, (f"--jobs {jobs} reduced to the {cores} cores this process may use"
                   f" (more workers than cores only add memory; --force-jobs or {FORCE_JOBS_VARIABLE}=1 to use {jobs})")


def make_executor(name: str = "local", jobs: int | None = None, address: str | None = None,
                  force_jobs: bool | None = None) -> LocalExecutor | RayExecutor:
    """``"local"`` → :class:`LocalExecutor`, ``"ray"`` → :class:`RayExecutor`.

    ``jobs`` above the number of cores is reduced to it (with a note in
    ``describe()``) unless ``force_jobs`` (default: the environment variable
    ``CURLOPT_FORCE_JOBS=1``); a Ray cluster (``address``) is never capped.
    """
    if name == "local":
        return LocalExecutor(jobs, force=force_jobs)
    if name == "ray":
        return RayExecutor(address=address, jobs=jobs, force=force_jobs)
    raise CurloptError(f"executor must be 'local' or 'ray', got {name!r}.")


def execute_task(task: Task, progress: bool | None = False) -> Trace:
    """Run one task and return its :class:`~curlopt.experiments.Trace` (``meta["sweep"]`` set).

    This is what every executor runs; it builds everything from names (or the
    model file's path), so it needs only ``curlopt`` importable where it runs.
    """
    from ..agents import make_agent
    from ..envs import make
    from .simulation.loop import run
    from .study.episodic import EpisodicTask
    from .study.spec import loop_signals

    if isinstance(task, EpisodicTask):  # an episodic study's run: the episode loop, its own run file
        from .outputs.episodic_runs import run_episodic_task

        return run_episodic_task(task, progress)  # type: ignore[return-value]
    configuration = task.configuration
    model = task.setting.build()
    agent = make_agent(task.algorithm.agent, model, **dict(task.options))
    trace = run(agent, make(model), task.steps, seed=task.seed, checkpoints=task.checkpoints, progress=progress,
                model=model, env_name=task.setting.name, optimum_backend=task.optimum_backend,
                signals=loop_signals(task.signals))
    trace.meta["sweep"] = task.identity()
    trace.meta["algorithm"] = task.algorithm.key
    trace.meta["label"] = configuration.label
    trace.meta["configuration"] = configuration.key
    trace.meta["varied"] = dict(configuration.varied)
    return trace


def save_run(trace: Trace, path: Path, cpu_started: float | None = None) -> SavedRun:
    """Write a finished run's trace to ``path`` (a directory in its place is moved aside first) and describe it.

    ``cpu_started`` is :func:`time.process_time` when the run started (the record's ``cpu_time`` counts from
    it). A write failure is not raised: it is the record's ``write_error`` (one line), for the study to stop with.
    """
    from ..fileio import write_error
    from .outputs.aggregate import run_numbers
    from .outputs.solve_failures import failed_solves_warning
    from .simulation.trace import Trace

    notes: list[str] = []
    failure = None
    try:
        if path.is_dir() and not path.is_symlink():
            aside = _free_name(path.with_name(path.name + ".moved-aside"))
            path.rename(aside)
            notes.append(f"note: a directory was in the place of the run file {path}; moved it to {aside}")
        trace.save(path)
    except OSError as exc:
        failure = str(write_error(path, exc))
    cpu = clock.process_time() - cpu_started if cpu_started is not None else 0.0
    # the outputs' numbers of an infinite-horizon run (other kinds of run, e.g. episodic ones, have outputs of their own)
    numbers = run_numbers(trace) if failure is None and isinstance(trace, Trace) else None
    return SavedRun(str(path), trace.wall_time, cpu, failed_solves_warning(trace), tuple(notes), failure, numbers)


def _free_name(path: Path) -> Path:
    candidate, number = path, 1
    while candidate.exists() or candidate.is_symlink():
        number += 1
        candidate = path.with_name(f"{path.name}-{number}")
    return candidate


def _run_guarded(task: Task, progress: bool | None, out: str | None = None) -> tuple[Trace | SavedRun | None, str | None]:
    """Run a task; turn any exception into a one-line message (the sweep goes on without that run).

    With ``out``, the trace is written to its file under ``out`` and its :class:`SavedRun` returned instead.
    """
    try:
        cpu_started = clock.process_time()
        trace = execute_task(task, progress=progress)
        if out is None:
            return trace, None
        return save_run(trace, Path(out) / task.relative_path, cpu_started), None
    except CurloptError as exc:
        return None, str(exc)
    except Exception as exc:  # a bug or a solver crash: keep the last frame for the report
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return None, f"{type(exc).__name__}: {exc} (at {os.path.basename(where.filename)}:{where.lineno})"


# -- warnings of other processes --------------------------------------------------------------------------------------
#: a warning raised in a worker, as sent back: (message, category, filename, line number, module)
CaughtWarning = tuple[str, type, str, int, str]


def _run_catching(task: Task, progress: bool | None,
                  out: str | None = None) -> tuple[Trace | SavedRun | None, str | None, list[CaughtWarning]]:
    """:func:`_run_guarded` in a worker process, with the warnings it raised caught and returned (each once).

    A worker's own ``warnings.showwarning`` would print Python's two-line format on the worker's stderr; the
    process that started the sweep shows them instead (:func:`reissue_warnings`), through its own filters and
    logging.
    """
    found: dict[tuple, CaughtWarning] = {}  # each distinct warning once, however often it is raised

    def collect(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                file: TextIO | None = None, line: str | None = None) -> None:  # warnings.showwarning's signature
        key = (str(message), category, filename, lineno)
        if key in found:
            return
        text = str(message)
        if not _picklable(category):  # a class defined where the parent cannot find it by name
            text, category = f"{category.__name__}: {text}", UserWarning
        found[key] = (text, category, filename, lineno, os.path.splitext(os.path.basename(filename))[0])

    with warnings.catch_warnings():
        # Each distinct warning of a place reaches the parent (once per task, as a run in one process shows it),
        # whose filters decide what is shown; "always" would cost a call here for every repeat in a hot loop.
        warnings.simplefilter("default")
        warnings.showwarning = collect
        trace, error = _run_guarded(task, progress, out)
    return trace, error, list(found.values())


def _picklable(category: type) -> bool:
    import pickle

    try:
        return pickle.loads(pickle.dumps(category)) is category
    except Exception:  # any: a class defined where it cannot be found again by name
        return False


def reissue_warnings(caught: Iterable[CaughtWarning], registry: dict) -> None:
    """Raise warnings caught in a worker again in this process, as if raised here at their place.

    They go through this process's filters and ``warnings.showwarning`` (the command line prints each as one
    ``warning:`` line); ``registry`` is shared by one sweep's workers, so a warning every worker raised (e.g.
    a model that is not ergodic) is shown once, as it would be when the runs share one process.
    """
    for text, category, filename, lineno, module in caught:
        warnings.warn_explicit(text, category, filename, lineno, module=module, registry=registry)


# -- local ----------------------------------------------------------------------------------------------------------
_worker_state: dict[str, Any] = {"slot": None}


def _die_with_parent(parent: int) -> None:
    """Make this worker process end when ``parent`` (the process that started it) ends, even by SIGKILL.

    On Linux the kernel sends SIGKILL on the parent's death (``prctl(PR_SET_PDEATHSIG)``);
    ``os.getppid()`` is checked right after, for a parent that died before the call.
    Everywhere, a daemon thread checks ``os.getppid()`` every second, as a fallback.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl: the thread below still watches
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            clock.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="curlopt-parent-watch", daemon=True).start()


def _init_worker(lock: Any, counter: Synchronized[int], per_run_progress: bool, parent: int | None = None) -> None:
    """Pool initializer: die with the parent; share tqdm's write lock and give this worker a line for its run's bar."""
    if parent is not None:
        _die_with_parent(parent)
    from tqdm import tqdm

    tqdm.set_lock(lock)
    with counter.get_lock():
        counter.value += 1
        slot = counter.value
    _worker_state["slot"] = slot
    if per_run_progress:
        # The learning loop creates its bar with ``tqdm.auto.tqdm(...)`` at call time; in this worker
        # process (ours alone) give every bar a fixed line below the overall bar.
        import tqdm.auto as auto

        base = auto.tqdm

        class _Positioned(base):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                kwargs.setdefault("position", slot)
                super().__init__(*args, **kwargs)

        auto.tqdm = _Positioned


def _pool_task(task: Task, per_run_progress: bool,
               out: str | None = None) -> tuple[Trace | SavedRun | None, str | None, list[CaughtWarning]]:
    return _run_catching(task, None if per_run_progress else False, out)


class LocalExecutor:
    """Tasks in this process (``jobs == 1``) or in a pool of ``jobs`` worker processes (default: the cores)."""

    def __init__(self, jobs: int | None = None, force: bool | None = None):
        self.requested = _check_jobs(jobs)
        jobs, self.note = _capped(self.requested, force)
        self.jobs = jobs or default_jobs()

    def describe(self) -> str:
        text = "local (in this process" if self.jobs == 1 else f"local ({self.jobs} worker processes"
        return text + (f"; {self.note})" if self.note else ")")

    def run(self, tasks: Iterable[Task], per_run_progress: bool = False,
            out: str | os.PathLike | None = None) -> Iterator[Outcome]:
        """Yield ``(task, trace, error)`` for every task, in the order they finish.

        With ``out``, each trace is written to its file under ``out`` where it ran (the worker process) and
        its :class:`SavedRun` is yielded instead of the trace.
        """
        tasks = list(tasks)
        if not tasks:
            return
        folder = None if out is None else str(out)
        if self.jobs == 1 or len(tasks) == 1:
            for task in tasks:
                trace, error = _run_guarded(task, None if per_run_progress else False, folder)
                yield task, trace, error
            return
        yield from self._pool(tasks, per_run_progress, folder)

    def _pool(self, tasks: list[Task], per_run_progress: bool, out: str | None) -> Iterator[Outcome]:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        from tqdm import tqdm

        context = multiprocessing.get_context("spawn")
        lock = context.RLock()
        tqdm.set_lock(lock)
        counter = context.Value("i", 0)
        workers = min(self.jobs, len(tasks))
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                   initargs=(lock, counter, per_run_progress, os.getpid()))
        # A bounded window of futures: submitting every task at once would keep a future, its pickled call and
        # its work item for each of thousands of runs in this process for the whole sweep. A few tasks per
        # worker keep the workers busy (a finished run's slot is refilled as soon as its result is taken).
        window = IN_FLIGHT_PER_WORKER * workers
        queue = iter(tasks)
        futures: dict[Future, Task] = {}

        unsent: list[Task] = []  # tasks the pool refused (it broke: a worker died), failed as the runs in it

        def submit() -> None:
            while len(futures) < window:
                task = next(queue, None)
                if task is None:
                    return
                try:
                    futures[pool.submit(_pool_task, task, per_run_progress, out)] = task
                except BrokenProcessPool:
                    unsent.append(task)
                    unsent.extend(queue)
                    return

        finished = False
        registry: dict = {}
        try:
            submit()
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                for future in done:
                    task = futures.pop(future)  # the finished future (and its result) is not kept
                    caught: list[CaughtWarning] = []
                    try:
                        trace, error, caught = future.result()
                    except BrokenProcessPool as exc:
                        trace, error = None, f"a worker process died ({exc}); run the command again to resume"
                    except Exception as exc:  # e.g. a result that could not be unpickled
                        trace, error = None, f"{type(exc).__name__}: {exc}"
                    reissue_warnings(caught, registry)
                    submit()
                    yield task, trace, error
            for task in unsent:
                yield task, None, "a worker process died; run the command again to resume"
            finished = True
        finally:
            if finished:
                pool.shutdown(wait=True)
            else:  # interrupted (Ctrl-C, or the consumer stopped): drop queued runs, stop the ones in flight
                processes = list((getattr(pool, "_processes", None) or {}).values())
                results = getattr(pool, "_result_queue", None)  # shutdown lets go of it: taken before
                pool.shutdown(wait=False, cancel_futures=True)
                for process in processes:
                    if process.is_alive():
                        process.terminate()
                _unblock_result_reader(results, processes)


def _unblock_result_reader(results: Any, processes: list[Any]) -> None:
    """Let the pool's manager thread end after its workers were terminated.

    A worker terminated while it was writing a result leaves half a message in the result pipe: the pool's manager
    thread then waits in ``recv`` for the rest, and the interpreter's exit, which joins that thread, never ends (an
    interrupted sweep hung after saying so, about one time in six). Once the workers are gone, closing this
    process's end of the pipe's write side makes that ``recv`` see the end of the pipe, which the thread takes as
    a broken pool and ends.
    """
    for process in processes:
        process.join(timeout=5)
    if any(process.is_alive() for process in processes):
        return  # a worker that is still writing may finish its message: leave the pipe open
    writer = getattr(results, "_writer", None)  # the pool's result queue (a multiprocessing SimpleQueue)
    if writer is not None:
        writer.close()


# -- Ray ------------------------------------------------------------------------------------------------------------
def _import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise CurloptError("the Ray executor needs Ray: pip install 'curlopt[ray]' (or use --executor local).") from None
    return ray


def _ray_task(task: Task) -> tuple[Trace | SavedRun | None, str | None, list[CaughtWarning]]:
    return _run_catching(task, False)


#: the logger Ray's own messages are sent to while a sweep runs on Ray (a child of the ``curlopt`` logger)
RAY_LOGGER = logging.getLogger("curlopt.ray")


class _ToCurloptLogger(logging.Handler):
    """Re-logs Ray's records on :data:`RAY_LOGGER` as one line each, ``<message> (from ray)``."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = " ".join(record.getMessage().split())
        except Exception:  # any: a record that cannot be formatted is not worth a crash
            text = " ".join(str(record.msg).split())
        RAY_LOGGER.log(record.levelno, "%s (from ray)", text)


@contextmanager
def ray_logs_to_curlopt() -> Iterator[None]:
    """Within the block, Ray's ``ray`` logger (its own warnings, e.g. at ``ray.init``) goes to :data:`RAY_LOGGER`.

    Ray prints its messages with a handler of its own (a time stamp, a level, a file:line); here they go through
    the toolkit's logging instead, so the command line prints each as one ``warning: ... (from ray)`` line.
    The logger's handlers, level and propagation are restored afterwards.
    """
    logger = logging.getLogger("ray")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    logger.handlers = [_ToCurloptLogger()]
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    try:
        yield
    finally:
        logger.handlers, level, logger.propagate = saved
        logger.setLevel(level)


class RayExecutor:
    """Tasks on a Ray cluster (``address``), or on a local Ray started here (``jobs`` CPUs, default the cores)."""

    def __init__(self, address: str | None = None, jobs: int | None = None, force: bool | None = None):
        self.address = address
        self.jobs = _check_jobs(jobs)
        self.note = ""
        if not address:  # a local Ray runs on this machine's cores; a cluster may have many more
            self.jobs, self.note = _capped(self.jobs, force)
        _import_ray()  # fail early, before any planning output, when Ray is missing

    def describe(self) -> str:
        where = f"cluster at {self.address}" if self.address else "local Ray"
        return (f"ray ({where}" + (f", at most {self.jobs} runs in flight" if self.jobs else "")
                + (f"; {self.note})" if self.note else ")"))

    def run(self, tasks: Iterable[Task], per_run_progress: bool = False,
            out: str | os.PathLike | None = None) -> Iterator[Outcome]:
        """Yield ``(task, trace, error)`` for every task, in the order they finish.

        With ``out``, each trace is written to its file under ``out`` by this process (Ray's workers may run
        on machines without that folder) as soon as it arrives, and its :class:`SavedRun` is yielded instead.

        Warnings raised in the Ray workers, and Ray's own log messages, are shown in this process through its
        warning filters and the toolkit's logging (see :func:`reissue_warnings`, :func:`ray_logs_to_curlopt`).
        """
        ray = _import_ray()
        tasks = list(tasks)
        if not tasks:
            return
        with ray_logs_to_curlopt():
            for task, trace, error in self._run(ray, tasks):
                if out is not None and trace is not None and not isinstance(trace, SavedRun):
                    trace = save_run(trace, Path(out) / task.relative_path)
                yield task, trace, error

    def _run(self, ray: ModuleType, tasks: list[Task]) -> Iterator[Outcome]:
        started_here = False
        in_flight: dict[Any, Task] = {}
        registry: dict = {}
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, logging_level=logging.WARNING)
            else:
                ray.init(num_cpus=self.jobs or default_jobs(), include_dashboard=False, logging_level=logging.WARNING)
            started_here = True
        try:
            remote = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
            window = self.jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
            queue = list(reversed(tasks))

            def submit() -> None:
                while queue and len(in_flight) < window:
                    task = queue.pop()
                    in_flight[remote.remote(task)] = task

            submit()
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                ref = ready[0]
                task = in_flight.pop(ref)
                caught: list[CaughtWarning] = []
                try:
                    trace, error, caught = ray.get(ref)
                except Exception as exc:  # the worker died, or Ray failed the task
                    trace, error = None, f"Ray task failed: {type(exc).__name__}: {exc}"
                reissue_warnings(caught, registry)
                submit()
                yield task, trace, error
        finally:
            for ref in list(in_flight):  # left only when interrupted
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # pragma: no cover - best effort on interrupt
                    pass
            if started_here:
                ray.shutdown()
