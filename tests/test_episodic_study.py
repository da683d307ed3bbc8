"""Episodic studies through the study runner: a tiny study planned, run, resumed and summarised, its summary
recomputed here from the run files' per-episode values (numpy and an LP of the episodic occupancy written here),
and the inputs an episodic study refuses."""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

from curlopt.errors import CurloptError
from curlopt.experiments.runner import run_study
from curlopt.experiments.study.reader import load_study
from curlopt.models.episodic import EpisodicCMDP
from curlopt.models.files import save_model
from curlopt.utilities.library import Linear, LinearBound

S, A, H, K = 3, 2, 3, 50
#: per-episode budget: between the safe policy's cost (0.15) and the greedy policy's (about 2.2)
BUDGET = 1.2
SEEDS = (0, 1)
AGENTS = ("opt-cmdp", "triple-q")
COLUMNS = ["setting", "algorithm", "label", "agent", "key", "episodes", "seeds", "horizon", "optimum"] + [
    f"{name}_{part}" for name in ("regret", "weak_regret", "strong_violation", "weak_violation")
    for part in ("mean", "std", "ci_low", "ci_high")] + [
    "violating_episode_share", "zero_violation_share", "realised_regret_mean", "realised_violation_mean", "slope",
    "wall_time_mean", "wall_time_std"]


def _arrays():
    rng = np.random.default_rng(7)
    kernel = rng.dirichlet(np.ones(S), size=(S, A))
    rewards = np.column_stack([0.1 * rng.random(S), 0.6 + 0.4 * rng.random(S)])  # action 1 pays more ...
    costs = np.column_stack([np.full(S, 0.05), 0.5 + 0.5 * rng.random(S)])      # ... and costs more
    initial = np.full(S, 1.0 / S)
    return kernel, rewards, costs, initial


def _model() -> EpisodicCMDP:
    kernel, rewards, costs, initial = _arrays()
    safe = np.zeros((S, A))
    safe[:, 0] = 1.0
    # a budget below what the reward-greedy policy spends, so the constraint binds and early episodes violate it
    return EpisodicCMDP(rewards, costs, Linear([1.0]), [LinearBound([1.0], BUDGET)], kernel=kernel, initial=initial,
                        horizon=H, safe_policy=safe, name="tiny")


def _lp_optimum() -> float:
    """max Σ_h Σ_{s,a} r(s,a) q_h(s,a) over episodic occupancies with Σ_h Σ c q_h <= budget (written here)."""
    kernel, rewards, costs, initial = _arrays()
    n = H * S * A

    def index(h, s, a):
        return (h * S + s) * A + a

    rows, rhs = [], []
    for s in range(S):
        row = np.zeros(n)
        for a in range(A):
            row[index(0, s, a)] = 1.0
        rows.append(row)
        rhs.append(initial[s])
    for h in range(1, H):
        for s2 in range(S):
            row = np.zeros(n)
            for a in range(A):
                row[index(h, s2, a)] = 1.0
            for s in range(S):
                for a in range(A):
                    row[index(h - 1, s, a)] -= kernel[s, a, s2]
            rows.append(row)
            rhs.append(0.0)
    c = -np.tile(rewards.ravel(), H)
    result = linprog(c, A_ub=[np.tile(costs.ravel(), H)], b_ub=[BUDGET], A_eq=np.array(rows), b_eq=rhs,
                     bounds=(0, None), method="highs")
    assert result.status == 0
    return -float(result.fun)


