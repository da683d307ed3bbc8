"""curlopt benchmarks: one command for every speed and memory figure, each with its same-run reference and ratio.

Run:  python benchmarks/run.py [--quick] [--only NAMES] [--full]

Items (``--only`` takes a comma-separated list):

``resolve``      compiled re-solve per epoch vs a naive CVXPY rebuild (highs, cvxpy; pyomo warm vs cold)
``pyomo``        Ipopt warm start vs a fresh build and cold start over a UC-CURL run (bench_pyomo_warmstart.py)
``simulation``   the fast tabular path vs the generic Gymnasium path, steps per second
``end-to-end``   ``curlopt reproduce queue --full --jobs 2`` wall time and peak memory per worker (~10 min)
``profile``      full-scale queue runs under cProfile: top entries and where the time goes
``study``        the shipped queue radius × K_ε study: one seed of each configuration, extrapolated (bench_study.py)
``large``        random CMDPs at (100,10) and (200,5): compile, first solve, re-solve, peak memory per backend, and a
                 UC-CURL run with HiGHS extrapolated to 10^6 steps (bench_large.py; ~20 min)
``box``          UCRL-CMDP's box program and UC-CURL's optimistic program at the paper's sizes, by backend: whole runs
                 against the bare Markov-chain loop, re-solves on the same epoch data, UC-CURL by size (bench_box.py)

Without ``--only`` the default items run (resolve, pyomo, simulation); ``--full`` adds end-to-end and
profile, study and large. ``--quick`` shortens every item (fewer epochs and steps). Nothing is asserted: the last table
lists each target (benchmarks/README.md) with PASS/MISS. The whole output is also written to
``benchmarks/results-<date>.txt`` (``--save PATH`` to choose, ``--no-save`` to skip).

Timings are wall clock on a shared machine: compare the ratios, which are taken side by side in one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _report import Targets, Tee, header_lines, load_average  # noqa: E402

DEFAULT_ITEMS = ("resolve", "pyomo", "simulation")
ALL_ITEMS = DEFAULT_ITEMS + ("end-to-end", "profile", "study", "large", "scale", "box")


def item_resolve(say, targets, args) -> None:
    import bench_resolve

    bench_resolve.run_item(say, targets, quick=args.quick, sizes=args.sizes, backends=args.backends)


def item_pyomo(say, targets, args) -> None:
    """Reuses bench_pyomo_warmstart.run: a UC-CURL run solved warm every epoch, fresh + cold at sampled epochs."""
    import bench_pyomo_warmstart as bench
    from _report import ratio, table

    from curlopt.models import queue_model, scheduler_model

    horizon, compare = (1000, 6) if args.quick else (3000, 16)
    say(f"bench_pyomo_warmstart.run: UC-CURL (optimistic program, doubling trigger), horizon {horizon} steps, seed 0;"
        f" every epoch solved warm on one compiled model; at ~{compare} sampled epochs also a fresh build solved cold.")
    rows = []
    for name, model in (("scheduler (16,2), sum of logs", scheduler_model()), ("queue (6,16), linear", queue_model())):
        samples, totals = bench.run(model, horizon, compare, 0)
        compared = samples[1:]  # the first warm solve is a cold start too
        w_it, c_it = sum(r["warm_it"] for r in compared), sum(r["cold_it"] for r in compared)
        w_s, c_s = sum(r["warm_s"] for r in compared), sum(r["cold_s"] for r in compared)
        build = sum(r["build_s"] for r in compared)
        n = max(len(compared), 1)
        gap = max([r["gap"] for r in samples if r["gap"] == r["gap"]] + [0.0])
        rows.append([name, totals["epochs"], len(compared), f"{w_it / n:.1f}", f"{c_it / n:.1f}", ratio(c_it / max(w_it, 1)),
                     f"{1e3 * w_s / n:.1f}", f"{1e3 * c_s / n:.1f}", ratio(c_s / max(w_s, 1e-12)),
                     f"{1e3 * build / n:.1f}", ratio((c_s + build) / max(w_s, 1e-12)), totals["retries"],
                     f"{gap:.1e}"])
        targets.add("re-solve", f"pyomo warm vs fresh build + cold Ipopt, {name}",
                    f"{w_it / n:.1f} it, {1e3 * w_s / n:.0f} ms", f"{c_it / n:.1f} it, {1e3 * (c_s + build) / n:.0f} ms",
                    f"{c_it / max(w_it, 1):.1f}x it, {(c_s + build) / max(w_s, 1e-12):.1f}x time", "report", None)
    say(table(["model", "epochs", "compared", "warm it", "cold it", "it ratio", "warm ms", "cold ms", "time ratio",
               "build ms", "(build+cold)/warm", "cold retries", "max |Δf|"], rows))


def item_simulation(say, targets, args) -> None:
    import bench_simulation

    bench_simulation.run_item(say, targets, quick=args.quick)


def item_end_to_end(say, targets, args) -> None:
    import bench_end_to_end

    bench_end_to_end.run_end_to_end(say, targets, jobs=args.jobs, keep=args.keep)


def item_profile(say, targets, args) -> None:
    import bench_end_to_end

    steps = 100_000 if args.quick else 500_000
    bench_end_to_end.run_profile(say, targets, args.profile_algorithms.split(","), steps=steps)


def item_study(say, targets, args) -> None:
    import bench_study

    bench_study.run_item(say, targets, jobs=args.jobs, full=args.full_study)


def item_large(say, targets, args) -> None:
    import bench_large

    bench_large.run_item(say, targets, quick=args.quick, backends=args.backends)


def item_scale(say, targets, args) -> None:
    import bench_scale

    bench_scale.run_item(say, targets, quick=args.quick, backends=args.backends)


def item_box(say, targets, args) -> None:
    import bench_box

    bench_box.run_item(say, targets, quick=args.quick)


ITEMS = {
    "resolve": ("1. Re-solve per epoch: compiled vs naive CVXPY rebuild", item_resolve),
    "pyomo": ("1b. Pyomo: warm start vs fresh build and cold start (bench_pyomo_warmstart)", item_pyomo),
    "simulation": ("2. Simulation: fast tabular path vs generic Gymnasium path", item_simulation),
    "end-to-end": ("3. End to end: curlopt reproduce queue --full, wall time and memory per worker", item_end_to_end),
    "profile": ("3b. Profile of full-scale queue runs (cProfile)", item_profile),
    "study": ("4. The shipped queue radius × K_ε study: wall time", item_study),
    "large": ("6. Larger models: random CMDPs at (100,10) and (200,5), and a UC-CURL run", item_large),
    "scale": ("7. Models at scale, every backend side by side (queue buffer, scheduler clients, random)", item_scale),
    "box": ("8. The optimistic programs at the paper's sizes by backend: UCRL-CMDP's box program, UC-CURL's", item_box),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer epochs and steps everywhere")
    parser.add_argument("--only", help=f"comma-separated items: {', '.join(ALL_ITEMS)}")
    parser.add_argument("--full", action="store_true", help="also end-to-end (~10 min), profile, study and large (~20 min)")
    parser.add_argument("--sizes", help="resolve: sizes to run, e.g. '6,16;60,10' (default all four)")
    parser.add_argument("--backends", help="resolve, large: backends, e.g. highs,cvxpy (default highs,cvxpy,pyomo; large: +scipy)")
    parser.add_argument("--jobs", type=int, default=2, help="end-to-end: worker processes (default 2)")
    parser.add_argument("--full-study", action="store_true", help="study: run all seeds, not one (~1 h)")
    parser.add_argument("--keep", action="store_true", help="end-to-end: keep the temporary output folder")
    parser.add_argument("--profile-algorithms", default="ucrl-cmdp,ps-curl-linear",
                        help="profile: queue algorithm keys (default ucrl-cmdp,ps-curl-linear)")
    parser.add_argument("--save", help="results file (default benchmarks/results-<date>.txt)")
    parser.add_argument("--no-save", action="store_true", help="do not write a results file")
    args = parser.parse_args(argv)
    args.sizes = args.sizes.split(";") if args.sizes else None
    args.backends = args.backends.split(",") if args.backends else None

    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in ITEMS]
        if unknown:
            parser.error(f"unknown item(s) {unknown}; items: {', '.join(ALL_ITEMS)}")
    else:
        names = list(ALL_ITEMS if args.full else DEFAULT_ITEMS)

    say = Tee()
    targets = Targets()
    now = dt.datetime.now()
    say(f"curlopt benchmarks, {now:%Y-%m-%d %H:%M}; items: {', '.join(names)}{' (quick)' if args.quick else ''}")
    for line in header_lines():
        say(line)
    say(f"load average at start: {load_average()}")
    started = time.perf_counter()
    for name in names:
        title, function = ITEMS[name]
        say("")
        say("=" * len(title))
        say(title)
        say("=" * len(title))
        item_started = time.perf_counter()
        function(say, targets, args)
        say(f"[{name}: {time.perf_counter() - item_started:.0f} s; load average {load_average()}]")
    say("")
    say("Targets")
    say("-------")
    say(targets.render() if targets.checks else "(no target measured by these items)")
    say(f"\ntotal {time.perf_counter() - started:.0f} s; load average at the end: {load_average()}")
    if not args.no_save:
        path = Path(args.save) if args.save else HERE / f"results-{now:%Y-%m-%d}.txt"
        if path.exists() and not args.save:  # one file per day: later runs are appended
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("\n" + "#" * 100 + "\n\n" + say.text())
            print(f"appended to {path}")
        else:
            path.write_text(say.text(), encoding="utf-8")
            print(f"saved to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
