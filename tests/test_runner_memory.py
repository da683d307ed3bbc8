"""The study runner's memory does not grow with the number of runs.

* executors given an output folder write each run's file where it ran and hand back a small record, never the trace;
* the runner keeps no trace: the outputs read each run file once, into its configuration's aggregate of arrays;
* with no room in the cache at all (every trace read from its file whenever used) the outputs are the same bytes;
* the aggregate holds the numbers the traces hold (checked against the traces read back one by one).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import curlopt.experiments.outputs.runs as runs_module
from curlopt.experiments.executors import LocalExecutor, SavedRun
from curlopt.experiments.outputs.runs import TraceCache, TraceFiles, trace_bytes
from curlopt.experiments.outputs.summary import study_rows
from curlopt.experiments.runner import collect_runs, run_study
from curlopt.experiments.simulation.trace import load_trace
from curlopt.experiments.study import load_study, plan_study

STUDY = """
[study]
name = "memory"
steps = 200
seeds = 3

[model]
name = "queue"

[[algorithms]]
agent = "ps-curl"

[[algorithms]]
agent = "primal-dual"
"""


def _study(tmp_path: Path) -> Path:
    path = tmp_path / "memory.toml"
    path.write_text(STUDY, encoding="utf-8")
    return path


def test_an_executor_given_a_folder_writes_the_runs_and_hands_back_records(tmp_path):
    plan = plan_study(load_study(_study(tmp_path)))
    outcomes = list(LocalExecutor(1).run(plan.tasks[:2], out=tmp_path / "out"))
    for task, record, error in outcomes:
        assert error is None and isinstance(record, SavedRun)
        path = tmp_path / "out" / task.relative_path
        assert record.path == str(path) and path.is_file()
        assert record.wall_time == load_trace(path).wall_time and record.cpu_time > 0


def test_the_runner_keeps_no_trace_and_the_outputs_read_the_files(tmp_path):
    result = run_study(_study(tmp_path), out=tmp_path / "out", jobs=1, progress=False, figures=False, echo=None)
    assert len(result.executed) == 6 and result.run_cpu_time > 0
    assert all(isinstance(group.traces, TraceFiles) for group in result.groups)
    assert [group.seeds for group in result.groups] == [[0, 1, 2], [0, 1, 2]]


def test_the_outputs_read_no_run_file_and_hold_no_trace(tmp_path):
    result = run_study(_study(tmp_path), out=tmp_path / "out", jobs=1, progress=False, figures=True, echo=None)
    cache = result.groups[0].traces.cache
    assert all(group.traces.cache is cache for group in result.groups)
    # summary, figures and report from the numbers each run sent back with its record: no file read, none kept
    assert cache.loads == 0 and not cache._held and all(group.aggregate is not None for group in result.groups)
    again = run_study(_study(tmp_path), out=tmp_path / "out", jobs=1, progress=False, figures=False, echo=None)
    cache = again.groups[0].traces.cache
    assert len(again.skipped) == 6 and cache.loads == 0 and not cache._held  # the numbers of the resume check


def test_a_configuration_without_its_numbers_is_read_from_its_files(tmp_path):
    result = run_study(_study(tmp_path), out=tmp_path / "out", jobs=1, progress=False, figures=False, echo=None)
    plan = plan_study(load_study(_study(tmp_path)))
    groups = collect_runs(plan, tmp_path / "out")  # no numbers gathered: the aggregate is built from the files
    assert all(group.aggregate is None for group in groups)
    for read, gathered in zip(groups, result.groups, strict=True):
        assert read.seeds == gathered.seeds == [0, 1, 2]
        assert study_rows([read]) == study_rows([gathered])  # the same rows, wall times included
    assert groups[0].traces.cache.loads == 6  # each file read once


def test_the_aggregate_holds_the_traces_numbers(tmp_path):
    result = run_study(_study(tmp_path), out=tmp_path / "out", jobs=1, progress=False, figures=False, echo=None)
    for group in result.groups:
        runs = group.aggregated()
        traces = [load_trace(path) for path in group.traces.paths]
        assert list(runs.seeds) == [trace.meta["seed"] for trace in traces] == [0, 1, 2]
        assert list(runs.regret) == [trace.checkpoints["regret"][-1] for trace in traces]
        assert np.array_equal(runs.curves["constraints"], np.stack([trace.checkpoints["constraints"] for trace in traces]))
        assert list(runs.epochs) == [len(trace.epochs) for trace in traces]
        assert list(runs.epoch_solve_time) == [epoch.solve_time for trace in traces for epoch in trace.epochs]
        assert [runs.sources[code] for code in runs.epoch_source] == [e.source for t in traces for e in t.epochs]


def test_outputs_are_the_same_bytes_when_every_trace_is_read_again_from_its_file(tmp_path, monkeypatch):
    names = ("summary.csv", "summary.md", "checkpoints.csv")
    run_study(_study(tmp_path), out=tmp_path / "a", jobs=1, progress=False, figures=False, echo=None)
    written = {name: (tmp_path / "a" / name).read_bytes() for name in names}
    for name in names:
        (tmp_path / "a" / name).unlink()
    monkeypatch.setattr(runs_module, "DEFAULT_CACHE_BYTES", 0)  # nothing kept but the configuration in use
    again = run_study(_study(tmp_path), out=tmp_path / "a", jobs=1, progress=False, figures=False, echo=None)
    assert len(again.skipped) == 6
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == written[name]


def test_the_cache_holds_at_most_its_limit(tmp_path):
    result = run_study(_study(tmp_path), out=tmp_path / "out", jobs=1, progress=False, figures=False, echo=None)
    paths = [tmp_path / "out" / task.relative_path for task in result.tasks]
    one = trace_bytes(load_trace(paths[0]))
    cache = TraceCache(limit=2 * one)
    for path in paths:
        cache.get(path)
    assert cache.loads == len(paths) and sum(trace_bytes(t) for t in cache._held.values()) <= 2 * one
    for path in paths:  # the ones kept are not read again; the others are
        cache.get(path)
    assert len(paths) < cache.loads < 2 * len(paths)


def test_a_local_pool_has_at_most_its_window_of_tasks_submitted(tmp_path, monkeypatch):
    import concurrent.futures

    from curlopt.experiments import executors

    class CountingPool(concurrent.futures.ProcessPoolExecutor):
        submitted = 0

        def submit(self, *args, **kwargs):  # type: ignore[override]
            CountingPool.submitted += 1
            return super().submit(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", CountingPool)
    study = _study(tmp_path)
    study.write_text(STUDY.replace("seeds = 3", "seeds = 10"), encoding="utf-8")
    tasks = plan_study(load_study(study)).tasks
    window = executors.IN_FLIGHT_PER_WORKER * 2
    assert len(tasks) == 20 > window
    received, in_flight = [], []
    for task, record, error in LocalExecutor(2, force=True).run(tasks, out=tmp_path / "out"):
        assert error is None and isinstance(record, SavedRun)
        received.append(task.key)
        in_flight.append(CountingPool.submitted - len(received))  # submitted and not yet handed back
    assert sorted(received) == sorted(task.key for task in tasks) and CountingPool.submitted == len(tasks)
    # never more than the window submitted ahead of the consumer, and the window filled (the workers kept busy)
    assert max(in_flight) == window


def test_runs_arriving_in_any_order_give_the_aggregate_in_seed_order(tmp_path, monkeypatch):
    from curlopt.experiments.outputs import aggregate as aggregate_module

    result = run_study(_study(tmp_path), out=tmp_path / "out", jobs=1, progress=False, figures=False, echo=None)
    monkeypatch.setattr(aggregate_module._Column, "FIRST_BYTES", 16)  # many small chunks: rows cross their ends
    monkeypatch.setattr(aggregate_module._Column, "CHUNK_BYTES", 64)
    for group in result.groups:
        traces = [load_trace(path) for path in group.traces.paths]  # by seed: 0, 1, 2
        builder = aggregate_module.AggregateBuilder()
        for trace in (traces[2], traces[0], traces[1]):
            builder.add(trace)
        assert builder.seeds == [0, 1, 2]
        runs = builder.finish()
        assert builder.seeds == []  # emptied
        assert list(runs.seeds) == [0, 1, 2]
        assert list(runs.objective) == [trace.checkpoints["objective"][-1] for trace in traces]
        assert list(runs.epochs) == [len(trace.epochs) for trace in traces]
        assert list(runs.epoch_start) == [epoch.start for trace in traces for epoch in trace.epochs]
        assert list(runs.epoch_solve_time) == [epoch.solve_time for trace in traces for epoch in trace.epochs]
        assert [runs.sources[code] for code in runs.epoch_source] == [e.source for t in traces for e in t.epochs]
        assert [runs.statuses[c] for c in runs.epoch_status] == [e.status or "" for t in traces for e in t.epochs]
        for row, trace in zip(runs.source_counts, traces, strict=True):
            assert {name: int(row[code]) for code, name in enumerate(runs.sources) if row[code]} == \
                {name: sum(e.source == name for e in trace.epochs) for name in {e.source for e in trace.epochs}}
        for name in ("objective", "regret", "constraints", "costs"):
            assert np.array_equal(runs.curves[name], np.stack([trace.checkpoints[name] for trace in traces]))
        assert runs.optimum == traces[0].optimum and np.array_equal(runs.times, traces[0].checkpoints["t"])


def test_a_growing_column_keeps_every_value_and_widens_integers_that_do_not_fit(monkeypatch):
    from curlopt.experiments.outputs.aggregate import _Column

    monkeypatch.setattr(_Column, "FIRST_BYTES", 8)  # chunks of 2, 4, 4, ... int32 values
    monkeypatch.setattr(_Column, "CHUNK_BYTES", 16)
    column = _Column(np.int32)
    column.extend(np.arange(7))
    column.extend(np.array([3_000_000_000, 5]))  # beyond int32: the column becomes int64, nothing cut
    assert column.size == 9
    taken = column.take(np.array([8, 7, 0, 6]))
    assert taken.dtype == np.int64 and list(taken) == [5, 3_000_000_000, 0, 6]
    rows = _Column(np.float64, (3,))
    rows.extend(np.arange(6.0).reshape(2, 3))
    assert rows.take(np.array([1, 0])).tolist() == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]
