"""The reproduction sweep: a preset of the study runner; files, summary, figures, resume,
profiles, executors, CLI."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import invoke as _cli

from curlopt.errors import CurloptError
from curlopt.experiments.outputs.summary import STUDY_COLUMN_DOCS, TIME_COLUMNS, study_columns
from curlopt.experiments.presets import (
    EXPERIMENTS,
    AlgorithmSpec,
    Experiment,
    Scale,
    SettingSpec,
    experiment_study,
    plan_tasks,
    reproduce,
    task_status,
)
from curlopt.experiments.simulation.trace import load_trace

STEPS = 2000
ALGORITHMS = ["ps-curl-doubling", "uc-curl-linear"]
TINY = dict(steps=STEPS, seeds=2, algorithms=ALGORITHMS, progress=False, echo=None)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as stream:
        reader = csv.DictReader(stream)
        return list(reader.fieldnames or []), list(reader)


def _without_time(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{k: v for k, v in row.items() if k not in TIME_COLUMNS} for row in rows]


def _mtimes(result) -> dict[str, int]:
    return {task.key: (result.out / task.relative_path).stat().st_mtime_ns for task in result.tasks}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny sweep through the Python API with a 2-worker process pool and figures."""
    out = tmp_path_factory.mktemp("tiny") / "queue"
    return reproduce("queue", jobs=2, out=out, **TINY)


# -- end to end through the API -----------------------------------------------------------------------------------
def test_tiny_sweep_writes_every_run_and_the_tables(tiny):
    assert tiny.ok and len(tiny.tasks) == 4 and len(tiny.executed) == 4 and not tiny.skipped
    for task in tiny.tasks:
        path = tiny.out / task.relative_path
        assert path.name == f"T{STEPS}-seed{task.seed:03d}.json.gz"
        # one folder per configuration: runs/<setting>/<algorithm>/<configuration key>/
        assert path.parent == tiny.out / "runs" / "queue" / task.algorithm.key / task.configuration.key
        assert (path.parent / "config.json").exists()
        trace = load_trace(path)
        assert trace.meta["seed"] == task.seed and trace.meta["steps"] == STEPS and trace.meta["env"] == "queue"
        assert trace.meta["sweep"]["algorithm"] == task.algorithm.key
        assert trace.meta["configuration"] == task.configuration.key and trace.meta["varied"] == {}
    assert tiny.summary_csv == tiny.out / "summary.csv" and tiny.summary_md == tiny.out / "summary.md"
    assert not list(tiny.out.rglob("*.tmp"))  # atomic writes leave no temporaries


def test_summary_has_the_documented_columns_and_the_means_of_the_runs(tiny):
    header, rows = _read_csv(tiny.summary_csv)
    assert header == study_columns(2)  # the queue has two constraints; nothing varied
    for column in header:
        base = column
        for suffix in ("_mean", "_std", "_ci_low", "_ci_high"):
            base = base.removesuffix(suffix)
        assert base in STUDY_COLUMN_DOCS or base.startswith("g"), column
    assert [row["algorithm"] for row in rows] == ["uc-curl-linear", "ps-curl-doubling"]  # the experiment's order
    for row in rows:
        traces = [load_trace(tiny.out / t.relative_path) for t in tiny.tasks if t.algorithm.key == row["algorithm"]]
        regrets = [tr.checkpoints["regret"][-1] for tr in traces]
        g1 = [tr.checkpoints["constraints"][-1][0] for tr in traces]
        assert row["seeds"] == "2" and row["steps"] == str(STEPS)
        assert float(row["regret_mean"]) == pytest.approx(np.mean(regrets))
        assert float(row["regret_std"]) == pytest.approx(np.std(regrets, ddof=1))
        assert float(row["g1_mean"]) == pytest.approx(np.mean(g1))
        assert float(row["regret_mean"]) == pytest.approx(float(row["optimum"]) - float(row["objective_mean"]))
        zero = np.mean([tr.checkpoints["violation"][-1] == 0 for tr in traces])
        assert float(row["zero_violation_share"]) == pytest.approx(zero)
        assert float(row["epochs_mean"]) == pytest.approx(np.mean([len(tr.epochs) for tr in traces]))
    text = tiny.summary_md.read_text(encoding="utf-8")
    assert "| seeds | f(λ^(T)) | R(T) | g_1(ζ^(T)) | g_2(ζ^(T)) | C(T) |" in text
    assert "PS-CURL (doubling)" in text and "±" in text
    assert "Profile paper" in text  # the profile is stated next to the results


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE and head[12:16] == b"IHDR", path
    return struct.unpack(">II", head[16:24])


