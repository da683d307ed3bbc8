"""Running agents: the learning loop, traces, sweeps over seeds, summaries and figures.

Nothing heavy is imported here: matplotlib loads when a figure is drawn, Ray when
its executor is chosen.
"""

from .executors import LocalExecutor, RayExecutor
from .loop import checkpoint_times, run
from .plots import plot_experiment
from .summary import summary_rows, write_summary
from .sweep import (
    EXPERIMENTS,
    AlgorithmSpec,
    Experiment,
    Scale,
    SettingSpec,
    SweepResult,
    Task,
    plan_tasks,
    reproduce,
)
from .trace import EpochRecord, Trace, load_trace

__all__ = [
    "run", "checkpoint_times", "Trace", "EpochRecord", "load_trace",
    "reproduce", "SweepResult", "EXPERIMENTS", "Experiment", "AlgorithmSpec", "SettingSpec", "Scale", "Task",
    "plan_tasks", "LocalExecutor", "RayExecutor", "write_summary", "summary_rows", "plot_experiment",
]
