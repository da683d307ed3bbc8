"""A study before it runs, and the one public door to it: the study file's schema and data model (:mod:`.spec`),
the reader that checks a TOML file or a dict against it (:mod:`.reader`), and the plan of configurations and tasks
(:mod:`.planning`; :mod:`.episodic` for a study of episodic models)."""

from collections.abc import Callable

from .episodic import EpisodicTask, plan_episodic_study
from .planning import (
    Configuration,
    Plan,
    StudySize,
    Task,
    agent_parameters,
    check_size,
    configuration_key,
    option_label,
    study_size,
    value_label,
)
from .planning import plan_study as plan_infinite_horizon_study
from .reader import load_study, study_from_dict
from .spec import DEFAULT_CHECKPOINTS, DEFAULT_MAX_RUNS, MAX_SEEDS, SettingSpec, Study, StudyAlgorithm, StudyError

__all__ = ["load_study", "study_from_dict", "Study", "StudyAlgorithm", "SettingSpec", "StudyError", "plan_study",
           "Plan", "Configuration", "Task", "StudySize", "study_size", "check_size", "configuration_key",
           "agent_parameters", "option_label", "value_label", "DEFAULT_CHECKPOINTS", "DEFAULT_MAX_RUNS", "MAX_SEEDS",
           "EpisodicTask", "plan_episodic_study", "plan_infinite_horizon_study"]


def plan_study(study: Study, say: Callable[[str], None] | None = None, max_runs: int | None = None) -> Plan:
    """A study's plan: :func:`.planning.plan_study` for infinite-horizon models, :func:`.episodic.plan_episodic_study`
    for episodic ones (the same configurations and keys; episodic runs as :class:`.episodic.EpisodicTask`)."""
    if study.episodic:
        return plan_episodic_study(study, say, max_runs)
    return plan_infinite_horizon_study(study, say, max_runs)
