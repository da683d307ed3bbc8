"""Study files: a grid of agent configurations × seeds on one or more models, as a TOML file.

Format (read with the standard library's :mod:`tomllib`)::

    [study]
    name = "queue-radius-tightness"   # required; [a-z0-9._-]+
    description = "..."               # optional
    steps = 500000                    # required: the horizon T of every run, an integer >= 1
    seeds = 20                        # required: a count (seeds 0..N-1) or a list of distinct integers >= 0
    checkpoints = 100                 # optional (default 100): about this many log-spaced checkpoints per run
    out = "results/studies/queue"     # optional; default results/studies/<name>, relative to the current directory
    executor = "local"                # optional: local | ray
    jobs = 2                          # optional: parallel runs (default: the number of cores)
    address = "..."                   # optional, ray only: the cluster address
    max_runs = 20000                  # optional: allow more runs than DEFAULT_MAX_RUNS (5,000); see below
    signals = "bernoulli"             # optional: known (default) | bernoulli | gaussian: what every run's agent
                                      #   observes (the model's means, or noisy draws around them; see below)

    [model]                           # exactly one of [model] or [[models]] (one table per setting)
    name = "queue"                    # a built-in model (curlopt.models.build_model) ...
    params = { buffer = 5 }           # ... with its parameters (optional; TOML has no null: "none" gives None,
                                      #   e.g. { sla = "none" } for the scheduler without its SLA)
    # file = "model.json"             # ... or a model file instead of name (relative to the study file)
    # setting = "queue"               # optional: the setting's name in directories and tables
    #                                 #   (default: the model name or the file's stem)
    # label = "..."                   # optional display text
    # cost_names = ["service cost"]   # optional: what each average cost ζ_i measures (tables, figures)

    [options]                         # optional: options given to every algorithm that takes them
    backend = "highs"

    [[algorithms]]                    # one or more
    agent = "uc-curl"                 # a registered agent (curlopt.agents.AGENTS)
    key = "uc-curl"                   # optional, default the agent name; unique; [a-z0-9._-]+
    label = "UC-CURL"                 # optional display name
    options = { trigger = "linear" }  # optional agent options (override [options])
    grid = { radius = ["analysis", "experiment"] }   # optional per-algorithm axes

    [grid]                            # optional axes: option -> non-empty list of distinct values
    tightness_constant = [0.3, 1, 3, 10, 30, 100]

Episodic models (a built-in model with ``horizon = H`` in its table, a builder given ``horizon`` in ``params``, or
an episodic model file) make an episodic study: ``[study] episodes = K`` instead of ``steps``, the episodic agents
(:data:`curlopt.agents.episodic.EPISODIC_AGENTS`), no ``checkpoints``; see
:mod:`curlopt.experiments.study.episodic`.

Sizes are checked before anything is expanded: a study's run count (its
configurations, the product of each algorithm's axis lengths summed over the
algorithms and times the settings, times its seeds) above ``max_runs`` (default
:data:`DEFAULT_MAX_RUNS`; ``--max-runs`` on the command line) is refused with
the counts, so a 1,000-value axis typed for a 3-value one stops at once instead
of building a million configurations. A seed count above :data:`MAX_SEEDS` is
refused when the file is read.

``signals`` applies to every run of the study (every setting, every algorithm): ``known`` (the default, and what a
file without the key runs) emits the model's mean signals; ``bernoulli`` and ``gaussian`` draw each observed signal
around its mean (:mod:`curlopt.models.signals`). Only an agent that learns its signals (``rewards = "learned"``, an
agent option, e.g. in ``[options]``) reads them; an agent told the rewards plays the same run either way. A run's
identity records ``signals`` only when it is not ``known``, so the runs of studies without it are unchanged.

Every problem is a :class:`~curlopt.errors.CurloptError` of one line naming the
file and the key (``[grid] radius``, ``algorithms[2].options.radius``; the
``[[algorithms]]`` and ``[[models]]`` tables are counted from 1) and saying what
is allowed (the keys of each table, what each accepts and its default are declared once, in
:data:`curlopt.experiments.study.reader.SCHEMA`, and checked by its reader). How the grid expands into
configurations, and the checks that need the agents, are in
:mod:`curlopt.experiments.study.planning`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import CurloptError

if TYPE_CHECKING:  # pragma: no cover
    from ...models.cmdp import CMDP

__all__ = ["SettingSpec", "StudyAlgorithm", "Study", "StudyError",
           "DEFAULT_CHECKPOINTS", "DEFAULT_MAX_RUNS", "MAX_SEEDS", "NAME_PATTERN", "SIGNAL_CHOICES", "loop_signals"]

DEFAULT_CHECKPOINTS = 100
#: the most runs a study may have unless it allows more (``max_runs``, ``--max-runs``): about fourteen times the
#: largest study shipped in studies/ (360 runs), and far below the sizes a mistyped axis gives (10^5 and up)
DEFAULT_MAX_RUNS = 5_000
#: the largest seed count (``seeds = N``) a study file may give: the seeds are listed when the file is read
MAX_SEEDS = 1_000_000
#: a name that is also a folder name: "." and ".." (only dots) would name the folder itself or its parent
NAME_PATTERN = re.compile(r"(?!\.+\Z)[a-z0-9._-]+\Z")
EXECUTORS = ("local", "ray")
#: the ``[study] signals`` values: the model's means (``known``) or noisy draws around them
SIGNAL_CHOICES = ("known", "bernoulli", "gaussian")


def loop_signals(signals: str) -> str:
    """The learning loops' name of a study's ``signals`` value (``run(..., signals=...)``, ``run_episodes``):
    ``known`` is their ``mean``; the noisy kinds keep their names."""
    return "mean" if signals == "known" else signals


class StudyError(CurloptError):
    """A study that cannot run: a bad file, option or value (one line naming the file and the key)."""


# -- settings -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SettingSpec:
    """A model under a name: a built-in model with parameters (``build_model(model, **params)``) or a model file.

    Attributes
    ----------
    name : str
        The setting's name in run directories and tables.
    model : str
        Built-in model name (empty for a model file).
    params : tuple of (str, value)
        The built-in model's parameters.
    label : str
        Display text.
    cost_names : tuple of str
        What each average cost ζ_i measures (figure titles and table notes).
    file : str
        Absolute path of a JSON model file (instead of ``model``); it must exist
        at this path wherever the runs execute.
    file_sha256 : str
        The model file's digest when the study was loaded (part of every run's identity).
    horizon : int or None
        A built-in model played in episodes of this many steps (``build_model(model, horizon=H)``); None for the
        model's own criterion.
    """

    name: str
    model: str = ""
    params: tuple[tuple[str, Any], ...] = ()
    label: str = ""
    cost_names: tuple[str, ...] = ()
    file: str = ""
    file_sha256: str = ""
    #: the ``horizon`` key of a built-in model's table: ``build_model(model, horizon=H, **params)`` (episodic)
    horizon: int | None = None

    def build(self) -> CMDP:
        if self.file:
            from ...models.files import load_model

            return load_model(self.file)
        from ...models import build_model

        if self.horizon is not None:
            return build_model(self.model, horizon=self.horizon, **dict(self.params))
        return build_model(self.model, **dict(self.params))

    def describe(self) -> dict[str, Any]:
        """What the setting is, as JSON values (run identities, ``config.json``, ``study.json``)."""
        if self.file:
            return {"setting": self.name, "file": self.file, "file_sha256": self.file_sha256}
        described: dict[str, Any] = {"setting": self.name, "model": self.model, "params": dict(self.params)}
        if self.horizon is not None:  # only when given: the identities of infinite-horizon settings are unchanged
            described["horizon"] = self.horizon
        return described

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


# -- the study ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StudyAlgorithm:
    """One ``[[algorithms]]`` table: a registered agent with fixed options and its own grid axes."""

    key: str
    agent: str
    label: str
    options: tuple[tuple[str, Any], ...] = ()
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    #: where its entries came from, for messages (e.g. ``algorithms[2]``)
    where: str = ""

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "agent": self.agent, "label": self.label, "options": dict(self.options),
                "grid": {name: list(values) for name, values in self.grid}}


@dataclass(frozen=True)
class Study:
    """A parsed study: settings × algorithm configurations × seeds, and where and how to run them.

    Built by :func:`~curlopt.experiments.study.reader.load_study` from a TOML file, by
    :func:`~curlopt.experiments.study.reader.study_from_dict`
    from the same structure in memory, or by the ``reproduce`` presets (study files too, with a ``[reproduce]``
    section: :mod:`curlopt.experiments.presets`).
    ``source`` names the study in messages (the file's path, or e.g.
    ``experiment 'queue' (profile paper)``); ``profile`` is the preset's
    profile record (None for study files). ``max_runs`` is the file's
    ``[study] max_runs`` (None: :data:`DEFAULT_MAX_RUNS`). ``optimum_backend`` is the file's
    ``[study] optimum_backend``: the backend of each run's reference optimum f(λ*) (a backend name or ``"auto"``;
    None: the learning loop's default, see :func:`curlopt.experiments.simulation.loop.run`).
    """

    name: str
    steps: int
    seeds: tuple[int, ...]
    settings: tuple[SettingSpec, ...]
    algorithms: tuple[StudyAlgorithm, ...]
    description: str = ""
    checkpoints: int = DEFAULT_CHECKPOINTS
    out: str | None = None
    executor: str = "local"
    jobs: int | None = None
    address: str | None = None
    max_runs: int | None = None
    optimum_backend: str | None = None
    #: what every run's agent observes (:data:`SIGNAL_CHOICES`; ``known``: the model's means)
    signals: str = "known"
    options: tuple[tuple[str, Any], ...] = ()
    grid: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    source: str = ""
    profile: dict[str, Any] | None = field(default=None, compare=False)
    #: ``[study] episodes``: the K of every run of an episodic study (its ``steps`` is then 0); None otherwise
    episodes: int | None = None

    @property
    def episodic(self) -> bool:
        """Whether the study runs episodic models for ``episodes`` episodes (see :mod:`.episodic`)."""
        return self.episodes is not None

    @property
    def default_out(self) -> Path:
        return Path(self.out) if self.out else Path("results") / "studies" / self.name

    def describe(self) -> dict[str, Any]:
        """The study after defaults, as JSON values (``study.json``)."""
        models = []
        for setting in self.settings:
            entry: dict[str, Any] = {"setting": setting.name}
            if setting.file:
                entry.update(file=setting.file, file_sha256=setting.file_sha256)
            else:
                entry.update(name=setting.model, params=dict(setting.params))
            if setting.horizon is not None:
                entry["horizon"] = setting.horizon
            entry.update(label=setting.label, cost_names=list(setting.cost_names))
            models.append(entry)
        length = {"episodes": self.episodes} if self.episodes is not None else {"steps": self.steps}
        described = {
            "name": self.name, "description": self.description, "source": self.source, **length,
            "seeds": list(self.seeds), "checkpoints": self.checkpoints, "out": str(self.default_out),
            "executor": self.executor, "jobs": self.jobs, "address": self.address, "models": models,
            "options": dict(self.options), "algorithms": [a.describe() for a in self.algorithms],
            "grid": {name: list(values) for name, values in self.grid},
        }
        if self.episodes is not None:  # an episodic run file holds every episode: no checkpoints
            del described["checkpoints"]
        if self.max_runs is not None:  # only when the file sets it: study.json of other studies is unchanged
            described["max_runs"] = self.max_runs
        if self.optimum_backend is not None:  # likewise
            described["optimum_backend"] = self.optimum_backend
        if self.signals != "known":  # likewise
            described["signals"] = self.signals
        return described


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def is_option_value(value: Any) -> bool:
    """Numbers, strings, booleans, and lists or tables of them (no dates: agents take none)."""
    if isinstance(value, (bool, int, str)) or value is None:
        return True
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return all(is_option_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_option_value(v) for k, v in value.items())
    return False


def canonical(value: Any) -> Any:
    """Value-equal options give equal canonical forms (an integral float is its integer; tuples are lists)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value == int(value) else value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items())}
    return value


#: display names of the built-in agents (the default label)
AGENT_LABELS = {"uc-curl": "UC-CURL", "ps-curl": "PS-CURL", "ucrl-cmdp": "UCRL-CMDP", "primal-dual": "Primal-dual"}


def default_label(agent: str, key: str) -> str:
    if key == agent:
        return AGENT_LABELS.get(agent, agent)
    return key
