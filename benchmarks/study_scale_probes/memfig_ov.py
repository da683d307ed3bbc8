# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
import sys
import tracemalloc
from pathlib import Path

from curlopt.experiments.outputs.figures.curves import curve_figure
from curlopt.experiments.outputs.figures.plots import _by_setting
from curlopt.experiments.outputs.figures.style import load_matplotlib, release, save_png
from curlopt.experiments.outputs.figures.view import setting_view
from curlopt.experiments.runner import run_study


def status():
    d = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    return int(d["VmRSS"].split()[0]) / 1024, int(d["VmHWM"].split()[0]) / 1024
def reset():
    open("/proc/self/clear_refs", "w").write("5")
work = Path(sys.argv[1])
result = run_study(str(work / sys.argv[2]), out=work / "out", jobs=1, progress=False, echo=None, figures=False)
load_matplotlib()
members = _by_setting(result.groups)[0]
view = setting_view(members)
for mode in ("plain", "plain"):
    reset(); r0 = status()[0]
    tracemalloc.start()
    fig = curve_figure(view, "overview")
    built = tracemalloc.get_traced_memory()
    r1 = status()
    print("size in", fig.get_size_inches(), "dpi", fig.dpi, "artists", len(fig.findobj()))
    save_png(fig, Path(sys.argv[3]) / "ov.png")
    saved = tracemalloc.get_traced_memory()
    r2 = status()
    tracemalloc.stop()
    release(fig)
    print(f"RSS start {r0:.0f}; built: RSS {r1[0]:.0f} peak {r1[1]:.0f}, traced {built[0]/2**20:.1f} peak {built[1]/2**20:.1f}; saved: RSS {r2[0]:.0f} peak {r2[1]:.0f} traced {saved[0]/2**20:.1f} peak {saved[1]/2**20:.1f}; after {status()[0]:.0f}")
