"""Planning a study: its grid expanded into configurations, each checked once, and its runs as tasks.

A *configuration* is one algorithm with one complete set of agent options on one
setting. An algorithm's configurations are the cartesian product of the study's
``[grid]`` axes that its agent takes and its own ``grid`` axes (the last axis
varies fastest). Options come from ``[options]`` (for the agents that take them),
overridden by the algorithm's ``options``; an algorithm's own axis replaces a
study axis of the same option, and an option the algorithm fixes in its
``options`` is not expanded for it. An agent *takes* an option when its class
names it as a parameter (``**backend_options`` does not count). ``seed`` is set
per run, and ``horizon`` is set to the study's steps for the agents that need
the horizon.

Sizes come first: the configuration and run counts are products of the axis
lengths (:func:`study_size`), computed before anything is expanded, and a study
of more runs than its limit is refused with them (:func:`check_size`; the
limit is ``max_runs``, default 5,000), so a mistyped axis costs no time.

Every configuration's agent is built once on its model before anything runs,
so a bad option value stops the study with one line naming the key it came
from. An agent that refuses a model (e.g. a baseline limited to linear
utilities) is left out for that model with a note.

Run files: ``runs/<setting>/<algorithm>/<configuration>/T<steps>-seed<seed:03d>.json.gz``,
where ``<configuration>`` is :func:`configuration_key` of the options.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ...errors import CurloptError, UnsupportedModelError, UnsupportedUtilityError
from .spec import DEFAULT_MAX_RUNS, SettingSpec, Study, StudyAlgorithm, StudyError, canonical

if TYPE_CHECKING:  # pragma: no cover
    from ...agents.options import AgentOption
    from ...models.cmdp import CMDP

__all__ = ["Configuration", "RunOfConfiguration", "Task", "Plan", "StudySize", "plan_study", "study_size", "check_size", "configuration_key",
           "agent_parameters", "option_label", "value_label", "MAX_KEY_LENGTH", "OPTION_NAMES"]

#: configuration keys longer than this are shortened and given a hash
MAX_KEY_LENGTH = 100
#: how options are shown in labels
OPTION_NAMES = {"tightness_constant": "K_ε"}
_SIMPLE_STRING = re.compile(r"[a-z][a-z0-9.]*(-[a-z0-9.]+)*\Z")
_SIMPLE_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")
_WORDS = {"true", "false", "none", "inf", "nan", "default"}
#: builds the error naming a study key and what is wrong with its value
_Fail = Callable[[str, str], StudyError]


# -- configuration keys ---------------------------------------------------------------------------------------------
def _value_text(value: Any) -> tuple[str, bool]:
    """``(text, exact)``: the value in a key, and whether the text alone identifies it."""
    value = canonical(value)
    if value is True or value is False or value is None:
        return str(value).lower(), True
    if isinstance(value, int):
        return str(value), True
    if isinstance(value, float):
        return repr(value), True  # never integral here: always has '.', 'e', 'inf' or 'nan'
    if isinstance(value, str) and _SIMPLE_STRING.match(value) and value not in _WORDS:
        return value, True
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return _sanitise(text), False


def _sanitise(text: str) -> str:
    return re.sub(r"[^a-z0-9.+-]+", ".", text.lower()).strip(".") or "x"


def configuration_key(options: Mapping[str, Any]) -> str:
    """A file-name-safe key of a set of agent options, e.g. ``backend-highs_tightness_constant-3_trigger-linear``.

    Options are sorted by name and written ``name-value``, joined by ``_``. Values
    equal in Python (``3`` and ``3.0``) give the same key; any two other option
    sets give different keys: the readable form is used only when it can be read
    back unambiguously (names of ``[a-z0-9_]``, values that are numbers, booleans
    or strings of ``[a-z0-9.-]`` starting with a letter, never containing ``_``) and
    is at most :data:`MAX_KEY_LENGTH` characters; otherwise the key is a shortened
    form, ``~`` and 12 hex digits of the SHA-256 of the options' canonical JSON.
    No options at all give ``default``.
    """
    if not options:
        return "default"
    parts, exact = [], True
    for name in sorted(options):
        text, ok = _value_text(options[name])
        exact = exact and ok and bool(_SIMPLE_NAME.match(name))
        parts.append(f"{name}-{text}")
    slug = "_".join(parts)
    if exact and len(slug) <= MAX_KEY_LENGTH:
        return slug
    blob = json.dumps(canonical(dict(options)), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
    short = re.sub(r"[^a-z0-9._+-]+", ".", slug.lower())[: MAX_KEY_LENGTH - 13].rstrip("._-+")
    return f"{short}~{digest}"


def value_label(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


def option_label(name: str, value: Any) -> str:
    """``K_ε=3``, ``radius=experiment``: an option as shown in labels."""
    return f"{OPTION_NAMES.get(name, name)}={value_label(value)}"


# -- configurations and tasks ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Configuration:
    """One algorithm with one complete set of agent options on one setting.

    ``options`` are the ``make_agent`` keywords, the automatic ones (``horizon``)
    included; ``key`` (its run directory) is computed from the others, since the
    run files already name the horizon T. ``sources`` say where each option came
    from (``[grid] radius``, ``algorithms[2].options.trigger``).
    """

    setting: SettingSpec
    algorithm: StudyAlgorithm
    key: str
    label: str
    options: tuple[tuple[str, Any], ...]
    varied: tuple[tuple[str, Any], ...] = ()
    automatic: tuple[str, ...] = ()
    sources: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def relative_dir(self) -> Path:
        return Path("runs") / self.setting.name / self.algorithm.key / self.key

    @property
    def name(self) -> str:
        return f"{self.setting.name}/{self.algorithm.key}/{self.key}"

    def chosen_options(self) -> dict[str, Any]:
        """The options the study chose (the automatic ones left out)."""
        return {k: v for k, v in self.options if k not in self.automatic}

    def record(self) -> dict[str, Any]:
        """The content of its ``config.json``."""
        automatic = {"horizon": "the run's steps T (the agent needs the horizon)"} if "horizon" in self.automatic else {}
        return {
            "format": "curlopt-configuration", "version": 1, "key": self.key, "label": self.label,
            "setting": self.setting.describe(),
            "algorithm": {"key": self.algorithm.key, "agent": self.algorithm.agent, "label": self.algorithm.label},
            "options": self.chosen_options(), "automatic": automatic, "varied": dict(self.varied),
        }


class RunOfConfiguration:
    """What every run of a study (a :class:`Task`, an episodic task) reads from its configuration, and the tail of
    its identity: ``optimum_backend`` and ``signals`` only when the study sets them, so the identities (and the reuse
    of stored runs) of studies without them are unchanged."""

    configuration: Configuration
    optimum_backend: str | None
    signals: str

    @property
    def setting(self) -> SettingSpec:
        return self.configuration.setting

    @property
    def algorithm(self) -> StudyAlgorithm:
        return self.configuration.algorithm

    @property
    def options(self) -> tuple[tuple[str, Any], ...]:
        return self.configuration.options

    def _configuration_identity(self) -> dict[str, Any]:
        return {**self.setting.describe(), "algorithm": self.algorithm.key, "agent": self.algorithm.agent,
                "configuration": self.configuration.key, "options": dict(self.options)}

    def _study_identity(self) -> dict[str, Any]:
        return {**({"optimum_backend": self.optimum_backend} if self.optimum_backend is not None else {}),
                **({"signals": self.signals} if self.signals != "known" else {})}


@dataclass(frozen=True)
class Task(RunOfConfiguration):
    """One run: a configuration, a seed, a horizon. It identifies its run completely (``identity``)."""

    configuration: Configuration
    seed: int
    steps: int
    checkpoints: int = 100
    #: the backend of the run's reference optimum (``[study] optimum_backend``); None: the learning loop's default
    optimum_backend: str | None = None
    #: what the run's agent observes (``[study] signals``: known, bernoulli or gaussian); the executors pass
    #: :func:`~curlopt.experiments.study.spec.loop_signals` of it to the learning loop
    signals: str = "known"

    @property
    def key(self) -> str:
        return f"{self.configuration.name}/T{self.steps}-seed{self.seed:03d}"

    @property
    def relative_path(self) -> Path:
        return self.configuration.relative_dir / f"T{self.steps}-seed{self.seed:03d}.json.gz"

    def identity(self) -> dict[str, Any]:
        """What a run file must record to count as this task (stored as ``meta["sweep"]``)."""
        return {**self._configuration_identity(), "seed": self.seed, "steps": self.steps,
                "checkpoints": self.checkpoints, **self._study_identity()}


@dataclass
class Plan:
    """A study's configurations (study order), its runs, and notes on what was left out or not expanded."""

    study: Study
    configurations: list[Configuration]
    tasks: list[Task]
    notes: list[str]


