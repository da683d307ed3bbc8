"""The linter and the type checker, as configured in pyproject.toml, find nothing in the checked modules.

``ruff check`` (the rule set of ``[tool.ruff.lint]``) and ``mypy`` (``[tool.mypy]``: every module of the package
is analysed, since each module's types depend on the others) run as the developer runs them, from the repository
root. Their findings are asserted empty for the paths in :data:`CHECKED`: the whole package; ruff's also for
:data:`LINTED`, the tests, the benchmarks and the study scripts.

The public API is typed: every function and method reachable from ``curlopt``'s exports and from the ``__all__``
of the checked modules has annotated parameters and return (the rule mypy's ``disallow_untyped_defs`` and
``disallow_incomplete_defs`` apply, checked here on the objects themselves).

A test is skipped, saying why, when its tool is not installed (both come with ``pip install -e '.[dev]'``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import curlopt

ROOT = Path(__file__).resolve().parents[1]

#: the paths (relative to the repository root) whose findings must be empty: a package folder or a module
CHECKED = ["curlopt"]
#: the paths ruff checks: the package and the code beside it (tests, benchmarks, study scripts), held to the same rules
LINTED = [*CHECKED, "tests", "benchmarks", "studies"]

#: a mypy finding: ``path:line: severity: message``
MYPY_LINE = re.compile(r"^(?P<path>[^:\s]+\.py):\d+(?::\d+)?: (?P<severity>error|note): ")


def _tool(module: str) -> list[str]:
    """The command running ``module`` with this interpreter, or a skip when it is not installed."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]' installs it)")
    return [sys.executable, "-m", module]


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def _is_checked(path: str, scope: list[str] = CHECKED) -> bool:
    """Whether a finding at ``path`` (as the tool prints it, relative to the root) falls under ``scope``."""
    normal = path.replace("\\", "/")
    return any(normal == entry or normal.startswith(entry.rstrip("/") + "/") for entry in scope)


def test_the_scope_names_existing_paths() -> None:
    """A misspelt entry would check nothing and pass."""
    missing = [entry for entry in LINTED if not (ROOT / entry).exists()]
    assert not missing, f"CHECKED or LINTED names paths that do not exist: {missing}"


def test_is_checked_reads_folders_and_files() -> None:
    scope = ["curlopt/programs", "curlopt/errors.py", "curlopt/backends/pyomo/"]
    assert _is_checked("curlopt/programs/lp.py", scope)
    assert _is_checked("curlopt/backends/pyomo/compiled.py", scope)
    assert _is_checked("curlopt/errors.py", scope)
    assert not _is_checked("curlopt/programs_extra.py", scope)
    assert not _is_checked("curlopt/errors.pyc", scope)
    assert not _is_checked("curlopt/backends/highs/backend.py", scope)
    assert _is_checked("curlopt/backends/highs/backend.py", ["curlopt"])


def test_ruff_finds_nothing() -> None:
    result = _run(_tool("ruff") + ["check", "--no-cache", "--output-format", "concise", *LINTED])
    assert result.returncode == 0, f"ruff check reports:\n{result.stdout}{result.stderr}"


def test_mypy_finds_nothing() -> None:
    result = _run(_tool("mypy"))
    output = result.stdout + result.stderr
    # 0: no error anywhere, 1: errors (maybe outside the checked paths); anything else is mypy failing to run
    assert result.returncode in (0, 1) and re.search(r"^(Success|Found \d+ error)", output, re.MULTILINE), (
        f"mypy did not run to the end (exit {result.returncode}):\n{output}"
    )
    findings = [line for line in output.splitlines()
                if (match := MYPY_LINE.match(line)) and match["severity"] == "error" and _is_checked(match["path"])]
    assert not findings, "mypy reports, in the checked modules:\n" + "\n".join(findings)


# -- the public API is annotated --------------------------------------------------------------------------------


