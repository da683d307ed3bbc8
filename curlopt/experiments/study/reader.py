"""A study file's schema, declared once (:data:`SCHEMA`: each table's keys, what each accepts, its default), and
the reader that checks a file against it.

One checker (:meth:`StudyReader.section`) refuses an unknown key, a missing required one or a value of the wrong
kind; what a table's keys mean together (exactly one of ``name`` or ``file``; a key used twice) is checked where the
table becomes a :class:`~curlopt.experiments.study.spec.Study`. Each refusal is one line: the file, the key
(``[study] steps``, ``algorithms[2].options.radius``; ``[[algorithms]]`` and ``[[models]]`` tables counted from 1),
what is wrong and what is allowed. The format is described in :mod:`curlopt.experiments.study.spec`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import CurloptError
from ..simulation.episodes import MAX_EPISODES
from ..simulation.loop import MAX_CHECKPOINTS, MAX_STEPS
from .spec import (
    DEFAULT_CHECKPOINTS,
    EXECUTORS,
    MAX_SEEDS,
    NAME_PATTERN,
    SIGNAL_CHOICES,
    SettingSpec,
    Study,
    StudyAlgorithm,
    StudyError,
    _one_line,
    canonical,
    default_label,
    is_option_value,
)

__all__ = ["Key", "SCHEMA", "StudyReader", "load_study", "read_toml", "study_from_dict"]

_NAME_RULE = "lower-case letters, digits, '.', '_' and '-', not only dots"


@dataclass(frozen=True)
class Key:
    """What one key of a study-file table accepts: its ``kind`` (a checker of :class:`StudyReader`: ``string``,
    ``name``, ``path``, ``choice`` of ``choices``, ``integer`` from ``minimum`` to ``maximum``, ``strings``,
    ``seeds``, ``options``, ``grid``, ``params``, ``table``, ``tables``); for a required key, what to give
    (``required``, said when it is missing), else its ``default``."""

    kind: str
    required: str = ""
    default: Any = None
    minimum: int = 1
    maximum: int | None = None
    choices: tuple[str, ...] = ()


#: Every table of a study file: its keys, in the order they are checked (and listed in messages).
SCHEMA: dict[str, dict[str, Key]] = {
    "top": {
        "study": Key("table", required="with name, steps and seeds"),
        "model": Key("table"),
        "models": Key("tables"),
        "options": Key("options", default=()),
        "algorithms": Key("tables", required="one or more tables with agent = \"...\""),
        "grid": Key("grid", default=()),
    },
    "study": {
        "name": Key("name", required=f"a string, {_NAME_RULE}"),
        "description": Key("string", default=""),
        # required unless the study is episodic (``episodes``): checked in StudyReader.study
        "steps": Key("integer", default=None, maximum=MAX_STEPS),
        "episodes": Key("integer", default=None, maximum=MAX_EPISODES),
        "seeds": Key("seeds", required="a count >= 1, or a list of distinct integers >= 0"),
        "checkpoints": Key("integer", minimum=2, default=DEFAULT_CHECKPOINTS, maximum=MAX_CHECKPOINTS),
        "out": Key("path"),
        "executor": Key("choice", choices=EXECUTORS, default="local"),
        "jobs": Key("integer"),
        "address": Key("string"),
        "max_runs": Key("integer"),
        "optimum_backend": Key("string"),
        "signals": Key("choice", choices=SIGNAL_CHOICES, default="known"),
    },
    "model": {
        "name": Key("string"),
        "file": Key("string"),
        "params": Key("params", default={}),
        "setting": Key("name"),
        "label": Key("string", default=""),
        "cost_names": Key("strings", default=()),
        "horizon": Key("integer"),
    },
    "algorithm": {
        "agent": Key("string", required="a string"),
        "key": Key("name"),
        "label": Key("string"),
        "options": Key("options", default=()),
        "grid": Key("grid", default=()),
    },
    # a preset file (curlopt reproduce) is a study file with this section more
    "reproduce": {
        "backend": Key("string", required="the backend of every algorithm that takes one"),
        "full": Key("table", required="the published scale, { steps = ..., seeds = ... }"),
        "own_backend": Key("strings", default=()),
        "extra": Key("strings", default=()),
        "reduced_note": Key("string", default=""),
    },
    "scale": {
        "steps": Key("integer", required="an integer >= 1", maximum=MAX_STEPS),
        "seeds": Key("integer", required="a count >= 1", maximum=MAX_SEEDS),
    },
    # one profile of the preset files' profiles.toml: agent -> options, in stated and defaults
    "profile": {
        "description": Key("string", required="a string"),
        "stated": Key("table", default={}),
        "defaults": Key("table", default={}),
    },
}


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _at(where: str, key: str) -> str:
    """A key's name in messages: ``[study] steps`` in a named table, ``algorithms[2].options`` in a listed one."""
    if not where:
        return key
    return f"{where} {key}" if where.startswith("[") else f"{where}.{key}"