# -- planning -------------------------------------------------------------------------------------------------------
def agent_parameters(agent: str) -> dict[str, AgentOption]:
    """The options an agent takes, as the agent declares them (:func:`curlopt.agents.agent_options`): each
    option's declaration, its ``default`` included."""
    from ...agents import agent_options

    return agent_options(agent)


def _reserved(agent: str) -> dict[str, str]:
    from ...agents import AGENTS

    reasons = {"seed": "is set for each run from [study] seeds"}
    if getattr(AGENTS[agent], "needs_horizon", False):
        reasons["horizon"] = "is set to [study] steps for this agent"
    return reasons


def _taken(agent: str) -> list[str]:
    reserved = _reserved(agent)
    return [name for name in agent_parameters(agent) if name not in reserved]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if isinstance(exc, CurloptError) else f"{type(exc).__name__}: {text}"


def plan_study(study: Study, say: Callable[[str], None] | None = None, max_runs: int | None = None) -> Plan:
    """Expand the study's grid, check every configuration's agent on its model, and list the runs.

    The counts are checked first (:func:`study_size`, from the axis lengths alone): a study of more than
    ``max_runs`` runs (default: the study's ``max_runs``, else :data:`~curlopt.experiments.study.spec.DEFAULT_MAX_RUNS`)
    is refused before any configuration is built.

    Raises
    ------
    StudyError
        For an option no agent takes, a bad option value (whatever the agent
        raises), a backend that is not installed or cannot express a model, a
        study above its run limit (with its counts and how to allow it), or a
        study where nothing can run: one line naming the key the value came from.
    """
    say = say or (lambda _message: None)

    def fail(key: str, message: str) -> StudyError:
        return StudyError(f"{study.source}: {key}: {message}")

    notes: list[str] = []
    takes = {algorithm.key: _taken(algorithm.agent) for algorithm in study.algorithms}
    _check_study_options(study, takes, fail)
    for algorithm in study.algorithms:
        _check_algorithm_options(algorithm, takes[algorithm.key], fail)
    size = study_size(study)
    check_size(study, size, max_runs)
    if size.runs > 1000:
        say(f"note: this study is {size.runs:,} runs ({size.configurations:,} configurations x {size.seeds} seeds);"
            " checking every configuration first")
    expanded = [(algorithm, _combinations(study, algorithm, takes[algorithm.key], notes))
                for algorithm in study.algorithms]

    configurations: list[Configuration] = []
    for setting in study.settings:
        configurations += _setting_configurations(study, setting, expanded, notes, fail)
    if not configurations:
        raise StudyError(f"{study.source}: no configuration can run: " + " ".join(notes))
    tasks = [Task(configuration, seed, study.steps, study.checkpoints, study.optimum_backend, study.signals)
             for configuration in configurations for seed in study.seeds]
    return Plan(study, configurations, tasks, list(dict.fromkeys(notes)))


