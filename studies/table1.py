"""docs/table1.md, generated: the paper's Table 1 with what curlopt measured for each system.

Per system of the paper's Table 1 (and the agents curlopt adds): its setting, utility, the regret and the violation
its paper bounds with the bounds as the paper states them, its assumptions, the curlopt agent, and what the
validation studies measured, every number read from a committed summary::

    python studies/table1.py            # write docs/table1.md
    python studies/table1.py --check    # exit 1 if docs/table1.md differs from what the summaries give

The infinite-horizon rows read docs/studies/table1-validation/summary.csv (studies/table1-validation.toml), the
finite-horizon rows docs/studies/episodic-validation/summary.csv; while the latter is not committed those rows say
so. A summary that lacks a column, or holds a value that is not a number where one is needed, stops the script with
a one-line message naming the file, the row and the column.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDIES = ROOT / "docs" / "studies"
OUT = ROOT / "docs" / "table1.md"
IH_STUDY = "table1-validation"
FH_STUDY = "episodic-validation"
NOT_MEASURED = "not measured yet (study not committed)"

#: Columns every infinite-horizon summary row must have (curlopt sweep's summary.csv).
IH_COLUMNS = ("setting", "algorithm", "label", "agent", "steps", "seeds", "optimum", "regret_mean", "regret_ci_low",
              "regret_ci_high", "violation_mean", "violation_ci_low", "violation_ci_high", "zero_violation_share")
#: Columns every finite-horizon summary row must have (the episodic study's summary.csv).
FH_COLUMNS = ("setting", "algorithm", "label", "agent", "episodes", "seeds", "horizon", "optimum", "regret_mean",
              "regret_ci_low", "regret_ci_high", "weak_regret_mean", "strong_violation_mean", "weak_violation_mean",
              "zero_violation_share")


class SummaryError(ValueError):
    """A committed summary the table cannot be built from (missing, malformed or incomplete)."""


@dataclass(frozen=True)
class System:
    """One row of the paper's Table 1 (or an agent curlopt adds), as its paper states it."""

    name: str
    paper: str
    setting: str                  # "IH" or "FH"
    utility: str                  # "linear" or "concave"
    regret: str                   # the regret its paper bounds, and the bound as stated
    violation: str                # the violation its paper bounds, and the bound as stated
    safe_policy: str              # a known (strictly) safe policy
    slater: str                   # a Slater gap (a strictly feasible solution) and whether it must be known
    horizon_known: str            # T (IH) or K (FH) known up front
    rewards_known: str            # rewards and costs known, or learned from observed signals
    agent: str | None             # the curlopt agent (None: none), "IH" agents in curlopt.agents, "FH" episodic
    study_key: str | None = None  # the algorithm key in the validation study (IH); FH rows match by agent
    note: str = ""


