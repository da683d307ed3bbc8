# As run for benchmarks/results-fig-memory-2026-11-27b.txt; kept verbatim as the record of the measurement.
"""Resummarise a finished study folder (runs hard-linked into a fresh out dir) and print RSS/peak around each step.
usage: python steps.py STUDY.toml SRC_OUT DEST_OUT [reset]   (reset: VmHWM reset before each figure)"""
import os, shutil, subprocess, sys, time
from pathlib import Path

def status():
    s = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    return int(s['VmRSS'].split()[0]) / 1024, int(s['VmHWM'].split()[0]) / 1024
def rss():
    r, h = status(); return f"RSS {r:.0f} HWM {h:.0f} MiB"
RESET = len(sys.argv) > 4 and sys.argv[4] == "reset"
def reset():
    with open("/proc/self/clear_refs", "w") as f: f.write("5")

study, src, dest = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
if dest.exists(): shutil.rmtree(dest)
dest.mkdir(parents=True)
subprocess.run(["cp", "-al", str(src / "runs"), str(dest / "runs")], check=True)
shutil.copy(src / "study.json", dest / "study.json")

import curlopt.experiments.outputs.checkpoints as C
import curlopt.experiments.outputs.figures.plots as P
import curlopt.experiments.outputs.figures.report as FR
import curlopt.experiments.outputs.report as REP
import curlopt.experiments.outputs.summary as S
import curlopt.experiments.runner as R
def wrap(mod, name):
    f = getattr(mod, name)
    def g(*a, **k):
        t = time.process_time(); print("before", name, rss(), flush=True); r = f(*a, **k)
        print("after ", name, rss(), f"cpu {time.process_time()-t:.1f}s", flush=True); return r
    setattr(mod, name, g)
for m, n in [(R, "collect_runs"), (S, "write_study_summary"), (C, "write_checkpoint_table"), (P, "plot_study"), (REP, "write_report")]:
    wrap(m, n)
orig_save = P.save_png
def save(fig, path, meta=None):
    r = orig_save(fig, path, meta); print("  saved", Path(path).name, rss(), flush=True)
    if RESET: reset()
    return r
P.save_png = save
orig_setting = P.setting_figures
def setting_figures(*a, **k):
    for name, fig in orig_setting(*a, **k):
        print("  built", name, rss(), flush=True); yield name, fig
P.setting_figures = setting_figures
orig_png = FR.exact_constraint_png
def exact_png(groups):
    if RESET: reset()
    d = orig_png(groups); print("  exact constraint png", rss(), flush=True); return d
FR.exact_constraint_png = exact_png
REP.__dict__  # report imports exact_constraint_png lazily from .figures.report
print("start", rss(), flush=True)
t0 = time.process_time()
r = R.run_study(study, out=str(dest), jobs=1, progress=False, echo=None, figures=True)
print("end", rss(), "skipped", len(r.skipped), f"cpu {time.process_time()-t0:.1f}s", flush=True)