# -- sizes ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StudySize:
    """A study's counts, computed from its axis lengths without expanding anything.

    ``configurations`` counts every algorithm's grid points on every setting (before agents that refuse a model
    are left out, so the plan may hold fewer); ``runs`` is that times ``seeds``. ``axes`` are the expanded axes
    as ``(where, number of values)``, longest first.
    """

    configurations: int
    runs: int
    seeds: int
    axes: tuple[tuple[str, int], ...] = ()


def study_size(study: Study) -> StudySize:
    """The configuration and run counts of a study: products of axis lengths, nothing expanded or built."""
    axes: dict[str, int] = {}
    per_setting = 0
    for algorithm in study.algorithms:
        points = 1
        for _name, values, source in _axes(study, algorithm, _taken(algorithm.agent), "", []):
            points *= len(values)
            axes[source] = len(values)
        per_setting += points
    configurations = per_setting * len(study.settings)
    ordered = tuple(sorted(axes.items(), key=lambda item: -item[1]))
    return StudySize(configurations, configurations * len(study.seeds), len(study.seeds), ordered)


def check_size(study: Study, size: StudySize, max_runs: int | None = None) -> None:
    """Refuse a study of more runs than ``max_runs`` (default: the study's, else ``DEFAULT_MAX_RUNS``).

    Raises
    ------
    StudyError
        One line with the counts, the longest axes, and the option that allows the study.
    """
    if max_runs is not None and (isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1):
        raise StudyError(f"max_runs must be an integer >= 1, got {max_runs!r}.")
    limit = max_runs if max_runs is not None else study.max_runs if study.max_runs is not None else DEFAULT_MAX_RUNS
    if size.runs <= limit:
        return
    if max_runs is not None:
        which = f"the --max-runs {limit:,} given"
    elif study.max_runs is not None:
        which = f"its max_runs = {limit:,}"
    else:
        which = f"the default limit of {limit:,} runs"
    factors = [f"{where}: {length:,} values" for where, length in size.axes if length > 1][:3]
    factors.append(f"seeds: {size.seeds:,}")
    where_to_allow = f"--max-runs {size.runs}" + ("" if study.profile else f" (or max_runs = {size.runs} in [study])")
    raise StudyError(f"{study.source}: the study is {size.runs:,} runs ({size.configurations:,} configurations x"
                     f" {size.seeds:,} seeds), more than {which}; check its sizes ({', '.join(factors)}), or allow"
                     f" it with {where_to_allow}.")