def _value_identity(value: Any) -> tuple[str, Any]:
    """A hashable form of an option value: equal for value-equal options (``3`` and ``3.0``), distinct otherwise
    (``1`` and ``true``, which Python holds equal, are different options)."""
    value = canonical(value)
    if value is None or isinstance(value, bool):
        return "constant", value
    if isinstance(value, (int, float)):
        return "number", value if value == value else "nan"
    if isinstance(value, str):
        return "string", value
    return "structure", json.dumps(value, sort_keys=True)


class StudyReader:
    """Reads one study's structure; ``source`` names it in messages, ``base`` is where model files are."""

    def __init__(self, source: str, base: Path):
        self.source = source
        self.base = base
        #: each setting's model as built when its table was checked (whether a study is episodic is read off them)
        self.models: dict[str, Any] = {}

    def fail(self, key: str, message: str) -> StudyError:
        return StudyError(f"{self.source}: {key}: {message}" if key else f"{self.source}: {message}")

    # -- the one checker ------------------------------------------------------------------------------------------
    def section(self, value: Any, keys: Mapping[str, Key], where: str) -> dict[str, Any]:
        """A table checked against its declared ``keys``: every key's value (its default when missing)."""
        table = self.table(value, where)
        for name in table:
            if name not in keys:
                raise self.fail(_at(where, name), f"unknown key; allowed keys: {', '.join(keys)}.")
        out = {}
        for name, key in keys.items():
            if name in table:
                out[name] = _CHECKS[key.kind](self, table[name], _at(where, name), key)
            elif key.required:
                raise self.fail(_at(where, name), f"is required ({key.required}).")
            else:
                out[name] = key.default
        return out

    def table(self, value: Any, where: str, _key: Key | None = None) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be a table, got {_type_name(value)} {_show(value)}.")
        return value

    def tables(self, value: Any, where: str, _key: Key | None = None) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise self.fail(where, f"must be one or more {where} tables, got {_type_name(value)}.")
        return value

    def string(self, value: Any, where: str, key: Key = Key("string")) -> str:
        """A string; a ``name`` matches NAME_PATTERN, a ``path`` is not blank, a ``choice`` is one of its choices."""
        if not isinstance(value, str):
            raise self.fail(where, f"must be a string, got {_type_name(value)} {_show(value)}.")
        if key.kind == "name" and not NAME_PATTERN.match(value):
            raise self.fail(where, f"{value!r} is not a valid name; use {_NAME_RULE}.")
        if key.kind == "path" and not value.strip():
            raise self.fail(where, "must be a folder path, got an empty string.")
        if key.kind == "choice" and value not in key.choices:
            raise self.fail(where, f"must be one of {', '.join(key.choices)}, got {value!r}.")
        return value

    def integer(self, value: Any, where: str, key: Key) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < key.minimum:
            raise self.fail(where, f"must be an integer >= {key.minimum}, got {_type_name(value)} {_show(value)}.")
        if key.maximum is not None and value > key.maximum:
            raise self.fail(where, f"must be at most {key.maximum:,}, got {value:,}.")
        return value

    def strings(self, value: Any, where: str, _key: Key | None = None) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(where, f"must be a list of strings, got {_show(value)}.")
        return tuple(value)

    def seeds(self, value: Any, where: str, _key: Key | None = None) -> tuple[int, ...]:
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 1:
                raise self.fail(where, f"a count of seeds must be >= 1, got {value}.")
            if value > MAX_SEEDS:  # before listing them
                raise self.fail(where, f"a count of seeds must be at most {MAX_SEEDS:,}, got {value:,}.")
            return tuple(range(value))
        if isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                     for s in value):
            if len(set(value)) != len(value):
                raise self.fail(where, f"seeds must be distinct, got {_show(value)}.")
            return tuple(value)
        raise self.fail(where, f"must be a count >= 1 or a non-empty list of distinct integers >= 0, got"
                               f" {_type_name(value)} {_show(value)}.")

    def params(self, value: Any, where: str, _key: Key | None = None) -> dict[str, Any]:
        for name, item in self.table(value, where).items():
            if not is_option_value(item):
                raise self.fail(f"{where}.{name}", f"must be a number, string, boolean, list or table, got"
                                                   f" {_type_name(item)}.")
        return {name: None if item == "none" else item for name, item in value.items()}  # TOML has no null

    def _entries(self, value: Any, where: str) -> list[tuple[str, str, Any]]:
        """A table of options or axes as ``(name, where, value)``, each name an identifier."""
        entries = []
        for name, item in self.table(value, where).items():
            if not name.isidentifier():
                raise self.fail(_at(where, name), "is not an option name (options are Python keyword arguments of"
                                                  " the agent).")
            entries.append((name, _at(where, name), item))
        return entries

    def options(self, value: Any, where: str, _key: Key | None = None) -> tuple[tuple[str, Any], ...]:
        for _name, key, option in self._entries(value, where):
            if not is_option_value(option):
                raise self.fail(key, f"must be a number, string, boolean, list or table, got {_type_name(option)}.")
        return tuple(value.items())

    def grid(self, value: Any, where: str, _key: Key | None = None) -> tuple[tuple[str, tuple[Any, ...]], ...]:
        for _name, key, values in self._entries(value, where):
            if not isinstance(values, list) or not values:
                raise self.fail(key, f"a grid axis must be a non-empty list of values, got {_type_name(values)}"
                                     f" {_show(values)}.")
            seen: set[tuple[str, Any]] = set()  # one pass, however long the axis
            for item in values:
                if not is_option_value(item):
                    raise self.fail(key, f"values must be numbers, strings, booleans, lists or tables, got"
                                         f" {_type_name(item)}.")
                identity = _value_identity(item)
                if identity in seen:
                    raise self.fail(key, f"the value {_show(item)} appears twice; give each value once.")
                seen.add(identity)
        return tuple((name, tuple(values)) for name, values in value.items())

    # -- what the keys of a table mean together -------------------------------------------------------------------
    def study(self, data: Mapping[str, Any]) -> Study:
        top = SCHEMA["top"]
        for key in self.table(data, ""):
            if key not in top:
                raise self.fail(key, "unknown top-level key; allowed: [study], [model] or [[models]], [options],"
                                     " [[algorithms]], [grid].")
        if "study" not in data:
            raise self.fail("[study]", f"is required ({top['study'].required}).")
        head = self.section(data["study"], SCHEMA["study"], "[study]")
        if head["steps"] is not None and head["episodes"] is not None:
            raise self.fail("[study] episodes", "is for episodic models and steps for infinite-horizon ones; give"
                                                " one of them.")
        if head["steps"] is None and head["episodes"] is None:
            raise self.fail("[study] steps", "is required (an integer >= 1; or episodes = K for episodic models).")
        if head["address"] is not None and head["executor"] != "ray":
            raise self.fail("[study] address", 'is for the Ray executor; add executor = "ray".')
        if head["optimum_backend"] is not None:
            self.optimum_backend(head["optimum_backend"], "[study] optimum_backend")
        settings = self.settings(data)
        if head["episodes"] is not None or any(getattr(self.models[s.name], "criterion", "") == "episodic"
                                               for s in settings):
            from .episodic import read_episodic_study  # an episodic study: its own agents and checks

            return read_episodic_study(self, data, head, settings, SCHEMA["algorithm"])
        options = self.options(data.get("options", {}), "[options]")
        grid = self.grid(data.get("grid", {}), "[grid]")
        for axis, _ in grid:
            if axis in dict(options):
                raise self.fail(f"[grid] {axis}", "is also set in [options]; give it in one place.")
        if "algorithms" not in data:
            raise self.fail("[[algorithms]]", f"is required: {top['algorithms'].required}.")
        entries = self.tables(data["algorithms"], "[[algorithms]]")
        algorithms = tuple(self.algorithm(entry, f"algorithms[{i}]") for i, entry in enumerate(entries, 1))
        keys: dict[str, str] = {}
        for algorithm in algorithms:
            if algorithm.key in keys:
                raise self.fail(f"{algorithm.where}.key", f"the key {algorithm.key!r} is already used by"
                                                          f" {keys[algorithm.key]}; give each algorithm its own key.")
            keys[algorithm.key] = algorithm.where
        self.study_option_values(options, grid, algorithms)
        return Study(settings=settings, algorithms=algorithms, options=options, grid=grid, source=self.source, **head)

    def optimum_backend(self, name: str, where: str) -> None:
        """Refuse an ``optimum_backend`` that is neither ``"auto"`` nor a registered backend."""
        from ...backends.registry import backend_class

        if name == "auto":
            return
        try:
            backend_class(name)
        except CurloptError as exc:
            raise self.fail(where, f"must be a backend name or 'auto': {_one_line(exc)}") from None

    def agent_values(self, agent: str, options: Mapping[str, Any], where: str) -> None:
        """Check options for ``agent`` by its declaration (:func:`curlopt.agents.check_agent_options`); the values
        are not changed (a run's identity is the study's values as written)."""
        from ...agents import check_agent_options

        try:
            check_agent_options(agent, options)
        except CurloptError as exc:
            raise self.fail(where, _one_line(exc)) from None

    def study_option_values(self, options: tuple[tuple[str, Any], ...], grid: tuple[tuple[str, tuple[Any, ...]], ...],
                            algorithms: tuple[StudyAlgorithm, ...]) -> None:
        """Check each ``[options]`` value and ``[grid]`` value for every algorithm whose agent declares the option
        (an option no agent takes is for the planner to refuse, naming what the agents take)."""
        from ...agents import agent_options

        for algorithm in algorithms:
            declared = agent_options(algorithm.agent)
            for name, value in options:
                if name in declared and name not in dict(algorithm.options):
                    self.agent_values(algorithm.agent, {name: value}, f"[options] {name} (for {algorithm.key})")
            for name, values in grid:
                if name in declared and name not in dict(algorithm.options) and name not in dict(algorithm.grid):
                    for value in values:
                        self.agent_values(algorithm.agent, {name: value}, f"[grid] {name} (for {algorithm.key})")

    def settings(self, data: Mapping[str, Any]) -> tuple[SettingSpec, ...]:
        """The ``[model]`` or the ``[[models]]`` tables, each setting named once."""
        if ("model" in data) == ("models" in data):
            raise self.fail("[model]", "give exactly one of [model] (one model) or [[models]] (several).")
        if "model" in data:
            return (self.setting(data["model"], "[model]"),)
        entries = self.tables(data["models"], "[[models]]")
        settings = tuple(self.setting(entry, f"models[{i}]") for i, entry in enumerate(entries, 1))
        names = [s.name for s in settings]
        for i, setting in enumerate(settings, 1):
            if names.index(setting.name) != i - 1:
                raise self.fail(f"models[{i}].setting", f"the setting name {setting.name!r} is used twice; give"
                                                        " each model its own setting = \"...\".")
        return settings

    def setting(self, value: Any, where: str) -> SettingSpec:
        table = self.section(value, SCHEMA["model"], where)
        if (table["name"] is None) == (table["file"] is None):
            raise self.fail(where, "give exactly one of name = \"<built-in model>\" or file = \"<model file>\".")
        label, cost_names = table["label"], table["cost_names"]
        if table["horizon"] is not None and table["file"] is not None:
            raise self.fail(_at(where, "horizon"), "applies to built-in models (name = ...); a model file states its"
                                                   " own horizon.")
        if table["horizon"] is not None and "horizon" in table["params"]:
            raise self.fail(_at(where, "horizon"), "is also set in params; give it in one place.")
        if table["name"] is not None:
            from ...models import MODELS

            model = table["name"]
            if model not in MODELS:
                raise self.fail(_at(where, "name"), f"unknown model {model!r}; built-in models:"
                                                    f" {', '.join(sorted(MODELS))}.")
            name = table["setting"] or model
            if not NAME_PATTERN.match(name):
                raise self.fail(_at(where, "setting"), f"the model name {model!r} is not a valid setting name; add"
                                                       f" setting = \"...\" ({_NAME_RULE}).")
            spec = SettingSpec(name, model, tuple(table["params"].items()), label, cost_names,
                               horizon=table["horizon"])
        else:
            if "params" in value:
                raise self.fail(_at(where, "params"), "applies to built-in models (name = ...), not to a model file.")
            spec = self.model_file(table["file"], table["setting"], label, cost_names, where)
        try:
            self.models[spec.name] = spec.build()
        except CurloptError as exc:
            raise self.fail(_at(where, "params" if spec.model else "file"), _one_line(exc)) from None
        except Exception as exc:  # a builder's own check (e.g. numpy) on a parameter value
            raise self.fail(_at(where, "params" if spec.model else "file"),
                            f"{type(exc).__name__}: {_one_line(exc)}") from None
        return spec

    def model_file(self, file: str, setting: str | None, label: str, cost_names: tuple[str, ...],
                   where: str) -> SettingSpec:
        """A setting of a model file (relative to the study file), named by its stem unless ``setting`` is given."""
        path = Path(file)
        path = (path if path.is_absolute() else self.base / path).resolve()
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except FileNotFoundError:
            raise self.fail(_at(where, "file"), f"no model file at {path}.") from None
        except OSError as exc:
            raise self.fail(_at(where, "file"), f"cannot read {path} ({exc.strerror or exc}).") from None
        name = setting or path.stem
        if not NAME_PATTERN.match(name):
            raise self.fail(_at(where, "setting"), f"the file name {path.stem!r} is not a valid setting name; add"
                                                   f" setting = \"...\" ({_NAME_RULE}).")
        return SettingSpec(name, "", (), label, cost_names, file=str(path), file_sha256=digest)

    def algorithm(self, value: Any, where: str) -> StudyAlgorithm:
        from ...agents import AGENTS

        table = self.section(value, SCHEMA["algorithm"], where)
        agent = table["agent"]
        if agent not in AGENTS:
            from ...agents.episodic import EPISODIC_AGENTS

            if agent in EPISODIC_AGENTS:
                raise self.fail(f"{where}.agent", f"{agent!r} is an episodic agent; it runs on episodic models"
                                                  " (horizon = H) with [study] episodes = K, not steps.")
            raise self.fail(f"{where}.agent", f"unknown agent {agent!r}; agents: {', '.join(AGENTS)}.")
        key = table["key"] or agent
        if not NAME_PATTERN.match(key):
            raise self.fail(f"{where}.key", f"the agent name {agent!r} is not a valid key; add key = \"...\""
                                            f" ({_NAME_RULE}).")
        options, grid = table["options"], table["grid"]
        for name, _ in grid:
            if name in dict(options):
                raise self.fail(f"{where}.grid.{name}", f"is also set in {where}.options; give it in one place.")
        # Each option alone (with the backend it is for, which decides the keywords passed on to it), so a refusal
        # names its key.
        backend = {"backend": dict(options)["backend"]} if "backend" in dict(options) else {}
        for name, value in options:
            self.agent_values(agent, {**backend, name: value}, f"{where}.options.{name}")
        for name, values in grid:
            for value in values:
                self.agent_values(agent, {**backend, name: value}, f"{where}.grid.{name}")
        return StudyAlgorithm(key, agent, table["label"] or default_label(agent, key), options, grid, where)


