# As run for benchmarks/results-study-scale-2026-11-27.txt (sections 6-7); kept verbatim as the record of the measurement.
"""Main-process traced memory (tracemalloc) of LocalExecutor.run over 1,000 tasks, records consumed as they come."""
import resource
import sys
import time
import tracemalloc
from pathlib import Path

STUDY = """
[study]
name = "tm"
steps = 1000
seeds = 50
max_runs = 1000

[model]
name = "queue"

[[algorithms]]
agent = "primal-dual"
options = { episode_length = 100 }

[grid]
theta = [%s]
"""

if __name__ == "__main__":
    from curlopt.experiments.executors import LocalExecutor
    from curlopt.experiments.study import load_study, plan_study

    folder = Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    study = folder / "tm.toml"
    study.write_text(STUDY % ", ".join(repr(round(0.05 + i * 0.0001, 6)) for i in range(20)), encoding="utf-8")
    tasks = plan_study(load_study(study)).tasks
    assert len(tasks) == 1000
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    cpu = time.process_time()
    count = 0
    for task, record, error in LocalExecutor(2, force=True).run(tasks, out=folder / "out"):
        assert error is None, error
        count += 1
    peak = tracemalloc.get_traced_memory()[1] - base
    print(f"{count} runs; traced peak above the planned tasks {peak / 2**20:.2f} MiB; main CPU in the loop"
          f" {time.process_time() - cpu:.2f} s; max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
