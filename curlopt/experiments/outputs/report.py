"""The report of a finished study or reproduction: one self-contained HTML page, from its saved runs.

:func:`write_report` (``curlopt report RESULTS_DIR``; ``sweep`` and ``reproduce``
write it at the end, as ``report.html``) reads a study output folder —
``study.json``, the run traces under ``runs/``, the figures under ``figures/``
— and runs nothing. The page leads with the answer; in order:

* the results, per setting: the regret–violation frontier and a compact table
  of every configuration's R(T) and C(T) (mean over seeds with the 95%
  bootstrap interval of the mean — with two or three seeds the range of the
  seeds, which is all that interval can be, see
  :data:`~curlopt.experiments.outputs.figures.frontier.SEED_RANGE_MAX`), on how
  many seeds C(T) = 0, and the share of steps and of epochs played under a
  policy that violates a constraint on the true kernel;
* the curves: every other figure of ``figures/`` (drawn for the report when
  the folder has none and matplotlib is installed), a figure whose recorded
  ``summary.csv`` hash differs from the ``summary.csv`` beside it marked as
  possibly out of date;
* the full summary tables, one per setting, with the cells of ``summary.md``
  (mean ± standard deviation [95% bootstrap interval] over seeds);
* the configuration: the study's name, description, profile, horizon, seeds and
  models, and every configuration with all its options and how many of its runs
  were found;
* the versions of curlopt, Python, numpy, scipy, highspy and every installed
  backend's packages (and the curlopt versions that wrote the runs);
* the epochs: the solve-time figure, and per configuration the epochs by policy
  source and by solver status, with the mean and largest solve time;
* the fallback and failed epochs (configuration, seed, epoch, start, source,
  status, message; :data:`MAX_LISTED_EPOCHS` per configuration, then a count);
* the exact constraint values per epoch (drawn for the report only; see
  :mod:`curlopt.experiments.outputs.figures.report`).

The page reads on a wide screen and on a phone: a viewport meta tag, no fixed
widths, figures no wider than the page, and every table in its own box that
scrolls sideways when the table is wider than the page.

The page uses the standard library only (:mod:`html`, :mod:`base64`): figures
are PNG ``data:`` URIs, the style sheet is inline, nothing is fetched.
:func:`print_summary` prints the summary tables in a terminal with ``rich``.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import CurloptError
from ...fileio import atomic_write_text
from .figures.epochs import SOURCES
from .figures.frontier import SEED_RANGE_MAX, interval_kind
from .summary import DASH, LOCATION_DIGITS, clean_label, count_cell, percent, significant, stat_cell, study_rows

if TYPE_CHECKING:  # pragma: no cover
    from .figures.report import ReportFigure
    from .runs import ConfigurationRuns, TraceCache

__all__ = ["StudyOutput", "load_study_output", "write_report", "render_report", "print_summary",
           "MAX_LISTED_EPOCHS", "REPORT_NAME", "SECTIONS", "ANSWER_COLUMNS"]

#: the report's file name in a study output folder
REPORT_NAME = "report.html"
#: fallback and failed epochs listed per configuration (the rest are counted)
MAX_LISTED_EPOCHS = 50


# -- reading a study output -------------------------------------------------------------------------------------------
@dataclass
class StudyOutput:
    """A study output folder: its ``study.json`` record and its configurations' finished runs."""

    folder: Path
    record: dict[str, Any]
    groups: list[ConfigurationRuns]
    #: per configuration (in study order): its label, setting, record and the number of run files found
    configurations: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the runs were read from the folder (``curlopt report``), not handed over by the study that just wrote them:
    #: the figures and summary files beside them may then be of other runs (a run file removed or added since)
    from_folder: bool = False
    #: what the report found out of date beside the runs (also among the notes): the command says it as warnings
    stale: list[str] = field(default_factory=list)

    @property
    def study(self) -> dict[str, Any]:
        return self.record.get("study") or {}

    @property
    def settings(self) -> list[str]:
        return list(dict.fromkeys(_setting_name(group) for group in self.groups))


def _setting_name(group: ConfigurationRuns) -> str:
    return str(getattr(group.setting, "name", group.setting))


