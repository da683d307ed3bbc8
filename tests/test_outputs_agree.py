"""A study's report, figures and tables say the same numbers: computed once, from one table."""

from __future__ import annotations

import re

import numpy as np
from cli_helpers import invoke, study_file
from test_study_outputs import epoch, group, make_trace

from curlopt import build_model
from curlopt.agents import PsCurl
from curlopt.experiments import checkpoint_times, run
from curlopt.experiments.outputs import summary as S
from curlopt.experiments.outputs.figures.epochs import epochs_figure
from curlopt.experiments.outputs.figures.report import exact_constraint_figure


def _runs_of_unequal_length():
    """Two seeds: 4 epochs of which 1 violates, and 6 of which 3 violate. Per run 1/4 and 3/6, mean 37.5%; the
    pooled epochs give 4/10 = 40%: the two definitions differ here."""
    first = [epoch(i, 1 + 10 * i, 10, [0.1 if i == 0 else -0.1, -0.2]) for i in range(4)]
    second = [epoch(i, 1 + 10 * i, 10, [0.2 if i < 3 else -0.3, -0.1]) for i in range(6)]
    return group("UC-CURL", [make_trace(0, 0.1, [-0.1, -0.1], epochs=first),
                             make_trace(1, 0.1, [-0.1, -0.1], epochs=second)])


def _legend_texts(figure) -> list[str]:
    return [text.get_text() for ax in figure.axes if ax.get_legend() for text in ax.get_legend().get_texts()]


def test_the_exact_constraints_legend_gives_the_table_share():
    runs = _runs_of_unequal_length()
    (row,) = S.study_rows([runs])
    assert row["violating_epoch_share"] == np.mean([1 / 4, 3 / 6])  # 37.5%, by hand
    texts = _legend_texts(exact_constraint_figure([runs]))
    assert "UC-CURL (37.5% of epochs > 0)" in texts, texts
    assert S.percent(row["violating_epoch_share"]) == "37.5%"


def test_the_epochs_figure_gives_the_table_epochs_per_run():
    # 496 and 497 epochs: a mean of 496.5, which the table writes with 3 significant digits
    runs = group("UC-CURL", [make_trace(seed, 0.1, [-0.1, -0.1], epochs=[epoch(i, 1 + i, 1, [-0.1, -0.1])
                                                                          for i in range(count)])
                             for seed, count in ((0, 496), (1, 497))])
    (row,) = S.study_rows([runs])
    table = S.count_cell(row, "epochs").split(" ± ")[0]
    figure = epochs_figure([runs])
    figure.canvas.draw()
    shown = [t.get_text() for ax in figure.axes for t in ax.texts if t.get_gid() == "epochs-per-run"]
    assert shown == [table] == ["496"]


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_the_epoch_figures_legends_are_outside_their_panels():
    # many epochs over the whole time axis fill the panel: a legend inside it would hide part of the lines
    runs = group("UC-CURL", [make_trace(seed, 0.1, [-0.1, -0.1], epochs=[
        epoch(i, int(t), 1, [0.1 * np.sin(i), -0.1], solve_time=1e-3 * (1 + (i % 7)))
        for i, t in enumerate(np.geomspace(1, 900, 200))]) for seed in (0, 1)])
    for figure in (epochs_figure([runs]), exact_constraint_figure([runs])):
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        legends = [(ax, ax.get_legend()) for ax in figure.axes if ax.get_legend() is not None]
        assert legends
        for ax, legend in legends:
            assert not _overlaps(legend.get_window_extent(renderer), ax.get_window_extent(renderer))


def test_the_report_names_only_figures_it_wrote(tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = invoke(["sweep", str(study_file(tmp_path, out, seeds=2, steps=200)), "--jobs", "1"], capsys)
    assert code == 0, err
    html = (out / "report.html").read_text()
    named = set(re.findall(r"<figcaption>([\w.-]+\.png)", html))
    written = {path.name for path in (out / "figures").glob("*.png")}
    assert named and named <= written, named - written
    assert "exact-constraints.png" not in html
    assert "exact constraint values per epoch (drawn for this report; not a file under figures/)" in html


def test_checkpoints_up_to_the_horizon_are_one_per_step():
    assert checkpoint_times(11_000, 11_001).tolist() == list(range(1, 11_001))
    assert checkpoint_times(11_000, 11_000).tolist() == list(range(1, 11_001))
    trace = run(PsCurl(build_model("queue")), "queue", 500, checkpoints=501, progress=False)
    assert trace.checkpoints["t"].tolist() == list(range(1, 501))