#: one configuration's options before checking: (all options, the grid's values, where each option came from)
_Combination = tuple[dict[str, Any], dict[str, Any], dict[str, str]]


def _check_study_options(study: Study, takes: dict[str, list[str]], fail: _Fail) -> None:
    """Refuse an ``[options]`` or ``[grid]`` entry that no algorithm of the study takes."""
    for section, entries in (("[options]", study.options), ("[grid]", study.grid)):
        for name, _ in entries:
            if not any(name in takes[a.key] for a in study.algorithms):
                reasons = [_reserved(a.agent)[name] for a in study.algorithms if name in _reserved(a.agent)]
                offered = sorted({o for a in study.algorithms for o in takes[a.key]})
                raise fail(f"{section} {name}", reasons[0] + "." if reasons else
                           f"no algorithm of the study takes this option; they take: {', '.join(offered)}.")


def _check_algorithm_options(algorithm: StudyAlgorithm, mine: list[str], fail: _Fail) -> None:
    """Refuse an algorithm's option or axis that its agent does not take, or that is set per run."""
    reserved = _reserved(algorithm.agent)
    for part, entries in (("options", algorithm.options), ("grid", algorithm.grid)):
        for name, _ in entries:
            where = f"{algorithm.where}.{part}.{name}"
            if name in reserved:
                raise fail(where, f"{reserved[name]}; do not set it.")
            if name not in mine:
                raise fail(where, f"{_who(algorithm)} takes no option {name!r}; it takes: {', '.join(mine) or 'none'}.")


def _who(algorithm: StudyAlgorithm) -> str:
    return f"agent {algorithm.agent!r}" + (f" (algorithm {algorithm.key!r})" if algorithm.key != algorithm.agent else "")


def _combinations(study: Study, algorithm: StudyAlgorithm, mine: list[str], notes: list[str]) -> list[_Combination]:
    """An algorithm's option sets: its fixed options with every point of its grid (the last axis fastest).

    ``mine`` are the options its agent takes (its own options are checked by :func:`_check_algorithm_options`);
    study options and axes it does not take are noted in ``notes``.
    """
    who = _who(algorithm)
    fixed: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, value in study.options:
        if name in mine:
            fixed[name], sources[name] = value, f"[options] {name}"
        else:
            notes.append(f"[options] {name} does not apply to {algorithm.key}: {who} takes no option {name!r}.")
    for name, value in algorithm.options:
        fixed[name], sources[name] = value, f"{algorithm.where}.options.{name}"
    axes = _axes(study, algorithm, mine, who, notes)
    combos = []
    for values in itertools.product(*[axis[1] for axis in axes]):
        varied = {axis[0]: value for axis, value in zip(axes, values, strict=True)}
        combos.append(({**fixed, **varied}, varied, {**sources, **{axis[0]: axis[2] for axis in axes}}))
    return combos


def _axes(study: Study, algorithm: StudyAlgorithm, mine: list[str], who: str,
          notes: list[str]) -> list[tuple[str, tuple, str]]:
    """The grid axes ``(option, values, source)`` expanded for an algorithm: the study's, then its own.

    An algorithm's own axis replaces the study's axis of the same option; a study axis its agent does not take,
    or that its ``options`` fix, is not expanded for it (a note says so).
    """
    own = dict(algorithm.grid)
    axes: list[tuple[str, tuple, str]] = []
    for name, values in study.grid:
        if name in own:
            axes.append((name, own.pop(name), f"{algorithm.where}.grid.{name}"))
        elif name not in mine:
            notes.append(f"[grid] {name} is not expanded for {algorithm.key}: {who} takes no option {name!r}.")
        elif name in dict(algorithm.options):
            notes.append(f"[grid] {name} is not expanded for {algorithm.key}: {algorithm.where}.options sets it.")
        else:
            axes.append((name, values, f"[grid] {name}"))
    return axes + [(name, values, f"{algorithm.where}.grid.{name}") for name, values in own.items()]


