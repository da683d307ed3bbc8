# As run for benchmarks/results-fig-memory-2026-11-27b.txt; kept verbatim as the record of the measurement.
"""Load a finished study's groups (no outputs) then draw one figure kind with HWM reset; optional tracemalloc.
usage: python fig1.py STUDY SRC_OUT DEST figure(epochs|exact|overview) [trace]"""
import gc, shutil, subprocess, sys, time, hashlib, io
from pathlib import Path
def status():
    s = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    return int(s['VmRSS'].split()[0]) / 1024, int(s['VmHWM'].split()[0]) / 1024
def rss():
    r, h = status(); return f"RSS {r:.0f} HWM {h:.0f} MiB"
def reset():
    with open("/proc/self/clear_refs", "w") as f: f.write("5")
study, src, dest, kind = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
TRACE = "trace" in sys.argv[5:]
if not dest.exists():
    dest.mkdir(parents=True)
    subprocess.run(["cp", "-al", str(src / "runs"), str(dest / "runs")], check=True)
    shutil.copy(src / "study.json", dest / "study.json")
import curlopt.experiments.runner as R
R._write_outputs = lambda *a, **k: None
r = R.run_study(study, out=str(dest), jobs=1, progress=False, echo=None, figures=False)
groups = r.groups
from curlopt.experiments.outputs.heap import give_back_memory
from curlopt.experiments.outputs.figures.style import release, load_matplotlib
from curlopt.experiments.outputs.figures.report import png_bytes, exact_constraint_figure
from curlopt.experiments.outputs.figures.epochs import epochs_figure
from curlopt.experiments.outputs.figures.curves import curve_figure
from curlopt.experiments.outputs.figures.view import setting_view
load_matplotlib()
# warm matplotlib (fonts etc.) with a tiny figure
import matplotlib.figure
f = matplotlib.figure.Figure(); f.add_subplot().plot([1, 2]); png_bytes(f); release(f)
gc.collect(); give_back_memory()
print("groups loaded", rss(), flush=True)
if TRACE:
    import tracemalloc; tracemalloc.start()
reset(); base = status()[0]
t = time.process_time()
if kind == "epochs":
    fig = epochs_figure(setting_view(groups))
elif kind == "exact":
    fig = exact_constraint_figure(groups)
else:
    fig = curve_figure(setting_view(groups), kind)
print("built", rss(), flush=True)
if TRACE:
    cur, peak = tracemalloc.get_traced_memory(); print(f"traced built cur {cur/2**20:.1f} peak {peak/2**20:.1f}")
    snap = tracemalloc.take_snapshot()
    for st in snap.statistics("lineno")[:12]: print("   ", st)
data = png_bytes(fig)
print("saved", rss(), f"cpu {time.process_time()-t:.1f}s sha {hashlib.sha256(data).hexdigest()[:16]}", flush=True)
if TRACE:
    cur, peak = tracemalloc.get_traced_memory(); print(f"traced saved cur {cur/2**20:.1f} peak {peak/2**20:.1f}")
release(fig)
print("released", rss(), f"figure peak above base {status()[1]-base:.0f} MiB")
Path(dest.parent / f"{dest.name}-{kind}.png").write_bytes(data)
