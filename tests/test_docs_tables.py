"""docs/reproduction.md and docs/safe-mode.md quote the committed study outputs: their tables must be what those
files give."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = (ROOT / "docs" / "reproduction.md", ROOT / "docs" / "safe-mode.md")


def test_reproduction_tables_match_the_committed_summaries():
    completed = subprocess.run([sys.executable, str(ROOT / "studies" / "tables.py"), "--check"],
                               capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_quoted_study_is_committed_with_its_command(doc):
    text = doc.read_text(encoding="utf-8")
    names = {spec.split()[0] for spec in re.findall(r"<!-- table: ([^>]*?) -->", text)}
    assert names, f"{doc.name} quotes no study"
    publish = (ROOT / "studies" / "publish.sh").read_text(encoding="utf-8")
    for name in names:
        folder = ROOT / "docs" / "studies" / name
        for file in ("summary.csv", "summary.md", "checkpoints.csv", "study.json"):
            assert (folder / file).is_file(), f"{folder / file} is missing"
        study_file = ROOT / "studies" / f"{name}.toml"
        assert study_file.is_file() or name in publish, f"no command regenerates {name}"
