"""Plain-text tables, target checks and the run's header, shared by the benchmark items.

Every figure a benchmark reports is printed next to the reference measured in the same run, with
their ratio; a :class:`Targets` list collects the targets the items measure and prints PASS/MISS for each.
"""

from __future__ import annotations

import math
import os
import platform
import sys
from dataclasses import dataclass, field


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:  # pragma: no cover - not on Linux
        return "?"
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def header_lines() -> list[str]:
    import numpy
    import scipy

    import curlopt

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines = [
        f"curlopt {curlopt.__version__}, Python {platform.python_version()}, numpy {numpy.__version__},"
        f" scipy {scipy.__version__}, {platform.machine()} {cores} cores",
    ]
    versions = []
    for name in ("highspy", "cvxpy", "clarabel", "pyomo", "cyipopt"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        version = getattr(module, "__version__", None)
        if version is None and name == "highspy":
            try:
                h = module.Highs()
                version = f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
            except Exception:  # pragma: no cover - old highspy
                version = "?"
        versions.append(f"{name} {version}")
    lines.append(", ".join(versions))
    try:
        import subprocess
        from pathlib import Path

        root = Path(__file__).resolve().parents[1]
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "curlopt"], cwd=root, capture_output=True,
                               text=True, timeout=10).stdout.strip()
        if commit:
            lines.append(f"git {commit}" + (" (library has uncommitted changes)" if dirty else ""))
    except Exception:  # pragma: no cover - not a checkout
        pass
    return lines


def ms(seconds: float) -> str:
    """Seconds as a short millisecond figure."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    value = seconds * 1e3
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def ratio(value: float) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


def table(headers: list[str], rows: list[list[object]], align: str | None = None) -> str:
    """A plain-text table; ``align`` is one character per column (``l`` or ``r``, default right but the first)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    align = align or ("l" + "r" * (len(headers) - 1))
    out = []
    for n, row in enumerate(cells):
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align, strict=False)]
        out.append("  ".join(parts).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


@dataclass
class Check:
    item: str
    what: str
    figure: str
    reference: str
    ratio: str
    target: str
    ok: bool | None  # None: informational or not measured
    note: str = ""

    @property
    def verdict(self) -> str:
        return "INFO" if self.ok is None else ("PASS" if self.ok else "MISS")


@dataclass
class Targets:
    checks: list[Check] = field(default_factory=list)

    def add(self, *args, **kwargs) -> Check:
        check = Check(*args, **kwargs)
        self.checks.append(check)
        return check

    def render(self) -> str:
        rows = [[c.item, c.what, c.figure, c.reference, c.ratio, c.target, c.verdict, c.note] for c in self.checks]
        return table(["item", "measured", "figure", "reference (same run)", "ratio", "target", "result", "by how much"],
                     rows, "llrrrlll")


class Tee:
    """Write to the terminal and keep a copy for the results file."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.parts: list[str] = []

    def __call__(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
        self.parts.append(text)

    def text(self) -> str:
        return "\n".join(self.parts) + "\n"