def _check_figures(figures: list[Path], settings: list[str]) -> None:
    import matplotlib.image

    names = {p.name for p in figures}
    for setting in settings:
        assert {f"{setting}-{kind}.png" for kind in ("frontier", "objective", "regret", "overview")} <= names
    for path in figures:
        width, height = _png_size(path)
        assert width >= 600 and height >= 400
        assert path.stat().st_size > 20_000  # curves, bands, labels: not an empty canvas
        image = matplotlib.image.imread(path)
        assert image.shape[:2] == (height, width)
        assert np.ptp(image[..., :3]) > 0.5  # more than one colour


def test_figures_are_valid_pngs(tiny):
    assert {p.name for p in tiny.figures} == {f"queue-{kind}.png" for kind in (
        "frontier", "objective", "regret", "constraints", "overview", "epochs")}
    _check_figures(tiny.figures, ["queue"])


# -- resume -------------------------------------------------------------------------------------------------------
def test_resume_skips_finished_runs_and_reruns_missing_truncated_or_foreign_ones(tmp_path):
    out = tmp_path / "queue"
    first = reproduce("queue", jobs=1, out=out, figures=False, **TINY)
    assert len(first.executed) == 4
    before = _mtimes(first)

    again = reproduce("queue", jobs=1, out=out, figures=False, **TINY)
    assert again.executed == [] and len(again.skipped) == 4 and again.repaired == []
    assert _mtimes(again) == before
    assert _without_time(_read_csv(again.summary_csv)[1]) == _without_time(_read_csv(first.summary_csv)[1])

    deleted, truncated, foreign = first.tasks[0], first.tasks[1], first.tasks[3]
    before = _mtimes(again)
    (out / deleted.relative_path).unlink()
    raw = (out / truncated.relative_path).read_bytes()
    (out / truncated.relative_path).write_bytes(raw[: len(raw) // 2])
    assert task_status(truncated, out)[0] == "corrupt"
    shutil.copyfile(out / first.tasks[2].relative_path, out / foreign.relative_path)  # another seed's trace
    assert task_status(foreign, out)[0] == "mismatch"

    repaired = reproduce("queue", jobs=1, out=out, figures=False, **TINY)
    assert {t.key for t in repaired.executed} == {deleted.key, truncated.key, foreign.key}
    assert [t.key for t in repaired.skipped] == [first.tasks[2].key]
    assert len(repaired.repaired) == 2 and any("corrupt" in line for line in repaired.repaired)
    after = _mtimes(repaired)
    assert after[first.tasks[2].key] == before[first.tasks[2].key]
    # The re-run traces are those of the first sweep (same seeds), so the summary is unchanged.
    assert _without_time(_read_csv(repaired.summary_csv)[1]) == _without_time(_read_csv(first.summary_csv)[1])

    # A different horizon is a different run file; the old ones stay.
    other = reproduce("queue", jobs=1, out=out, figures=False, **{**TINY, "steps": 1000})
    assert len(other.executed) == 4 and all((out / t.relative_path).exists() for t in first.tasks)


def test_a_garbage_file_is_reported_and_rerun(tmp_path):
    out = tmp_path / "q"
    options = {**TINY, "seeds": 1, "algorithms": ["ps-curl-doubling"]}
    first = reproduce("queue", jobs=1, out=out, figures=False, **options)
    path = out / first.tasks[0].relative_path
    path.write_bytes(gzip.compress(b'{"format": "curlopt-trace", "version": 1}'))  # valid gzip+JSON, not a trace
    messages: list[str] = []
    again = reproduce("queue", jobs=1, out=out, figures=False, **{**options, "echo": messages.append})
    assert [t.key for t in again.executed] == [first.tasks[0].key]
    assert any("corrupt" in m and str(path) in m for m in messages)
    assert load_trace(path).meta["seed"] == 0


# -- planning -----------------------------------------------------------------------------------------------------
def test_the_full_profile_is_the_papers_experiments():
    # the paper's simulations: the queue at T = 5·10^5 over 50 seeds, the scheduler at T = 5·10^5 over 10 seeds
    queue, scheduler = EXPERIMENTS["queue"], EXPERIMENTS["scheduler"]
    paper_keys = ["uc-curl-doubling", "uc-curl-linear", "ps-curl-doubling", "ps-curl-linear", "ucrl-cmdp", "primal-dual"]
    assert [a.key for a in queue.algorithms if not a.extra] == paper_keys
    # safe mode runs beside them, the one extra, labelled as the toolkit's own
    assert [(a.key, a.agent) for a in queue.algorithms if a.extra] == [("safe-curl", "safe-curl")]
    assert [a.key for a in scheduler.algorithms if a.extra] == ["safe-curl"]
    assert all("not in the paper" in a.label for a in queue.algorithms + scheduler.algorithms if a.extra)
    assert (queue.full.steps, queue.full.seeds, scheduler.full.steps, scheduler.full.seeds) == (500_000, 50, 500_000, 10)
    assert queue.backend == "highs" and scheduler.backend == "cvxpy"
    assert [s.build().n_constraints for s in scheduler.settings] == [1, 0]


def test_missing_agents_are_left_out_with_a_note_and_horizon_agents_get_T():
    from curlopt.agents import AGENTS, PsCurl, register_agent

    class HorizonAgent(PsCurl):  # stands in for the baselines: no trigger option, needs T
        name = "test-horizon"
        needs_horizon = True

        def __init__(self, model, horizon, backend="highs", tightness_constant=1.0, seed=None):
            self.horizon = horizon
            super().__init__(model, backend=backend, trigger="linear", tightness_constant=tightness_constant, seed=seed)

    experiment = Experiment(
        name="mini", settings=(SettingSpec("queue", "queue"),),
        algorithms=(AlgorithmSpec("h", "Horizon", "test-horizon"), AlgorithmSpec("x", "Missing", "no-such-agent")),
        backend="highs", default=Scale(500, 1), full=Scale(1000, 2),
    )
    register_agent("test-horizon", HorizonAgent)
    try:
        tasks, notes = plan_tasks(experiment, 2, 500)
        assert len(tasks) == 2 and all(dict(t.options) == {"horizon": 500, "backend": "highs", "tightness_constant": 1.0}
                                       for t in tasks)
        assert len(notes) == 1 and "Missing" in notes[0] and "no-such-agent" in notes[0]
    finally:
        AGENTS.pop("test-horizon", None)
    if "ucrl-cmdp" not in AGENTS:
        _, notes = plan_tasks("queue", 1, 100)
        assert any("UCRL-CMDP" in note for note in notes)


def test_bad_requests_are_refused_before_any_run(tmp_path):
    with pytest.raises(CurloptError, match="cvxpy"):
        reproduce("scheduler", backend="highs", out=tmp_path, echo=None, progress=False)
    with pytest.raises(CurloptError, match="unknown experiment"):
        reproduce("maze", out=tmp_path, echo=None)
    with pytest.raises(CurloptError, match="no algorithm 'nope'"):
        reproduce("queue", algorithms=["nope"], out=tmp_path, echo=None)
    with pytest.raises(CurloptError, match="executor"):
        reproduce("queue", executor="dask", out=tmp_path, echo=None)
    with pytest.raises(CurloptError, match="unknown profile 'fast'; profiles: paper, analysis"):
        reproduce("queue", profile="fast", out=tmp_path, echo=None)
    with pytest.raises(CurloptError, match="'ps-curl-linear' twice"):  # it would run twice and count double
        reproduce("queue", algorithms=["ps-curl-linear", "primal-dual", "ps-curl-linear"], out=tmp_path, echo=None)
    assert list(tmp_path.iterdir()) == []


# -- profiles -----------------------------------------------------------------------------------------------------
def _options(study) -> dict[str, dict]:
    return {algorithm.key: dict(algorithm.options) for algorithm in study.algorithms}


def test_the_profiles_set_the_options_the_paper_states_and_the_analysis_uses():
    paper, _ = experiment_study("queue")
    options = _options(paper)
    assert options["uc-curl-linear"] == {"backend": "highs", "trigger": "linear", "radius": "experiment",
                                         "tightness_constant": 1, "unreached": "uniform"}
    assert options["ps-curl-doubling"] == {"backend": "highs", "trigger": "doubling", "tightness_constant": 1,
                                           "unreached": "uniform"}
    # UCRL-CMDP keeps its agent's default backend (the same box program by column generation); see below
    assert options["ucrl-cmdp"] == {"backend": "highs-box-columns", "unreached": "uniform"}
    assert options["primal-dual"] == {"scale": True}
    assert paper.profile["name"] == "paper" and paper.default_out == Path("results/queue")
    assert any("silent" in note and "unreached=uniform" in note for note in paper.profile["notes"])
    # the extra runs at its own defaults: the profile's (the paper's) options are not given to it
    assert options["safe-curl"] == {"backend": "highs", "trigger": "linear", "tightness_constant": 1}
    assert any(note.startswith("Safe mode (ours") for note in paper.profile["notes"])
    # the reduced scale says what it does not show; the published scale does not need to
    assert any("T = 500,000" in note and "--full" in note for note in paper.profile["notes"])
    assert not any("--full" in note for note in experiment_study("queue", full=True)[0].profile["notes"])

    analysis, _ = experiment_study("queue", profile="analysis")
    assert _options(analysis)["uc-curl-linear"]["radius"] == "analysis"
    assert _options(analysis)["uc-curl-linear"]["tightness_constant"] == 1
    assert {k: v for k, v in _options(analysis).items() if not k.startswith("uc-curl")} == \
        {k: v for k, v in options.items() if not k.startswith("uc-curl")}
    assert analysis.default_out == Path("results/queue-analysis")

    # --tightness and --backend override the profile for the agents that take them
    override, _ = experiment_study("scheduler", profile="analysis", tightness=3, backend="pyomo")
    assert {o["tightness_constant"] for o in _options(override).values()} == {3}
    assert {o["backend"] for o in _options(override).values()} == {"pyomo"}
    assert override.profile["overrides"] == {"tightness_constant": 3, "backend": "pyomo"}

    # Each profile's configurations are their own folders: both can live in one output folder.
    from curlopt.experiments.study.planning import plan_study

    keys = {name: {c.algorithm.key: c.key for c in plan_study(experiment_study("queue", profile=name)[0]).configurations}
            for name in ("paper", "analysis")}
    assert keys["paper"]["uc-curl-linear"] == \
        "backend-highs_radius-experiment_tightness_constant-1_trigger-linear_unreached-uniform"
    assert keys["analysis"]["uc-curl-linear"] != keys["paper"]["uc-curl-linear"]
    assert keys["analysis"]["ps-curl-linear"] == keys["paper"]["ps-curl-linear"]


def test_ucrl_cmdp_runs_on_its_agents_default_backend_unless_backend_is_given(tmp_path, capsys):
    import inspect

    from curlopt.agents import AGENTS
    from curlopt.experiments.study.planning import plan_study

    # the agent's own default, read from its signature: what `curlopt run queue -a ucrl-cmdp` uses
    assert inspect.signature(AGENTS["ucrl-cmdp"]).parameters["backend"].default == "highs-box-columns"
    curl = ["uc-curl-doubling", "uc-curl-linear", "ps-curl-doubling", "ps-curl-linear", "safe-curl"]

    study, heading = experiment_study("queue", full=True)
    assert study.profile["backends"] == {**{key: "highs" for key in curl}, "ucrl-cmdp": "highs-box-columns"}
    assert "primal-dual" not in study.profile["backends"]  # it solves no program and takes no backend
    assert study.profile["overrides"] == {}  # the preset's own choice, not an override
    assert "ucrl-cmdp: highs-box-columns, its agent's default" in heading and heading.startswith("backend highs (")
    assert any(note.startswith("Backends: highs for every algorithm that takes one, except UCRL-CMDP on"
                               " highs-box-columns") for note in study.profile["notes"])
    # its runs have their own folder: a resume never mixes them with runs made on the whole LP
    keys = {c.algorithm.key: c.key for c in plan_study(study).configurations}
    assert keys["ucrl-cmdp"] == "backend-highs-box-columns_unreached-uniform"

    # --backend gives every algorithm that takes one the same backend, UCRL-CMDP included, and is recorded
    for name in ("highs", "cvxpy"):
        override, heading = experiment_study("queue", backend=name)
        assert override.profile["backends"] == {key: name for key in curl + ["ucrl-cmdp"]}
        assert _options(override)["ucrl-cmdp"] == {"backend": name, "unreached": "uniform"}
        assert override.profile["overrides"] == {"backend": name}  # highs too: it moves UCRL-CMDP off its default
        assert f"Overriding the profile: backend {name} (--backend)." in override.profile["notes"]
        assert heading.startswith(f"backend {name} (reduced")
    # one that changes no algorithm's backend is not an override
    same, _ = experiment_study("queue", algorithms=["ucrl-cmdp"], backend="highs-box-columns")
    assert same.profile["overrides"] == {} and same.profile["backends"] == {"ucrl-cmdp": "highs-box-columns"}

    # an algorithm can keep its agent's default only where that is a named backend ("auto" would leave it unstated)
    experiment = Experiment(name="mini", settings=(SettingSpec("queue", "queue"),),
                            algorithms=(AlgorithmSpec("p", "P", "ps-curl", "linear", own_backend=True),),
                            backend="highs", default=Scale(500, 1), full=Scale(1000, 2))
    assert inspect.signature(AGENTS["ps-curl"]).parameters["backend"].default == "auto"
    with pytest.raises(CurloptError, match="'p' keeps its agent's default backend, but agent 'ps-curl' has no named"):
        experiment_study(experiment)
    assert experiment_study(experiment, backend="highs")[0].profile["backends"] == {"p": "highs"}

    # end to end: the runs report the backend they solved on, and study.json states each algorithm's
    out = tmp_path / "backends"
    args = ["reproduce", "queue", "--algorithms", "ps-curl-linear,ucrl-cmdp", "--steps", "600", "--seeds", "1",
            "--jobs", "1", "--out", str(out), "--no-progress", "--no-figures"]
    code, stdout, _ = _cli(args, capsys)
    assert code == 0, stdout
    assert "  ucrl-cmdp: UCRL-CMDP = ucrl-cmdp with backend=highs-box-columns, unreached=uniform" in stdout
    record = json.loads((out / "study.json").read_text())
    assert record["profile"]["backends"] == {"ps-curl-linear": "highs", "ucrl-cmdp": "highs-box-columns"}
    ran = {path.parts[-3]: load_trace(path).meta["backend"] for path in (out / "runs").rglob("*.json.gz")}
    assert ran == {"ps-curl-linear": "highs", "ucrl-cmdp": "highs-box-columns"}
    code, stdout, _ = _cli(args + ["--backend", "highs"], capsys)
    assert code == 0, stdout
    ran = {path.parts[-2]: load_trace(path).meta["backend"] for path in (out / "runs").rglob("*.json.gz")
           if path.parts[-3] == "ucrl-cmdp"}
    assert ran == {"backend-highs-box-columns_unreached-uniform": "highs-box-columns",
                   "backend-highs_unreached-uniform": "highs"}  # a run of each, side by side
    assert json.loads((out / "study.json").read_text())["profile"]["overrides"] == {"backend": "highs"}


def test_reproduce_is_the_study_runner_on_a_preset(tmp_path, capsys):
    from curlopt.experiments import run_study

    out = tmp_path / "preset"
    args = ["reproduce", "queue", "--algorithms", "ps-curl-linear,primal-dual", "--steps", "600", "--seeds", "2",
            "--jobs", "1", "--out", str(out), "--no-progress", "--no-figures"]
    code, stdout, _ = _cli(args, capsys)
    assert code == 0, stdout
    assert "profile paper:" in stdout
    assert "  ps-curl-linear: PS-CURL (linear) = ps-curl with backend=highs, K_ε=1, trigger=linear, unreached=uniform" \
        in stdout
    assert "  primal-dual: Primal-dual = primal-dual with scale=true, horizon = T" in stdout
    record = json.loads((out / "study.json").read_text())
    assert record["profile"]["name"] == "paper"
    assert record["profile"]["options"]["primal-dual"] == {"scale": True}
    assert [c["algorithm"]["key"] for c in record["configurations"]] == ["ps-curl-linear", "primal-dual"]
    assert record["study"]["steps"] == 600 and record["study"]["seeds"] == [0, 1]

    # The same study written as a file gives the same run folders and the same numbers.
    study = tmp_path / "same.toml"
    study.write_text(f"""
[study]
name = "queue"
steps = 600
seeds = 2
out = "{(tmp_path / 'file').as_posix()}"

[model]
name = "queue"

[[algorithms]]
agent = "ps-curl"
key = "ps-curl-linear"
label = "PS-CURL (linear)"
options = {{ backend = "highs", trigger = "linear", tightness_constant = 1, unreached = "uniform" }}

[[algorithms]]
agent = "primal-dual"
options = {{ scale = true }}
""", encoding="utf-8")
    from_file = run_study(study, jobs=1, progress=False, figures=False, echo=None)
    preset = sorted(p.relative_to(out) for p in (out / "runs").rglob("*.json.gz"))
    assert sorted(p.relative_to(from_file.out) for p in (from_file.out / "runs").rglob("*.json.gz")) == preset
    assert _without_time(_read_csv(from_file.summary_csv)[1]) == _without_time(_read_csv(out / "summary.csv")[1])

    # A duplicate in --algorithms is refused before anything is written.
    before = sorted(p for p in out.rglob("*"))
    code, _, err = _cli(args[:2] + ["--algorithms", "primal-dual,primal-dual"] + args[4:], capsys)
    assert code == 2 and err.strip() == "error: --algorithms names 'primal-dual' twice; give each algorithm once."
    assert sorted(p for p in out.rglob("*")) == before


def test_ray_missing_gives_a_clear_error(monkeypatch, tmp_path):
    from curlopt.experiments.executors import RayExecutor

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(CurloptError, match=r"pip install 'curlopt\[ray\]'"):
        RayExecutor()


# -- executors ----------------------------------------------------------------------------------------------------
def test_ray_and_local_give_identical_results(tiny, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        result = reproduce("queue", executor="ray", out=tmp_path / "ray", figures=False, **TINY)
    finally:
        ray.shutdown()
    assert result.ok and len(result.executed) == 4
    assert _without_time(_read_csv(result.summary_csv)[1]) == _without_time(_read_csv(tiny.summary_csv)[1])
    for task in tiny.tasks:
        mine, theirs = load_trace(result.out / task.relative_path), load_trace(tiny.out / task.relative_path)
        for key in ("t", "objective", "regret", "constraints", "violation"):
            np.testing.assert_array_equal(mine.checkpoints[key], theirs.checkpoints[key])
        assert [e.start for e in mine.epochs] == [e.start for e in theirs.epochs]


# -- command line -------------------------------------------------------------------------------------------------


def test_cli_end_to_end_and_resume(tmp_path, capsys):
    out = tmp_path / "cli"
    args = ["reproduce", "queue", "--steps", str(STEPS), "--seeds", "2", "--algorithms", ",".join(ALGORITHMS),
            "--jobs", "1", "--out", str(out), "--no-progress"]
    code, stdout, _ = _cli(args, capsys)
    assert code == 0, stdout
    assert "4 runs" in stdout and "T=2,000" in stdout and "0 runs already finished" in stdout
    assert "| UC-CURL (linear) | 2 |" in stdout
    assert len(list((out / "runs").rglob("*.json.gz"))) == 4
    header, rows = _read_csv(out / "summary.csv")
    assert header == study_columns(2) and len(rows) == 2
    _check_figures(sorted((out / "figures").glob("*.png")), ["queue"])

    code, stdout, _ = _cli(args + ["--no-figures"], capsys)
    assert code == 0 and "4 runs already finished" in stdout and "ran 0 runs" in stdout


def test_cli_errors_are_one_line(capsys, tmp_path):
    code, _, err = _cli(["reproduce", "maze", "--out", str(tmp_path)], capsys)
    assert code == 2 and err.strip().startswith("error: unknown experiment") and len(err.strip().splitlines()) == 1
