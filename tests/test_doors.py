"""The experiments room has one public door per sub-room: each package's ``__init__`` lists what it offers, and no
other module passes on names it does not define (a re-export shim is a second door to the same name)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import curlopt.experiments

EXPERIMENTS = Path(curlopt.experiments.__file__).parent
ROOMS = ["simulation", "study", "outputs", "outputs.figures", "compare"]


def _module_name(path: Path) -> str:
    parts = path.relative_to(EXPERIMENTS.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _shims(path: Path) -> list[str]:
    """The names of a module's ``__all__`` that it does not define itself (imports it passes on)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined: set[str] = set()
    listed: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        names = {target.id for target in targets if isinstance(target, ast.Name)}
        defined |= names
        if "__all__" in names and isinstance(node.value, (ast.List, ast.Tuple)):
            listed = [element.value for element in node.value.elts if isinstance(element, ast.Constant)]
    return [name for name in listed if name not in defined]


def test_the_shim_check_finds_a_name_passed_on(tmp_path):
    module = tmp_path / "shim.py"
    module.write_text("from .style import KEY\n\n__all__ = ['KEY', 'draw']\n\n\ndef draw():\n    pass\n")
    assert _shims(module) == ["KEY"]


def test_no_module_of_the_experiments_room_but_a_door_re_exports():
    found = {_module_name(path): _shims(path) for path in sorted(EXPERIMENTS.rglob("*.py"))
             if path.name != "__init__.py"}
    assert {name: shims for name, shims in found.items() if shims} == {}


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_has_one_door_that_offers_its_own_names(room):
    door = importlib.import_module(f"curlopt.experiments.{room}")
    assert door.__all__ and len(set(door.__all__)) == len(door.__all__)
    for name in door.__all__:
        value = getattr(door, name)  # every name listed is there
        if inspect.isclass(value) or inspect.isfunction(value):  # and is the room's own, not another room's
            assert value.__module__ == door.__name__ or value.__module__.startswith(door.__name__ + "."), \
                (name, value.__module__)


def test_the_experiments_package_offers_what_users_import():
    for name in curlopt.experiments.__all__:
        assert getattr(curlopt.experiments, name) is not None
    # the names the guide and README use
    from curlopt.experiments import load_study, load_trace, reproduce, run, run_study  # noqa: F401
