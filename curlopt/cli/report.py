"""``curlopt report RESULTS_DIR``: a finished study's HTML report, from its saved runs."""

from __future__ import annotations
