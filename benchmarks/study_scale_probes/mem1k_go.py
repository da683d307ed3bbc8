# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[1] + "/benchmarks")
from benchmarks.bench_study import json_line, measure_scale

runs = int(sys.argv[2]); folder = Path(sys.argv[3]); folder.mkdir(parents=True, exist_ok=True)
m = measure_scale(runs, 10_000, int(sys.argv[4]) if len(sys.argv) > 4 else 2, configurations=20, agent="primal-dual",
                  options={"episode_length": 20}, figures=True, folder=folder)
print(json_line(m), flush=True)
