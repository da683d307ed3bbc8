"""The study report leads with the answer and reads on a wide screen and on a phone.

A study output folder is written by hand (``study.json``, an empty ``runs/``, small PNGs under ``figures/``) and
the report is rendered from hand-made runs with known final values; the page is parsed into a tree and checked
for what a reader sees first (the frontier and the compact table), the order of the sections, the compact
table's columns and cells (computed here from the runs' numbers), a scrolling box around every table, and the
viewport meta tag. A screenshot check of the layout is in docs/guide/reproduce.md.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from curlopt.experiments.outputs.report import write_report
from curlopt.experiments.outputs.runs import ConfigurationRuns
from curlopt.experiments.simulation.trace import EpochRecord, Trace

T = 2000
OPTIMUM = 1.0
# the runs: (label, algorithm, final R(T) per seed, final g_1(ζ^(T)) per seed)
FOUR = ("UC-CURL", "uc-curl", [0.30, 0.35, 0.40, 0.45], [-0.1, 0.2, -0.1, -0.1])
TWO = ("PS-CURL", "ps-curl", [0.5, 0.6], [-0.2, -0.3])
# every run's epochs: [1, 500] with exact g_1 = -0.1, then [501, 2000] with exact g_1 = 0.05 (violating) for UC-CURL
EPOCHS = {"uc-curl": [(1, 500, -0.1), (501, 1500, 0.05)], "ps-curl": [(1, 500, -0.1), (501, 1500, -0.2)]}


@dataclass(frozen=True)
class Setting:
    name: str = "toy"
    label: str = "a toy model"
    cost_names: tuple[str, ...] = ("cost",)

    def constraint_names(self) -> list[str]:
        return ["ζ_1 - 0.5 ≤ 0"]


def run(seed: int, regret: float, g: float, algorithm: str) -> Trace:
    t = np.unique(np.geomspace(1, T, 12).astype(np.int64))
    shape = np.log(T / t) / np.log(T)
    regret_curve = regret + shape
    constraints = (g + 0.1 * shape)[:, None]
    checkpoints = {"t": t, "rewards": (OPTIMUM - regret_curve)[:, None], "costs": constraints + 0.5,
                   "objective": OPTIMUM - regret_curve, "constraints": constraints, "regret": regret_curve,
                   "violation": np.maximum(constraints[:, 0], 0.0)}
    epochs = [EpochRecord(i, start, length, 0.1, "tight", "optimal", 0.002, exact_constraints=[value])
              for i, (start, length, value) in enumerate(EPOCHS[algorithm])]
    return Trace({"seed": seed, "env": "toy", "agent": algorithm, "steps": T, "curlopt_version": "test"},
                 {"objective": OPTIMUM}, checkpoints, epochs, 1.0)


def configurations() -> list[ConfigurationRuns]:
    return [ConfigurationRuns(Setting(), algorithm, algorithm, label, algorithm, {}, {},
                              [run(seed, r, g, algorithm) for seed, (r, g) in enumerate(zip(regrets, gs, strict=True))])
            for label, algorithm, regrets, gs in (FOUR, TWO)]


def png() -> bytes:
    """A 1×1 white PNG, written by hand (the report embeds the files of figures/ as they are)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\xff\xff"))
            + chunk(b"IEND", b""))


def study_folder(root: Path, groups: list[ConfigurationRuns]) -> Path:
    (root / "runs").mkdir(parents=True)
    (root / "figures").mkdir()
    for kind in ("frontier", "overview", "objective", "regret", "constraints", "epochs"):
        (root / "figures" / f"toy-{kind}.png").write_bytes(png())
    study = {"name": "layout", "description": "two agents on a toy model", "steps": T, "seeds": [0, 1, 2, 3],
             "checkpoints": 12, "models": [{"setting": "toy", "name": "toy", "params": {}, "label": "a toy model"}]}
    configs = [{"label": g.label, "key": g.key, "setting": {"setting": "toy"}, "options": {},
                "algorithm": {"key": g.algorithm, "agent": g.agent}, "path": f"runs/toy/{g.algorithm}/{g.key}"}
               for g in groups]
    record = {"format": "curlopt-study", "curlopt_version": "test", "study": study, "configurations": configs}
    (root / "study.json").write_text(json.dumps(record), encoding="utf-8")
    return root


# -- the page as a tree ----------------------------------------------------------------------------------------------
VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "wbr", "source"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def content(self) -> str:
        return " ".join(" ".join(node.text) for node in self.walk()).strip()


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.current = Node("#document", {})

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node is self.current, f"</{tag}> closes <{self.current.tag}>"
        self.current = node.parent

    def handle_data(self, data):
        self.current.text.append(data)


def parse(text: str) -> Node:
    tree = _Tree()
    tree.feed(text)
    tree.close()
    assert tree.current is tree.root, "unclosed elements"
    return tree.root


