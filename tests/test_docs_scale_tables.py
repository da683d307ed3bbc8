"""docs/scale.md quotes the committed small-model studies of the agents' two choices at scale: each quoted table must
be what studies/scale_tables.py makes of the committed summaries."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _scale_tables():
    spec = importlib.util.spec_from_file_location("scale_tables", ROOT / "studies" / "scale_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_quoted_tables_are_what_the_committed_summaries_give():
    text = (ROOT / "docs" / "scale.md").read_text(encoding="utf-8")
    names = re.findall(r"<!-- scale table: (\S+) ", text)
    assert sorted(names) == ["scale-min-epoch-length", "scale-support"]
    tables = _scale_tables()
    for name in names:
        expected = [line for line in tables.wide_table(name).splitlines() if line.startswith("|")]
        start = text.index(f"<!-- scale table: {name} ")
        quoted = text[start:].splitlines()[1:1 + len(expected)]
        assert quoted == expected, f"docs/scale.md's table of {name} differs from the committed summaries"
        assert name in (ROOT / "studies" / "publish.sh").read_text(encoding="utf-8")
