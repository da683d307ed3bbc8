"""Episodic studies: a study file whose models are episodic (a horizon H) runs the episodic agents for K episodes.

A study file is episodic when its models are: a built-in model with ``horizon = H`` in its table
(``build_model(name, horizon=H, **params)``), a builder that takes ``horizon`` itself given it in ``params``
(the gridworlds, the DOPE models), or an episodic model file. Such a study gives ``[study] episodes = K`` instead of
``steps``; its algorithms are the episodic agents (:data:`curlopt.agents.episodic.EPISODIC_AGENTS`), and every run
goes through :func:`curlopt.experiments.simulation.episodes.run_episodes`. Everything else reads as in an
infinite-horizon study: ``[options]``, ``[grid]``, per-algorithm ``options`` and ``grid``, ``seeds``, ``out``,
``executor``, ``jobs``, ``max_runs``, ``optimum_backend`` (the backend of the known-model episodic optimum f(λ*)).

Refused, each with one line: a study mixing infinite-horizon and episodic models; ``steps`` with episodic models;
``episodes`` with infinite-horizon ones; both ``steps`` and ``episodes``; ``checkpoints`` (an episodic run file
holds every episode); an infinite-horizon agent on episodic models (and, in the reader, an episodic agent on
infinite-horizon ones); an option the agent does not take, or ``seed`` and ``episodes``, which are set per run.

Run files: ``runs/<setting>/<algorithm>/<configuration>/K<episodes>-seed<seed:03d>.json.gz``
(:mod:`curlopt.experiments.outputs.episodic_runs`), the configuration key as in infinite-horizon studies
(:func:`~curlopt.experiments.study.planning.configuration_key`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import CurloptError
from .planning import (
    Configuration,
    Plan,
    RunOfConfiguration,
    StudySize,
    _combinations,
    check_size,
    configuration_key,
    option_label,
)
from .spec import SettingSpec, Study, StudyAlgorithm, StudyError

if TYPE_CHECKING:  # pragma: no cover
    from ...models.episodic import EpisodicCMDP
    from .reader import StudyReader

__all__ = ["EpisodicTask", "read_episodic_study", "plan_episodic_study", "episodic_agent_options", "episodic_model",
           "EPISODIC_LABELS"]

#: display names of the episodic agents (the default label)
EPISODIC_LABELS = {
    "opt-cmdp": "OptCMDP", "optpess-lp": "OptPess-LP", "dope": "DOPE", "uc-curl": "UC-CURL", "ps-curl": "PS-CURL",
    "conrl": "ConRL", "moma": "MOMA", "moma-program": "MOMA (program)", "triple-q": "Triple-Q",
}
#: options an episodic study sets for every run, and why they cannot be given
_RESERVED = {"seed": "is set for each run from [study] seeds",
             "episodes": "is set for each run from [study] episodes"}


# -- the agents' options --------------------------------------------------------------------------------------------
def episodic_agent_options(agent: str) -> list[str]:
    """The options an episodic agent takes: its named constructor parameters (``**backend_options`` does not count),
    ``model`` and the per-run ``seed`` and ``episodes`` left out."""
    from ...agents.episodic import EPISODIC_AGENTS

    parameters = inspect.signature(EPISODIC_AGENTS[agent].__init__).parameters
    return [name for name, parameter in parameters.items()
            if name not in ("self", "model", *_RESERVED)
            and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)]


# -- reading --------------------------------------------------------------------------------------------------------
def _is_episodic(model: Any) -> bool:
    return getattr(model, "criterion", "") == "episodic"


def _model_tables(data: Mapping[str, Any], count: int) -> list[str]:
    return ["[model]"] if "model" in data else [f"models[{i}]" for i in range(1, count + 1)]


def read_episodic_study(reader: StudyReader, data: Mapping[str, Any], head: dict[str, Any],
                        settings: tuple[SettingSpec, ...], algorithm_keys: Mapping[str, Any]) -> Study:
    """The :class:`Study` of a file whose ``[study]`` gives ``episodes`` or whose models are episodic.

    ``head`` is the checked ``[study]`` table, ``settings`` the checked models (their built models in
    ``reader.models``) and ``algorithm_keys`` the schema of an ``[[algorithms]]`` table.

    Raises
    ------
    StudyError
        One line naming the key: a mix of model kinds, ``steps`` or ``checkpoints`` in an episodic study,
        ``episodes`` with infinite-horizon models, an agent that is not episodic, an option it does not take.
    """
    tables = _model_tables(data, len(settings))
    kinds = [_is_episodic(reader.models[s.name]) for s in settings]
    if any(kinds) and not all(kinds):
        first = next(i for i, k in enumerate(kinds) if k)
        other = next(i for i, k in enumerate(kinds) if not k)
        raise reader.fail(tables[other], f"model {settings[other].name!r} is infinite-horizon and"
                                         f" {settings[first].name!r} ({tables[first]}) is episodic; a study runs one"
                                         " kind: give this model horizon = H, or put the models in two studies.")
    if not all(kinds):
        raise reader.fail("[study] episodes", f"is for episodic models, and model {settings[0].name!r} has no"
                                              " horizon; add horizon = H to its table, or give steps = T.")
    if head["steps"] is not None:
        model = reader.models[settings[0].name]
        raise reader.fail("[study] steps", f"model {settings[0].name!r} is episodic (H = {model.horizon}); give"
                                           " episodes = K (the number of episodes of every run) instead of steps.")
    if "checkpoints" in data["study"]:
        raise reader.fail("[study] checkpoints", "is for infinite-horizon runs; an episodic run file holds every"
                                                 " episode's values.")
    if "algorithms" not in data:
        raise reader.fail("[[algorithms]]", "is required: one or more tables with agent = \"...\".")
    options = reader.options(data.get("options", {}), "[options]")
    grid = reader.grid(data.get("grid", {}), "[grid]")
    for axis, _ in grid:
        if axis in dict(options):
            raise reader.fail(f"[grid] {axis}", "is also set in [options]; give it in one place.")
    algorithms = _read_algorithms(reader, reader.tables(data["algorithms"], "[[algorithms]]"), algorithm_keys)
    for section, items in (("[options]", options), ("[grid]", grid)):
        for name, _ in items:
            if name in _RESERVED:
                raise reader.fail(f"{section} {name}", f"{_RESERVED[name]}.")
            if not any(name in episodic_agent_options(a.agent) for a in algorithms):
                offered = sorted({o for a in algorithms for o in episodic_agent_options(a.agent)})
                raise reader.fail(f"{section} {name}", "no algorithm of the study takes this option; they take:"
                                                       f" {', '.join(offered)}.")
    head = {**head, "steps": 0}
    return Study(settings=settings, algorithms=tuple(algorithms), options=options, grid=grid, source=reader.source,
                 **head)


def episodic_model(setting: SettingSpec) -> EpisodicCMDP:
    """The setting's model, which must be episodic (the reader checked it; a model file may change after)."""
    from ...models.episodic import EpisodicCMDP

    model = setting.build()
    if not isinstance(model, EpisodicCMDP):
        raise StudyError(f"setting {setting.name!r}: its model is not episodic (no horizon).")
    return model


