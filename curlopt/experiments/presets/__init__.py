"""The paper's experiments as presets of the study runner: ``curlopt reproduce queue|scheduler``.

An *experiment* is a study file shipped in this package (``queue.toml``, ``scheduler.toml``; read by
:func:`load_preset` through the study file's schema) with one section more, ``[reproduce]``: its settings times its
algorithms (a registered agent with its own options, e.g. the epoch trigger), a default backend, the reduced
default scale (``[study] steps`` and ``seeds``) and the published one (``full``). The default backend is that of the
paper's CURL agents; an algorithm can keep its own agent's default instead (``own_backend``; UCRL-CMDP:
``highs-box-columns``, the same program as the whole LP on ``highs`` by column generation), and the toolkit's own
agents run beside the paper's (``extra``). :func:`experiment_study` turns it into a
:class:`~curlopt.experiments.study.spec.Study` under a *profile* of agent options (``profiles.toml``: ``paper``,
the default, the options the paper's experiment sections state and the toolkit's defaults where it is silent;
``analysis``, the analysed algorithm), and :func:`reproduce` runs that study with
:func:`~curlopt.experiments.runner.run_study`: one code path for studies and presets (files, resume, summary and
figures are described in :mod:`curlopt.experiments.runner`).

``--tightness`` and ``--backend`` override the profile for every algorithm that
takes them (``--backend`` also for an algorithm that keeps its agent's default).
The profile, every option and the backend each algorithm runs on are written to
``study.json`` and printed at the start.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import CurloptError
from ..runner import StudyResult, run_study
from ..study.planning import Task, agent_parameters, plan_study
from ..study.reader import SCHEMA, StudyReader, read_toml
from ..study.spec import SettingSpec, Study, StudyAlgorithm

__all__ = ["AlgorithmSpec", "Scale", "Experiment", "EXPERIMENTS", "Profile", "PROFILES", "PRESET_DIR", "load_preset",
           "load_profiles", "plan_tasks", "experiment_study", "reproduce"]


# -- what an experiment is ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered agent with its own options (the epoch trigger of UC-CURL and PS-CURL), as one algorithm of an
    experiment.

    Attributes
    ----------
    key : str
        File-name-safe identifier, e.g. ``ps-curl-linear`` (used in run paths and ``--algorithms``).
    label : str
        Display name in tables and legends, e.g. ``PS-CURL (linear)``.
    agent : str
        Name in :data:`curlopt.agents.AGENTS`.
    options : tuple of (str, value)
        The algorithm's own options (e.g. ``(("trigger", "linear"),)``); the profile's are added to them.
    extra : bool
        True for a configuration of the toolkit's own (safe mode), run beside the paper's and labelled as such;
        the profile's options, which state the paper's choices, do not apply to it.
    own_backend : bool
        True: the algorithm runs on its agent's default backend (the default of the agent's ``backend``
        parameter) rather than the experiment's, unless a backend is given for every algorithm (``--backend``).
    """

    key: str
    label: str
    agent: str
    options: tuple[tuple[str, Any], ...] = ()
    extra: bool = False
    own_backend: bool = False


@dataclass(frozen=True)
class Scale:
    """Horizon and number of seeds."""

    steps: int
    seeds: int


@dataclass(frozen=True)
class Experiment:
    """Settings × algorithms, with a default backend and two scales (reduced default, published ``full``).

    ``backend`` is the backend of the paper's CURL agents, and of every algorithm that takes one except those
    whose :class:`AlgorithmSpec` keeps its agent's default (``own_backend``).
    """

    name: str
    settings: tuple[SettingSpec, ...]
    algorithms: tuple[AlgorithmSpec, ...]
    backend: str
    default: Scale
    full: Scale
    description: str = ""
    #: what a run at the reduced default scale does not show (printed with the plan)
    reduced_note: str = ""

    def algorithm(self, key: str) -> AlgorithmSpec:
        for spec in self.algorithms:
            if spec.key == key:
                return spec
        raise CurloptError(
            f"experiment {self.name!r} has no algorithm {key!r}; its algorithms are: {', '.join(a.key for a in self.algorithms)}."
        )


@dataclass(frozen=True)
class Profile:
    """Agent options of a preset: those its source states, and the toolkit's defaults where it is silent."""

    name: str
    description: str
    #: agent -> options the profile's source states
    stated: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: agent -> the toolkit's defaults, set explicitly where the source is silent
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)

    def options(self, agent: str) -> dict[str, Any]:
        return {**self.defaults.get(agent, {}), **self.stated.get(agent, {})}


