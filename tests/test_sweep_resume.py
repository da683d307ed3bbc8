"""A sweep killed with SIGKILL part-way resumes: the finished runs are kept, the run in flight is lost (never read
back as a run), and the resumed sweep's summary is the uninterrupted sweep's."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from curlopt.experiments.outputs.summary import TIME_COLUMNS


def summary_without_times(path: Path) -> list[dict]:
    with open(path) as handle:
        rows = list(csv.DictReader(handle))
    return [{k: v for k, v in row.items() if k not in TIME_COLUMNS} for row in rows]


def sweep_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "curlopt.cli", "reproduce", "queue", "--seeds", "4", "--steps", "20000",
            "--algorithms", "ps-curl-linear,uc-curl-doubling", "--jobs", "1", "--out", str(out), "--no-figures",
            "--no-progress"]


def test_a_sweep_killed_with_sigkill_resumes_to_the_same_summary(tmp_path):
    reference, interrupted = tmp_path / "reference", tmp_path / "interrupted"
    subprocess.run(sweep_command(reference), check=True, capture_output=True, timeout=600)
    process = subprocess.Popen(sweep_command(interrupted), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    runs = interrupted / "runs"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(runs.rglob("*.json.gz"))) < 3:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    finished = len(list(runs.rglob("*.json.gz")))
    assert 3 <= finished < 8, "the sweep should have been killed part-way"
    # the run in flight is lost (at most a temporary file remains, never read as a run); the rest are skipped
    resumed = subprocess.run(sweep_command(interrupted), check=True, capture_output=True, text=True, timeout=600)
    assert f"ran {8 - finished} runs ({finished} were already finished)" in resumed.stdout
    assert summary_without_times(interrupted / "summary.csv") == summary_without_times(reference / "summary.csv")
