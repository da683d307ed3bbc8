"""Study files and the study runner: format, validation, grid expansion, run layout, resume, CLI."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest
from cli_helpers import invoke as _cli
from hypothesis import given
from hypothesis import strategies as st

from curlopt.errors import CurloptError
from curlopt.experiments import load_study, run_study
from curlopt.experiments.simulation import load_trace
from curlopt.experiments.study.planning import MAX_KEY_LENGTH, configuration_key, plan_study
from curlopt.experiments.study.spec import canonical

STEPS = 400
QUIET = dict(jobs=1, progress=False, figures=False, echo=None)


def _study(tmp_path: Path, body: str, *, steps: int | None = STEPS, seeds: str = "2", out: Path | None = None,
           file: str = "study.toml", **fields: str | None) -> Path:
    """Write a study file: ``[study]`` with ``fields`` (raw TOML values; None leaves a key out), then ``body``."""
    out = out if out is not None else tmp_path / "out"
    head = {"name": '"tiny"', "steps": None if steps is None else str(steps), "seeds": seeds, "out": json.dumps(out.as_posix()), **fields}
    path = tmp_path / file
    path.write_text("[study]\n" + "".join(f"{k} = {v}\n" for k, v in head.items() if v is not None) + body,
                    encoding="utf-8")
    return path


QUEUE = """
[model]
name = "queue"

[options]
backend = "highs"
"""


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as stream:
        return [{k: v for k, v in row.items() if "time" not in k} for row in csv.DictReader(stream)]


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``root`` with its mtime and content digest."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file()}




# -- configuration keys -----------------------------------------------------------------------------------------------
def test_configuration_keys_are_readable_and_never_shared():
    assert configuration_key({}) == "default"
    assert configuration_key({"trigger": "linear", "tightness_constant": 3, "backend": "highs",
                              "radius": "experiment"}) == \
        "backend-highs_radius-experiment_tightness_constant-3_trigger-linear"
    assert configuration_key({"tightness_constant": 3}) == configuration_key({"tightness_constant": 3.0})  # equal values
    tricky = [
        {"a": "x_b-y"}, {"a": "x", "b": "y"}, {"a": "1"}, {"a": 1}, {"a": 1.5}, {"a": "true"}, {"a": True},
        {"a": None}, {"a": "none"}, {"a": "inf"}, {"a": float("inf")}, {"a": "Linear"}, {"a": "linear"},
        {"a": [1, 2]}, {"a": "1,2"}, {"a": ""}, {"a": "default"}, {"a": -0.5}, {"a": "e-5"}, {"a": 1e-5},
        {"a_b": "c"}, {"a": "b_c"}, {"a": {"x": 1}}, {"a": "x y"}, {"a": "x.y"},
    ]
    keys = [configuration_key(options) for options in tricky]
    assert len(set(keys)) == len(keys), keys
    for key in keys:
        assert all(c.isalnum() or c in "._-+~" for c in key), key
    long = {f"option_number_{i}": "a-rather-long-value" for i in range(8)}
    key = configuration_key(long)
    assert len(key) <= MAX_KEY_LENGTH and "~" in key
    assert key != configuration_key({**long, "option_number_0": "another-rather-long-value"})
    assert key == configuration_key(dict(reversed(list(long.items()))))  # order does not matter


_values = st.one_of(st.integers(-3, 3), st.floats(allow_nan=False, width=16), st.booleans(), st.none(),
                    st.sampled_from(["linear", "doubling", "x_y", "x-y", "1", "true", "A", "", "a.b"]),
                    st.lists(st.integers(0, 2), max_size=2))
_options = st.dictionaries(st.sampled_from(["a", "b", "a_b", "backend", "tightness_constant"]), _values, max_size=3)


@given(_options, _options)
def test_configuration_keys_differ_exactly_when_the_options_differ(first, second):
    same = json.dumps(canonical(first), sort_keys=True) == json.dumps(canonical(second), sort_keys=True)
    assert (configuration_key(first) == configuration_key(second)) == same


# -- planning: the grid -------------------------------------------------------------------------------------------
def test_grid_is_the_cartesian_product_of_the_axes_each_agent_takes(tmp_path):
    path = _study(tmp_path, """
