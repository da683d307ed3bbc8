"""Every committed study, and every published run of a reproduce preset, still plans the runs its published outputs
were made from.

The reference is what the sweep wrote when the outputs under docs/studies/ were made: each ``study.json`` records
the study after defaults, every configuration (its run folder, setting, agent and options) and the plan's notes.
Reading the study file (or the preset file) again and planning it must give the same records, so a change to the
reader, the schema, the presets or the planning that would move a run, change an option or drop a configuration
fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curlopt.experiments.presets import experiment_study
from curlopt.experiments.study import Plan, load_study, plan_study

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "docs" / "studies"
STUDY_FILES = sorted(path for path in (ROOT / "studies").glob("*.toml") if (PUBLISHED / path.stem / "study.json").exists())


def _record(name: str) -> dict:
    return json.loads((PUBLISHED / name / "study.json").read_text(encoding="utf-8"))


def _in_repository(value):
    """A record with each model file's absolute path made relative to the repository (the records were written in
    another checkout; the file's digest, kept, says it is the same file)."""
    if isinstance(value, dict):
        return {key: (_relative(item) if key == "file" and isinstance(item, str) else _in_repository(item))
                for key, item in value.items()}
    if isinstance(value, list):
        return [_in_repository(item) for item in value]
    return value


def _relative(path: str) -> str:
    parts = Path(path).parts
    return str(Path(*parts[len(parts) - 1 - parts[::-1].index("studies"):])) if "studies" in parts else path


def _configurations(plan: Plan) -> list[dict]:
    """What study.json lists for each configuration, as JSON values."""
    return json.loads(json.dumps([{"path": str(c.relative_dir), **c.record()} for c in plan.configurations]))


def _described(study: dict) -> dict:
    """The study's description without where it was written from and to."""
    return {key: value for key, value in study.items() if key not in ("out", "source")}


def test_most_committed_studies_have_published_records():
    assert len(STUDY_FILES) >= 20  # the check below is not vacuous


@pytest.mark.parametrize("path", STUDY_FILES, ids=lambda path: path.stem)
def test_a_committed_study_plans_the_runs_it_was_published_with(path):
    committed = _in_repository(_record(path.stem))
    plan = plan_study(load_study(path))
    assert _in_repository(_configurations(plan)) == committed["configurations"]
    assert _in_repository(_described(json.loads(json.dumps(plan.study.describe())))) == _described(committed["study"])
    assert plan.notes == committed["notes"]


@pytest.mark.parametrize("name", ["reproduce-queue", "reproduce-queue-reduced", "reproduce-scheduler"])
def test_a_published_reproduce_run_is_planned_again_from_the_preset_files(name):
    committed = _record(name)
    recorded = committed["study"]
    study, _ = experiment_study(recorded["name"], profile=committed["profile"]["name"], steps=recorded["steps"],
                                seeds=len(recorded["seeds"]), algorithms=[a["key"] for a in recorded["algorithms"]])
    plan = plan_study(study)
    assert _configurations(plan) == committed["configurations"]
    assert _described(json.loads(json.dumps(study.describe()))) == _described(recorded)
    profile = json.loads(json.dumps(study.profile))
    # every part the record has (reproduce-scheduler was published before the backends and their notes were recorded)
    parts = set(committed["profile"]) - ({"notes"} if name == "reproduce-scheduler" else set())
    assert len(parts) >= 6 and {part: profile[part] for part in parts} == {part: committed["profile"][part]
                                                                           for part in parts}
