"""The pieces of a study's figures; :mod:`curlopt.experiments.outputs.figures.plots` ties them together (use that).

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
* :mod:`.epochs`: solve time per epoch and the epochs' policy sources.

Nothing here imports matplotlib at import time.
"""
