"""Reading a study file's structure into a :class:`~curlopt.experiments.study.spec.Study`, key by key.

Each check refuses with one line: the file, the key (``[study] steps``,
``algorithms[2].options.radius``; ``[[algorithms]]`` and ``[[models]]`` tables
counted from 1), what is wrong and what is allowed. The format is described in
:mod:`curlopt.experiments.study.spec`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, overload

from ...errors import CurloptError
from ..simulation.loop import MAX_CHECKPOINTS, MAX_STEPS
from .spec import (
    DEFAULT_CHECKPOINTS,
    EXECUTORS,
    MAX_SEEDS,
    NAME_PATTERN,
    SettingSpec,
    Study,
    StudyAlgorithm,
    StudyError,
    _one_line,
    canonical,
    default_label,
    is_option_value,
)

__all__ = ["StudyReader", "load_study", "study_from_dict"]

_NAME_RULE = "lower-case letters, digits, '.', '_' and '-', not only dots"
_TOP_KEYS = ("study", "model", "models", "options", "algorithms", "grid")
_STUDY_KEYS = ("name", "description", "steps", "seeds", "checkpoints", "out", "executor", "jobs", "address",
               "max_runs")
_MODEL_KEYS = ("name", "file", "params", "setting", "label", "cost_names")
_ALGORITHM_KEYS = ("agent", "key", "label", "options", "grid")


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


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

    def fail(self, key: str, message: str) -> StudyError:
        return StudyError(f"{self.source}: {key}: {message}" if key else f"{self.source}: {message}")

    # -- small checks ---------------------------------------------------------------------------------------------
    def table(self, value: Any, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table, got {_type_name(value)} {_show(value)}.")
        return value

    # A required value is there (a missing one raises): the overloads tell the type checker so.
    @overload
    def string(self, table: Mapping[str, Any], key: str, where: str, required: Literal[True],
               pattern: re.Pattern | None = None) -> str: ...

    @overload
    def string(self, table: Mapping[str, Any], key: str, where: str, required: bool = False,
               pattern: re.Pattern | None = None) -> str | None: ...

    def string(self, table: Mapping[str, Any], key: str, where: str, required: bool = False,
               pattern: re.Pattern | None = None) -> str | None:
        if key not in table:
            if required:
                raise self.fail(where, f"is required (a string{', ' + _NAME_RULE if pattern else ''}).")
            return None
        value = table[key]
        if not isinstance(value, str):
            raise self.fail(where, f"must be a string, got {_type_name(value)} {_show(value)}.")
        if pattern is not None and not pattern.match(value):
            raise self.fail(where, f"{value!r} is not a valid name; use {_NAME_RULE}.")
        return value

    # An integer that is required, or has an integer default, is an int.
    @overload
    def integer(self, table: Mapping[str, Any], key: str, where: str, minimum: int, required: Literal[True],
                default: int | None = None, maximum: int | None = None) -> int: ...

    @overload
    def integer(self, table: Mapping[str, Any], key: str, where: str, minimum: int, required: bool = False, *,
                default: int, maximum: int | None = None) -> int: ...

    @overload
    def integer(self, table: Mapping[str, Any], key: str, where: str, minimum: int, required: bool = False,
                default: None = None, maximum: int | None = None) -> int | None: ...

    def integer(self, table: Mapping[str, Any], key: str, where: str, minimum: int, required: bool = False,
                default: int | None = None, maximum: int | None = None) -> int | None:
        if key not in table:
            if required:
                raise self.fail(where, f"is required (an integer >= {minimum}).")
            return default
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(where, f"must be an integer >= {minimum}, got {_type_name(value)} {_show(value)}.")
        if maximum is not None and value > maximum:
            raise self.fail(where, f"must be at most {maximum:,}, got {value:,}.")
        return value

    def options(self, value: Any, where: str) -> tuple[tuple[str, Any], ...]:
        table = self.table(value, where)
        out = []
        for name, option in table.items():
            key = f"{where} {name}" if where.startswith("[") else f"{where}.{name}"
            if not name.isidentifier():
                raise self.fail(key, "is not an option name (options are Python keyword arguments of the agent).")
            if not is_option_value(option):
                raise self.fail(key, f"must be a number, string, boolean, list or table, got {_type_name(option)}.")
            out.append((name, option))
        return tuple(out)

    def grid(self, value: Any, where: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
        table = self.table(value, where)
        axes = []
        for name, values in table.items():
            key = f"{where} {name}" if where.startswith("[") else f"{where}.{name}"
            if not name.isidentifier():
                raise self.fail(key, "is not an option name (options are Python keyword arguments of the agent).")
            if not isinstance(values, list):
                raise self.fail(key, f"a grid axis must be a non-empty list of values, got {_type_name(values)}"
                                     f" {_show(values)}.")
            if not values:
                raise self.fail(key, "a grid axis must be a non-empty list of values, got [].")
            seen: set[tuple[str, Any]] = set()  # one pass, however long the axis
            for item in values:
                if not is_option_value(item):
                    raise self.fail(key, f"values must be numbers, strings, booleans, lists or tables, got"
                                         f" {_type_name(item)}.")
                identity = _value_identity(item)
                if identity in seen:
                    raise self.fail(key, f"the value {_show(item)} appears twice; give each value once.")
                seen.add(identity)
            axes.append((name, tuple(values)))
        return tuple(axes)

    # -- sections -------------------------------------------------------------------------------------------------
    def study(self, data: Mapping[str, Any]) -> Study:
        data = self.table(data, "")
        for key in data:
            if key not in _TOP_KEYS:
                raise self.fail(key, "unknown top-level key; allowed: [study], [model] or [[models]], [options],"
                                     " [[algorithms]], [grid].")
        if "study" not in data:
            raise self.fail("[study]", "is required (with name, steps and seeds).")
        head = self.table(data["study"], "[study]")
        for key in head:
            if key not in _STUDY_KEYS:
                raise self.fail(f"[study] {key}", f"unknown key; allowed keys: {', '.join(_STUDY_KEYS)}.")
        name = self.string(head, "name", "[study] name", required=True, pattern=NAME_PATTERN)
        description = self.string(head, "description", "[study] description") or ""
        steps = self.integer(head, "steps", "[study] steps", 1, required=True, maximum=MAX_STEPS)
        seeds = self.seeds(head)
        checkpoints = self.integer(head, "checkpoints", "[study] checkpoints", 2, default=DEFAULT_CHECKPOINTS,
                                   maximum=MAX_CHECKPOINTS)
        out = self.string(head, "out", "[study] out")
        if out is not None and not out.strip():
            raise self.fail("[study] out", "must be a folder path, got an empty string.")
        executor = self.string(head, "executor", "[study] executor") or "local"
        if executor not in EXECUTORS:
            raise self.fail("[study] executor", f"must be one of {', '.join(EXECUTORS)}, got {executor!r}.")
        jobs = self.integer(head, "jobs", "[study] jobs", 1)
        address = self.string(head, "address", "[study] address")
        if address is not None and executor != "ray":
            raise self.fail("[study] address", 'is for the Ray executor; add executor = "ray".')
        max_runs = self.integer(head, "max_runs", "[study] max_runs", 1)

        if ("model" in data) == ("models" in data):
            raise self.fail("[model]", "give exactly one of [model] (one model) or [[models]] (several).")
        if "model" in data:
            settings: tuple[SettingSpec, ...] = (self.setting(data["model"], "[model]"),)
        else:
            entries = data["models"]
            if not isinstance(entries, list) or not entries:
                raise self.fail("[[models]]", f"must be one or more [[models]] tables, got {_type_name(entries)}.")
            settings = tuple(self.setting(entry, f"models[{i}]") for i, entry in enumerate(entries, 1))
        names = [s.name for s in settings]
        for i, setting in enumerate(settings, 1):
            if names.index(setting.name) != i - 1:
                raise self.fail(f"models[{i}].setting", f"the setting name {setting.name!r} is used twice; give"
                                                        " each model its own setting = \"...\".")

        options = self.options(data.get("options", {}), "[options]")
        grid = self.grid(data.get("grid", {}), "[grid]")
        for axis, _ in grid:
            if axis in dict(options):
                raise self.fail(f"[grid] {axis}", "is also set in [options]; give it in one place.")
        if "algorithms" not in data:
            raise self.fail("[[algorithms]]", "is required: one or more tables with agent = \"...\".")
        entries = data["algorithms"]
        if not isinstance(entries, list) or not entries:
            raise self.fail("[[algorithms]]", f"must be one or more [[algorithms]] tables, got {_type_name(entries)}.")
        algorithms = tuple(self.algorithm(entry, f"algorithms[{i}]") for i, entry in enumerate(entries, 1))
        keys: dict[str, str] = {}
        for algorithm in algorithms:
            if algorithm.key in keys:
                raise self.fail(f"{algorithm.where}.key", f"the key {algorithm.key!r} is already used by"
                                                          f" {keys[algorithm.key]}; give each algorithm its own key.")
            keys[algorithm.key] = algorithm.where
        return Study(name=name, steps=steps, seeds=seeds, settings=settings, algorithms=algorithms,
                     description=description, checkpoints=checkpoints, out=out, executor=executor, jobs=jobs,
                     address=address, max_runs=max_runs, options=options, grid=grid, source=self.source)

    def seeds(self, head: Mapping[str, Any]) -> tuple[int, ...]:
        where = "[study] seeds"
        if "seeds" not in head:
            raise self.fail(where, "is required (a count >= 1, or a list of distinct integers >= 0).")
        value = head["seeds"]
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

    def setting(self, value: Any, where: str) -> SettingSpec:
        table = self.table(value, where)
        for key in table:
            if key not in _MODEL_KEYS:
                raise self.fail(f"{where} {key}" if where.startswith("[") else f"{where}.{key}",
                                f"unknown key; allowed keys: {', '.join(_MODEL_KEYS)}.")

        def at(key: str) -> str:
            return f"{where} {key}" if where.startswith("[") else f"{where}.{key}"

        if ("name" in table) == ("file" in table):
            raise self.fail(where, "give exactly one of name = \"<built-in model>\" or file = \"<model file>\".")
        label = self.string(table, "label", at("label")) or ""
        cost_names = table.get("cost_names", [])
        if not isinstance(cost_names, list) or not all(isinstance(c, str) for c in cost_names):
            raise self.fail(at("cost_names"), f"must be a list of strings, got {_show(cost_names)}.")
        setting_name = self.string(table, "setting", at("setting"), pattern=NAME_PATTERN)
        if "name" in table:
            from ...models import MODELS

            model = self.string(table, "name", at("name"))
            if model not in MODELS:
                raise self.fail(at("name"), f"unknown model {model!r}; built-in models: {', '.join(sorted(MODELS))}.")
            params = table.get("params", {})
            params = self.table(params, at("params"))
            for key, item in params.items():
                if not is_option_value(item):
                    raise self.fail(f"{at('params')}.{key}", f"must be a number, string, boolean, list or table,"
                                                             f" got {_type_name(item)}.")
            params = {key: None if item == "none" else item for key, item in params.items()}  # TOML has no null
            name = setting_name or model
            if not NAME_PATTERN.match(name):
                raise self.fail(at("setting"), f"the model name {model!r} is not a valid setting name; add setting ="
                                               f" \"...\" ({_NAME_RULE}).")
            spec = SettingSpec(name, model, tuple(params.items()), label, tuple(cost_names))
        else:
            if "params" in table:
                raise self.fail(at("params"), "applies to built-in models (name = ...), not to a model file.")
            file = self.string(table, "file", at("file"), required=True)  # there: checked above
            path = Path(file)
            if not path.is_absolute():
                path = self.base / path
            path = path.resolve()
            try:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            except FileNotFoundError:
                raise self.fail(at("file"), f"no model file at {path}.") from None
            except OSError as exc:
                raise self.fail(at("file"), f"cannot read {path} ({exc.strerror or exc}).") from None
            name = setting_name or path.stem
            if not NAME_PATTERN.match(name):
                raise self.fail(at("setting"), f"the file name {path.stem!r} is not a valid setting name; add setting"
                                               f" = \"...\" ({_NAME_RULE}).")
            spec = SettingSpec(name, "", (), label, tuple(cost_names), file=str(path), file_sha256=digest)
        try:
            spec.build()
        except CurloptError as exc:
            raise self.fail(at("params") if spec.model else at("file"), _one_line(exc)) from None
        except Exception as exc:  # a builder's own check (e.g. numpy) on a parameter value
            raise self.fail(at("params") if spec.model else at("file"), f"{type(exc).__name__}: {_one_line(exc)}") from None
        return spec

    def algorithm(self, value: Any, where: str) -> StudyAlgorithm:
        from ...agents import AGENTS

        table = self.table(value, where)
        for key in table:
            if key not in _ALGORITHM_KEYS:
                raise self.fail(f"{where}.{key}", f"unknown key; allowed keys: {', '.join(_ALGORITHM_KEYS)}.")
        agent = self.string(table, "agent", f"{where}.agent", required=True)
        if agent not in AGENTS:
            raise self.fail(f"{where}.agent", f"unknown agent {agent!r}; agents: {', '.join(AGENTS)}.")
        key = self.string(table, "key", f"{where}.key", pattern=NAME_PATTERN) or agent
        if not NAME_PATTERN.match(key):
            raise self.fail(f"{where}.key", f"the agent name {agent!r} is not a valid key; add key = \"...\""
                                            f" ({_NAME_RULE}).")
        label = self.string(table, "label", f"{where}.label") or default_label(agent, key)
        options = self.options(table.get("options", {}), f"{where}.options")
        grid = self.grid(table.get("grid", {}), f"{where}.grid")
        for name, _ in grid:
            if name in dict(options):
                raise self.fail(f"{where}.grid.{name}", f"is also set in {where}.options; give it in one place.")
        return StudyAlgorithm(key, agent, label, options, grid, where)


# -- reading --------------------------------------------------------------------------------------------------------
def load_study(path: str | os.PathLike) -> Study:
    """Read and check a study file (format, types, names; the agents' options are checked when planned).

    Raises
    ------
    StudyError
        One line naming the file, the key and what is allowed.
    """
    path = Path(path)
    try:
        with open(path, "rb") as stream:
            data = tomllib.load(stream)
    except FileNotFoundError:
        raise StudyError(f"{path}: no such study file.") from None
    except IsADirectoryError:
        raise StudyError(f"{path}: is a directory, not a study file.") from None
    except OSError as exc:
        raise StudyError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise StudyError(f"{path}: not a valid TOML file ({_one_line(exc)}).") from None
    return study_from_dict(data, source=str(path), base=path.parent)


def study_from_dict(data: Mapping[str, Any], source: str = "study", base: str | os.PathLike | None = None) -> Study:
    """A :class:`Study` from the structure of a study file (``base``: where model files are looked up)."""
    return StudyReader(source, Path(base) if base is not None else Path.cwd()).study(data)
