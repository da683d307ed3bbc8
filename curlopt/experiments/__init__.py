"""Running agents: the learning loop, traces, studies (grids of configurations × seeds), summaries and figures.

A study (a TOML file, or a ``reproduce`` preset) is read by :func:`load_study`,
planned into configurations and runs, and run (resumably) by :func:`run_study`;
:func:`reproduce` runs the paper's experiments as presets of the same runner.
Nothing heavy is imported here: matplotlib loads when a figure is drawn, Ray when
its executor is chosen.
"""

from .configurations import ConfigurationRuns
from .executors import LocalExecutor, RayExecutor
from .loop import checkpoint_times, run
from .planning import Configuration, Task, configuration_key, plan_study
from .plots import plot_study
from .runner import SweepResult, run_study
from .study import SettingSpec, Study, StudyAlgorithm
from .study_reader import load_study
from .summary import write_study_summary
from .sweep import EXPERIMENTS, PROFILES, AlgorithmSpec, Experiment, Scale, experiment_study, plan_tasks, reproduce
from .trace import EpochRecord, Trace, load_trace

__all__ = [
    "run", "checkpoint_times", "Trace", "EpochRecord", "load_trace",
    "run_study", "load_study", "Study", "StudyAlgorithm", "SettingSpec", "plan_study", "Configuration",
    "configuration_key", "Task", "ConfigurationRuns", "SweepResult", "write_study_summary", "plot_study",
    "reproduce", "experiment_study", "EXPERIMENTS", "PROFILES", "Experiment", "AlgorithmSpec", "Scale", "plan_tasks",
    "LocalExecutor", "RayExecutor",
]
