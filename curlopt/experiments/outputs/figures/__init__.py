"""A study's figures: :func:`plot_study` writes every figure of a study (see :mod:`.plots` for what each shows).

This package is the figures' one public door; its modules are the pieces:

* :mod:`.plots`: every figure of a study, setting by setting (:func:`plot_study`, :func:`setting_figures`);
* :mod:`.style`: colours, line styles, markers, text and axes helpers, the lazy
  matplotlib import and the atomic PNG writer;
* :mod:`.titles`: titles wrapped to the width of their figure or panel;
* :mod:`.view`: the configurations of one setting as curves stacked over seeds,
  styled and split into panels;
* :mod:`.panel`: one curve panel (means, bands, reference lines, y range, notes)
  and the legends of the curve figures;
* :mod:`.curves`: the objective, regret, constraints (or costs) and overview figures;
* :mod:`.frontier` and :mod:`.labels`: the regret–violation frontier and the
  placement of its point labels;
* :mod:`.epochs`: solve time per epoch and the epochs' policy sources;
* :mod:`.dots`: scatters of many dots whose positions are made when drawn, not kept;
* :mod:`.report`: the figures of the HTML report.

Nothing here imports matplotlib at import time.
"""

from .curves import curve_figure
from .epochs import SOURCES, epochs_figure, source_shares
from .frontier import FrontierPoint, frontier_figure, frontier_points
from .panel import COINCIDE_TOLERANCE, NEAR_TOLERANCE, draw_panel, settle_time
from .plots import plot_study, setting_figures
from .style import SUMMARY_HASH_KEY, load_matplotlib, save_png
from .view import (
           MAX_LINES,
           SINGLE_PANEL_MAX,
           Curves,
           SettingView,
           algorithm_label,
           curves_from_traces,
           setting_view,
           short_label,
)

__all__ = ["plot_study", "setting_figures", "Curves", "curves_from_traces", "setting_view", "SettingView",
           "frontier_figure", "frontier_points", "FrontierPoint", "curve_figure", "epochs_figure", "source_shares",
           "short_label", "algorithm_label", "draw_panel", "settle_time", "COINCIDE_TOLERANCE", "NEAR_TOLERANCE",
           "MAX_LINES", "SINGLE_PANEL_MAX", "SOURCES", "SUMMARY_HASH_KEY", "load_matplotlib", "save_png"]
