"""The user guide builds as a site with every internal link and anchor resolved (``mkdocs build --strict``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs")


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=300)


def test_the_guide_builds_with_every_link_resolved(tmp_path):
    built = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "guide" / "quickstart" / "index.html").is_file()


def test_a_broken_link_fails_the_build(tmp_path):
    # the check itself: the same configuration over a copy of docs/ with one link to a page that does not exist
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    page = tmp_path / "docs" / "guide" / "install.md"
    page.write_text(page.read_text() + "\nSee [the missing page](missing.md).\n")
    built = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0
    assert "missing.md" in built.stderr