def cells(row: Node) -> list[str]:
    return [" ".join(cell.content().split()) for cell in row.children if cell.tag in ("td", "th")]


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[str, Node]:
    groups = configurations()
    folder = study_folder(tmp_path_factory.mktemp("report") / "out", groups)
    path = write_report(folder, groups=groups)
    text = path.read_text(encoding="utf-8")
    return text, parse(text)


# -- tests -----------------------------------------------------------------------------------------------------------
def test_the_report_leads_with_the_frontier_and_the_compact_table(page):
    _, root = page
    order = [node for node in root.walk() if node.tag in ("h2", "img", "table")]
    sections = [node.attrs.get("id") for node in order if node.tag == "h2"]
    # the answer, then the curves, then the details
    assert sections == ["results", "curves", "summary", "configuration", "versions", "epochs", "failures", "exact"]
    assert [node.tag for node in order[:3]] == ["h2", "img", "table"]
    assert order[1].attrs["alt"] == "toy-frontier.png"
    curves = order.index(next(n for n in order if n.attrs.get("id") == "curves"))
    shown = [n.attrs["alt"] for n in order[curves:] if n.tag == "img"]
    assert shown[:4] == ["toy-overview.png", "toy-objective.png", "toy-regret.png", "toy-constraints.png"]
    assert "toy-frontier.png" not in shown  # shown once, at the top


def test_the_compact_table_has_the_answer_by_hand(page):
    _, root = page
    table = next(node for node in root.walk() if node.tag == "table")
    rows = [node for node in table.walk() if node.tag == "tr"]
    assert cells(rows[0]) == ["configuration", "R(T)", "C(T)", "C(T) = 0 on", "violating steps", "violating epochs"]
    body = {cells(row)[0]: cells(row) for row in rows[1:]}
    assert list(body) == ["UC-CURL", "PS-CURL"]

    label, _, regrets, gs = FOUR
    uc = body[label]
    mean = np.mean(regrets)
    assert uc[1].startswith(f"{mean:.3f} [")  # four seeds: a bootstrap interval, which holds the mean
    low, high = (float(v) for v in re.fullmatch(r"\S+ \[(\S+), (\S+)\]", uc[1]).groups())
    assert min(regrets) <= low <= mean <= high <= max(regrets)
    violations = np.maximum(gs, 0.0)
    assert uc[2].startswith(f"{np.mean(violations):.4f} [")  # 0.0500: three significant digits
    assert uc[3] == f"{int(np.sum(violations == 0))}/4 seeds" == "3/4 seeds"
    # every run: 1,500 of its 2,000 steps and 1 of its 2 epochs under a violating policy
    assert uc[4:] == [f"{100 * 1500 / 2000:.1f}%", f"{100 * 1 / 2:.1f}%"] == ["75.0%", "50.0%"]

    label, _, regrets, _ = TWO
    ps = body[label]
    assert ps[1] == f"{np.mean(regrets):.3f} (range {min(regrets):.3f} to {max(regrets):.3f})"  # two seeds: the range
    assert ps[2] == "0 (every seed)" and ps[3] == "2/2 seeds" and ps[4:] == ["0%", "0%"]


def test_the_full_summary_says_two_seeds_give_no_bootstrap_interval(page):
    _, root = page
    summary = next(node for node in root.walk() if node.attrs.get("id") == "summary")
    siblings = summary.parent.children
    note = siblings[siblings.index(summary) + 1].content()
    assert "not a bootstrap interval" in note


def test_every_table_scrolls_in_its_own_box_and_the_page_fits_a_phone(page):
    _, root = page
    tables = [node for node in root.walk() if node.tag == "table"]
    assert len(tables) >= 6
    for table in tables:
        assert table.parent.tag == "div" and "scroll" in table.parent.attrs.get("class", "").split()
    style = " ".join(node.content() for node in root.walk() if node.tag == "style")
    assert re.search(r"\.scroll\{[^}]*overflow-x:\s*auto", style)
    assert re.search(r"img\{[^}]*max-width:\s*100%", style)
    # no fixed widths: only max-widths, so the page narrows with the window
    assert not re.findall(r"(?<![-\w])(?:min-)?width:\s*\d", style), "a fixed width in the style sheet"
    assert "width=" not in " ".join(f"{k}={v}" for n in root.walk() if n.tag in ("img", "table", "td", "th")
                                    for k, v in n.attrs.items())
    viewport = [node for node in root.walk() if node.tag == "meta" and node.attrs.get("name") == "viewport"]
    assert len(viewport) == 1 and "width=device-width" in viewport[0].attrs["content"]
    head = next(node for node in root.walk() if node.tag == "head")
    assert viewport[0].parent is head
