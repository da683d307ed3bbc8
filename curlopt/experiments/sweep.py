"""Sweeps over seeds: the experiments of the paper as lists of independent runs.

An *experiment* (``queue``, ``scheduler``) is one or more *settings* (a built-in
model with parameters) times a list of *algorithms* (a registered agent with
options, e.g. PS-CURL with linear epochs) times seeds ``0..N-1``. Each
(setting, algorithm, seed) is one :class:`Task`: it builds its model,
environment and agent from names, so it runs the same in this process, in a
pool worker or on a Ray node, and gives the same trace for the same seed.

Files (under the sweep's output folder)::

    runs/<setting>/<algorithm>/T<steps>-seed<seed>.json.gz   one trace per run
    summary.csv, summary.md                                  see curlopt.experiments.summary
    figures/<setting>-<kind>.png                             see curlopt.experiments.plots

Resuming: a run whose file exists, loads, and records the same task (the
trace's ``meta["sweep"]`` plus its ``env``, ``agent``, ``trigger``, ``seed`` and
``steps``) is not run again; a missing file is run; a corrupt, truncated or
mismatched file is reported and run again. Each run's trace is written
atomically as soon as it finishes, so an interrupted sweep loses only the runs
in flight. The summary and figures are rebuilt from all the run files at the end.

Use :func:`reproduce` from Python, or ``curlopt reproduce`` from the shell.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
import time as clock
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import CurloptError, UnsupportedModelError, UnsupportedUtilityError

__all__ = [
    "AlgorithmSpec", "SettingSpec", "Scale", "Experiment", "EXPERIMENTS", "Task", "SweepResult",
    "plan_tasks", "task_status", "execute_task", "reproduce",
]


# -- what an experiment is ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered agent with options, as one line of the summary.

    Attributes
    ----------
    key : str
        File-name-safe identifier, e.g. ``ps-curl-linear`` (used in run paths and ``--algorithms``).
    label : str
        Display name in tables and legends, e.g. ``PS-CURL (linear)``.
    agent : str
        Name in :data:`curlopt.agents.AGENTS`.
    trigger : str or None
        Epoch trigger; None for agents with their own epoch schedule (the baselines).
    """

    key: str
    label: str
    agent: str
    trigger: str | None = None


@dataclass(frozen=True)
class SettingSpec:
    """A built-in model with parameters (``build_model(model, **params)``) under a name."""

    name: str
    model: str
    params: tuple[tuple[str, Any], ...] = ()
    label: str = ""
    #: what each average cost ζ_i measures (figure titles and table notes)
    cost_names: tuple[str, ...] = ()

    def build(self):
        from ..models import build_model

        return build_model(self.model, **dict(self.params))

    def constraint_names(self) -> list[str]:
        """A readable line per constraint, e.g. ``-ζ_1 ≤ 0 (ζ_1: service cost)``."""
        model = self.build()
        return [_describe_constraint(g, self.cost_names) for g in model.constraints]


def _describe_constraint(g: Any, cost_names: Sequence[str] = ()) -> str:
    weights, bound = getattr(g, "weights", None), getattr(g, "bound", None)
    if weights is None or bound is None:
        return repr(g)
    terms, used = [], []
    for i, w in enumerate(list(weights)):
        if w == 0:
            continue
        sign = "-" if w < 0 else "+"
        size = "" if abs(w) == 1 else f"{abs(w):g}"
        terms.append((sign, f"{size}ζ_{i + 1}"))
        used.append(i)
    if not terms:
        return repr(g)
    text = ("-" if terms[0][0] == "-" else "") + terms[0][1] + "".join(f" {s} {t}" for s, t in terms[1:])
    names = [f"ζ_{i + 1}: {cost_names[i]}" for i in used if i < len(cost_names)]
    return f"{text} ≤ {bound:g}" + (f" ({', '.join(names)})" if names else "")


