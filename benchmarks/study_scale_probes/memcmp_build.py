# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
# feed the pickled numbers to one builder per configuration (each let go once added); traced peak; finish all
import pickle
import resource
import sys
import tracemalloc
from collections import defaultdict

from curlopt.experiments.outputs.aggregate import AggregateBuilder

tracemalloc.start()
builders = defaultdict(AggregateBuilder)
n = 0
with open(sys.argv[1], "rb") as f:
    while True:
        try:
            config, blob = pickle.load(f)
        except EOFError:
            break
        builders[config].add_numbers(pickle.loads(blob)); n += 1
        del blob
gathered, peak1 = tracemalloc.get_traced_memory()
aggregates = {c: b.finish() for c, b in sorted(builders.items())}
held, peak = tracemalloc.get_traced_memory()
print(f"{n} runs: gathered {gathered/2**20:.1f} MiB (peak {peak1/2**20:.1f}); aggregates {held/2**20:.1f} MiB, peak {peak/2**20:.1f} MiB;"
      f" maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f} MiB")
tracemalloc.stop()
with open(sys.argv[2], "wb") as f:
    pickle.dump(aggregates, f)