def _setting_configurations(study: Study, setting: SettingSpec,
                            expanded: list[tuple[StudyAlgorithm, list[_Combination]]], notes: list[str],
                            fail: _Fail) -> list[Configuration]:
    """The configurations of one setting, each checked on its model (backends once each).

    A configuration whose agent refuses the model is left out with a note in ``notes``.
    """
    model = setting.build()
    checked_backends: set[str] = set()
    configurations: list[Configuration] = []
    for algorithm, combos in expanded:
        automatic = ("horizon",) if "horizon" in _reserved(algorithm.agent) else ()
        keys: dict[str, dict] = {}
        for chosen, varied, sources in combos:
            key = configuration_key(chosen)
            if key in keys:  # pragma: no cover - configuration_key is injective on distinct option sets
                raise fail(algorithm.where, f"two configurations share the key {key!r}: {keys[key]} and {chosen}.")
            keys[key] = chosen
            configuration = _configuration(study, setting, algorithm, key, chosen, varied, sources, automatic)
            backend = chosen.get("backend")
            if isinstance(backend, str) and backend != "auto" and backend not in checked_backends:
                _check_backend(backend, setting, model, sources["backend"], fail)
                checked_backends.add(backend)
            note = _check_agent(configuration, model, fail)
            if note is not None:
                notes.append(note)
                continue
            configurations.append(configuration)
    return configurations


def _configuration(study: Study, setting: SettingSpec, algorithm: StudyAlgorithm, key: str, chosen: dict[str, Any],
                   varied: dict[str, Any], sources: dict[str, str], automatic: tuple[str, ...]) -> Configuration:
    """A :class:`Configuration` from its chosen options, the automatic ``horizon`` (the study's steps) added."""
    options = dict(chosen)
    if automatic:
        options["horizon"] = study.steps
    label = algorithm.label
    if varied:
        label += " (" + ", ".join(option_label(k, v) for k, v in varied.items()) + ")"
    return Configuration(setting, algorithm, key, label, tuple(sorted(options.items())), tuple(varied.items()),
                         automatic, tuple(sources.items()))


def _check_backend(backend: str, setting: SettingSpec, model: CMDP, where: str, fail: _Fail) -> None:
    """Refuse a backend that is unknown, not installed, or cannot express the setting's utilities."""
    from ...backends.registry import backend_class, backends_accepting

    try:
        cls = backend_class(backend)
    except CurloptError as exc:
        raise fail(where, _one_line(exc)) from None
    if not cls.is_installed():
        raise fail(where, f"backend {backend!r} is not installed: pip install 'curlopt[{getattr(cls, 'extra', backend)}]'.")
    for utility in (model.objective, *model.constraints):
        if not cls.accepts(utility):
            others = ", ".join(backends_accepting(utility)) or "none installed"
            raise fail(where, f"backend {backend!r} cannot express {utility!r} of setting {setting.name!r}; use one"
                              f" of: {others}.")


def _check_agent(configuration: Configuration, model: CMDP, fail: _Fail) -> str | None:
    """Build the configuration's agent once: None if it builds, a note if it refuses the model; else StudyError."""
    from ...agents import make_agent

    agent = configuration.algorithm.agent
    options = dict(configuration.options)
    try:
        make_agent(agent, model, **options)
        return None
    except (UnsupportedModelError, UnsupportedUtilityError) as exc:
        return (f"{configuration.label} on {configuration.setting.name}: skipped, the agent refuses this model"
                f" ({_one_line(exc)}).")
    except Exception as exc:  # any failure to build is a bad option value
        problem = _one_line(exc)
    # Name the option at fault: the first one that fails on its own.
    automatic = {k: options[k] for k in configuration.automatic}
    sources = dict(configuration.sources)
    for name in sorted(sources):
        try:
            make_agent(agent, model, **{**automatic, name: options[name]})
        except (UnsupportedModelError, UnsupportedUtilityError):
            continue
        except Exception:  # any failure: this option is the one at fault
            return _raise(fail, sources[name], f"{name} = {_show(options[name])}: {problem}")
    given = ", ".join(f"{k} = {_show(v)}" for k, v in configuration.chosen_options().items())
    return _raise(fail, configuration.algorithm.where, f"with {given}: {problem}")


def _raise(fail: _Fail, where: str, message: str) -> NoReturn:
    raise fail(where, message if message.endswith(".") else message + ".")


def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