@dataclass(frozen=True)
class Scale:
    """Horizon and number of seeds."""

    steps: int
    seeds: int


@dataclass(frozen=True)
class Experiment:
    """Settings × algorithms, with a default backend and two scales (reduced default, published ``full``)."""

    name: str
    settings: tuple[SettingSpec, ...]
    algorithms: tuple[AlgorithmSpec, ...]
    backend: str
    default: Scale
    full: Scale
    description: str = ""

    def algorithm(self, key: str) -> AlgorithmSpec:
        for spec in self.algorithms:
            if spec.key == key:
                return spec
        raise CurloptError(
            f"experiment {self.name!r} has no algorithm {key!r}; its algorithms are: {', '.join(a.key for a in self.algorithms)}."
        )


def _curl_algorithms() -> tuple[AlgorithmSpec, ...]:
    return tuple(
        AlgorithmSpec(f"{agent}-{trigger}", f"{agent.upper()} ({trigger})", agent, trigger)
        for agent in ("uc-curl", "ps-curl")
        for trigger in ("doubling", "linear")
    )


#: The experiments of SPEC §8.1 and §8.2. K_ε = 1 throughout.
EXPERIMENTS: dict[str, Experiment] = {
    "queue": Experiment(
        name="queue",
        settings=(SettingSpec("queue", "queue", (), "single-server queue (SPEC §8.1)",
                              ("service cost 6 - 10a", "flow cost 2 - 8(1-b)²")),),
        algorithms=_curl_algorithms() + (
            AlgorithmSpec("ucrl-cmdp", "UCRL-CMDP", "ucrl-cmdp"),
            AlgorithmSpec("primal-dual", "Primal-dual", "primal-dual"),
        ),
        backend="highs",
        default=Scale(steps=100_000, seeds=5),
        full=Scale(steps=500_000, seeds=50),
        description="queue with flow and service control: linear reward, two linear constraints",
    ),
    "scheduler": Experiment(
        name="scheduler",
        settings=(
            SettingSpec("scheduler", "scheduler", (), "fair scheduler with the SLA ζ ≤ 0.3 (SPEC §8.2)",
                        ("client 2's share of service",)),
            SettingSpec("scheduler-unconstrained", "scheduler", (("sla", None),), "fair scheduler without the SLA",
                        ("client 2's share of service",)),
        ),
        algorithms=_curl_algorithms(),
        backend="cvxpy",  # the objective ln λ1 + ln λ2 is not an LP
        default=Scale(steps=50_000, seeds=3),
        full=Scale(steps=500_000, seeds=10),
        description="fair scheduler: proportional fairness (sum of logs), with and without the SLA",
    ),
}


# -- tasks ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=True)
class Task:
    """One run: a setting, an algorithm with its agent options, a seed and a horizon.

    ``options`` are the keyword arguments of :func:`curlopt.agents.make_agent`
    (JSON values only), so the task identifies its run completely.
    """

    setting: SettingSpec
    algorithm: AlgorithmSpec
    options: tuple[tuple[str, Any], ...]
    seed: int
    steps: int
    checkpoints: int = 100

    @property
    def key(self) -> str:
        return f"{self.setting.name}/{self.algorithm.key}/T{self.steps}-seed{self.seed:03d}"

    @property
    def relative_path(self) -> Path:
        return Path("runs") / self.setting.name / self.algorithm.key / f"T{self.steps}-seed{self.seed:03d}.json.gz"

    def identity(self) -> dict[str, Any]:
        """What a run file must record to count as this task (stored as ``meta["sweep"]``)."""
        return {
            "setting": self.setting.name,
            "model": self.setting.model,
            "params": dict(self.setting.params),
            "algorithm": self.algorithm.key,
            "agent": self.algorithm.agent,
            "options": dict(self.options),
            "seed": self.seed,
            "steps": self.steps,
            "checkpoints": self.checkpoints,
        }