# -- the preset files -----------------------------------------------------------------------------------------------
#: where the preset files are (package data: ``<experiment>.toml`` and ``profiles.toml``)
PRESET_DIR = Path(__file__).parent
#: the ``[study]`` keys a preset file gives (the others are the command's: ``--out``, ``--jobs``, ...)
_PRESET_STUDY_KEYS = ("name", "description", "steps", "seeds")


def load_preset(path: str | os.PathLike) -> Experiment:
    """An experiment from its preset file: a study file whose algorithms give their own options, with a
    ``[reproduce]`` section (the default backend, the published scale, the algorithms on their agent's default
    backend, the extras). Checked key by key against the study file's schema (one line naming the file and key).
    """
    data = read_toml(path, "preset file")
    reader = StudyReader(str(path), Path(path).parent)
    if "reproduce" not in data:
        raise reader.fail("[reproduce]", "is required in a preset file (with backend and full).")
    data = dict(data)
    preset = reader.section(data.pop("reproduce"), SCHEMA["reproduce"], "[reproduce]")
    full = reader.section(preset["full"], SCHEMA["scale"], "[reproduce] full")
    for key in reader.table(data.get("study", {}), "[study]"):
        if key not in _PRESET_STUDY_KEYS:
            raise reader.fail(f"[study] {key}", f"is not read from a preset file; it gives {', '.join(_PRESET_STUDY_KEYS)}.")
    for section in ("options", "grid"):
        if section in data:
            raise reader.fail(f"[{section}]", "is not read from a preset file; give each algorithm its own options.")
    study = reader.study(data)
    if study.seeds != tuple(range(len(study.seeds))):
        raise reader.fail("[study] seeds", f"a preset file gives a count of seeds, got {list(study.seeds)}.")
    keys = [a.key for a in study.algorithms]
    for name in ("own_backend", "extra"):
        for key in preset[name]:
            if key not in keys:
                raise reader.fail(f"[reproduce] {name}", f"names no algorithm {key!r}; algorithms: {', '.join(keys)}.")
    for algorithm in study.algorithms:
        if algorithm.grid:
            raise reader.fail(f"{algorithm.where}.grid", "is not read from a preset file; give one configuration.")
    algorithms = tuple(AlgorithmSpec(a.key, a.label, a.agent, a.options, a.key in preset["extra"],
                                     a.key in preset["own_backend"]) for a in study.algorithms)
    return Experiment(study.name, study.settings, algorithms, preset["backend"], Scale(study.steps, len(study.seeds)),
                      Scale(full["steps"], full["seeds"]), study.description, preset["reduced_note"])


def load_profiles(path: str | os.PathLike) -> dict[str, Profile]:
    """The profiles of a profiles file: one table per profile, checked against the study file's schema."""
    reader = StudyReader(str(path), Path(path).parent)
    profiles = {}
    for name, table in read_toml(path, "profiles file").items():
        entry = reader.section(table, SCHEMA["profile"], f"[{name}]")
        options = {part: {agent: dict(reader.options(value, f"[{name}] {part}.{agent}"))
                          for agent, value in entry[part].items()} for part in ("stated", "defaults")}
        profiles[name] = Profile(name, entry["description"], options["stated"], options["defaults"])
    return profiles


#: The paper's two experiments (the preset files ``queue.toml`` and ``scheduler.toml``).
EXPERIMENTS: dict[str, Experiment] = {name: load_preset(PRESET_DIR / f"{name}.toml") for name in ("queue", "scheduler")}
#: The profiles (``profiles.toml``).
PROFILES: dict[str, Profile] = load_profiles(PRESET_DIR / "profiles.toml")


def get_experiment(experiment: str | os.PathLike | Experiment) -> Experiment:
    """A preset by name, a preset file by path, or the experiment given."""
    if isinstance(experiment, Experiment):
        return experiment
    if isinstance(experiment, os.PathLike) or (isinstance(experiment, str) and experiment.endswith(".toml")):
        return load_preset(experiment)
    try:
        return EXPERIMENTS[experiment]
    except (KeyError, TypeError):
        raise CurloptError(f"unknown experiment {experiment!r}; experiments: {', '.join(EXPERIMENTS)}.") from None