#: The systems, in the order of the table. Bounds are the papers' (Õ hides logarithms); where a paper's exact factors
#: could not be checked against its text, the cell says so.
SYSTEMS: tuple[System, ...] = (
    System("UC-CURL", "Agarwal, Bai, Aggarwal, TMLR 2022 (this paper)", "IH", "concave f, convex g",
           "f(λ*) − f(λ^(T)), λ^(T) the empirical averages of T steps: Õ(1/√T) w.h.p. (times factors in S, A, the "
           "mixing time and the Lipschitz constants)",
           "max_m g_m(ζ^(T))_+: 0 w.h.p., with its tightness constant K_ε of the analysis's size",
           "no", "yes: a solution interior to the feasible set; its size sets K_ε", "no (anytime)", "yes",
           "uc-curl", "uc-curl", "paper's mode: linear epochs, K_ε = 1, the radius of its simulations"),
    System("PS-CURL", "Agarwal, Bai, Aggarwal, TMLR 2022 (this paper)", "IH", "concave f, convex g",
           "as UC-CURL, a Bayesian bound: Õ(1/√T) (looser factors than UC-CURL's)",
           "max_m g_m(ζ^(T))_+: 0 (Bayesian)", "no", "yes, as UC-CURL", "no (anytime)", "yes",
           "ps-curl", "ps-curl", "paper's mode: linear epochs, K_ε = 1"),
    System("CMDP-PSRL", "Agarwal, Bai, Aggarwal, UAI 2022", "IH", "linear",
           "T ρ* − Σ_t r_t (cumulative): Õ(poly(DSA) √T), D the diameter",
           "Σ_t c_t − T c̄ per constraint (cumulative): Õ(poly(DSA) √T)", "no",
           "the program on each posterior draw feasible", "no", "yes", "cmdp-psrl", "cmdp-psrl",
           "doubling epochs, no tightening"),
    System("UCRL-CMDP", "Singh, Gupta, Shroff 2020", "IH", "linear",
           "T r* − E Σ_t r_t (cumulative, expected): Õ(T^{2/3})",
           "E Σ_t c_{i,t} − T c̄_i per cost (cumulative, expected): Õ(T^{2/3})", "no", "not checked", "yes",
           "yes", "ucrl-cmdp", "ucrl-cmdp", "epochs of ⌈T^{1/3}⌉ steps, per-entry confidence boxes"),
    System("Chen et al. (primal-dual)", "Chen, Jain, Luo, ICML 2022", "IH", "linear",
           "T J* − Σ_t r_t (cumulative): Õ(√T) for ergodic MDPs (Õ(T^{2/3}) weakly communicating)",
           "Σ_t (c_t − τ) (cumulative, with cancellations): O(1) for ergodic MDPs", "no", "not checked", "yes",
           "yes", "primal-dual", "primal-dual", "ergodic-case algorithm; signals scaled to [0, 1] as its paper did"),
    System("Wei et al. (Triple-QA)", "Wei, Liu, Ying, AAAI 2022", "IH", "linear",
           "T J* − Σ_t r_t (cumulative): sublinear, Õ(T^{5/6}) (as cited by later work)",
           "Σ_t (ρ − u_t) (cumulative): 0 once T ≥ (18 κ √(SA ι) / δ)^6",
           "no", "yes: Slater's gap δ (sets the warm-up T)", "yes", "no: model-free, learns from observed signals",
           "triple-qa", "triple-qa", "κ, a bound of the optimal bias spans, assumed known (1 here)"),
    System("OptCMDP", "Efroni, Mannor, Pirotta 2020", "FH", "linear",
           "Σ_k V* − V^{π_k}: Õ(√K) (polynomial in S, A, H)",
           "Σ_k max_m (g_m(π_k))_+ (strong): Õ(√K)", "no", "no", "K in its logarithms", "no (bonuses); ours: known",
           "opt-cmdp"),
    System("OptPess-LP", "Liu, Zhou, Kalathil, Kumar, Tian, NeurIPS 2021", "FH", "linear",
           "Σ_k V* − V^{π_k}: Õ(√K) (factors in S, A, H and 1/slack of the safe policy)",
           "Σ_k (g(π_k))_+ (strong): 0 w.h.p.", "yes, with its slack", "via the safe policy's slack",
           "K in its logarithms", "yes", "optpess-lp"),
    System("OptPess-PrimalDual", "Liu, Zhou, Kalathil, Kumar, Tian, NeurIPS 2021", "FH", "linear",
           "Σ_k V* − V^{π_k}: Õ(√K)", "Σ_k (g(π_k))_+ (strong): bounded, O(1) in K w.h.p.",
           "no (one is known to exist)", "yes: a strictly safe policy exists", "K in its logarithms", "yes",
           "optpess-primal-dual"),
    System("DOPE", "Bura, HasanzadeZonuzy, Kalathil, Shakkottai, Chamberland, NeurIPS 2022", "FH", "linear",
           "Σ_k V* − V^{π_k}: Õ(S √(A K))", "Σ_k (g(π_k))_+ (strong): 0 w.h.p.", "yes, with its slack",
           "via the safe policy's slack", "K in its logarithms (its warm-up depends on S, A, H and the slack)", "yes",
           "dope"),
    System("ConRL", "Brantley, Dudík, Lykouris, Miryoosefi, Simchowitz, Slivkins, Sun, NeurIPS 2020", "FH",
           "concave f, convex g",
           "K f(λ*) − K f((1/K) Σ_k λ^{π_k}) (of the average): Õ(√K) (factors not checked: only the abstract was "
           "reachable)", "distance of (1/K) Σ_k ζ^{π_k} to the convex set (of the average): Õ(√K), likewise",
           "no", "not checked", "no (k in its logarithms)", "no (bonuses); ours: known", "conrl"),
    System("MOMA", "Yu, Tian, Zhang, Sra, ICML 2021 (the Table's MOMA)", "FH", "concave f, convex g",
           "of the average, per episode: L H^{3/2} √(SA/K) (the paper's Table 1 row)",
           "distance of the average to the target set (of the average)", "no", "not checked",
           "not checked (ours: K in its step size)", "no (bonuses); ours: known", "moma",
           note="approachability against an opponent; ours is its fixed-opponent case"),
    System("Triple-Q", "Wei, Liu, Ying, AISTATS 2022", "FH", "linear",
           "Σ_k V* − V^{π_k}: Õ(H⁴ √(SA) K^{4/5} / δ)", "Σ_k (ρ − U^{π_k}) (cumulative): 0 once K is large enough",
           "no", "yes: Slater's gap δ (sets the warm-up K)", "yes", "no: model-free, learns from observed signals",
           "triple-q"),
    System("safe mode (curlopt's own)", "–", "IH", "concave f, convex g",
           "no bound is proved: measured only", "no bound is proved: measured only", "no",
           "none required (least-violation fallback)", "no (anytime)", "yes (learned: an option)",
           "safe-curl", "safe", "its defaults"),
)