#: the checker of each kind of key
_CHECKS: dict[str, Callable[[StudyReader, Any, str, Key], Any]] = {
    "name": StudyReader.string, "path": StudyReader.string, "choice": StudyReader.string,
    **{kind: getattr(StudyReader, kind) for kind in ("string", "integer", "strings", "seeds", "params", "options",
                                                       "grid", "table", "tables")},
}


# -- reading --------------------------------------------------------------------------------------------------------
def read_toml(path: str | os.PathLike, what: str = "study file") -> dict[str, Any]:
    """A TOML file's structure, or one line saying why it cannot be read (``what`` names the file's kind)."""
    path = Path(path)
    try:
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError:
        raise StudyError(f"{path}: no such {what}.") from None
    except IsADirectoryError:
        raise StudyError(f"{path}: is a directory, not a {what}.") from None
    except OSError as exc:
        raise StudyError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise StudyError(f"{path}: not a valid TOML file ({_one_line(exc)}).") from None


def load_study(path: str | os.PathLike) -> Study:
    """Read and check a study file (format, types, names; the agents' options are checked when planned).

    Raises
    ------
    StudyError
        One line naming the file, the key and what is allowed.
    """
    return study_from_dict(read_toml(path), source=str(path), base=Path(path).parent)


def study_from_dict(data: Mapping[str, Any], source: str = "study", base: str | os.PathLike | None = None) -> Study:
    """A :class:`Study` from the structure of a study file (``base``: where model files are looked up)."""
    return StudyReader(source, Path(base) if base is not None else Path.cwd()).study(data)
