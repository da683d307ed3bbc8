# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
import runpy
import sys

sys.argv = [sys.argv[0]] + sys.argv[1:]
import curlopt.experiments.outputs.figures.plots as P


def rss():
    s = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    return f"RSS {int(s['VmRSS'].split()[0])/1024:.0f} HWM {int(s['VmHWM'].split()[0])/1024:.0f} MiB"
orig = P.save_png
def save(fig, path, meta=None):
    r = orig(fig, path, meta); print("  saved", path.name, rss(), flush=True); return r
P.save_png = save
runpy.run_path("/tmp/window-prof/mem.py", run_name="__main__")
