# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
# run_numbers of every run file of a finished folder, pickled one by one in a shuffled arrival order
import pickle
import random
import sys
from pathlib import Path

from curlopt.experiments.outputs.aggregate import run_numbers
from curlopt.experiments.simulation.trace import load_trace

out = Path(sys.argv[1]); paths = sorted(out.glob("runs/**/*"))
paths = [p for p in paths if p.is_file() and p.name != "config.json"]
random.Random(1).shuffle(paths)
with open(sys.argv[2], "wb") as f:
    for p in paths:
        config = str(p.parent.relative_to(out))
        pickle.dump((config, pickle.dumps(run_numbers(load_trace(p)))), f)
print(len(paths), "runs")