def _read_record(folder: Path) -> dict[str, Any]:
    if not folder.exists():
        raise CurloptError(f"{folder}: no such folder.")
    if not folder.is_dir():
        raise CurloptError(f"{folder} is a file, not a study output folder.")
    path = folder / "study.json"
    if not path.is_file():
        raise CurloptError(f"{folder} is not a study output: it has no study.json (curlopt sweep and curlopt reproduce"
                           " write one).")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CurloptError(f"{path} cannot be read ({type(exc).__name__}: {' '.join(str(exc).split())}).") from None
    if not isinstance(record, dict) or record.get("format") != "curlopt-study" \
            or not isinstance(record.get("study"), dict) or not isinstance(record.get("configurations"), list):
        raise CurloptError(f"{path} is not a curlopt study record (its format, study or configurations are missing).")
    if not (folder / "runs").is_dir():
        raise CurloptError(f"{folder} has no runs/ folder: the study has not run yet.")
    return record


def _settings(study: dict[str, Any]) -> dict[str, Any]:
    from ..study.spec import SettingSpec

    settings = {}
    for entry in study.get("models") or []:
        name = str(entry.get("setting", entry.get("name", "")))
        settings[name] = SettingSpec(name, str(entry.get("name", "") or ""), tuple((entry.get("params") or {}).items()),
                                     str(entry.get("label", "") or ""), tuple(entry.get("cost_names") or ()),
                                     str(entry.get("file", "") or ""), str(entry.get("file_sha256", "") or ""))
    return settings


def _load_group(folder: Path, config: dict[str, Any], study: dict[str, Any], setting: Any,
                notes: list[str], cache: TraceCache) -> ConfigurationRuns:
    """A configuration's readable runs in ``folder`` (each checked here; kept in ``cache`` while it has room, read
    again when its aggregate is built otherwise)."""
    from ..simulation.trace import load_trace
    from .runs import ConfigurationRuns, TraceFiles

    found = []
    for seed in study.get("seeds") or []:
        path = folder / str(config.get("path", "")) / f"T{study.get('steps')}-seed{int(seed):03d}.json.gz"
        if not path.exists():
            continue
        try:
            cache.put(path, load_trace(path))
        except CurloptError as exc:
            notes.append(f"left out an unreadable run: {' '.join(str(exc).split())}")
            continue
        found.append(path)
    algorithm = config.get("algorithm") or {}
    return ConfigurationRuns(setting=setting, algorithm=str(algorithm.get("key", "")),
                             agent=str(algorithm.get("agent", "")), label=str(config.get("label", "")),
                             key=str(config.get("key", "")), options=dict(config.get("options") or {}),
                             varied=dict(config.get("varied") or {}), traces=TraceFiles(found, cache))


def load_study_output(folder: str | Path, groups: Sequence[ConfigurationRuns] | None = None) -> StudyOutput:
    """Read a study output folder (``groups``: the finished runs already loaded, as the study runner has them).

    Raises
    ------
    CurloptError
        One line naming what is missing: the folder, its ``study.json``, its ``runs/`` folder, or any finished run.
    """
    folder = Path(folder)
    record = _read_record(folder)
    study = record["study"]
    settings = _settings(study)
    notes = [str(note) for note in (record.get("profile") or {}).get("notes", [])] if groups is None else []
    notes += [str(note) for note in record.get("notes") or []] if groups is None else []
    from .runs import TraceCache

    cache = TraceCache()  # one for the folder: the runs are read through it, a bounded number held
    loaded = {(_setting_name(g), g.algorithm, g.key): g for g in groups or []}
    output = StudyOutput(folder, record, [], notes=notes, from_folder=groups is None)
    for config in record["configurations"]:
        setting_name = str((config.get("setting") or {}).get("setting", ""))
        setting = settings.get(setting_name, setting_name)
        key = (setting_name, str((config.get("algorithm") or {}).get("key", "")), str(config.get("key", "")))
        group = loaded.get(key) if groups is not None else _load_group(folder, config, study, setting, notes, cache)
        found = len(group.traces) if group is not None else 0
        output.configurations.append({"record": config, "setting": setting_name, "found": found,
                                      "expected": len(study.get("seeds") or [])})
        if group is not None and group.traces:
            output.groups.append(group)
        elif groups is None:
            notes.append(f"{config.get('label', key[2])}: no finished run.")
    if not output.groups:
        raise CurloptError(f"{folder}: no finished run under runs/ (T={study.get('steps')}, seeds"
                           f" {study.get('seeds')}); run the study first.")
    return output


