"""Running agents: the learning loop, traces, studies (grids of configurations × seeds), summaries and figures.

A study (a TOML file, or a ``reproduce`` preset: a study file shipped in :mod:`.presets`) is read by
:func:`load_study`, planned into configurations and runs, and run (resumably) by :func:`run_study`;
:func:`reproduce` runs the paper's experiments as presets of the same runner.
Each room has one door, its package: :mod:`.simulation` (one run), :mod:`.study` (a study before it runs),
:mod:`.outputs` (what a study writes, :mod:`.outputs.figures` its figures) and :mod:`.compare` (backends and
solvers side by side); this package is the door to the names users need most.
Nothing heavy is imported here: matplotlib loads when a figure is drawn, Ray when
its executor is chosen.
"""

from .executors import LocalExecutor, RayExecutor
from .outputs import ConfigurationRuns, plot_study, write_study_summary
from .presets import EXPERIMENTS, PROFILES, AlgorithmSpec, Experiment, Scale, experiment_study, plan_tasks, reproduce
from .runner import StudyResult, run_study
from .simulation import EpochRecord, Trace, checkpoint_times, load_trace, run
from .study import Configuration, SettingSpec, Study, StudyAlgorithm, Task, configuration_key, load_study, plan_study

__all__ = [
    "run", "checkpoint_times", "Trace", "EpochRecord", "load_trace",
    "run_study", "load_study", "Study", "StudyAlgorithm", "SettingSpec", "plan_study", "Configuration",
    "configuration_key", "Task", "ConfigurationRuns", "StudyResult", "write_study_summary", "plot_study",
    "reproduce", "experiment_study", "EXPERIMENTS", "PROFILES", "Experiment", "AlgorithmSpec", "Scale", "plan_tasks",
    "LocalExecutor", "RayExecutor",
]
