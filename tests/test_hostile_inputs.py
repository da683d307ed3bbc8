"""Inputs a hostile test tried, each refused with one line (or run) instead of a traceback or a silent guess."""

from __future__ import annotations

import json

import pytest
from cli_helpers import assert_one_line_error, invoke, study_file

from curlopt import build_model
from curlopt.errors import CurloptError, ModelError
from curlopt.experiments import load_study, run_study
from curlopt.models.files import load_model, save_model


@pytest.fixture
def sparse_document(tmp_path):
    """The queue (buffer 3) stored sparse, as a model file's JSON document."""
    path = save_model(build_model("queue", buffer=3, storage="sparse"), tmp_path / "queue.json")
    return json.loads(path.read_text())


def _write(tmp_path, document, name="model.json"):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_a_huge_sparse_kernel_shape_is_refused(sparse_document, tmp_path, capsys):
    for shape in ([64, 2 ** 63], [2 ** 63, 4], [64, 2 ** 40]):
        sparse_document["kernel"]["shape"] = shape
        path = _write(tmp_path, sparse_document)
        with pytest.raises(ModelError, match="larger than any model"):
            load_model(path)
        code, _, err = invoke(["optimum", str(path)], capsys)
        assert_one_line_error(code, err, "kernel.shape")


def test_a_successor_listed_twice_is_refused_not_summed(sparse_document, tmp_path):
    kernel = sparse_document["kernel"]
    assert kernel["indices"][:2] == [0, 1]  # row 0 lists successors 0 and 1
    kernel["indices"][1] = 0  # now 0 twice: scipy would add 0.68 + 0.32 into one entry
    with pytest.raises(ModelError, match="kernel row 0 .* lists the successor 0 more than once"):
        load_model(_write(tmp_path, sparse_document))


@pytest.mark.parametrize("value", ["0.68", True, None, [0.68]])
def test_kernel_data_takes_numbers_only(sparse_document, tmp_path, value):
    sparse_document["kernel"]["data"][0] = value
    with pytest.raises(ModelError, match="kernel.data must be a list of numbers"):
        load_model(_write(tmp_path, sparse_document))


def test_a_rewards_shape_error_names_the_rewards(tmp_path):
    document = json.loads(save_model(build_model("queue"), tmp_path / "q.json").read_text())
    document["rewards"][0] = document["rewards"][0][:3]  # 3 states of 6
    with pytest.raises(ModelError) as error:
        load_model(_write(tmp_path, document))
    assert "rewards has shape (1, 3, 16), but the kernel has S=6 states and A=16 actions: expected (1, 6, 16)" in \
        str(error.value)
    assert "costs" not in str(error.value)


def test_safe_mode_runs_on_a_model_without_costs(tmp_path, capsys):
    document = json.loads(save_model(build_model("queue"), tmp_path / "q.json").read_text())
    document["costs"], document["constraints"] = [], []
    code, out, err = invoke(["run", str(_write(tmp_path, document)), "-a", "safe-curl", "--steps", "200"], capsys)
    assert code == 0 and "Traceback" not in err, err
    assert "C(T)         0" in out


@pytest.mark.parametrize("name", [".", "..", "...", "./x", "../up"])
def test_study_names_that_are_not_folder_names_are_refused(tmp_path, name):
    path = tmp_path / "study.toml"
    path.write_text(f'[study]\nname = "{name}"\nsteps = 10\nseeds = 1\n[model]\nname = "queue"\n'
                    '[[algorithms]]\nagent = "ps-curl"\n', encoding="utf-8")
    with pytest.raises(CurloptError, match="is not a valid name"):
        load_study(path)


def test_names_with_dots_inside_are_still_names(tmp_path):
    path = tmp_path / "study.toml"
    path.write_text('[study]\nname = "v1.2"\nsteps = 10\nseeds = 1\n[model]\nname = "queue"\n'
                    '[[algorithms]]\nagent = "ps-curl"\n', encoding="utf-8")
    assert load_study(path).name == "v1.2"


def test_sweep_help_names_max_runs_in_words(capsys):
    code, out, _ = invoke(["sweep", "--help"], capsys)
    assert code == 0 and "in )" not in out and "the study file's max_runs" in " ".join(out.split())


def test_a_dry_run_refuses_zero_jobs(tmp_path, capsys):
    path = study_file(tmp_path, tmp_path / "out")
    code, _, err = invoke(["sweep", str(path), "--dry-run", "--jobs", "0"], capsys)
    assert_one_line_error(code, err, "jobs must be an integer >= 1, got 0")
    with pytest.raises(CurloptError, match="jobs must be an integer >= 1"):
        run_study(path, jobs=0, dry_run=True, echo=None)
