"""compare-solvers at scale: --backends, --time-limit, child processes (peak memory, crashes, kills), the gap.

The backends below are defined at module level: a child process (spawn) finds a class by its module and name, so
the ones registered for a test reach the children too. References come from an LP written out here from the
model's arrays and solved with scipy.optimize.linprog.
"""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest
import scipy.sparse as sp
from cli_helpers import assert_one_line_error, invoke
from scipy.optimize import linprog

from curlopt import build_model
from curlopt.backends import registry
from curlopt.backends.highs.backend import HighsBackend
from curlopt.errors import BackendOptionError, CurloptError
from curlopt.experiments import compare
from curlopt.experiments.compare import compare_solvers, isolation_default, program_instances
from curlopt.utilities.library import Linear, LinearBound

#: relative error of the biased backend's objective
BIAS = 1e-3


class _OneVariant(HighsBackend):
    """HiGHS with one solver variant (one child process per row, not two)."""

    @classmethod
    def solver_variants(cls):
        return [(cls.name, {})]


class CrashingHighs(_OneVariant):
    """Ends its process with exit code 3 while compiling (as a solver library calling exit() would)."""

    name = "crashing"

    def _compile(self, program):
        os._exit(3)


class SegfaultHighs(_OneVariant):
    """Dies of SIGSEGV while compiling (as a solver library with a memory bug would)."""

    name = "segfault"

    def _compile(self, program):
        os.kill(os.getpid(), signal.SIGSEGV)


class SleepingHighs(_OneVariant):
    """Ignores its time limit: every solve sleeps a minute."""

    name = "sleeping"

    def _compile(self, program):
        compiled = super()._compile(program)

        def asleep(with_constraints):
            time.sleep(60)

        compiled._solve = asleep
        return compiled


class BiasedHighs(HighsBackend):
    """HiGHS, with every objective BIAS (relative) too high: a solver that is wrong."""

    name = "biased"

    def _compile(self, program):
        compiled = super()._compile(program)
        solve = compiled.solve

        def biased(*args, **kwargs):
            result = solve(*args, **kwargs)
            result.objective *= 1 + BIAS
            return result

        compiled.solve = biased
        return compiled


class NoLimitHighs(_OneVariant):
    """Refuses a time limit (as the pyomo backend does for a Pyomo solver whose limit it cannot set)."""

    name = "nolimit"

    def _configure(self):
        if self.time_limit is not None:
            raise BackendOptionError("the nolimit backend cannot set a time limit.")
        super()._configure()


class MissingBackend(_OneVariant):
    name = "missing"
    requires = ("no_such_package_for_curlopt_tests",)


@pytest.fixture
def test_backends(monkeypatch):
    for cls in (CrashingHighs, SegfaultHighs, SleepingHighs, BiasedHighs, NoLimitHighs, MissingBackend):
        monkeypatch.setitem(registry._REGISTRY, cls.name, cls)


def lp_optimum(model, kernel=None, epsilon=0.0) -> float:
    """The occupancy program of a model with a linear objective ``w·λ`` and linear bounds ``w_m·ζ <= b_m``, written
    out here from its arrays: max ``w·R ρ`` over ρ >= 0 with Σ ρ = 1, every flow row
    ``Σ_a ρ(s',a) = Σ_{s,a} Q(s'|s,a) ρ(s,a)`` (all S of them), and the ε-tight rows ``w_m·C ρ <= b_m - ε``;
    solved by linprog."""
    assert isinstance(model.objective, Linear) and not np.any(model.objective.offset)
    assert all(isinstance(g, LinearBound) for g in model.constraints)
    S, A = model.n_states, model.n_actions
    P = np.asarray(model.kernel if kernel is None else kernel).reshape(S, A, S)
    flow = np.zeros((S, S * A))
    for s in range(S):
        for a in range(A):
            flow[s, s * A + a] += 1.0
            flow[:, s * A + a] -= P[s, a]
    gain = np.tensordot(np.asarray(model.objective.weights), model.rewards, axes=1).ravel()
    costs = np.array([np.tensordot(np.asarray(g.weights), model.costs, axes=1).ravel() for g in model.constraints])
    solved = linprog(-gain, A_ub=costs, b_ub=[g.bound - epsilon for g in model.constraints],
                     A_eq=np.vstack([np.ones((1, S * A)), flow]), b_eq=np.concatenate([[1.0], np.zeros(S)]),
                     bounds=(0, None), method="highs")
    assert solved.status == 0, solved.message
    return -solved.fun


