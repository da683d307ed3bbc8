"""Running agents: the learning loop, traces, studies (grids of configurations × seeds), summaries and figures.

A study (a TOML file, or a ``reproduce`` preset) is read by :func:`load_study`,
planned into configurations and runs, and run (resumably) by :func:`run_study`;
:func:`reproduce` runs the paper's experiments as presets of the same runner.
Nothing heavy is imported here: matplotlib loads when a figure is drawn, Ray when
its executor is chosen.
"""

from .executors import LocalExecutor, RayExecutor
from .outputs.figures.plots import plot_study
from .outputs.runs import ConfigurationRuns
from .outputs.summary import write_study_summary
from .presets import EXPERIMENTS, PROFILES, AlgorithmSpec, Experiment, Scale, experiment_study, plan_tasks, reproduce
from .runner import StudyResult, run_study
from .simulation.loop import checkpoint_times, run
from .simulation.trace import EpochRecord, Trace, load_trace
from .study.planning import Configuration, Task, configuration_key, plan_study
from .study.reader import load_study
from .study.spec import SettingSpec, Study, StudyAlgorithm

__all__ = [
    "run", "checkpoint_times", "Trace", "EpochRecord", "load_trace",
    "run_study", "load_study", "Study", "StudyAlgorithm", "SettingSpec", "plan_study", "Configuration",
    "configuration_key", "Task", "ConfigurationRuns", "StudyResult", "write_study_summary", "plot_study",
    "reproduce", "experiment_study", "EXPERIMENTS", "PROFILES", "Experiment", "AlgorithmSpec", "Scale", "plan_tasks",
    "LocalExecutor", "RayExecutor",
]
