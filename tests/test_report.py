"""The HTML report of a finished study: `curlopt report` and the report `sweep` writes at the end."""

from __future__ import annotations

import base64
import hashlib
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_helpers import invoke as _cli

from curlopt.experiments import run_study
from curlopt.experiments.outputs.figures.report import PNG_SIGNATURE, png_text
from curlopt.experiments.outputs.report import MAX_LISTED_EPOCHS, load_study_output, render_report
from curlopt.experiments.runner import SUMMARY_HASH_KEY

pytest.importorskip("matplotlib")

STUDY = """
[study]
name = "tiny-report"
description = "two agents on the queue, for the report"
steps = 3000
seeds = 2
checkpoints = 20
jobs = 1
out = {out}

[model]
name = "queue"

[[algorithms]]
agent = "ps-curl"
options = {{ backend = "highs" }}

[[algorithms]]
agent = "primal-dual"
"""

VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "wbr", "source"}


class _Page(HTMLParser):
    """Checks that every element is closed in order; collects the images and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.images: list[dict[str, str]] = []
        self.text: list[str] = []
        self.errors: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "img":
            self.images.append(dict(attrs))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A small finished study (PS-CURL and primal-dual on the queue, T=3000, 2 seeds) with its figures."""
    root = tmp_path_factory.mktemp("report")
    out = root / "out"
    path = root / "study.toml"
    path.write_text(STUDY.format(out=json.dumps(out.as_posix())), encoding="utf-8")
    result = run_study(path, progress=False, echo=None)
    assert result.ok and len(result.executed) == 4
    assert result.report == out / "report.html"
    return out




def test_the_study_writes_its_report_and_figures_that_record_the_summary(finished):
    page = _parse((finished / "report.html").read_text(encoding="utf-8"))
    assert not page.errors and not page.stack
    digest = hashlib.sha256((finished / "summary.csv").read_bytes()).hexdigest()
    pngs = sorted((finished / "figures").glob("*.png"))
    assert pngs
    for png in pngs:
        assert png_text(png.read_bytes())[SUMMARY_HASH_KEY] == digest, png.name


def test_curlopt_report_renders_a_self_contained_page(finished, tmp_path, capsys):
    target = tmp_path / "page.html"
    code, out, err = _cli(["report", str(finished), "--out", str(target)], capsys)
    assert code == 0, err
    assert f"report       {target}" in out
    assert "PS-CURL" in out and "Primal-dual" in out  # the summary tables in the terminal
    text = target.read_text(encoding="utf-8")
    page = _parse(text)
    assert not page.errors, page.errors[:5]
    assert not page.stack, f"unclosed elements: {page.stack}"
    assert {"html", "head", "body", "table", "figure", "img"} <= page.tags
    # self-contained: every image is an embedded PNG, nothing is fetched
    assert page.images
    for image in page.images:
        assert image["src"].startswith("data:image/png;base64,"), image["src"][:60]
        data = base64.b64decode(image["src"].split(",", 1)[1], validate=True)
        assert data.startswith(PNG_SIGNATURE)
    assert "http://" not in text and "https://" not in text and "<script" not in text and "<link" not in text
    words = " ".join(page.text)
    figures = {path.name for path in (finished / "figures").glob("*.png")}
    assert figures <= {image["alt"] for image in page.images}  # every figure of figures/ is in
    assert any("exact constraint" in image["alt"] for image in page.images)  # and the report's own figure
    for label in ("PS-CURL", "Primal-dual"):
        assert label in words
    for heading in ("Configuration", "Versions", "Summary over seeds", "Fallback and failed epochs",
                    "Exact constraint values per epoch"):
        assert heading in words
    assert "two agents on the queue, for the report" in words  # the study's description
    assert "backend = highs" in words  # every configuration's options
    assert "numpy" in words and "highspy" in words and "python" in words  # versions
    assert "source: tight" in words and "status: optimal" in words and "max solve time" in words
    assert "2/2" in words  # runs found per configuration, C(T) = 0 seeds


def test_the_failed_epochs_are_listed_with_a_cap(finished, tmp_path):
    output = load_study_output(finished)
    group = output.groups[0]
    trace = group.traces[0]
    for epoch in trace.epochs[: MAX_LISTED_EPOCHS + 7]:
        epoch.source, epoch.status, epoch.message = "fallback", "infeasible", "tight program infeasible"
    trace.epochs[0].source, trace.epochs[0].status = "kept-previous", "error"
    page = _parse(render_report(output, figures=False))
    words = " ".join(page.text)
    assert "kept-previous" in words and "infeasible" in words and "tight program infeasible" in words
    assert "… and 7 more." in words
    assert not page.images and "Figures are off" in words  # without figures the tables still render
    assert "PS-CURL" in words and "Primal-dual" in words


def test_a_folder_without_a_study_fails_in_one_line(tmp_path, capsys):
    code, out, err = _cli(["report", str(tmp_path)], capsys)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1 and "study.json" in err
    (tmp_path / "study.json").write_text(json.dumps({"format": "curlopt-study", "study": {}, "configurations": []}))
    code, _, err = _cli(["report", str(tmp_path)], capsys)
    assert code == 2 and "runs/" in err and err.count("\n") == 1
    code, _, err = _cli(["report", str(tmp_path / "nowhere")], capsys)
    assert code == 2 and "no such folder" in err