def _read_algorithms(reader: StudyReader, entries: list[Any],
                     algorithm_keys: Mapping[str, Any]) -> list[StudyAlgorithm]:
    """The ``[[algorithms]]`` tables of an episodic study: episodic agents, options they take, distinct keys."""
    from ...agents import AGENTS
    from ...agents.episodic import EPISODIC_AGENTS

    algorithms = []
    keys: dict[str, str] = {}
    for i, entry in enumerate(entries, 1):
        where = f"algorithms[{i}]"
        table = reader.section(entry, algorithm_keys, where)
        agent = table["agent"]
        if agent not in EPISODIC_AGENTS:
            known = ", ".join(EPISODIC_AGENTS)
            if agent in AGENTS:
                raise reader.fail(f"{where}.agent", f"{agent!r} is an infinite-horizon agent; the models of this"
                                                    f" study are episodic, and their agents are: {known}.")
            raise reader.fail(f"{where}.agent", f"unknown episodic agent {agent!r}; episodic agents: {known}.")
        key = table["key"] or agent
        takes = episodic_agent_options(agent)
        for part in ("options", "grid"):
            for name, _ in table[part]:
                at = f"{where}.{part}.{name}"
                if name in _RESERVED:
                    raise reader.fail(at, f"{_RESERVED[name]}; do not set it.")
                if name not in takes:
                    raise reader.fail(at, f"agent {agent!r} takes no option {name!r}; it takes: {', '.join(takes)}.")
        for name, _ in table["grid"]:
            if name in dict(table["options"]):
                raise reader.fail(f"{where}.grid.{name}", f"is also set in {where}.options; give it in one place.")
        if key in keys:
            raise reader.fail(f"{where}.key", f"the key {key!r} is already used by {keys[key]}; give each algorithm"
                                              " its own key.")
        keys[key] = where
        label = table["label"] or (EPISODIC_LABELS.get(agent, agent) if key == agent else key)
        algorithms.append(StudyAlgorithm(key, agent, label, table["options"], table["grid"], where))
    return algorithms