def get_profile(profile: str | Profile) -> Profile:
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[profile]
    except (KeyError, TypeError):
        raise CurloptError(f"unknown profile {profile!r}; profiles: {', '.join(PROFILES)}.") from None


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else (f"{value:g}" if isinstance(value, float) else str(value))


def experiment_study(
    experiment: str | os.PathLike | Experiment = "queue",
    *,
    profile: str | Profile = "paper",
    full: bool = False,
    seeds: int | Sequence[int] | None = None,
    steps: int | None = None,
    backend: str | None = None,
    algorithms: Sequence[str] | None = None,
    tightness: float | None = None,
    checkpoints: int = 100,
    out: str | os.PathLike | None = None,
) -> tuple[Study, str]:
    """An experiment under a profile as a :class:`Study`, and a line saying its scale.

    Algorithms whose agent is not registered in this installation are left out
    with a note (in the study's profile record); every other problem is an error.
    The arguments are those of :func:`reproduce`.
    """
    exp = get_experiment(experiment)
    prof = get_profile(profile)
    scale = exp.full if full else exp.default
    steps = scale.steps if steps is None else steps
    seed_list = _check_numbers(exp.name, steps, scale.seeds if seeds is None else seeds, checkpoints, tightness)
    given = backend is not None
    backend = backend or exp.backend
    specs = _algorithm_specs(exp, algorithms)
    chosen, notes = _study_algorithms(specs, prof, backend, tightness, given)
    extras = [spec.label for spec in specs if spec.extra and spec.agent in {a.agent for a in chosen}]
    if extras:
        notes.append(f"{', '.join(extras)}: the toolkit's own agent at its defaults, beside the paper's configurations"
                     " (the profile's options are the paper's and do not apply to it; docs/safe-mode.md); leave it out"
                     " with --algorithms.")
    if exp.reduced_note and steps < exp.full.steps:
        notes.append(exp.reduced_note)
    if not chosen:
        raise CurloptError(f"no algorithm of experiment {exp.name!r} can run here: " + " ".join(notes))
    if out is None:
        out = Path("results") / (exp.name if prof.name == "paper" else f"{exp.name}-{prof.name}")
    study = Study(
        name=exp.name, steps=steps, seeds=tuple(seed_list), settings=exp.settings, algorithms=tuple(chosen),
        description=exp.description, checkpoints=checkpoints, out=str(out),
        source=f"experiment {exp.name!r} (profile {prof.name})",
        profile=_profile_record(exp, prof, specs, chosen, backend, given, tightness, notes),
    )
    return study, f"backend {backend} ({'; '.join(_other_backends(specs, chosen, backend) + [_scale_text(exp, steps, len(seed_list))])})"


def _check_numbers(name: str, steps: Any, seeds: Any, checkpoints: Any, tightness: Any) -> tuple[int, ...]:
    """The seeds, once the horizon, seeds and checkpoint count are checked as a study file's are (one line naming
    the argument and what it accepts), and the tightness constant K_ε."""
    reader, keys = StudyReader(f"experiment {name!r}", Path.cwd()), SCHEMA["study"]
    reader.integer(steps, "steps", keys["steps"])
    reader.integer(checkpoints, "checkpoints", keys["checkpoints"])
    if tightness is not None and (isinstance(tightness, bool) or not isinstance(tightness, (int, float))
                                  or not math.isfinite(tightness) or tightness < 0):
        raise CurloptError(f"the tightness constant K_ε must be a finite number >= 0, got {tightness!r}.")
    return reader.seeds(seeds if isinstance(seeds, int) else list(seeds), "seeds")


def _algorithm_specs(exp: Experiment, algorithms: Sequence[str] | None) -> list[AlgorithmSpec]:
    """The experiment's algorithms named by ``algorithms`` (default: all), in the experiment's order."""
    keys = list(algorithms) if algorithms else [a.key for a in exp.algorithms]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            raise CurloptError(f"--algorithms names {key!r} twice; give each algorithm once.")
    specs = [exp.algorithm(key) for key in keys]
    specs.sort(key=list(exp.algorithms).index)  # the experiment's order, whatever the order of --algorithms
    return specs


def _own_backend(spec: AlgorithmSpec, takes: dict[str, Any]) -> str:
    """The default of the agent's ``backend`` parameter, for a spec that keeps it (a name, or an error)."""
    default = takes["backend"].default
    if not isinstance(default, str) or default == "auto":
        # "auto" or an object would leave the backend the runs use unstated in the study record
        raise CurloptError(f"algorithm {spec.key!r} keeps its agent's default backend, but agent {spec.agent!r}"
                           f" has no named default backend (got {default!r}).")
    return default