def _accepted_options(agent_name: str, wanted: dict[str, Any]) -> dict[str, Any]:
    """Keep the options the agent's constructor names (a baseline may take no trigger or backend)."""
    from ..agents import AGENTS

    cls = AGENTS[agent_name]
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):  # pragma: no cover - exotic classes
        return dict(wanted)
    return {k: v for k, v in wanted.items() if k in parameters}


def _agent_options(spec: AlgorithmSpec, backend: str, steps: int, tightness: float) -> dict[str, Any]:
    from ..agents import AGENTS

    wanted: dict[str, Any] = {"backend": backend, "tightness_constant": tightness}
    if spec.trigger is not None:
        wanted["trigger"] = spec.trigger
    options = _accepted_options(spec.agent, wanted)
    if spec.trigger is not None and "trigger" not in options:
        raise CurloptError(f"algorithm {spec.key!r}: agent {spec.agent!r} takes no epoch trigger.")
    if getattr(AGENTS[spec.agent], "needs_horizon", False):
        options["horizon"] = steps
    return options


def _check_backend(backend: str, settings: Sequence[SettingSpec]) -> None:
    """Refuse, before any run, a backend that is unknown, not installed or cannot express a setting's utilities."""
    from ..backends.registry import backend_class, backends_accepting

    cls = backend_class(backend)  # unknown name: BackendError listing the known ones
    if not cls.is_installed():
        raise CurloptError(f"backend {backend!r} is not installed: pip install 'curlopt[{getattr(cls, 'extra', backend)}]'.")
    for setting in settings:
        model = setting.build()
        for utility in (model.objective, *model.constraints):
            if not cls.accepts(utility):
                others = ", ".join(backends_accepting(utility)) or "none installed"
                raise CurloptError(
                    f"backend {backend!r} cannot express {utility!r} of setting {setting.name!r}; use --backend with one"
                    f" of: {others}."
                )


def plan_tasks(
    experiment: str | Experiment,
    seeds: int | Sequence[int],
    steps: int,
    backend: str | None = None,
    algorithms: Sequence[str] | None = None,
    tightness: float = 1.0,
    checkpoints: int = 100,
) -> tuple[list[Task], list[str]]:
    """The tasks of an experiment, and notes on algorithms left out.

    An algorithm whose agent is not registered, or that refuses a setting's model
    (e.g. a baseline limited to linear utilities), is left out with a note; every
    other failure to build an agent is an error.

    Parameters
    ----------
    experiment : str or Experiment
        A name in :data:`EXPERIMENTS` or an :class:`Experiment`.
    seeds : int or sequence of int
        A count (seeds ``0..N-1``) or explicit seeds.
    steps : int
        The horizon T of every run.
    backend : str, optional
        Backend registry name; default the experiment's.
    algorithms : sequence of str, optional
        Algorithm keys to keep (default all).
    tightness : float, default 1
        K_ε.
    checkpoints : int, default 100
        About this many log-spaced checkpoints per run (the same times for every seed).

    Returns
    -------
    tasks : list of Task
    notes : list of str
    """
    from ..agents import AGENTS, make_agent

    exp = get_experiment(experiment)
    seed_list = _seed_list(seeds)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise CurloptError(f"steps must be an integer >= 1, got {steps!r}.")
    if isinstance(checkpoints, bool) or not isinstance(checkpoints, int) or checkpoints < 2:
        raise CurloptError(f"checkpoints must be an integer >= 2, got {checkpoints!r}.")
    if isinstance(tightness, bool) or not isinstance(tightness, (int, float)) or not math.isfinite(tightness) \
            or tightness < 0:
        raise CurloptError(f"the tightness constant K_ε must be a finite number >= 0, got {tightness!r}.")
    backend = backend or exp.backend
    specs = list(exp.algorithms) if not algorithms else [exp.algorithm(key) for key in algorithms]
    _check_backend(backend, exp.settings)
    notes: list[str] = []
    tasks: list[Task] = []
    for setting in exp.settings:
        model = setting.build()
        for spec in specs:
            if spec.agent not in AGENTS:
                note = f"{spec.label}: skipped, agent {spec.agent!r} is not available in this installation."
                if note not in notes:
                    notes.append(note)
                continue
            options = _agent_options(spec, backend, steps, tightness)
            try:
                make_agent(spec.agent, model, **options)  # refuses unsuitable models before any run starts
            except (UnsupportedModelError, UnsupportedUtilityError) as exc:
                # the algorithm cannot treat this model (e.g. a baseline and a log objective): leave it out
                notes.append(f"{spec.label} on {setting.name}: skipped, the agent refuses this model ({exc}).")
                continue
            frozen = tuple(sorted(options.items()))
            tasks.extend(Task(setting, spec, frozen, seed, steps, checkpoints) for seed in seed_list)
    if not tasks:
        raise CurloptError(f"no algorithm of experiment {exp.name!r} can run here: " + " ".join(notes))
    return tasks, notes


