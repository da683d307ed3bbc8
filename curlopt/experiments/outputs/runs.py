"""What a study's outputs are computed from: one configuration's finished runs.

A *configuration* is one algorithm (a registered agent) with one complete set of
agent options on one setting (model). A study runs every configuration of its
grid over the same seeds; the summary tables and figures
(:mod:`curlopt.experiments.outputs.summary`, :mod:`curlopt.experiments.outputs.figures.plots`) take a
list of :class:`ConfigurationRuns`, in the study's order, and never look at
files or at how the runs were executed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..simulation.trace import Trace
    from ..study.spec import SettingSpec

__all__ = ["ConfigurationRuns"]


@dataclass
class ConfigurationRuns:
    """One configuration of a study and its finished runs.

    Attributes
    ----------
    setting : SettingSpec
        The model it ran on (``name``, ``label``, ``cost_names``, ``build()``).
    algorithm : str
        The algorithm's key in the study (e.g. ``uc-curl``).
    agent : str
        The registered agent name (``curlopt.agents.AGENTS``).
    label : str
        Display name for tables and legends, including the varied options,
        e.g. ``UC-CURL (radius=experiment, K_ε=3)``.
    key : str
        File-name-safe identifier of the configuration (its run directory).
    options : dict
        Every agent option of the configuration (``make_agent`` keywords).
    varied : dict
        The options set by the study's grid axes (a subset of ``options``), in
        axis order; empty when the study has no grid.
    traces : list of Trace
        The finished runs, sorted by seed.
    """

    setting: SettingSpec
    algorithm: str
    agent: str
    label: str
    key: str
    options: dict[str, Any]
    varied: dict[str, Any] = field(default_factory=dict)
    traces: list[Trace] = field(default_factory=list)

    @property
    def seeds(self) -> list[int]:
        return [int(trace.meta.get("seed", -1)) for trace in self.traces]