def _study_algorithms(specs: list[AlgorithmSpec], prof: Profile, backend: str, tightness: float | None,
                      given: bool = False) -> tuple[list[StudyAlgorithm], list[str]]:
    """Each spec as a study algorithm with the profile's options, and notes on those not registered here.

    ``backend`` goes to every agent that takes one, except a spec with ``own_backend`` (its agent's default)
    when the backend was not ``given`` for every algorithm.
    """
    from ...agents import AGENTS

    notes: list[str] = []
    chosen: list[StudyAlgorithm] = []
    for spec in specs:
        if spec.agent not in AGENTS:
            notes.append(f"{spec.label}: skipped, agent {spec.agent!r} is not available in this installation.")
            continue
        takes = agent_parameters(spec.agent)
        options: dict[str, Any] = {}
        if "backend" in takes:
            options["backend"] = _own_backend(spec, takes) if spec.own_backend and not given else backend
        if "tightness_constant" in takes:
            options["tightness_constant"] = 1
        for name, value in spec.options:
            if name not in takes:
                raise CurloptError(f"algorithm {spec.key!r}: agent {spec.agent!r} takes no option {name!r}.")
            options[name] = value
        if not spec.extra:  # the profile states the paper's choices; an extra runs at its own defaults
            options.update(prof.options(spec.agent))  # given even if the agent does not take them: planning refuses
        if tightness is not None and "tightness_constant" in takes:
            options["tightness_constant"] = tightness
        chosen.append(StudyAlgorithm(spec.key, spec.agent, spec.label, tuple(sorted(options.items())), (), spec.key))
    return chosen, notes


def _backends(chosen: list[StudyAlgorithm]) -> dict[str, str]:
    """Algorithm key -> the backend it runs on, for the algorithms that take one."""
    return {a.key: str(dict(a.options)["backend"]) for a in chosen if "backend" in dict(a.options)}


def _other_backends(specs: list[AlgorithmSpec], chosen: list[StudyAlgorithm], backend: str) -> list[str]:
    """``key: backend`` for each algorithm not on ``backend`` (for the heading of the announcement)."""
    own = {s.key for s in specs if s.own_backend}
    return [f"{key}: {name}" + (", its agent's default" if key in own else "")
            for key, name in _backends(chosen).items() if name != backend]


def _profile_record(exp: Experiment, prof: Profile, specs: list[AlgorithmSpec], chosen: list[StudyAlgorithm],
                    backend: str, given: bool, tightness: float | None, notes: list[str]) -> dict[str, Any]:
    """The study's profile record (``study.json``): the profile, the overrides, each algorithm's options and
    backend, notes."""
    silent = sorted({f"{k}={_show(v)}" for a in chosen for k, v in prof.defaults.get(a.agent, {}).items()})
    record_notes = [f"Profile {prof.name}: {prof.description}."]
    if silent:
        agents = sorted({a.agent for a in chosen if prof.defaults.get(a.agent)})
        record_notes.append(f"Where the paper is silent, the toolkit's default: {', '.join(silent)}"
                            f" ({', '.join(agents)}).")
    backends = _backends(chosen)
    by_key = {s.key: s for s in specs}
    defaults = {key: _default_backend(by_key[key]) if by_key[key].own_backend else exp.backend for key in backends}
    # an override is a --backend that changes some algorithm's backend (one equal to every default changes nothing)
    overridden = given and backends != defaults
    if backends:
        kept = [f"{by_key[key].label} on {name} (its agent's default)" for key, name in backends.items()
                if by_key[key].own_backend and not given]
        record_notes.append(
            f"Backends: {backend} for every algorithm that takes one" + (" (--backend)" if given else "")
            + (f", except {', '.join(kept)}; --backend sets one for all" if kept else "") + ".")
    overrides = []
    if tightness is not None:
        overrides.append(f"K_ε={_show(tightness)} (--tightness)")
    if overridden:
        overrides.append(f"backend {backend} (--backend)")
    if overrides:
        record_notes.append("Overriding the profile: " + ", ".join(overrides) + ".")
    return {
        "name": prof.name, "description": prof.description, "stated": prof.stated, "defaults": prof.defaults,
        "overrides": {k: v for k, v in (("tightness_constant", tightness),
                                        ("backend", backend if overridden else None)) if v is not None},
        "options": {a.key: dict(a.options) for a in chosen},
        "backends": backends,
        "notes": record_notes + notes,
    }