# -- small HTML pieces ------------------------------------------------------------------------------------------------
def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "", left: int = 1) -> str:
    """A table of plain-text cells (escaped here); the first ``left`` columns are text, the others numbers."""
    head = "".join(f"<th>{_e(cell)}</th>" for cell in header)
    body = []
    for row in rows:
        cells = "".join(f'<td class="{"text" if i < left else "num"}">{_e(cell)}</td>' for i, cell in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    caption_html = f"<caption>{_e(caption)}</caption>" if caption else ""
    # in its own box: a table wider than the page scrolls sideways there instead of widening the page
    return (f'<div class="scroll"><table>{caption_html}<thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _image(figure: ReportFigure, alt: str) -> str:
    data = base64.b64encode(figure.data).decode("ascii")
    # a figure drawn for the report only is captioned as such, never with a file name that does not exist
    named = _e(figure.name) if figure.saved else f"{_e(alt)} (drawn for this report; not a file under figures/)"
    caption = named + (f' — <span class="warn">{_e(figure.caption)}</span>' if figure.caption else "")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_e(alt)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _list(items: Sequence[str]) -> str:
    return "<ul>" + "".join(f"<li>{_e(item)}</li>" for item in items) + "</ul>" if items else ""


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _options_text(options: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {_value(v)}" for k, v in sorted(options.items())) or "(the agent's defaults)"


_STYLE = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:78rem;
padding:1rem 1.2rem 3rem;color:#1a1a1a;line-height:1.45;overflow-wrap:break-word}
h1{font-size:1.6em;margin:.6em 0 .2em}h2{margin-top:2em;border-bottom:1px solid #ccc;padding-bottom:.2em}
h3{margin-top:1.4em}.scroll{overflow-x:auto;max-width:100%;margin:.6em 0 1.2em}
table{border-collapse:collapse;font-size:.86em}th,td{border:1px solid #d0d0d0;padding:.25em .55em;vertical-align:top}
th{background:#f2f2f2;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
caption{text-align:left;font-weight:600;padding:.3em 0}figure{margin:1em 0}
img{display:block;max-width:100%;height:auto;border:1px solid #e4e4e4}figcaption{font-size:.82em;color:#555}
.warn{color:#a33}.muted{color:#666;font-size:.9em}nav{display:flex;flex-wrap:wrap;gap:.2em 1em}
code{background:#f4f4f4;padding:0 .25em}
@media (max-width:40rem){body{padding:.5rem .7rem 2rem}h1{font-size:1.35em}table{font-size:.8em}}
"""


# -- sections ---------------------------------------------------------------------------------------------------------
def _configuration_section(output: StudyOutput) -> str:
    study, profile = output.study, output.record.get("profile") or {}
    facts = [("name", study.get("name", "")), ("description", study.get("description", "") or DASH)]
    if profile:
        facts.append(("profile", f"{profile.get('name', '')}: {profile.get('description', '')}"))
    seeds = study.get("seeds") or []
    facts += [("horizon T", f"{int(study.get('steps', 0)):,} steps"),
              ("seeds", f"{len(seeds)}: " + ", ".join(str(s) for s in seeds)),
              ("checkpoints", study.get("checkpoints", DASH)), ("source", study.get("source", "") or DASH),
              ("options for every algorithm", _options_text(study.get("options") or {})),
              ("grid", ", ".join(f"{k} in {_value(v)}" for k, v in (study.get("grid") or {}).items()) or DASH)]
    models = [[m.get("setting", ""), m.get("file") or m.get("name", ""), _options_text(m.get("params") or {})
               if not m.get("file") else f"sha256 {m.get('file_sha256', '')[:16]}…", clean_label(m.get("label", ""))]
              for m in study.get("models") or []]
    rows = []
    for entry in output.configurations:
        config = entry["record"]
        algorithm = config.get("algorithm") or {}
        automatic = ", ".join(f"{k}: {v}" for k, v in (config.get("automatic") or {}).items())
        rows.append([config.get("label", ""), entry["setting"], f"{algorithm.get('key', '')} ({algorithm.get('agent', '')})",
                     _options_text(config.get("options") or {}) + (f"; {automatic}" if automatic else ""),
                     config.get("path", ""), f"{entry['found']}/{entry['expected']}"])
    return ('<h2 id="configuration">Configuration</h2>' + _table(["study", ""], facts, left=2)
            + _table(["setting", "model", "parameters", "description"], models, "models", left=4)
            + _table(["configuration", "setting", "algorithm (agent)", "options", "folder", "runs found"], rows,
                     "configurations (every option of each)", left=5))


def _versions(used_backends: Sequence[str] = ()) -> list[tuple[str, str]]:
    import importlib.metadata as metadata
    import platform

    from ... import __version__
    from ...backends.registry import backend_class, backend_names

    names = ["numpy", "scipy", "highspy", "gymnasium", "matplotlib"]
    for backend in backend_names():
        try:
            names += [n for n in backend_class(backend).requires if n not in names]
        except CurloptError:
            continue
    distributions = metadata.packages_distributions()
    versions = [("curlopt", __version__), ("python", platform.python_version())]
    for name in names:
        for distribution in [name] + [d for d in distributions.get(name, []) if d != name]:
            try:
                versions.append((name if distribution == name else f"{name} ({distribution})",
                                 metadata.version(distribution)))
                break
            except metadata.PackageNotFoundError:
                continue
    return versions + _backend_versions(used_backends)


def _backend_versions(used_backends: Sequence[str]) -> list[tuple[str, str]]:
    """``("backend <name>", its version())`` for each installed backend the study's runs used (the solvers behind
    it, as results record). Only those: a backend's version may import its solver (Pyomo takes seconds)."""
    from ...backends.registry import backend_class, installed_backends

    rows = []
    for backend in [name for name in installed_backends() if name in set(used_backends)]:
        try:
            rows.append((f"backend {backend}", backend_class(backend).version()))
        except CurloptError:
            continue
    return rows


def _versions_section(output: StudyOutput) -> str:
    written = sorted({version for g in output.groups for version in g.aggregated().curlopt_versions})
    used = sorted({used for g in output.groups for used in g.aggregated().backend_versions})
    lines = [f"study.json written by curlopt {output.record.get('curlopt_version', '?')}; the runs by curlopt"
             f" {', '.join(written)}" + (f", with the backend(s) {', '.join(used)}" if used else "") + "."]
    return ('<h2 id="versions">Versions</h2><p class="muted">Installed where this report was rendered. '
            + _e(lines[0]) + "</p>"
            + _table(["package", "version"], _versions(sorted({backend for g in output.groups
                                                                for backend in g.aggregated().backends})), left=2))


def _constraint_count(row: dict[str, Any]) -> int:
    return sum(1 for key in row if re.fullmatch(r"g\d+_mean", key))


def _setting_facts(rows: Sequence[dict[str, Any]]) -> str:
    """``T = 5,000 steps; optimum f(λ*) = 4.47`` for the summary rows of one setting."""
    optimum = next((row["optimum"] for row in rows if row.get("optimum") is not None), None)
    facts = f"T = {int(rows[0]['steps']):,} steps" if rows[0].get("steps") else ""
    if optimum is None:
        return facts + "; no known optimum"
    if any(row.get("optimum_infeasible") for row in rows):  # the regret is then against the unconstrained optimum
        return facts + (f"; the constraints are infeasible: the optimum without them f(λ*) ="
                        f" {significant(optimum, LOCATION_DIGITS)}, and R(T) is measured against it")
    return facts + f"; optimum f(λ*) = {significant(optimum, LOCATION_DIGITS)}"


def _few_seeds_caveat(rows: Sequence[dict[str, Any]]) -> str:
    """A sentence for tables with configurations of two or three seeds, whose bootstrap interval is their range."""
    if not any(interval_kind(int(row.get("seeds") or 0)) == "range" for row in rows):
        return ""
    return (f" With {SEED_RANGE_MAX} seeds or fewer the bracket is the range of the seeds, not a bootstrap"
            " interval: resampling so few seeds reaches the smallest and the largest of them often enough"
            " to make them the interval's ends.")


def _summary_section(output: StudyOutput, rows: Sequence[dict[str, Any]]) -> str:
    parts = ['<h2 id="summary">Summary over seeds</h2><p class="muted">Cells: mean ± sample standard deviation'
             " [95% percentile-bootstrap interval of the mean] over seeds (summary.csv has full precision)."
             + _few_seeds_caveat(rows) + "</p>"]
    for setting in output.settings:
        mine = [row for row in rows if row.get("setting") == setting]
        if not mine:
            continue
        m = max(_constraint_count(row) for row in mine)
        facts = _setting_facts(mine)
        header = ["configuration", "seeds", "f(λ^(T))", "R(T)"] + [f"g_{k}(ζ^(T))" for k in range(1, m + 1)] + [
            "C(T)", "C(T) = 0", "violating epochs", "violating steps", "epochs", "fallback epochs",
            "runs with fallbacks", "failed epochs", "wall time (s)"]
        table = []
        for row in mine:
            seeds = int(row.get("seeds") or 0)
            zero = DASH if not seeds else f"{round(row['zero_violation_share'] * seeds)}/{seeds}"
            table.append([row["label"], seeds, stat_cell(row, "objective"), stat_cell(row, "regret")]
                         + [stat_cell(row, f"g{k}") if f"g{k}_mean" in row else DASH for k in range(1, m + 1)]
                         + [stat_cell(row, "violation"), zero, percent(row.get("violating_epoch_share")),
                            percent(row.get("violating_step_share")), count_cell(row, "epochs"),
                            count_cell(row, "fallback_epochs"),
                            DASH if not seeds or row.get("fallback_runs") is None else f"{row['fallback_runs']}/{seeds}",
                            count_cell(row, "failed_epochs"), count_cell(row, "wall_time")])
        parts.append(f"<h3>{_e(setting)}</h3><p>{_e(facts)}.</p>" + _table(header, table))
    if output.notes:
        parts.append("<h3>Notes</h3>" + _list(output.notes))
    return "".join(parts)


def _by_setting(figures: Sequence[ReportFigure], settings: Sequence[str]) -> dict[str, list[ReportFigure]]:
    grouped: dict[str, list] = {name: [] for name in list(settings) + [""]}
    for figure in figures:
        owner = max((s for s in settings if figure.name.startswith(f"{s}-")), key=len, default="")
        grouped[owner].append(figure)
    return grouped


def _answer_cell(row: dict[str, Any], name: str) -> str:
    """``mean [low, high]`` with the 95% bootstrap interval, ``mean (range low to high)`` with two or three seeds.

    ``mean (every seed)`` when every seed ended at the same value; the mean alone with one seed.
    """
    mean, seeds = row.get(f"{name}_mean"), int(row.get("seeds") or 0)
    if mean is None or (isinstance(mean, float) and math.isnan(mean)) or not seeds:
        return DASH
    text = significant(mean, LOCATION_DIGITS)
    low, high = row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return text
    low_text, high_text = significant(low, LOCATION_DIGITS), significant(high, LOCATION_DIGITS)
    if low == high:  # the degenerate interval: every seed ended at the same value (C(T) = 0 on every seed, typically)
        return f"{text} (every seed)"
    if interval_kind(seeds) == "range":
        return f"{text} (range {low_text} to {high_text})"
    return f"{text} [{low_text}, {high_text}]"


#: the columns of the results' compact table
ANSWER_COLUMNS = ("configuration", "R(T)", "C(T)", "C(T) = 0 on", "violating steps", "violating epochs")


def _answer_table(rows: Sequence[dict[str, Any]]) -> str:
    table = []
    for row in rows:
        seeds = int(row.get("seeds") or 0)
        zero = DASH if not seeds else f"{round(row['zero_violation_share'] * seeds)}/{seeds} seeds"
        table.append([row["label"], _answer_cell(row, "regret"), _answer_cell(row, "violation"), zero,
                      percent(row.get("violating_step_share")), percent(row.get("violating_epoch_share"))])
    return _table(list(ANSWER_COLUMNS), table)


def _results_section(output: StudyOutput, rows: Sequence[dict[str, Any]], figures: Sequence[ReportFigure],
                     notes: Sequence[str]) -> str:
    """The answer first: per setting the frontier and the compact table of R(T), C(T) and violations."""
    parts = ['<h2 id="results">Results</h2><p class="muted">R(T): regret after T steps; C(T): constraint violation'
             " after T steps, max over the constraints of (g_m)_+. Cells: mean over seeds [95% percentile-bootstrap"
             f" interval of the mean]; with {SEED_RANGE_MAX} seeds or fewer, the range of the seeds instead (a"
             " bootstrap interval over so few seeds is that range). Violating steps and epochs: the share of steps"
             " and of epochs played under a policy that violates a constraint on the true kernel (mean over"
             " seeds).</p>"]
    if notes:
        parts.append(f'<p class="muted">{_e(" ".join(notes))}</p>')
    grouped = _by_setting(figures, output.settings)
    for setting in output.settings:
        mine = [row for row in rows if row.get("setting") == setting]
        if not mine:
            continue
        parts.append(f"<h3>{_e(setting)}</h3><p>{_e(_setting_facts(mine))}.</p>")
        parts += [_image(f, f.name) for f in grouped.get(setting, []) if f.name == f"{setting}-frontier.png"]
        parts.append(_answer_table(mine))
    return "".join(parts)


def _curves_section(output: StudyOutput, figures: Sequence[ReportFigure]) -> str:
    """Every figure but the frontiers (in the results) and the epochs (in their section), per setting."""
    parts = ['<h2 id="curves">Curves</h2>']
    order = ("overview", "objective", "regret", "constraints", "costs")
    for setting, mine in _by_setting(figures, output.settings).items():
        mine = [f for f in mine if not f.name.endswith(("-epochs.png", "-frontier.png")) or not setting]
        if not mine:
            continue
        rank = {kind: i for i, kind in enumerate(order)}
        mine.sort(key=lambda f: (rank.get(f.name[len(setting) + 1:-4] if setting else "", len(order)), f.name))
        parts.append(f"<h3>{_e(setting or 'other figures')}</h3>" + "".join(_image(f, f.name) for f in mine))
    if len(parts) == 1:
        parts.append("<p>No curves.</p>")
    return "".join(parts)


def _seconds(value: float) -> str:
    if not math.isfinite(value):
        return DASH
    if value >= 100:  # plain seconds: 1,370 s, not 1.37e+03 s
        return f"{value:,.0f} s"
    return f"{value * 1000:.3g} ms" if value < 1 else f"{value:.3g} s"


def _epoch_rows(groups: Sequence[ConfigurationRuns]) -> tuple[list[str], list[list[Any]]]:
    runs = [g.aggregated() for g in groups]
    seen_sources = {source for r in runs for source in r.sources}
    sources = [s for s in SOURCES if s in seen_sources] + sorted(seen_sources - set(SOURCES))
    statuses = sorted({status for r in runs for status in r.statuses})
    header = ["configuration", "runs", "epochs"] + [f"source: {s}" for s in sources] + \
        [f"status: {s or '(none)'}" for s in statuses] + ["mean solve time", "max solve time"]
    rows = []
    for group, mine in zip(groups, runs, strict=True):
        times = mine.epoch_solve_time.tolist()  # Python floats, summed in the order of the epochs as always
        rows.append([group.label, len(group.traces), len(times)]
                    + [_count(mine.epoch_source, mine.sources, s) for s in sources]
                    + [_count(mine.epoch_status, mine.statuses, s) for s in statuses]
                    + [_seconds(sum(times) / len(times)) if times else DASH, _seconds(max(times)) if times else DASH])
    return header, rows


def _count(codes: Any, names: Sequence[str], name: str) -> int:
    """How many of ``codes`` stand for ``name`` (0 when ``name`` is not among ``names``)."""
    return int(np.count_nonzero(codes == names.index(name))) if name in names else 0


def _epochs_section(output: StudyOutput, figures: Sequence[ReportFigure]) -> str:
    parts = ['<h2 id="epochs">Epochs: solver time, policy source and status</h2><p class="muted">Counts over every'
             " epoch of every seed. Sources: tight (the ε-tight program), fallback (it was infeasible),"
             " least-violation (safe mode: it was infeasible and the least-violating policy was played),"
             " kept-previous and uniform-initial (the solver failed), update-rule (agents without a program).</p>"]
    grouped = _by_setting(figures, output.settings)
    for setting in output.settings:
        mine = [g for g in output.groups if _setting_name(g) == setting]
        parts.append(f"<h3>{_e(setting)}</h3>")
        parts += [_image(f, f.name) for f in grouped.get(setting, []) if f.name == f"{setting}-epochs.png"]
        header, rows = _epoch_rows(mine)
        parts.append(_table(header, rows))
    return "".join(parts)


def _failure_rows(group: ConfigurationRuns) -> tuple[list[list[Any]], int]:
    runs = group.aggregated()
    rows = [[DASH if seed is None else seed, index, f"{start:,}", source, status or DASH, message or DASH]
            for seed, index, start, source, status, message in runs.failure_rows[:MAX_LISTED_EPOCHS]]
    return rows, max(runs.failure_count - MAX_LISTED_EPOCHS, 0)


def _failures_section(output: StudyOutput) -> str:
    parts = ['<h2 id="failures">Fallback and failed epochs</h2><p class="muted">Epochs whose policy did not come'
             " from an optimal ε-tight solve (fallback, least-violation, kept-previous, uniform-initial) or whose solver status was"
             f" not optimal; at most {MAX_LISTED_EPOCHS} per configuration.</p>"]
    header = ["seed", "epoch", "start t", "source", "status", "message"]
    for group in output.groups:
        rows, rest = _failure_rows(group)
        title = f"{group.label} ({_setting_name(group)})"
        if not rows:
            parts.append(f"<h3>{_e(title)}</h3><p>none.</p>")
            continue
        parts.append(f"<h3>{_e(title)}</h3>" + _table(header, rows, left=0))
        if rest:
            parts.append(f"<p>… and {rest:,} more.</p>")
    return "".join(parts)


def _exact_section(output: StudyOutput, draw: bool) -> str:
    from .figures.report import ReportFigure, exact_constraint_png

    parts = ['<h2 id="exact">Exact constraint values per epoch</h2><p class="muted">The largest constraint value'
             " max_m g_m of each epoch's policy on the true kernel (no sampling noise) against the epoch's start;"
             " above the line g = 0 the policy violates a constraint.</p>"]
    if not draw:
        return "".join(parts) + "<p>Not drawn: figures are off.</p>"
    for setting in output.settings:
        try:
            data = exact_constraint_png([g for g in output.groups if _setting_name(g) == setting])
        except CurloptError as exc:  # matplotlib missing
            return "".join(parts) + f"<p>Not drawn: {_e(exc)}</p>"
        if data is None:
            parts.append(f"<h3>{_e(setting)}</h3><p>No constraints, or no epoch with an exact evaluation.</p>")
        else:
            parts.append(f"<h3>{_e(setting)}</h3>" + _image(
                ReportFigure(f"{setting}-exact-constraints", data, saved=False),
                f"{setting}: exact constraint values per epoch"))
    return "".join(parts)


#: the page's sections in order: (anchor, link text)
SECTIONS = (("results", "results"), ("curves", "curves"), ("summary", "full summary"),
            ("configuration", "configuration"), ("versions", "versions"), ("epochs", "epochs"),
            ("failures", "fallback and failed epochs"), ("exact", "exact constraint values"))


# -- the page ---------------------------------------------------------------------------------------------------------
def render_report(output: StudyOutput, rows: Sequence[dict[str, Any]] | None = None, figures: bool = True) -> str:
    """The report of a study output as an HTML document (see the module docstring)."""
    from .figures.report import study_figures

    rows = list(rows) if rows is not None else study_rows(output.groups)
    runs_summary = None
    if output.from_folder:  # the figures and summary.csv beside the runs may be of other runs
        complete = rows if all("_varied" in row for row in rows) else study_rows(output.groups)
        runs_summary = _runs_summary(output, complete)
    if figures:
        images, figure_notes = study_figures(output.folder, output.groups, runs_summary)
        output.stale += [note for note in figure_notes if note.startswith("figures/ was drawn from other runs")]
    else:
        images, figure_notes = [], ["Figures are off (--no-figures): the report has the tables only."]
    study = output.study
    title = f"{study.get('name', 'study')}" + (f" (profile {output.record['profile'].get('name')})"
                                                 if output.record.get("profile") else "")
    # the answer first (frontier and compact table, then the curves), the details after
    sections = [_results_section(output, rows, images, figure_notes), _curves_section(output, images),
                _summary_section(output, rows), _configuration_section(output), _versions_section(output),
                _epochs_section(output, images), _failures_section(output),
                _exact_section(output, figures and bool(images))]
    nav = "".join(f'<a href="#{anchor}">{_e(text)}</a>' for anchor, text in SECTIONS)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}: curlopt report</title><style>{_STYLE}</style></head><body>"
            f"<h1>{_e(title)}</h1><p class=\"muted\">{_e(study.get('description', ''))}</p><nav>{nav}</nav>"
            + "".join(sections) + "</body></html>\n")


def _runs_summary(output: StudyOutput, rows: Sequence[dict[str, Any]]) -> str:
    """The SHA-256 of the summary the runs found give; a note in ``output.notes`` when ``summary.csv`` beside them
    differs (it was written from other runs: a run file removed or added since)."""
    import hashlib

    from .summary import study_csv_text

    text = study_csv_text(rows, output.groups)
    digest = hashlib.sha256(text.encode()).hexdigest()
    try:
        written = (output.folder / "summary.csv").read_bytes()
    except OSError:
        return digest
    if hashlib.sha256(written).hexdigest() != digest:
        seeds = sorted({int(row.get("seeds") or 0) for row in rows})
        output.stale.append("summary.csv and summary.md in this folder were written from other runs than those found"
                            f" now ({', '.join(map(str, seeds))} seed(s) per configuration here; a run file removed or"
                            " added since): this report's tables are computed from the runs found; run the study"
                            " again to rewrite them.")
        output.notes.append(output.stale[-1])
    return digest


def write_report(folder: str | Path, out: str | Path | None = None, *, groups: Sequence[ConfigurationRuns] | None = None,
                 rows: Sequence[dict[str, Any]] | None = None, figures: bool = True,
                 notes: Sequence[str] | None = None) -> Path:
    """Render the report of a study output folder to ``out`` (default ``<folder>/report.html``); return its path.

    ``groups`` and ``rows`` are the study's finished runs and summary rows when the
    caller has them (the study runner); otherwise they are read from the folder.
    ``figures=False`` leaves the figures out (the tables stay). ``notes`` replace
    the notes read from ``study.json``.

    Raises
    ------
    CurloptError
        When the folder is not a study output (see :func:`load_study_output`).
    OSError
        When the report cannot be written.
    """
    output = load_study_output(folder, groups)
    if notes is not None:
        output.notes = list(notes)
    target = Path(out) if out is not None else output.folder / REPORT_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, render_report(output, rows, figures))
    return target


# -- the terminal -----------------------------------------------------------------------------------------------------
def _terminal_cell(row: dict[str, Any], name: str) -> str:
    """``mean [low, high]`` (the terminal's cells leave the standard deviation to the files)."""
    mean = row.get(f"{name}_mean")
    if mean is None or (isinstance(mean, float) and math.isnan(mean)) or not row.get("seeds"):
        return DASH
    text = significant(mean, LOCATION_DIGITS)
    low, high = row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        text += f" [{significant(low, LOCATION_DIGITS)}, {significant(high, LOCATION_DIGITS)}]"
    return text


def print_summary(output: StudyOutput, rows: Sequence[dict[str, Any]] | None = None, console: Any = None) -> None:
    """The summary tables in the terminal, one per setting, with ``rich`` (imported here).

    Cells are the mean [95% bootstrap interval] over seeds; the report and ``summary.md`` add the standard deviation.
    """
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # a pipe or a file: no terminal width to fit, keep the rows on one line
            console = Console(width=200)
    rows = list(rows) if rows is not None else study_rows(output.groups)
    for setting in output.settings:
        mine = [row for row in rows if row.get("setting") == setting]
        if not mine:
            continue
        table = Table(title=f"{setting}: mean [95% interval] over seeds", title_justify="left")
        for name in ("configuration", "seeds", "f(λ^(T))", "R(T)", "C(T)", "C(T) = 0", "violating epochs",
                     "fallback", "failed", "wall time (s)"):
            if name == "configuration":
                table.add_column(name, overflow="fold", min_width=min(max(len(r["label"]) for r in mine), 28))
            else:
                table.add_column(name, justify="right", overflow="fold")
        for row in mine:
            seeds = int(row.get("seeds") or 0)
            zero = DASH if not seeds else f"{round(row['zero_violation_share'] * seeds)}/{seeds}"
            table.add_row(row["label"], str(seeds), _terminal_cell(row, "objective"), _terminal_cell(row, "regret"),
                          _terminal_cell(row, "violation"), zero, percent(row.get("violating_epoch_share")),
                          significant(row.get("fallback_epochs_mean"), LOCATION_DIGITS),
                          significant(row.get("failed_epochs_mean"), LOCATION_DIGITS),
                          significant(row.get("wall_time_mean"), LOCATION_DIGITS))
        console.print(table)