def forbid_solving(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("a backend ran although the arguments were unusable")

    monkeypatch.setattr(compare, "_run_variant", fail)
    monkeypatch.setattr(compare, "_run_isolated", fail)


# -- options ---------------------------------------------------------------------------------------------------------


def test_bad_backend_names_and_time_limits_are_refused_before_any_work(capsys, monkeypatch):
    forbid_solving(monkeypatch)
    known = ", ".join(registry.backend_names())
    for args, fragments in [
        (["--backends", "highs,nope"], [f"unknown backend(s) 'nope' in --backends; known backends: {known}."]),
        (["--backends", "highs, highs"], ["--backends names 'highs' more than once."]),
        (["--backends", ","], ["--backends names no backend; known backends:"]),
        (["--time-limit", "-1"], ["--time-limit must be a finite number of seconds above 0 (per solve), got -1.0."]),
        (["--time-limit", "0"], ["--time-limit must be a finite number of seconds above 0"]),
        (["--time-limit", "nan"], ["--time-limit must be a finite number of seconds above 0"]),
    ]:
        code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", *args], capsys)
        assert out == "", args
        assert_one_line_error(code, err, *fragments)
    model = build_model("queue")
    for kwargs, message in [({"backends": ["nope"]}, "unknown backend"), ({"backends": []}, "names no backend"),
                            ({"backends": "highs"}, "must be a list of backend names"),
                            ({"time_limit": -1}, "time_limit must be a finite number of seconds above 0"),
                            ({"time_limit": True}, "time_limit must be a finite number of seconds above 0"),
                            ({"time_limit": 1.0, "margin": 0}, "margin must be a finite number of seconds above 0")]:
        with pytest.raises(CurloptError, match=message):
            compare_solvers(model, program="optimum", **kwargs)


def test_the_time_limit_reaches_every_backend_as_its_option(test_backends):
    model = build_model("random", n_states=6, n_actions=3)
    # A limit no solve can meet: HiGHS stops at once with status time_limit; a backend that refuses the option
    # says so in its row; one that is not installed says that.
    report = compare_solvers(model, program="optimum", backends=["highs", "nolimit", "missing"], time_limit=1e-9,
                             isolate=False)
    rows = {(r.backend, r.solver): r for r in report.rows}
    assert [r.status_summary() for r in report.rows] == ["time_limit 1/1", "time_limit 1/1", "option refused",
                                                         "not installed"]
    assert rows["highs", "simplex"].failure.startswith("time_limit: the time limit of 1e-09 s was reached")
    assert rows["nolimit", "nolimit"].error == "option refused: the nolimit backend cannot set a time limit."
    assert rows["missing", "missing"].error.startswith("not installed: the missing backend needs"
                                                       " no_such_package_for_curlopt_tests")
    assert "time limit: 1e-09 s per solve (the backends' time_limit option)." in report.table()
    assert report.to_dict()["time_limit"] == 1e-9
    # a limit the solves meet changes nothing: the LP's optimum
    report = compare_solvers(model, program="optimum", backends=["highs"], time_limit=60, isolate=False)
    assert all(r.objectives[0] == pytest.approx(lp_optimum(model), rel=1e-8) for r in report.rows)


# -- child processes -------------------------------------------------------------------------------------------------


def test_isolated_rows_give_the_in_process_objectives_and_their_peak_memory(capsys):
    model = build_model("random", n_states=8, n_actions=3)
    here = compare_solvers(model, program="sampled", epochs=2, backends=["highs"], isolate=False)
    away = compare_solvers(model, program="sampled", epochs=2, backends=["highs"], isolate=True)
    _, instances = program_instances(model, "sampled", 2)
    expected = [lp_optimum(model, data["kernel"], data["epsilon"]) for data in instances]
    assert not here.isolated and away.isolated
    for near, far in zip(here.rows, away.rows, strict=True):
        assert (near.backend, near.solver) == (far.backend, far.solver)
        assert far.statuses == near.statuses == ["optimal", "optimal"]
        assert far.objectives == pytest.approx(near.objectives, rel=1e-12)
        assert far.objectives == pytest.approx(expected, rel=1e-8)
        assert near.peak_memory is None and not near.isolated
        # the child's own peak: an interpreter with numpy and HiGHS (tens of MiB), far from this test process's
        assert far.isolated and far.peak_exact and 10 * 2 ** 20 < far.peak_memory < 2 * 2 ** 30
        assert far.wall_time > 0 and far.compile_time is not None
    table = away.table()
    assert "isolation: each backend and solver ran in its own child process (asked)" in table
    assert " MiB" in table and " MiB" not in here.table()
    row = away.to_dict()["rows"][0]
    assert row["isolated"] is True and row["peak_memory_bytes"] == away.rows[0].peak_memory
    assert row["peak_memory_lower_bound"] is False


def test_a_crash_or_a_kill_in_a_child_becomes_a_row_with_the_reason(test_backends):
    model = build_model("queue")
    started = time.perf_counter()
    report = compare_solvers(model, program="optimum", backends=["crashing", "segfault", "sleeping", "scipy"],
                             isolate=True, time_limit=0.5, margin=1.0)
    rows = {r.backend: r for r in report.rows if r.backend != "scipy"}
    assert rows["crashing"].error == ("stopped: the child process exited with code 3 without a result while building"
                                      " and compiling the program")
    assert rows["segfault"].error == ("stopped: the child process crashed (SIGSEGV) while building and compiling the"
                                      " program")
    assert rows["sleeping"].error == ("stopped: killed by the wall-clock guard while solving instance 0: still running"
                                      " after 1.5 s (the 0.5 s time limit + 1 s margin)")
    # the lost children reported their memory before compiling: a lower bound; the guard read the sleeper's itself
    assert not rows["crashing"].peak_exact and rows["crashing"].peak_memory > 0
    assert rows["sleeping"].peak_exact and rows["sleeping"].peak_memory > 0
    assert all(r.status_summary() == "stopped" and not r.compared for r in rows.values())
    assert rows["sleeping"].wall_time < 30  # killed, not waited for (it sleeps 60 s)
    # the comparison went on: scipy solved the queue (its optimum from the LP written out here)
    (scipy,) = [r for r in report.rows if r.backend == "scipy"]
    assert scipy.statuses == ["optimal"] and scipy.objectives[0] == pytest.approx(lp_optimum(model), rel=1e-8)
    table = report.table()
    assert "crashing/crashing: stopped: the child process exited with code 3" in table
    assert ">=" in table and time.perf_counter() - started < 60


def test_a_program_refused_by_its_size_check_is_a_row_not_a_traceback(capsys):
    # The queue stored dense at buffer 500: its optimistic program would need 3.65 GiB of arrays (S²A = 4 M entries
    # per block), over the 2 GiB limit; the check refuses it before building anything.
    args = ["compare-solvers", "queue", "-p", "buffer=500", "-p", "storage=dense", "--program", "optimistic",
            "--instances", "1", "--backends", "highs,mdp-columns", "--json"]
    for extra in ([], ["--no-isolate"]):
        code, out, err = invoke(args + extra, capsys)
        # every row refused: nothing was solved, so the command fails, and says why in one line
        assert code == 1 and "Traceback" not in err, err
        assert err.splitlines()[-1] == ("error: no solver solved any instance of the optimistic program (highs/simplex,"
                                        " highs/ipm, mdp-columns/mdp-columns: program refused).")
        data = json.loads(out)
        assert data["answered"] is False
        assert data["isolated"] is (extra == [])  # S·A = 501 · 16 = 8,016 >= 5,000: isolated by default
        assert [r["status"] for r in data["rows"]] == ["program refused"] * 3
        for row in data["rows"]:
            assert row["error"].startswith("program refused: the optimistic program of model 'queue' (S=501, A=16)")
            assert "more than the limit of 2 GiB" in row["error"]
        # the program is the same for every backend: built (and refused) once, not once per row
        assert data["rows"][0]["wall_time"] is not None and [r["wall_time"] for r in data["rows"][1:]] == [None] * 2


def test_isolation_is_the_default_for_large_models_and_said(capsys):
    # S·A = 313 · 16 = 5,008 pairs; 312 · 16 = 4,992 pairs and at most 3 successors each (< 10^5 entries)
    assert isolation_default(build_model("queue", buffer=312)) == (True, "the model is large: S·A = 5,008 >= 5,000")
    assert isolation_default(build_model("queue", buffer=311))[0] is False
    # the scheduler with 4 clients: S = 2^4 · 16 = 256 states, A = 4, a dense kernel of 256 · 4 · 256 entries
    assert isolation_default(build_model("scheduler", clients=4)) == (
        True, "the model is large: its kernel holds 262,144 entries >= 100,000")
    assert isolation_default(build_model("random")) == (False, "the model is small (S·A = 15, 75 kernel entries)")
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--backends", "highs"], capsys)
    assert code == 0, err
    assert ("isolation: every backend and solver ran in this process (the model is small (S·A = 96, 576 kernel"
            " entries))") in out
    # the note is said once, under the table (not again on stderr)
    assert out.count("10 instances were asked for, but the optimum program has one") == 1 and err == ""


# -- the gap ---------------------------------------------------------------------------------------------------------


def test_the_gap_is_to_the_most_accurate_answer_named_in_the_report(test_backends):
    model = build_model("random", n_states=6, n_actions=3)
    optimum = lp_optimum(model)
    report = compare_solvers(model, program="optimum", backends=["highs", "biased"], isolate=False)
    reference, why = report.reference()
    assert reference.backend == "highs" and why.startswith("the consensus of the exact solvers: 2 of 4 agree")
    assert reference.objectives[0] == pytest.approx(optimum, rel=1e-9)
    expected = BIAS * abs(optimum) / max(1.0, abs(optimum))
    for row in report.rows:
        gap = report.gap(row)
        if row.backend == "highs":
            assert gap < 1e-9
        else:
            assert gap == pytest.approx(expected, rel=1e-6)
    table = report.table()
    assert f"reference highs/{reference.solver}, the consensus of the exact solvers" in table
    assert "reference  " in table  # the reference row's gap column
    data = report.to_dict()
    assert data["reference"]["backend"] == "highs" and data["reference"]["approximate"] is None
    assert [r["gap"] for r in data["rows"]] == [report.gap(r) for r in report.rows]
    # with no exact solver, the approximate one is the reference, and the report says so
    alone = compare_solvers(model, program="optimum", backends=["mdp-columns"], isolate=False)
    reference, why = alone.reference()
    assert reference.backend == "mdp-columns" and why.startswith("no exact solver finished")
    assert reference.objectives[0] == pytest.approx(optimum, rel=1e-7)
    assert alone.to_dict()["reference"]["approximate"].startswith("column generation")


# -- sparse models, progress -----------------------------------------------------------------------------------------


def test_sparse_models_keep_their_instances_sparse_and_solve_them():
    model = build_model("random", n_states=12, n_actions=3, successors=3, storage="sparse")
    support = model.transitions.toarray() > 0
    _, optimistic = program_instances(model, "optimistic", 2)
    for data in optimistic:
        counts = data["counts"]
        assert sp.issparse(counts) and counts.sum() == data["time"] - 1  # one count per simulated step
        assert not np.any(counts.toarray()[~support])
    _, sampled = program_instances(model, "sampled", 2)
    for data in sampled:
        kernel = data["kernel"].toarray()
        assert sp.issparse(data["kernel"]) and not np.any(kernel[~support])
        assert np.allclose(kernel.sum(axis=1), 1.0, atol=1e-12)
    report = compare_solvers(model, program="sampled", epochs=2, backends=["highs"], isolate=False)
    expected = [lp_optimum(model, data["kernel"].toarray(), data["epsilon"]) for data in sampled]
    for row in report.rows:
        assert row.statuses == ["optimal", "optimal"]
        assert row.objectives == pytest.approx(expected, rel=1e-8)


def test_progress_says_when_each_row_starts_and_ends(capsys):
    lines: list[str] = []
    compare_solvers(build_model("queue"), program="optimum", backends=["highs", "scipy"], isolate=False,
                    progress=lines.append)
    assert [line.split(": ")[0] for line in lines] == ["[1/3] highs/simplex", "[1/3] highs/simplex",
                                                       "[2/3] highs/ipm", "[2/3] highs/ipm",
                                                       "[3/3] scipy/scipy", "[3/3] scipy/scipy"]
    assert lines[0] == "[1/3] highs/simplex: started" and lines[1].startswith("[1/3] highs/simplex: optimal 1/1 in ")
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--instances", "1", "--backends",
                             "highs", "--progress", "--json"], capsys)
    assert code == 0 and json.loads(out)["rows"]  # stdout is the JSON alone
    assert err.splitlines()[:2] == ["[1/2] highs/simplex: started", err.splitlines()[1]]
    assert err.splitlines()[1].startswith("[1/2] highs/simplex: optimal 1/1 in ")
    code, out, err = invoke(["compare-solvers", "queue", "--program", "optimum", "--instances", "1", "--backends",
                             "highs"], capsys)
    assert code == 0 and "[1/2]" not in err  # a small model: no progress unless asked
