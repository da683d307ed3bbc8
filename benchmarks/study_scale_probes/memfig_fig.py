# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
# the figures of a finished folder, one at a time: RSS before, peak while drawn and saved (VmHWM reset per figure)
import hashlib
import shutil
import sys
import time
from pathlib import Path

from curlopt.experiments.outputs.figures.plots import _by_setting, setting_figures
from curlopt.experiments.outputs.figures.style import load_matplotlib, release, save_png
from curlopt.experiments.runner import run_study


def status():
    d = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    return int(d["VmRSS"].split()[0]) / 1024, int(d["VmHWM"].split()[0]) / 1024

def reset():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

src, work, dest = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
if not work.exists():
    shutil.copytree(src, work)
result = run_study(str(work / sys.argv[4]), out=work / "out", jobs=1, progress=False, echo=None, figures=False)
load_matplotlib()
print("before figures: RSS %.0f, peak %.0f MiB" % status(), flush=True)
dest.mkdir(parents=True, exist_ok=True)
for members in _by_setting(result.groups):
    gen = setting_figures(members)
    while True:
        reset(); before = status()[0]
        t = time.process_time()
        try:
            name, fig = next(gen)
        except StopIteration:
            break
        path = save_png(fig, dest / name)
        release(fig)
        rss, hwm = status()
        print(f"{name}: RSS before {before:.0f}, peak {hwm:.0f}, after {rss:.0f} MiB, {time.process_time()-t:.1f} s, sha {hashlib.sha256(path.read_bytes()).hexdigest()[:12]}", flush=True)