def _read_summary(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """The rows of a committed summary, after checking it has every column the table reads."""
    if not path.is_file():
        raise SummaryError(f"{_shown(path)} is missing: publish it with bash studies/publish.sh {path.parent.name}")
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [name for name in columns if name not in header]
        if missing:
            raise SummaryError(f"{_shown(path)} is malformed: no column {', '.join(missing)}")
        rows = list(reader)
    if not rows:
        raise SummaryError(f"{_shown(path)} is malformed: no rows")
    for number, row in enumerate(rows, start=2):
        if None in row or any(row[name] is None for name in columns):
            raise SummaryError(f"{_shown(path)} is malformed: line {number} has not as many fields as the header")
    return rows


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _value(row: dict[str, str], column: str, path: Path) -> float:
    """A number of a summary row; an empty cell or a word stops the script."""
    text = row[column]
    try:
        value = float(text)
    except ValueError:
        raise SummaryError(f"{_shown(path)} is malformed: {column} = {text!r} in the row of "
                           f"{row['setting']}/{row['algorithm']} is not a number") from None
    if math.isnan(value):
        raise SummaryError(f"{_shown(path)} is malformed: {column} is NaN in the row of {row['setting']}/{row['algorithm']}")
    return value


def _number(value: float) -> str:
    """Four significant digits (every number of the table is a summary's value printed this way)."""
    return "0" if value == 0 else f"{value:.4g}"


def _interval(row: dict[str, str], name: str, path: Path) -> str:
    return (f"{_number(_value(row, f'{name}_mean', path))} [{_number(_value(row, f'{name}_ci_low', path))}, "
            f"{_number(_value(row, f'{name}_ci_high', path))}]")


def _zero_runs(row: dict[str, str], path: Path) -> tuple[int, int]:
    seeds = int(_value(row, "seeds", path))
    return round(_value(row, "zero_violation_share", path) * seeds), seeds


def _command(folder: Path) -> str:
    """The command that regenerates a committed study, from its study.json (the study file it was run from)."""
    study = folder / "study.json"
    source = None
    if study.is_file():
        source = json.loads(study.read_text(encoding="utf-8")).get("study", {}).get("source")
    run = f"curlopt sweep {source} && " if source else ""
    return f"`{run}bash studies/publish.sh {folder.name}`"


def _agent_cell(system: System, ih_agents: set[str], fh_agents: set[str]) -> str:
    if system.agent is None:
        return "none"
    registered = ih_agents if system.setting == "IH" else fh_agents
    if system.agent not in registered:
        return f"none in this version of curlopt (`{system.agent}` planned)"
    cell = f"`{system.agent}`" + (" (episodic)" if system.setting == "FH" else "")
    return cell + (f"; {system.note}" if system.note else "")


def _registries() -> tuple[set[str], set[str]]:
    sys.path.insert(0, str(ROOT))
    from curlopt.agents import AGENTS
    from curlopt.agents.episodic import EPISODIC_AGENTS
    return set(AGENTS), set(EPISODIC_AGENTS)


def build(ih_summary: Path, fh_summary: Path, registries: tuple[set[str], set[str]] | None = None) -> str:
    """The text of docs/table1.md from the two validation summaries.

    Raises
    ------
    SummaryError
        The infinite-horizon summary is missing or malformed, or lacks a system's rows; or the finite-horizon
        summary exists and is malformed (a missing one gives rows that say so).
    """
    ih_agents, fh_agents = registries if registries is not None else _registries()
    ih_rows = _read_summary(ih_summary, IH_COLUMNS)
    fh_rows = _read_summary(fh_summary, FH_COLUMNS) if fh_summary.is_file() else None
    ih_command, fh_command = _command(ih_summary.parent), _command(fh_summary.parent)
    lines = [
        "# The paper's Table 1, regenerated",
        "",
        "<!-- Generated by python studies/table1.py from the committed study summaries; do not edit by hand. -->",
        "",
        "Agarwal, Bai and Aggarwal compare UC-CURL with the constrained-RL systems of their Table 1. Below, per system:",
        "its setting (IH: infinite horizon, long-run averages over T steps; FH: finite horizon, K episodes of H steps),",
        "its utility, the regret and the violation its paper bounds with the bounds as the paper states them (Õ hides",
        "logarithms; where a paper's exact factors could not be checked against its text the cell says so), its",
        "assumptions, the curlopt agent, and what curlopt measured on its validation study — models and run seeds",
        "fixed before any of their runs, on which no default was tuned (the design runs are separate studies). Every",
        "measured number is read from a committed summary.csv; its command is beside it. The papers' constants and",
        "curlopt's choices where a paper is silent are in [the mathematics](math.md).",
        "",
        "## What each paper bounds",
        "",
        "| system | paper | setting | utility | regret its paper bounds | violation its paper bounds | curlopt agent |",
        "|---|---|---|---|---|---|---|",
    ]
    for system in SYSTEMS:
        lines.append(f"| {system.name} | {system.paper} | {system.setting} | {system.utility} | {system.regret} |"
                     f" {system.violation} | {_agent_cell(system, ih_agents, fh_agents)} |")
    lines += ["", "## What each paper assumes", "",
              "| system | known safe policy | Slater gap | T or K known | rewards and costs known |",
              "|---|---|---|---|---|"]
    for system in SYSTEMS:
        lines.append(f"| {system.name} | {system.safe_policy} | {system.slater} | {system.horizon_known} |"
                     f" {system.rewards_known} |")
    lines += ["", "## What we measured", "",
              f"Infinite horizon: `{ih_summary.parent.name}` ({ih_command}); finite horizon: `{fh_summary.parent.name}`"
              f" ({fh_command}). "
              "A run has zero violation when C(T) = max_m g_m(ζ^(T))_+ is 0 (IH) or when its strong violation "
              "Σ_k max_m g_m(ζ^{π_k})_+ is 0 (FH). Regret is per model: the tables below.", "",
              "| system | study | T or K | models × seeds | runs with zero violation | mean violation over runs |"
              " regret [95% CI] on its first model (every model below) |",
              "|---|---|---|---|---|---|---|"]
    for system in SYSTEMS:
        lines.append(_pooled_row(system, ih_rows, ih_summary, fh_rows, fh_summary, fh_agents))
    lines += ["", "## Infinite horizon, per model", "",
              f"`{ih_summary.parent.name}`: {ih_command}. R(T) = f(λ*) − f(λ^(T)) and C(T) = max_m g_m(ζ^(T))_+, mean"
              " over seeds with the 95% bootstrap interval. The horizon and the sizes were chosen on the design runs"
              " (`table1-design`: other models and run seeds, the same agents), whose summary is committed beside it.",
              "",
              "| setting | system | T | seeds | f(λ*) | R(T) [95% CI] | C(T) [95% CI] | C(T) = 0 |",
              "|---|---|---:|---:|---:|---:|---:|---:|"]
    names = {system.study_key: system.name for system in SYSTEMS if system.setting == "IH"}
    for row in ih_rows:
        if row["algorithm"] not in names:
            continue
        zero, seeds = _zero_runs(row, ih_summary)
        lines.append(f"| {row['setting']} | {names[row['algorithm']]} | {int(_value(row, 'steps', ih_summary)):,} |"
                     f" {seeds} | {_number(_value(row, 'optimum', ih_summary))} | {_interval(row, 'regret', ih_summary)} |"
                     f" {_interval(row, 'violation', ih_summary)} | {zero}/{seeds} |")
    lines += ["", "## Finite horizon, per model", ""]
    if fh_rows is None:
        lines.append(f"`{fh_summary.parent.name}`: {NOT_MEASURED}.")
    else:
        lines += [f"`{fh_summary.parent.name}`: {fh_command}. Regret Σ_k f(λ*) − f(λ^{{π_k}}) (weak: of the average), strong and "
                  "weak violation, exact per episode; mean over seeds.", "",
                  "| setting | system | K | H | seeds | regret [95% CI] | weak regret | strong violation |"
                  " weak violation | strong violation = 0 |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        fh_names = {system.agent: system.name for system in SYSTEMS if system.setting == "FH"}
        for row in fh_rows:  # every row: the episodic UC-CURL and PS-CURL too, named by their agent
            zero, seeds = _zero_runs(row, fh_summary)
            lines.append(
                f"| {row['setting']} | {fh_names.get(row['agent'], '`' + row['agent'] + '`')} ({row['label']}) |"
                f" {int(_value(row, 'episodes', fh_summary)):,} | {int(_value(row, 'horizon', fh_summary))} | {seeds} |"
                f" {_interval(row, 'regret', fh_summary)} | {_number(_value(row, 'weak_regret_mean', fh_summary))} |"
                f" {_number(_value(row, 'strong_violation_mean', fh_summary))} |"
                f" {_number(_value(row, 'weak_violation_mean', fh_summary))} | {zero}/{seeds} |")
    return "\n".join(lines) + "\n"


def _pooled_row(system: System, ih_rows: list[dict[str, str]], ih_summary: Path,
                fh_rows: list[dict[str, str]] | None, fh_summary: Path, fh_agents: set[str]) -> str:
    """One system's measured line: zero-violation runs and the mean violation over all its runs of the study."""
    if system.setting == "IH":
        rows = [row for row in ih_rows if row["algorithm"] == system.study_key]
        if not rows:
            raise SummaryError(f"{_shown(ih_summary)} has no row of algorithm {system.study_key!r} ({system.name})")
        path, study, horizon, violation = ih_summary, ih_summary.parent.name, \
            f"T = {int(_value(rows[0], 'steps', ih_summary)):,}", "violation_mean"
    else:
        if fh_rows is None:
            return f"| {system.name} | `{fh_summary.parent.name}` | – | – | {NOT_MEASURED} | – | – |"
        rows = [row for row in fh_rows if row["algorithm"] == system.agent]  # the agent at its defaults
        if not rows:
            missing = "no agent" if system.agent not in fh_agents else "not in the committed study"
            return f"| {system.name} | `{fh_summary.parent.name}` | – | – | {missing} | – | – |"
        episodes = sorted({int(_value(row, "episodes", fh_summary)) for row in rows})
        path, study, violation = fh_summary, fh_summary.parent.name, "strong_violation_mean"
        horizon = "K = " + ", ".join(f"{k:,}" for k in episodes)
    counts = [_zero_runs(row, path) for row in rows]
    zero, runs = sum(c[0] for c in counts), sum(c[1] for c in counts)
    mean = sum(_value(row, violation, path) * c[1] for row, c in zip(rows, counts, strict=True)) / runs
    seeds = sorted({c[1] for c in counts})
    shape = f"{len(rows)} × {'/'.join(str(s) for s in seeds)}"
    first = rows[0]
    regret = f"{_interval(first, 'regret', path)} on {first['setting']}"
    return f"| {system.name} | `{study}` | {horizon} | {shape} | {zero}/{runs} | {_number(mean)} | {regret} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page differs from what the summaries give")
    parser.add_argument("--ih", type=Path, default=STUDIES / IH_STUDY / "summary.csv", help="the IH summary.csv")
    parser.add_argument("--fh", type=Path, default=STUDIES / FH_STUDY / "summary.csv", help="the FH summary.csv")
    parser.add_argument("--out", type=Path, default=OUT, help="the page to write (default docs/table1.md)")
    args = parser.parse_args(argv)
    try:
        text = build(args.ih, args.fh)
    except SummaryError as error:
        print(f"table1: {error}", file=sys.stderr)
        return 2
    if args.check:
        if not args.out.is_file() or args.out.read_text(encoding="utf-8") != text:
            print(f"table1: {_shown(args.out)} is stale: run python studies/table1.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {_shown(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
