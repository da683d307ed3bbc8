"""A study before it runs, and the one public door to it: the study file's schema and data model (:mod:`.spec`),
the reader that checks a TOML file or a dict against it (:mod:`.reader`), and the plan of configurations and tasks
(:mod:`.planning`)."""

from .planning import (
    Configuration,
    Plan,
    StudySize,
    Task,
    agent_parameters,
    check_size,
    configuration_key,
    option_label,
    plan_study,
    study_size,
    value_label,
)
from .reader import load_study, study_from_dict
from .spec import DEFAULT_CHECKPOINTS, DEFAULT_MAX_RUNS, MAX_SEEDS, SettingSpec, Study, StudyAlgorithm, StudyError

__all__ = ["load_study", "study_from_dict", "Study", "StudyAlgorithm", "SettingSpec", "StudyError", "plan_study",
           "Plan", "Configuration", "Task", "StudySize", "study_size", "check_size", "configuration_key",
           "agent_parameters", "option_label", "value_label", "DEFAULT_CHECKPOINTS", "DEFAULT_MAX_RUNS", "MAX_SEEDS"]