[[models]]
name = "queue"

[[models]]
name = "queue"
setting = "queue-small"
params = { buffer = 3 }

[options]
backend = "highs"

[[algorithms]]
agent = "uc-curl"
grid = { radius = ["analysis", "experiment"] }

[[algorithms]]
agent = "ps-curl"
options = { trigger = "linear" }

[[algorithms]]
agent = "ps-curl"
key = "ps-curl-fixed"
grid = { tightness_constant = [5] }

[[algorithms]]
agent = "primal-dual"

[grid]
tightness_constant = [0.3, 1, 3]
trigger = ["doubling", "linear"]
""")
    messages: list[str] = []
    plan = plan_study(load_study(path), messages.append)
    per_setting = {"uc-curl": 3 * 2 * 2,  # K_ε × trigger × its own radius axis
                   "ps-curl": 3,  # its options fix the trigger: only K_ε is expanded
                   "ps-curl-fixed": 1 * 2,  # its own K_ε axis replaces the study's; × trigger
                   "primal-dual": 1}  # takes neither axis
    for setting in ("queue", "queue-small"):
        counts = {key: sum(1 for c in plan.configurations if c.setting.name == setting and c.algorithm.key == key)
                  for key in per_setting}
        assert counts == per_setting
    assert len(plan.configurations) == 2 * 18 and len(plan.tasks) == 2 * 18 * 2
    # study order: settings, then algorithms in file order, then grid order (the last axis fastest)
    first = [c for c in plan.configurations if c.setting.name == "queue"]
    assert [c.algorithm.key for c in first] == ["uc-curl"] * 12 + ["ps-curl"] * 3 + ["ps-curl-fixed"] * 2 + ["primal-dual"]
    assert [dict(c.varied) for c in first[:3]] == [
        {"tightness_constant": 0.3, "trigger": "doubling", "radius": "analysis"},
        {"tightness_constant": 0.3, "trigger": "doubling", "radius": "experiment"},
        {"tightness_constant": 0.3, "trigger": "linear", "radius": "analysis"},
    ]
    assert first[0].label == "UC-CURL (K_ε=0.3, trigger=doubling, radius=analysis)"
    assert dict(first[0].options) == {"backend": "highs", "tightness_constant": 0.3, "trigger": "doubling",
                                      "radius": "analysis"}
    assert dict(first[-1].options) == {"horizon": STEPS} and first[-1].key == "default"  # horizon = T, automatically
    assert len({c.relative_dir for c in plan.configurations}) == len(plan.configurations)
    notes = " ".join(plan.notes)
    assert "[grid] tightness_constant is not expanded for primal-dual" in notes
    assert "[grid] trigger is not expanded for ps-curl:" in notes  # fixed by its options
    assert "[options] backend does not apply to primal-dual" in notes


def test_a_large_grid_says_its_size_first(tmp_path):
    path = _study(tmp_path, QUEUE + '[[algorithms]]\nagent = "ps-curl"\n[grid]\ntightness_constant = [1, 2, 3]\n',
                  seeds="400")
    messages: list[str] = []
    plan = plan_study(load_study(path), messages.append)
    assert len(plan.tasks) == 1200
    assert messages and "1,200 runs" in messages[0]


# -- run layout -----------------------------------------------------------------------------------------------------
GRID = QUEUE + """
[[algorithms]]
agent = "ps-curl"
label = "PS-CURL"
options = {{ trigger = "linear" }}