def get_experiment(experiment: str | Experiment) -> Experiment:
    if isinstance(experiment, Experiment):
        return experiment
    try:
        return EXPERIMENTS[experiment]
    except (KeyError, TypeError):
        raise CurloptError(f"unknown experiment {experiment!r}; experiments: {', '.join(EXPERIMENTS)}.") from None


def _seed_list(seeds: int | Sequence[int]) -> list[int]:
    if isinstance(seeds, bool):
        raise CurloptError(f"seeds must be a count >= 1 or a list of seeds, got {seeds!r}.")
    if isinstance(seeds, int):
        if seeds < 1:
            raise CurloptError(f"the number of seeds must be >= 1, got {seeds}.")
        return list(range(seeds))
    out = [int(s) for s in seeds]
    if not out or any(s < 0 for s in out) or len(set(out)) != len(out):
        raise CurloptError(f"seeds must be distinct integers >= 0, got {seeds!r}.")
    return out


# -- one run --------------------------------------------------------------------------------------------------------
def execute_task(task: Task, progress: bool | None = False):
    """Run one task and return its :class:`~curlopt.experiments.Trace` (``meta["sweep"]`` set).

    This is what every executor runs; it builds everything from names, so it
    needs only ``curlopt`` importable where it runs.
    """
    from ..agents import make_agent
    from ..envs import make
    from .loop import run

    model = task.setting.build()
    agent = make_agent(task.algorithm.agent, model, **dict(task.options))
    trace = run(agent, make(model), task.steps, seed=task.seed, checkpoints=task.checkpoints, progress=progress,
                model=model, env_name=task.setting.name)
    trace.meta["sweep"] = task.identity()
    trace.meta["algorithm"] = task.algorithm.key
    trace.meta["label"] = task.algorithm.label
    return trace


def task_status(task: Task, out: str | os.PathLike) -> tuple[str, str]:
    """``("done" | "missing" | "corrupt" | "mismatch", reason)`` of a task's run file under ``out``."""
    from .trace import load_trace

    path = Path(out) / task.relative_path
    if not path.exists():
        return "missing", ""
    try:
        trace = load_trace(path)
    except CurloptError as exc:
        return "corrupt", str(exc)
    meta = trace.meta if isinstance(trace.meta, dict) else {}
    expected = {"env": task.setting.name, "agent": task.algorithm.agent, "seed": task.seed, "steps": task.steps}
    if task.algorithm.trigger is not None:
        expected["trigger"] = task.algorithm.trigger
    for key, value in expected.items():
        if meta.get(key) != value:
            return "mismatch", f"its {key} is {meta.get(key)!r}, the task's is {value!r}"
    if _jsonable(meta.get("sweep")) != _jsonable(task.identity()):
        return "mismatch", "it was written with other options (backend, K_ε, checkpoints or model parameters)"
    if int(trace.checkpoints["t"][-1]) != task.steps:
        return "corrupt", f"its last checkpoint is t={int(trace.checkpoints['t'][-1])}, not T={task.steps}"
    return "done", ""


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value))


