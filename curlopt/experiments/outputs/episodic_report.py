"""An episodic study's ``report.html``: its summary table per setting and its figures, in one page."""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...fileio import atomic_write_text
from .summary import percent, significant, stat_cell

__all__ = ["write_episodic_report"]

_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
          "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}"
          "th{background:#f3f3f3}img{max-width:100%}")


def write_episodic_report(out: str | os.PathLike, rows: Sequence[dict[str, Any]], figures: Sequence[Path],
                          title: str, description: str = "", notes: Sequence[str] = ()) -> Path:
    """Write ``report.html`` into ``out`` (figures linked by their path relative to ``out``); return its path."""
    out = Path(out)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]
    if description:
        parts.append(f"<p>{html.escape(description)}</p>")
    headers = ("algorithm", "seeds", "regret", "weak regret", "strong violation", "weak violation",
               "violating episodes", "runs without violation", "slope", "wall s")
    for setting in dict.fromkeys(row["setting"] for row in rows):
        mine = [row for row in rows if row["setting"] == setting]
        parts.append(f"<h2>{html.escape(setting)}</h2><p>H = {mine[0]['horizon']}, K = {mine[0]['episodes']:,},"
                     f" f(λ*) = {significant(mine[0]['optimum'], 4)} per episode.</p><table><tr>"
                     + "".join(f"<th>{h}</th>" for h in headers) + "</tr>")
        for row in mine:
            cells = (row["label"], str(row["seeds"]), stat_cell(row, "regret"), stat_cell(row, "weak_regret"),
                     stat_cell(row, "strong_violation"), stat_cell(row, "weak_violation"),
                     percent(row["violating_episode_share"]), percent(row["zero_violation_share"]),
                     significant(row["slope"], 2), significant(row["wall_time_mean"], 2))
            parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        parts.append("</table>")
        for figure in figures:
            if figure.name in (f"{setting}-regret.png", f"{setting}-frontier.png"):
                parts.append(f"<p><img src='{html.escape(str(figure.relative_to(out)))}' alt='{figure.name}'></p>")
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts.append("</body></html>\n")
    path = out / "report.html"
    atomic_write_text(path, "".join(parts))
    return path