def _checked_modules() -> list[str]:
    """The import names of the modules under :data:`CHECKED`."""
    names = []
    for entry in CHECKED:
        path = ROOT / entry
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            parts = file.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__main__":
                continue  # running it is its import
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _functions(obj: Any, label: str) -> Iterator[tuple[str, Callable[..., Any]]]:
    """The public functions of ``obj``: itself, or for a class every public method (and ``__init__``) it defines
    or inherits from a curlopt class, properties included."""
    if inspect.isfunction(obj):
        yield label, obj
        return
    if not inspect.isclass(obj):
        return
    for klass in inspect.getmro(obj):
        if not klass.__module__.startswith("curlopt"):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") and name != "__init__":
                continue
            if isinstance(member, (classmethod, staticmethod)):
                member = member.__func__
            elif isinstance(member, property):
                member = member.fget
            if inspect.isfunction(member) and member.__module__.startswith("curlopt"):
                yield f"{label}.{name}", member


def _unannotated(function: Callable[..., Any]) -> list[str]:
    """What mypy's disallow_untyped_defs/disallow_incomplete_defs would ask of ``function``: its parameters without
    an annotation, and ``return`` when that has none (an ``__init__`` with an annotated parameter needs none)."""
    annotations = function.__annotations__
    parameters = [p for p in inspect.signature(function).parameters.values() if p.name not in ("self", "cls")]
    gaps = [p.name for p in parameters if p.name not in annotations]
    if "return" not in annotations and not (function.__name__ == "__init__" and any(
            p.name in annotations for p in parameters)):
        gaps.append("return")
    return gaps


def _public_api() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every public function and method exported by ``curlopt`` and by the ``__all__`` of the checked modules."""
    sources = [("curlopt", curlopt)] + [(name, importlib.import_module(name)) for name in _checked_modules()]
    for module_name, module in sources:
        for name in getattr(module, "__all__", []):
            if name.startswith("__"):
                continue
            yield from _functions(getattr(module, name), f"{module_name}.{name}")


def test_public_api_is_annotated() -> None:
    gaps: dict[str, list[str]] = {}
    checked = 0
    for label, function in _public_api():
        checked += 1
        missing = _unannotated(function)
        if missing:
            gaps[f"{label} ({function.__module__})"] = missing
    assert checked > 100, f"only {checked} functions found: the API walk is broken"
    assert not gaps, "public functions without annotations:\n" + "\n".join(f"{k}: {v}" for k, v in sorted(gaps.items()))


def test_unannotated_finds_what_mypy_would() -> None:
    """The annotation rule itself, on functions written here."""

    def typed(a: int, b: str = "") -> None: ...

    def missing_return(a: int): ...

    def missing_parameter(a, b: int) -> int: ...

    class Holder:
        def __init__(self, value: int): ...

    class Bare:
        def __init__(self): ...

    assert _unannotated(typed) == []
    assert _unannotated(missing_return) == ["return"]
    assert _unannotated(missing_parameter) == ["a"]
    assert _unannotated(Holder.__init__) == []
    assert _unannotated(Bare.__init__) == ["return"]


# -- the pre-commit hooks run what these tests run ----------------------------------------------------------------


def test_pre_commit_hooks_run_the_checks_of_these_tests() -> None:
    """.pre-commit-config.yaml's ruff hook checks exactly :data:`LINTED`, its mypy hook runs mypy as configured (no
    paths: pyproject.toml's ``files``), both in the project's environment, and the tests' hook waits to be asked."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert set(hooks) == {"ruff", "mypy", "fast-tests"}
    ruff_command = hooks["ruff"]["entry"].split()
    assert ruff_command[:4] == ["python", "-m", "ruff", "check"] and ruff_command[4:] == LINTED
    assert hooks["mypy"]["entry"].split() == ["python", "-m", "mypy"]
    for hook in hooks.values():
        assert hook["language"] == "system" and hook["pass_filenames"] is False, hook["id"]
    assert hooks["fast-tests"]["stages"] == ["manual"] and "pytest" in hooks["fast-tests"]["entry"]