# -- the sweep ------------------------------------------------------------------------------------------------------
@dataclass
class SweepResult:
    """What :func:`reproduce` did and wrote.

    Attributes
    ----------
    experiment : str
    out : Path
        The output folder.
    steps : int
    seeds : list of int
    backend, executor : str
    tasks : list of Task
        Every run of the sweep.
    executed : list of Task
        Runs executed by this call (missing, corrupt or mismatched files).
    skipped : list of Task
        Runs whose file was already finished.
    repaired : list of str
        One line per run file found corrupt or mismatched (and run again).
    failed : list of (Task, str)
        Runs that raised; their files are absent and the summary leaves them out.
    notes : list of str
        Algorithms left out (not installed, or refusing the model).
    rows : list of dict
        The summary table (see :mod:`curlopt.experiments.summary`).
    summary_csv, summary_md : Path
    figures : list of Path
    wall_time : float
        Seconds for the whole call.
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
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    summary_csv: Path | None = None
    summary_md: Path | None = None
    figures: list[Path] = field(default_factory=list)
    wall_time: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


def reproduce(
    experiment: str | Experiment = "queue",
    *,
    full: bool = False,
    seeds: int | Sequence[int] | None = None,
    steps: int | None = None,
    jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
    backend: str | None = None,
    out: str | os.PathLike | None = None,
    algorithms: Sequence[str] | None = None,
    tightness: float = 1.0,
    checkpoints: int = 100,
    progress: bool | None = None,
    figures: bool = True,
    echo: Callable[[str], None] | None = print,
) -> SweepResult:
    """Run (or resume) an experiment's sweep, then write its summary tables and figures.

    Parameters
    ----------
    experiment : {"queue", "scheduler"} or Experiment
    full : bool, default False
        The published scale (T = 500,000; 50 seeds for the queue, 10 for the
        scheduler) instead of the reduced default.
    seeds : int or sequence of int, optional
        Number of seeds (``0..N-1``) or explicit seeds; overrides the scale's.
    steps : int, optional
        Horizon T; overrides the scale's.
    jobs : int, optional
        Parallel workers (default: the number of cores). ``jobs=1`` runs in this process.
    executor : {"local", "ray"}, default "local"
        A local process pool, or a Ray cluster (``address``, else a local Ray).
    address : str, optional
        Ray cluster address (``ray.init(address=...)``); only with ``executor="ray"``.
    backend : str, optional
        Backend for every agent; default the experiment's (queue: highs, scheduler: cvxpy).
    out : path, optional
        Output folder; default ``results/<experiment>``.
    algorithms : sequence of str, optional
        A subset of the experiment's algorithm keys (e.g. ``["ps-curl-doubling"]``).
    tightness : float, default 1
        K_ε.
    checkpoints : int, default 100
        About this many log-spaced checkpoints per run.
    progress : bool, optional
        Progress bars on stderr (default on); per-run bars only on a terminal.
    figures : bool, default True
        Write the PNG figures (needs matplotlib).
    echo : callable, optional
        Where messages go (default ``print``; None for silence).

    Returns
    -------
    SweepResult

    Notes
    -----
    The local pool starts its workers with the ``spawn`` method, so a script that
    calls this with ``jobs > 1`` needs the usual ``if __name__ == "__main__":``
    guard (the ``curlopt`` command, notebooks and pytest need nothing).
    Runs that raise are reported in ``failed`` and left out of the summary; the
    others are kept, and the next call retries the failed ones.
    """
    from .executors import make_executor
    from .summary import write_summary
    from .trace import load_trace

    started = clock.perf_counter()
    say = echo or (lambda _message: None)
    exp = get_experiment(experiment)
    scale = exp.full if full else exp.default
    steps = scale.steps if steps is None else steps
    seeds = scale.seeds if seeds is None else seeds
    out = Path(out) if out is not None else Path("results") / exp.name
    if executor not in ("local", "ray"):
        raise CurloptError(f"executor must be 'local' or 'ray', got {executor!r}.")
    if address is not None and executor != "ray":
        raise CurloptError("--address is for the Ray executor; add --executor ray.")
    tasks, notes = plan_tasks(exp, seeds, steps, backend, algorithms, tightness, checkpoints)
    seed_list = _seed_list(seeds)
    backend = backend or exp.backend
    runner = make_executor(executor, jobs=jobs, address=address)
    result = SweepResult(exp.name, out, steps, seed_list, backend, executor, tasks, notes=notes)

    shape = (steps, len(seed_list))
    if shape == (exp.full.steps, exp.full.seeds):
        scale_text = "the published scale"
    else:
        kind = "reduced default scale" if shape == (exp.default.steps, exp.default.seeds) else "custom scale"
        scale_text = f"{kind}; --full for the published T={exp.full.steps:,} with {exp.full.seeds} seeds"
    n_algos = len({t.algorithm.key for t in tasks})
    say(f"{exp.name}: {n_algos} algorithms x {len(exp.settings)} setting(s) x {len(seed_list)} seeds = {len(tasks)} runs,"
        f" T={steps:,}, K_ε={tightness:g}, backend {backend} ({scale_text})")
    for note in notes:
        say(f"note: {note}")

    pending: list[Task] = []
    for task in tasks:
        status, reason = task_status(task, out)
        if status == "done":
            result.skipped.append(task)
            continue
        if status in ("corrupt", "mismatch"):
            line = f"run file {out / task.relative_path} is {'corrupt' if status == 'corrupt' else 'from another configuration'} ({reason}); running it again"
            result.repaired.append(line)
            say(f"note: {line}")
        pending.append(task)
    say(f"{len(result.skipped)} runs already finished in {out}, {len(pending)} to run; executor {runner.describe()}")
    # Seed-major order: every algorithm progresses from the start (partial sweeps are balanced, the ETA is honest).
    rank = {spec.key: i for i, spec in enumerate(exp.algorithms)}
    order = {setting.name: i for i, setting in enumerate(exp.settings)}
    pending.sort(key=lambda task: (seed_list.index(task.seed), order[task.setting.name], rank[task.algorithm.key]))

    show = True if progress is None else bool(progress)
    if pending:
        bar = None
        if show:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(tasks), initial=len(result.skipped), desc=f"{exp.name} runs", unit="run",
                       dynamic_ncols=True, position=0, leave=True)
        per_run = show and _stderr_is_terminal()
        try:
            for task, trace, error in runner.run(pending, per_run_progress=per_run):
                if error is None:
                    trace.save(out / task.relative_path)
                    result.executed.append(task)
                else:
                    result.failed.append((task, error))
                    message = f"run {task.key} failed: {error}"
                    (bar.write if bar is not None else say)(f"error: {message}")
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()

    failed = {task for task, _ in result.failed}
    traces = [(task, load_trace(out / task.relative_path)) for task in tasks
              if task not in failed and (out / task.relative_path).exists()]
    result.summary_csv, result.summary_md, result.rows = write_summary(exp, traces, out, notes)
    if figures and traces:
        try:
            from .plots import plot_experiment

            result.figures = plot_experiment(exp, traces, out / "figures")
        except CurloptError as exc:  # matplotlib missing
            say(f"note: figures skipped: {exc}")
    result.wall_time = clock.perf_counter() - started
    say(f"ran {len(result.executed)} runs ({len(result.skipped)} were already finished"
        + (f", {len(result.failed)} failed" if result.failed else "") + f") in {format_duration(result.wall_time)}")
    return result


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