# -- tasks ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EpisodicTask(RunOfConfiguration):
    """One episodic run: a configuration, a seed, K episodes. It identifies its run completely (``identity``)."""

    configuration: Configuration
    seed: int
    episodes: int
    #: the backend of the run's known-model optimum f(λ*) (``[study] optimum_backend``); None: "auto"
    optimum_backend: str | None = None
    #: what the run's agent observes (``[study] signals``), passed to the episode loop as for infinite-horizon runs
    signals: str = "known"

    @property
    def key(self) -> str:
        return f"{self.configuration.name}/K{self.episodes}-seed{self.seed:03d}"

    @property
    def relative_path(self) -> Path:
        return self.configuration.relative_dir / f"K{self.episodes}-seed{self.seed:03d}.json.gz"

    def identity(self) -> dict[str, Any]:
        """What a run file must record to count as this task (its ``meta["sweep"]``)."""
        return {**self._configuration_identity(), "seed": self.seed, "episodes": self.episodes,
                **self._study_identity()}


# -- planning -------------------------------------------------------------------------------------------------------
def _size(study: Study) -> StudySize:
    points = 0
    axes: dict[str, int] = {}
    for algorithm in study.algorithms:
        count = 1
        takes = episodic_agent_options(algorithm.agent)
        own = dict(algorithm.grid)
        for name, values in study.grid:
            if name in takes and name not in dict(algorithm.options) and name not in own:
                count *= len(values)
                axes[f"[grid] {name}"] = len(values)
        for name, values in own.items():
            count *= len(values)
            axes[f"{algorithm.where}.grid.{name}"] = len(values)
        points += count
    configurations = points * len(study.settings)
    ordered = tuple(sorted(axes.items(), key=lambda item: -item[1]))
    return StudySize(configurations, configurations * len(study.seeds), len(study.seeds), ordered)


def plan_episodic_study(study: Study, say: Callable[[str], None] | None = None,
                        max_runs: int | None = None) -> Plan:
    """Expand an episodic study's grid, build every configuration's agent once on its model, and list its runs.

    The grid expands as an infinite-horizon study's does (:mod:`curlopt.experiments.study.planning`). An agent
    that refuses a model with its default options (e.g. DOPE on a model without a declared safe policy) is left
    out for that model with a note; one that refuses only with the study's options stops the study with one line
    naming the option.

    Raises
    ------
    StudyError
        For a study above its run limit, a bad option value, or a study where nothing can run.
    """
    from ...agents.episodic import make_episodic_agent

    say = say or (lambda _message: None)
    if not study.episodic or study.episodes is None:
        raise StudyError(f"{study.source}: not an episodic study ([study] episodes is not set).")
    episodes = study.episodes
    size = _size(study)
    check_size(study, size, max_runs)
    notes: list[str] = []
    expanded = [(a, _combinations(study, a, episodic_agent_options(a.agent), notes)) for a in study.algorithms]
    configurations: list[Configuration] = []
    for setting in study.settings:
        model = episodic_model(setting)
        for algorithm, combos in expanded:
            try:
                make_episodic_agent(algorithm.agent, model)
            except CurloptError as exc:
                notes.append(f"{algorithm.label} on {setting.name}: skipped, the agent refuses this model"
                             f" ({' '.join(str(exc).split())}).")
                continue
            for chosen, varied, sources in combos:
                key = configuration_key(chosen)
                label = algorithm.label
                if varied:
                    label += " (" + ", ".join(option_label(k, v) for k, v in varied.items()) + ")"
                configuration = Configuration(setting, algorithm, key, label, tuple(sorted(chosen.items())),
                                              tuple(varied.items()), (), tuple(sources.items()))
                _check_options(study, configuration, model)
                configurations.append(configuration)
    if not configurations:
        raise StudyError(f"{study.source}: no configuration can run: " + " ".join(notes))
    tasks = [EpisodicTask(c, seed, episodes, study.optimum_backend, study.signals) for c in configurations for seed in study.seeds]
    return Plan(study, configurations, tasks, list(dict.fromkeys(notes)))  # type: ignore[arg-type]


def _check_options(study: Study, configuration: Configuration, model: Any) -> None:
    """Build the configuration's agent; a failure names the first option that fails on its own."""
    from ...agents.episodic import make_episodic_agent

    agent, options = configuration.algorithm.agent, dict(configuration.options)
    try:
        make_episodic_agent(agent, model, **options)
        return
    except Exception as exc:  # any failure to build with the study's options is a bad option value
        problem = " ".join(str(exc).split())
    sources = dict(configuration.sources)
    for name in sorted(sources):
        try:
            make_episodic_agent(agent, model, **{name: options[name]})
        except Exception:  # this option alone fails: it is the one at fault
            raise StudyError(f"{study.source}: {sources[name]}: {name} = {options[name]!r}: {problem}") from None
    raise StudyError(f"{study.source}: {configuration.algorithm.where}: {problem}")