[grid]
tightness_constant = {values}
"""


def test_configurations_write_to_their_own_folders_and_a_new_value_keeps_the_old_runs(tmp_path):
    out = tmp_path / "out"
    first = run_study(_study(tmp_path, GRID.format(values="[1, 3]")), **{**QUIET, "figures": True})
    assert first.ok and len(first.executed) == 4 and len(first.configurations) == 2
    assert (out / "figures" / "queue-frontier.png") in first.figures  # one point per configuration
    one, three = first.configurations
    assert one.relative_dir == Path("runs/queue/ps-curl/backend-highs_tightness_constant-1_trigger-linear")
    assert three.relative_dir == Path("runs/queue/ps-curl/backend-highs_tightness_constant-3_trigger-linear")
    configs = [json.loads((out / c.relative_dir / "config.json").read_text()) for c in (one, three)]
    assert configs[0] != configs[1]
    assert [c["options"]["tightness_constant"] for c in configs] == [1, 3]
    assert configs[0]["options"] == {"backend": "highs", "tightness_constant": 1, "trigger": "linear"}
    assert configs[0]["setting"] == {"setting": "queue", "model": "queue", "params": {}}
    assert configs[0]["algorithm"] == {"key": "ps-curl", "agent": "ps-curl", "label": "PS-CURL"}
    for task in first.tasks:
        trace = load_trace(out / task.relative_path)
        assert trace.meta["configuration"] == task.configuration.key
        assert trace.meta["varied"] == dict(task.configuration.varied)
        assert trace.meta["sweep"]["options"]["tightness_constant"] == dict(task.configuration.varied)["tightness_constant"]
    study = json.loads((out / "study.json").read_text())
    assert study["study"]["name"] == "tiny" and study["study"]["seeds"] == [0, 1] and study["profile"] is None
    assert study["study"]["checkpoints"] == 100 and study["curlopt_version"]
    assert [c["key"] for c in study["configurations"]] == [one.key, three.key]
    assert [g.label for g in first.groups] == ["PS-CURL (K_ε=1)", "PS-CURL (K_ε=3)"]
    assert [g.seeds for g in first.groups] == [[0, 1], [0, 1]]
    assert not list(out.rglob("*.tmp"))
    before = _snapshot(out / "runs")

    # Changing K_ε in the same output folder: new folders; the earlier runs stay as they were.
    second = run_study(_study(tmp_path, GRID.format(values="[10]")), **QUIET)
    assert len(second.executed) == 2 and not second.skipped
    after = _snapshot(out / "runs")
    assert {k: v for k, v in after.items() if k in before} == before
    assert len(after) == len(before) + 3  # two runs and a config.json
    assert [g.label for g in second.groups] == ["PS-CURL (K_ε=10)"]

    # Back to the first grid: everything is found finished.
    again = run_study(_study(tmp_path, GRID.format(values="[1, 3]")), **QUIET)
    assert again.executed == [] and len(again.skipped) == 4
    assert _read_csv(again.summary_csv) == _read_csv(first.summary_csv)


def test_a_killed_study_resumes_to_the_same_summary(tmp_path, monkeypatch):
    from curlopt.experiments import executors

    body = GRID.format(values="[1, 3]")
    whole = run_study(_study(tmp_path, body, out=tmp_path / "whole", file="whole.toml"), **QUIET)

    # Kill the study after two runs (as Ctrl-C would): the finished ones are on disk, the rest not.
    original = executors.LocalExecutor.run

    def killed(self, tasks, per_run_progress=False, out=None):
        for count, outcome in enumerate(original(self, tasks, per_run_progress, out)):
            if count == 2:  # the third run finished and its file is written (where it ran) before it is handed back
                raise KeyboardInterrupt
            yield outcome

    monkeypatch.setattr(executors.LocalExecutor, "run", killed)
    path = _study(tmp_path, body, out=tmp_path / "killed", file="killed.toml")
    with pytest.raises(KeyboardInterrupt):
        run_study(path, **QUIET)
    assert len(list((tmp_path / "killed" / "runs").rglob("*.json.gz"))) == 3
    assert not (tmp_path / "killed" / "summary.csv").exists()
    monkeypatch.setattr(executors.LocalExecutor, "run", original)

    # A truncated run file (e.g. a disk-full write) is reported and run again.
    finished = sorted((tmp_path / "killed" / "runs").rglob("*.json.gz"))
    raw = finished[0].read_bytes()
    finished[0].write_bytes(raw[: len(raw) // 3])
    resumed = run_study(path, **QUIET)
    assert len(resumed.skipped) == 2 and len(resumed.executed) == 2 and len(resumed.repaired) == 1
    assert _read_csv(resumed.summary_csv) == _read_csv(whole.summary_csv)


def test_model_files_and_dry_runs(tmp_path, capsys):
    from curlopt.models import build_model
    from curlopt.models.files import save_model

    (tmp_path / "models").mkdir()
    save_model(build_model("queue", buffer=3), tmp_path / "models" / "small-queue.json")
    path = _study(tmp_path, """
