# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
import sys


def rss():
    s = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    return f"RSS {int(s['VmRSS'].split()[0])/1024:.0f} HWM {int(s['VmHWM'].split()[0])/1024:.0f} MiB"
if __name__ == "__main__":
    import curlopt.experiments.outputs.checkpoints as C
    import curlopt.experiments.outputs.figures.plots as P
    import curlopt.experiments.outputs.report as REP
    import curlopt.experiments.outputs.summary as S
    import curlopt.experiments.runner as R
    def wrap(mod, name):
        f = getattr(mod, name)
        def g(*a, **k):
            print("before", name, rss(), flush=True); r = f(*a, **k); print("after ", name, rss(), flush=True); return r
        setattr(mod, name, g)
    wrap(R, "_pending_tasks"); wrap(R, "_execute"); wrap(R, "collect_runs"); wrap(S, "write_study_summary"); wrap(C, "write_checkpoint_table")
    wrap(P, "plot_study"); wrap(REP, "write_report")
    print("start", rss())
    r = R.run_study(sys.argv[1], out=sys.argv[2], jobs=int(sys.argv[3]), progress=False, echo=None, figures=True)
    print("end", rss(), len(r.skipped))
