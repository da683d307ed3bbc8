"""A study output folder holds one study, and its report never mixes runs: a second study is refused there, and a
report rendered after a run file was removed draws its figures again from the runs it found and says so."""

from __future__ import annotations

import base64
import json
import re

from cli_helpers import invoke, study_file

from curlopt.experiments import run_study
from curlopt.experiments.outputs.figures.report import png_text
from curlopt.experiments.runner import SUMMARY_HASH_KEY


def test_a_second_study_in_the_same_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    first = study_file(tmp_path, out, seeds=1, steps=50)
    run_study(first, jobs=1, progress=False, figures=False, echo=None)
    before = {name: (out / name).read_bytes() for name in ("study.json", "summary.csv", "summary.md")}
    second = tmp_path / "second.toml"
    second.write_text(first.read_text().replace('name = "small"', 'name = "other"'), encoding="utf-8")
    code, _, err = invoke(["sweep", str(second), "--jobs", "1", "--no-figures"], capsys)
    assert code == 2 and err.splitlines()[-1] == (
        f"error: {out} holds study 'small' (its study.json); study 'other' would replace its study.json, summary,"
        " figures and report: give it another output folder (--out), or remove that folder first.")
    assert {name: (out / name).read_bytes() for name in before} == before
    # the same study again (resumed, or edited: another seed) is the same study
    code, _, err = invoke(["sweep", str(study_file(tmp_path, out, seeds=2, steps=50)), "--jobs", "1",
                           "--no-figures"], capsys)
    assert code == 0, err
    assert json.loads((out / "study.json").read_text())["study"]["seeds"] == [0, 1]


def test_a_report_after_a_run_file_was_removed_draws_from_the_runs_it_finds(tmp_path, capsys):
    out = tmp_path / "out"
    run_study(study_file(tmp_path, out, seeds=3, steps=100), jobs=1, progress=False, echo=None)
    figures = sorted((out / "figures").glob("*.png"))
    assert figures
    recorded = {png_text(path.read_bytes())[SUMMARY_HASH_KEY] for path in figures}
    runs = sorted((out / "runs").rglob("*.json.gz"))
    assert len(runs) == 3
    runs[-1].unlink()  # the third seed's run
    code, stdout, err = invoke(["report", str(out), "--no-summary"], capsys)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert any("summary.csv and summary.md in this folder were written from other runs" in w for w in warnings)
    assert any("figures/ was drawn from other runs than those found" in w for w in warnings)
    html = (out / "report.html").read_text()
    assert "the figures here were drawn again from the runs found" in html
    # the figures embedded are none of the 3-seed ones of figures/
    embedded = {base64.b64decode(data) for data in re.findall(r'src="data:image/png;base64,([^"]+)"', html)}
    assert len(embedded) >= len(figures) and not embedded & {path.read_bytes() for path in figures}
    assert len(recorded) == 1  # figures/ was drawn from one summary, the 3-seed one
    # and the report of an untouched folder says nothing of the kind
    run_study(study_file(tmp_path, out, seeds=3, steps=100), jobs=1, progress=False, echo=None)  # runs seed 2 again
    code, _, err = invoke(["report", str(out), "--no-summary"], capsys)
    assert code == 0 and "warning" not in err, err
