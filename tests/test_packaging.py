"""The package as a user installs it: a built wheel, outside the source tree.

Everything else in the suite runs against the editable install of the checkout, which would hide a module or a
data file missing from the wheel. Here the wheel is built, installed into a folder of its own (without its
dependencies, which the test environment already has), and the commands a new user types first are run from a
folder outside the checkout, with that folder first on the path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from curlopt.models import build_model
from curlopt.testing import model_optimum

ROOT = Path(__file__).resolve().parent.parent


def _source_packages() -> set[str]:
    return {str(path.parent.relative_to(ROOT)).replace(os.sep, ".") for path in (ROOT / "curlopt").rglob("__init__.py")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the folder it is installed into)."""
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(work / "dist"),
                    str(ROOT)], check=True, capture_output=True, text=True)
    wheels = sorted((work / "dist").glob("curlopt-*.whl"))
    assert len(wheels) == 1, wheels
    site = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target",
                    str(site), str(wheels[0])], check=True, capture_output=True, text=True)
    return wheels[0], site


def _run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_wheel_holds_every_package_of_the_source_tree(installed):
    wheel, _ = installed
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {name.rpartition("/")[0].replace("/", ".") for name in archive.namelist()
                    if name.endswith("/__init__.py")}
        names = archive.namelist()
    assert _source_packages() - in_wheel == set()
    # the package's data files too: the reproduce presets are study files (TOML) inside the package
    data = {str(path.relative_to(ROOT)).replace(os.sep, "/") for path in (ROOT / "curlopt").rglob("*.toml")}
    assert data and data - set(names) == set()
    assert not [name for name in names if name.startswith(("tests/", "benchmarks/", "studies/"))]


def test_the_installed_wheel_runs_outside_the_source_tree(installed, tmp_path):
    _, site = installed
    found = _run(site, tmp_path, "-c", "import curlopt; print(curlopt.__file__)")
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).is_relative_to(site)  # the wheel's copy, not the checkout's
    version = _run(site, tmp_path, "-m", "curlopt", "--version")
    assert version.returncode == 0 and version.stdout.strip(), version.stderr
    optimum = _run(site, tmp_path, "-m", "curlopt", "optimum", "queue")
    assert optimum.returncode == 0, optimum.stderr
    printed = next(line for line in optimum.stdout.splitlines() if line.startswith("f(λ*)"))
    # the reference: the optimum written again from the problem statement (curlopt.testing.reference), here
    reference = model_optimum(build_model("queue")).value
    assert float(printed.split()[1]) == pytest.approx(reference, rel=1e-8)
    presets = _run(site, tmp_path, "-c", "from curlopt.experiments import EXPERIMENTS as E; print(*sorted(E))")
    assert presets.returncode == 0 and presets.stdout.split() == ["queue", "scheduler"], presets.stderr
    run = _run(site, tmp_path, "-m", "curlopt", "run", "queue", "-T", "2000", "--no-progress", "--out", "trace.json")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "trace.json").is_file()