def _write_study(folder: Path, **extra: str) -> Path:
    save_model(_model(), folder / "tiny.json")
    algorithms = "".join(f'\n[[algorithms]]\nagent = "{agent}"\n' for agent in AGENTS)
    text = (f'[study]\nname = "tiny-episodic"\nepisodes = {K}\nseeds = {list(SEEDS)}\n'
            f'out = "{folder / "out"}"\n{extra.get("study", "")}\n'
            f'[model]\nfile = "tiny.json"\n{algorithms}')
    path = folder / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _read_run(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def _slope(cumulative: np.ndarray) -> float:
    ks = np.unique(np.geomspace(len(cumulative) // 10, len(cumulative), 20).astype(int))
    values = cumulative[ks - 1]
    return float(np.polyfit(np.log(ks), np.log(values), 1)[0]) if np.all(values > 0) else math.nan


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("episodic")
    path = _write_study(folder)
    result = run_study(path, jobs=1, progress=False, echo=None)
    return folder, path, result


def test_runs_and_files(study):
    folder, _path, result = study
    assert result.ok and len(result.executed) == len(AGENTS) * len(SEEDS) and not result.skipped
    runs = sorted((folder / "out" / "runs").rglob("K50-seed*.json.gz"))
    assert len(runs) == 4
    assert {p.parent.parent.name for p in runs} == set(AGENTS)
    described = json.loads((folder / "out" / "study.json").read_text())
    assert described["study"]["episodes"] == K and not {"steps", "checkpoints"} & set(described["study"])
    assert {p.name for p in (folder / "out" / "figures").iterdir()} == {"tiny-regret.png", "tiny-frontier.png"}
    assert (folder / "out" / "report.html").is_file() and (folder / "out" / "summary.md").is_file()


def test_summary_recomputed_from_run_files(study):
    folder, _path, _result = study
    out = folder / "out"
    with open(out / "summary.csv", newline="") as stream:
        reader = csv.DictReader(stream)
        assert reader.fieldnames == COLUMNS
        rows = {row["agent"]: row for row in reader}
    assert set(rows) == set(AGENTS)
    optimum = _lp_optimum()
    for agent in AGENTS:
        row = rows[agent]
        docs = [_read_run(p) for p in sorted((out / "runs" / "tiny" / agent).rglob("*.json.gz"))]
        assert len(docs) == 2
        cols = [{k: np.asarray(v, dtype=float) for k, v in d["columns"].items()} for d in docs]
        assert float(row["optimum"]) == pytest.approx(optimum, rel=1e-7)
        # per-episode regret is f* − f(λ_k) with f linear (weight 1 on the single reward)
        for c in cols:
            np.testing.assert_allclose(c["regret"], optimum - c["rewards"][:, 0], atol=1e-7)
        regret = np.array([c["regret"].sum() for c in cols])
        weak_regret = np.array([K * optimum - K * c["rewards"][:, 0].mean() for c in cols])
        strong = np.array([c["violation"].sum() for c in cols])
        weak = np.array([max(c["constraints"].sum(axis=0).max(), 0.0) for c in cols])
        for name, values in (("regret", regret), ("weak_regret", weak_regret), ("strong_violation", strong),
                             ("weak_violation", weak)):
            assert float(row[f"{name}_mean"]) == pytest.approx(values.mean(), rel=1e-9, abs=1e-9)
            assert float(row[f"{name}_std"]) == pytest.approx(values.std(ddof=1), rel=1e-9, abs=1e-9)
            low, high = float(row[f"{name}_ci_low"]), float(row[f"{name}_ci_high"])
            assert values.min() - 1e-9 <= low <= values.mean() + 1e-9 <= high + 2e-9 <= values.max() + 3e-9
        share = sum(np.count_nonzero(c["violation"] > 0) for c in cols) / (2 * K)
        assert float(row["violating_episode_share"]) == pytest.approx(share)
        assert float(row["zero_violation_share"]) == pytest.approx(np.mean(strong == 0))
        assert float(row["realised_regret_mean"]) == pytest.approx(np.mean([c["realised_regret"].sum() for c in cols]))
        assert float(row["realised_violation_mean"]) == pytest.approx(
            np.mean([c["realised_violation"].sum() for c in cols]))
        expected_slope = _slope(np.mean([np.cumsum(c["regret"]) for c in cols], axis=0))
        if math.isnan(expected_slope):
            assert row["slope"] in ("nan", "")
        else:
            assert float(row["slope"]) == pytest.approx(expected_slope, rel=1e-9)
        assert row["episodes"] == str(K) and row["seeds"] == "2" and row["horizon"] == str(H)
    # the budget binds: Triple-Q violates it in some episodes, so the violation columns are exercised
    assert float(rows["triple-q"]["strong_violation_mean"]) > 0 and float(rows["triple-q"]["violating_episode_share"]) > 0


def test_resume_skips_finished_and_reruns_damaged(study):
    folder, path, _result = study
    again = run_study(path, jobs=1, progress=False, echo=None)
    assert not again.executed and len(again.skipped) == 4
    runs = sorted((folder / "out" / "runs").rglob("K50-seed*.json.gz"))
    # a number changed and the file written back as valid gzip JSON: its checksum no longer matches
    document = _read_run(runs[0])
    document["columns"]["regret"][0] += 1.0
    runs[0].write_bytes(gzip.compress(json.dumps(document, separators=(",", ":")).encode()))
    runs[1].write_bytes(runs[1].read_bytes()[:100])  # truncated
    before = (folder / "out" / "summary.csv").read_text()
    third = run_study(path, jobs=1, progress=False, echo=None)
    assert len(third.executed) == 2 and len(third.skipped) == 2 and len(third.repaired) == 2
    assert any("checksum" in line for line in third.repaired)
    after = (folder / "out" / "summary.csv").read_text()
    drop = {"wall_time_mean", "wall_time_std"}  # runs are deterministic apart from their measured times
    for old, new in zip(csv.DictReader(before.splitlines()), csv.DictReader(after.splitlines()), strict=True):
        assert {k: v for k, v in old.items() if k not in drop} == {k: v for k, v in new.items() if k not in drop}


def test_dry_run_writes_nothing(tmp_path):
    path = _write_study(tmp_path)
    result = run_study(path, dry_run=True, echo=None)
    assert len(result.tasks) == 4 and not (tmp_path / "out").exists()


IH_MODEL = '[model]\nname = "queue"\n'
EP_MODEL = '[model]\nname = "random"\nparams = { n_states = 3, n_actions = 2 }\nhorizon = 3\n'


@pytest.mark.parametrize("head, models, agent, message", [
    ("steps = 100", EP_MODEL, "opt-cmdp", "[study] steps: model 'random' is episodic (H = 3); give episodes = K"),
    ("episodes = 10", IH_MODEL, "uc-curl", "[study] episodes: is for episodic models, and model 'queue' has no"
                                           " horizon"),
    ("steps = 10\nepisodes = 10", EP_MODEL, "opt-cmdp", "[study] episodes: is for episodic models and steps for"),
    ("seeds = 1", EP_MODEL, "opt-cmdp", "[study] steps: is required"),
    ("episodes = 10", EP_MODEL, "ucrl-cmdp", "algorithms[1].agent: 'ucrl-cmdp' is an infinite-horizon agent"),
    ("steps = 10", IH_MODEL, "opt-cmdp", "algorithms[1].agent: 'opt-cmdp' is an episodic agent"),
    ("episodes = 10\ncheckpoints = 5", EP_MODEL, "opt-cmdp", "[study] checkpoints: is for infinite-horizon runs"),
    ("episodes = 10", '[[models]]\nname = "queue"\n\n[[models]]\nname = "random"\nhorizon = 3\n', "opt-cmdp",
     "models[1]: model 'queue' is infinite-horizon and 'random' (models[2]) is episodic"),
    ("episodes = 10", '[model]\nname = "gridworld"\nparams = { horizon = 4 }\nhorizon = 4\n', "opt-cmdp",
     "[model] horizon: is also set in params"),
])
def test_refusals(tmp_path, head, models, agent, message):
    seeds = "" if "seeds" in head else "seeds = 1\n"
    path = tmp_path / "bad.toml"
    path.write_text(f'[study]\nname = "bad"\n{head}\n{seeds}\n{models}\n[[algorithms]]\nagent = "{agent}"\n')
    with pytest.raises(CurloptError) as caught:
        load_study(path)
    text = str(caught.value)
    assert message in text and "\n" not in text


@pytest.mark.parametrize("options, message", [
    ("options = { radius = 2 }", "algorithms[1].options.radius: agent 'opt-cmdp' takes no option 'radius'"),
    ("options = { seed = 2 }", "algorithms[1].options.seed: is set for each run from [study] seeds"),
    ("options = { episodes = 2 }", "algorithms[1].options.episodes: is set for each run from [study] episodes"),
])
def test_option_refusals(tmp_path, options, message):
    path = tmp_path / "bad.toml"
    path.write_text(f'[study]\nname = "bad"\nepisodes = 5\nseeds = 1\n{EP_MODEL}\n[[algorithms]]\nagent = "opt-cmdp"\n'
                    f"{options}\n")
    with pytest.raises(CurloptError, match=None) as caught:
        load_study(path)
    assert message in str(caught.value)


def test_bad_option_value_named_when_planned(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(f'[study]\nname = "bad"\nepisodes = 5\nseeds = 1\n{EP_MODEL}\n[[algorithms]]\nagent = "opt-cmdp"\n'
                    'options = { delta = -1.0 }\n')
    with pytest.raises(CurloptError) as caught:
        run_study(path, dry_run=True, echo=None)
    assert "algorithms[1].options.delta" in str(caught.value)


def test_agent_needing_a_safe_policy_is_left_out_with_a_note(tmp_path):
    # build_model("random", horizon=H) declares no safe policy: DOPE refuses it, OptCMDP runs
    path = tmp_path / "note.toml"
    path.write_text(f'[study]\nname = "note"\nepisodes = 5\nseeds = 1\n{EP_MODEL}\n[[algorithms]]\nagent = "dope"\n'
                    '\n[[algorithms]]\nagent = "opt-cmdp"\n')
    result = run_study(path, dry_run=True, echo=None)
    assert [c.algorithm.agent for c in result.configurations] == ["opt-cmdp"]
    assert any("DOPE on random: skipped" in note for note in result.notes)


def test_the_docs_tables_are_the_committed_summaries():
    """docs/episodic.md's tables are what studies/episodic_tables.py prints from the committed summaries."""
    import importlib.util

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("episodic_tables", root / "studies" / "episodic_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (root / "docs" / "episodic.md").read_text(encoding="utf-8")
    for study in ("design", "validation"):
        rows = list(csv.DictReader((root / "docs" / "studies" / f"episodic-{study}" / "summary.csv").open()))
        assert len(rows) == 48 and {row["seeds"] for row in rows} == {"3"}  # 12 algorithms x 4 models
        assert module.table(study).strip() in page
