"""The figures committed under docs/studies/ can be traced to the summary beside them.

The study runner writes the SHA-256 of the summary.csv it just wrote into every figure's PNG text chunk
``curlopt-summary-sha256``; studies/publish.sh copies the summary and the figures together, so each
committed figure must carry the hash of the summary.csv in its folder. A figure drawn from an earlier
summary (a stale copy) fails here.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from curlopt.experiments.outputs import SUMMARY_HASH_KEY
from curlopt.experiments.outputs.figures.report import png_text

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = sorted((ROOT / "docs" / "studies").glob("*/*.png"))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("png", COMMITTED, ids=[str(p.relative_to(ROOT)) for p in COMMITTED])
def test_each_committed_figure_was_drawn_from_the_summary_beside_it(png):
    summary = png.parent / "summary.csv"
    assert summary.is_file(), f"{png.relative_to(ROOT)} has no summary.csv beside it"
    recorded = png_text(png.read_bytes()).get(SUMMARY_HASH_KEY)
    assert recorded is not None, f"{png.relative_to(ROOT)} records no summary (re-run studies/publish.sh)"
    assert recorded == _sha256(summary), (f"{png.relative_to(ROOT)} was drawn from another summary.csv than the one"
                                          " beside it (re-run studies/publish.sh)")


IMAGE_LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+)[^)]*\)")


def shown_images() -> list[tuple[Path, Path]]:
    """Every (page, image path) that README.md and the pages under docs/ show with a Markdown image link."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [(page, (page.parent / link).resolve()) for page in pages
            for link in IMAGE_LINK.findall(page.read_text(encoding="utf-8"))]


def test_every_figure_the_docs_show_is_a_committed_study_figure():
    """A shown image exists and lies in docs/studies/<study>/ beside its summary, so the hash check above covers it;
    and no figure lies anywhere else under docs/ (a copy outside a study folder would escape that check)."""
    shown = shown_images()
    assert shown, "the docs show no figure: the link pattern no longer matches them"
    studies = (ROOT / "docs" / "studies").resolve()
    for page, image in shown:
        where = f"{page.relative_to(ROOT)} shows {image}"
        assert image.is_file(), f"{where}, which does not exist"
        assert image.parent.parent == studies, f"{where}, which is not in a docs/studies/<study>/ folder"
        assert image in {png.resolve() for png in COMMITTED}, where
    strays = [png.relative_to(ROOT) for png in (ROOT / "docs").rglob("*.png") if png.resolve().parent.parent != studies]
    assert not strays, f"figures outside docs/studies/<study>/: {strays}"


def test_a_study_records_its_summary_in_every_figure(tmp_path):
    """What makes the check above possible (and gives this file a real assertion while docs/studies has no figure)."""
    pytest.importorskip("matplotlib")
    from curlopt.experiments import run_study

    out = tmp_path / "out"
    study = tmp_path / "study.toml"
    study.write_text(f"""
[study]
name = "tiny-figures"
steps = 300
seeds = 2
checkpoints = 8
jobs = 1
out = {json.dumps(out.as_posix())}

[model]
name = "queue"

[[algorithms]]
agent = "ps-curl"
options = {{ backend = "highs" }}
""", encoding="utf-8")
    result = run_study(study, progress=False, echo=None)
    assert result.figures
    digest = _sha256(out / "summary.csv")
    for png in result.figures:
        assert png_text(png.read_bytes())[SUMMARY_HASH_KEY] == digest, png.name
    # A copy beside another summary is caught, as the committed figures would be.
    (out / "summary.csv").write_text("setting\nchanged\n", encoding="utf-8")
    assert png_text(result.figures[0].read_bytes())[SUMMARY_HASH_KEY] != _sha256(out / "summary.csv")
