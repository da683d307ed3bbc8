# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
import cProfile
import resource
import sys

if __name__ == "__main__":
    prof = cProfile.Profile()
    prof.enable()
    from curlopt.experiments.runner import run_study
    result = run_study(sys.argv[1], out=sys.argv[2], jobs=2, progress=False, echo=None, figures=True)
    prof.disable()
    prof.dump_stats(sys.argv[3])
    own = resource.getrusage(resource.RUSAGE_SELF)
    print("main cpu", own.ru_utime + own.ru_stime, "runs cpu", result.run_cpu_time, "maxrss MiB", own.ru_maxrss / 1024)
