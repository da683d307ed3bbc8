"""The optimisation layer imports alone (DESIGN.md): no agents, envs, plotting or solvers."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["cvxpy", "pyomo", "highspy", "cyipopt", "gymnasium", "matplotlib", "ray", "curlopt.agents", "curlopt.envs"]


def loaded_after(code: str) -> set[str]:
    script = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return [h for h in HEAVY if h in modules or any(m.startswith(h + ".") for m in modules)]


def test_import_curlopt_loads_no_solver_agent_env_or_plotting():
    assert heavy_in(loaded_after("import curlopt")) == []


def test_programs_backends_and_models_import_alone():
    code = (
        "import curlopt, curlopt.programs, curlopt.backends, curlopt.backends.highs.backend, curlopt.backends.cvxpy,"
        " curlopt.backends.registry, curlopt.programs.lp, curlopt.models, curlopt.optimum\n"
        "from curlopt import OccupancyProgram, OptimisticProgram, build_model\n"
        "m = build_model('queue'); OccupancyProgram(m); OptimisticProgram(m)"
    )
    assert heavy_in(loaded_after(code)) == []


def test_pyomo_backend_module_imports_without_its_solver():
    code = "import importlib.util\nif importlib.util.find_spec('curlopt.backends.pyomo'): import curlopt.backends.pyomo.backend"
    assert heavy_in(loaded_after(code)) == []


def test_highs_backend_imports_only_highspy_when_used():
    modules = loaded_after("import curlopt\ncurlopt.solve_optimum(curlopt.build_model('queue'), 'highs')")
    assert "highspy" in modules
    assert heavy_in(modules) == ["highspy"]