def _default_backend(spec: AlgorithmSpec) -> Any:
    """The default of the ``backend`` parameter of ``spec``'s (registered) agent, whatever it is."""
    return agent_parameters(spec.agent)["backend"].default


def _scale_text(exp: Experiment, steps: int, n_seeds: int) -> str:
    """Whether ``steps`` and ``n_seeds`` are the experiment's published, reduced default or a custom scale."""
    shape = (steps, n_seeds)
    if shape == (exp.full.steps, exp.full.seeds):
        return "the published scale"
    kind = "reduced default scale" if shape == (exp.default.steps, exp.default.seeds) else "custom scale"
    return f"{kind}; --full for the published T={exp.full.steps:,} with {exp.full.seeds} seeds"


def plan_tasks(
    experiment: str | os.PathLike | Experiment,
    seeds: int | Sequence[int],
    steps: int,
    backend: str | None = None,
    algorithms: Sequence[str] | None = None,
    tightness: float | None = None,
    checkpoints: int = 100,
    profile: str | Profile = "paper",
) -> tuple[list[Task], list[str]]:
    """The runs of an experiment under a profile, and notes on algorithms left out (see :func:`reproduce`)."""
    study, _ = experiment_study(experiment, profile=profile, seeds=seeds, steps=steps, backend=backend,
                                algorithms=algorithms, tightness=tightness, checkpoints=checkpoints)
    plan = plan_study(study)
    skipped = [n for n in (study.profile or {}).get("notes", []) if "skipped" in n]
    return plan.tasks, skipped + plan.notes


def reproduce(
    experiment: str | os.PathLike | Experiment = "queue",
    *,
    profile: str | Profile = "paper",
    full: bool = False,
    seeds: int | Sequence[int] | None = None,
    steps: int | None = None,
    jobs: int | None = None,
    executor: str = "local",
    address: str | None = None,
    backend: str | None = None,
    out: str | os.PathLike | None = None,
    algorithms: Sequence[str] | None = None,
    tightness: float | None = None,
    checkpoints: int = 100,
    progress: bool | None = None,
    figures: bool = True,
    echo: Callable[[str], None] | None = print,
    max_runs: int | None = None,
    wait: bool = False,
) -> StudyResult:
    """Run (or resume) an experiment under a profile through the study runner, then write its tables and figures.

    Parameters
    ----------
    experiment : {"queue", "scheduler"}, path of a preset file, or Experiment
    profile : {"paper", "analysis"}, default "paper"
        The agents' options (see the module docstring).
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
        Backend for every agent that takes one. Default: the experiment's (queue: highs, scheduler: cvxpy) for
        every algorithm except those that keep their agent's default (queue: UCRL-CMDP on highs-box-columns).
    out : path, optional
        Output folder; default ``results/<experiment>`` (``results/<experiment>-<profile>`` for a profile other
        than ``paper``).
    algorithms : sequence of str, optional
        A subset of the experiment's algorithm keys (e.g. ``["ps-curl-doubling"]``), each at most once.
    tightness : float, optional
        K_ε for every agent that takes it (default: the profile's, 1).
    checkpoints : int, default 100
        About this many log-spaced checkpoints per run.
    progress : bool, optional
        Progress bars on stderr (default on); per-run bars only on a terminal.
    figures : bool, default True
        Write the figures (needs matplotlib).
    echo : callable, optional
        Where messages go (default ``print``; None for silence).
    max_runs : int, optional
        Allow up to this many runs (default :data:`~curlopt.experiments.study.spec.DEFAULT_MAX_RUNS`).
    wait : bool, default False
        When another sweep holds the output folder, wait for it instead of refusing.

    Returns
    -------
    StudyResult
        ``profile`` names the profile; ``study`` is the study that ran.

    Notes
    -----
    The local pool starts its workers with the ``spawn`` method, so a script that
    calls this with ``jobs > 1`` needs the usual ``if __name__ == "__main__":``
    guard (the ``curlopt`` command, notebooks and pytest need nothing).
    """
    study, heading = experiment_study(experiment, profile=profile, full=full, seeds=seeds, steps=steps,
                                      backend=backend, algorithms=algorithms, tightness=tightness,
                                      checkpoints=checkpoints, out=out)
    return run_study(study, jobs=jobs, executor=executor, address=address, progress=progress, figures=figures,
                     echo=echo, heading=heading, max_runs=max_runs, wait=wait)