[model]
file = "models/small-queue.json"

[[algorithms]]
agent = "ps-curl"
options = { backend = "highs" }
""")
    code, stdout, _ = _cli(["sweep", str(path), "--dry-run"], capsys)
    assert code == 0, stdout
    assert "runs/small-queue/ps-curl/backend-highs/" in stdout and "dry run" in stdout
    assert not (tmp_path / "out").exists()

    result = run_study(path, **QUIET)
    assert result.ok and result.tasks[0].relative_path.parts[:3] == ("runs", "small-queue", "ps-curl")
    identity = load_trace(result.out / result.tasks[0].relative_path).meta["sweep"]
    assert identity["file"] == str((tmp_path / "models" / "small-queue.json").resolve())
    assert len(identity["file_sha256"]) == 64


# -- refused studies ------------------------------------------------------------------------------------------------
ALGORITHM = '\n[[algorithms]]\nagent = "ps-curl"\n'
BAD = {
    "unknown key": (QUEUE + ALGORITHM + 'colour = "red"\n', "algorithms[1].colour"),
    "unknown study key": (QUEUE.replace("[model]", "speed = 3\n\n[model]") + ALGORITHM, "[study] speed"),
    "unknown agent": (QUEUE + '\n[[algorithms]]\nagent = "sarsa"\n', "algorithms[1].agent"),
    "unknown option": (QUEUE + ALGORITHM + "options = { radius = 3 }\n", "algorithms[1].options.radius"),
    "option no algorithm takes": (QUEUE.replace('"highs"', '"highs"\ntheta = 0.1') + ALGORITHM, "[options] theta"),
    "bad option value": (QUEUE + ALGORITHM + 'options = { trigger = "sometimes" }\n', "algorithms[1].options.trigger"),
    "bad grid value": (QUEUE + ALGORITHM + "[grid]\ntightness_constant = [1, -2]\n", "[grid] tightness_constant"),
    "bad backend": (QUEUE.replace('"highs"', '"gurobi"') + ALGORITHM, "[options] backend"),
    "duplicate algorithm key": (QUEUE + ALGORITHM + ALGORITHM, "algorithms[2].key"),
    "empty axis": (QUEUE + ALGORITHM + "[grid]\ntightness_constant = []\n", "[grid] tightness_constant"),
    "axis not a list": (QUEUE + ALGORITHM + "[grid]\ntightness_constant = 3\n", "[grid] tightness_constant"),
    "axis no algorithm takes": (QUEUE + ALGORITHM + "[grid]\nepoch_exponent = [0.5]\n", "[grid] epoch_exponent"),
    "repeated axis value": (QUEUE + ALGORITHM + "[grid]\ntightness_constant = [1, 1.0]\n", "[grid] tightness_constant"),
    "reserved option": (QUEUE + ALGORITHM + "options = { seed = 3 }\n", "algorithms[1].options.seed"),
    "unknown model": ('\n[model]\nname = "maze"\n' + ALGORITHM, "[model] name"),
    "bad model parameter": ('\n[model]\nname = "queue"\nparams = { buffer = -1 }\n' + ALGORITHM, "[model] params"),
    "missing model file": ('\n[model]\nfile = "nowhere.json"\n' + ALGORITHM, "[model] file"),
    "missing algorithms": (QUEUE, "[[algorithms]]"),
}
BAD_HEAD = {
    "steps of the wrong type": ({"steps": '"many"'}, "[study] steps"),
    "repeated seeds": ({"seeds": "[1, 1]"}, "[study] seeds"),
    "negative seed": ({"seeds": "[-1]"}, "[study] seeds"),
    "missing steps": ({"steps": None}, "[study] steps"),
    "bad name": ({"name": '"My Study"'}, "[study] name"),
    "address without ray": ({"address": '"ray://x:10001"'}, "[study] address"),
}


def _bad_file(case: str, tmp_path: Path, out: Path) -> tuple[Path, str]:
    name = case.replace(" ", "-") + ".toml"
    if case in BAD:
        body, key = BAD[case]
        return _study(tmp_path, body, out=out, file=name), key
    if case in BAD_HEAD:
        fields, key = BAD_HEAD[case]
        return _study(tmp_path, QUEUE + ALGORITHM, out=out, file=name, **fields), key
    path = tmp_path / name
    path.write_text("[study\nname = 1\n", encoding="utf-8")
    return path, "not a valid TOML file"


@pytest.fixture(scope="module")
def finished_out(tmp_path_factory):
    """An output folder holding a finished study, which no refused study may touch."""
    root = tmp_path_factory.mktemp("refused")
    run_study(_study(root, QUEUE + ALGORITHM, steps=200, seeds="1"), **QUIET)
    return root / "out"


@pytest.mark.parametrize("case", list(BAD) + list(BAD_HEAD) + ["invalid TOML"])
def test_a_bad_study_is_refused_with_one_line_naming_the_file_and_key(case, tmp_path, capsys, finished_out):
    path, key = _bad_file(case, tmp_path, finished_out)
    before = _snapshot(finished_out)

    with pytest.raises(CurloptError) as raised:
        run_study(path, **QUIET)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and key in message and "\n" not in message

    code, stdout, stderr = _cli(["sweep", str(path), "--no-progress"], capsys)
    assert code == 2
    assert stderr.strip() == f"error: {message}"
    assert "Traceback" not in stderr + stdout
    assert _snapshot(finished_out) == before


def test_the_api_reads_the_same_study_as_the_file(tmp_path):
    from curlopt.experiments.study import study_from_dict

    path = _study(tmp_path, GRID.format(values="[1, 3]"))
    import tomllib

    with open(path, "rb") as stream:
        data = tomllib.load(stream)
    assert study_from_dict(data, source=str(path), base=tmp_path) == load_study(path)
    study = load_study(path)
    assert study.steps == STEPS and study.seeds == (0, 1) and study.checkpoints == 100 and study.executor == "local"
    assert study.grid == (("tightness_constant", (1, 3)),)


def test_cli_runs_a_study_and_resumes(tmp_path, capsys):
    path = _study(tmp_path, GRID.format(values="[1]"))
    args = ["sweep", str(path), "--jobs", "1", "--no-progress", "--no-figures"]
    code, stdout, _ = _cli(args, capsys)
    assert code == 0, stdout
    assert "= 2 runs" in stdout and "ps-curl: PS-CURL = ps-curl with backend=highs, trigger=linear; grid K_ε in [1]" in stdout
    assert (tmp_path / "out" / "summary.csv").exists() and (tmp_path / "out" / "study.json").exists()
    code, stdout, _ = _cli(args, capsys)
    assert code == 0 and "2 runs already finished" in stdout and "ran 0 runs" in stdout
    other = tmp_path / "elsewhere"
    code, stdout, _ = _cli(args + ["--out", str(other)], capsys)
    assert code == 0 and len(list(other.rglob("*.json.gz"))) == 2


def test_the_example_study_plans_without_running(tmp_path, capsys):
    example = Path(__file__).resolve().parents[1] / "studies" / "example.toml"
    study = load_study(example)
    plan = plan_study(study)
    # UC-CURL: 3 K_ε × 2 radii; PS-CURL: 3 K_ε; primal-dual takes neither axis: 1. Three seeds each.
    assert len(plan.configurations) == 6 + 3 + 1 and len(plan.tasks) == 30
    code, stdout, _ = _cli(["sweep", str(example), "--dry-run", "--out", str(tmp_path / "x")], capsys)
    assert code == 0 and "= 30 runs" in stdout and "runs/queue/primal-dual/scale-true/" in stdout
    assert not (tmp_path / "x").exists()


def test_none_in_model_parameters(tmp_path):
    from curlopt.experiments.presets import EXPERIMENTS

    path = _study(tmp_path, """
[model]
name = "scheduler"
setting = "scheduler-unconstrained"
params = { sla = "none" }

[[algorithms]]
agent = "ps-curl"
options = { backend = "cvxpy" }
""")
    study = load_study(path)
    assert study.settings[0].params == (("sla", None),)
    assert study.settings[0].describe() == EXPERIMENTS["scheduler"].settings[1].describe()  # the preset's setting
    assert study.settings[0].build().n_constraints == 0
