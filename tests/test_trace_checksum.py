"""Trace files carry a SHA-256 of their content: a hand-edited run file is refused on loading, and a study run again
on its folder runs it again and says so; files without a checksum (written before it existed) still read."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest
from cli_helpers import study_file

from curlopt import CurloptError, build_model
from curlopt.agents import PsCurl
from curlopt.experiments import load_trace, run, run_study

QUIET = dict(jobs=1, progress=False, figures=False, echo=None)


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "run.json.gz"
    run(PsCurl(build_model("queue")), "queue", 300, progress=False).save(path)
    return path


def _document(path):
    return json.loads(gzip.decompress(path.read_bytes()))


def test_the_checksum_is_the_sha256_of_the_rest_of_the_document(trace_file):
    document = _document(trace_file)
    assert list(document)[-1] == "sha256"
    recorded = document.pop("sha256")
    assert recorded == hashlib.sha256(json.dumps(document, separators=(",", ":")).encode()).hexdigest()


def test_a_hand_edited_trace_is_refused(trace_file, tmp_path):
    document = _document(trace_file)
    document["checkpoints"]["regret"][-1] = 123.0  # a plausible number, which every field check accepts
    edited = tmp_path / "edited.json.gz"
    edited.write_bytes(gzip.compress(json.dumps(document).encode()))
    with pytest.raises(CurloptError, match="does not match its sha256 checksum"):
        load_trace(edited)
    # the same edit in a file without a checksum (the older format) is read, unchecked
    del document["sha256"]
    edited.write_bytes(gzip.compress(json.dumps(document).encode()))
    assert load_trace(edited).summary()["regret"] == 123.0


def test_a_trace_without_a_checksum_reads_as_before(trace_file, tmp_path):
    document = _document(trace_file)
    del document["sha256"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(document))
    assert json.dumps(load_trace(old).to_dict()) == json.dumps(load_trace(trace_file).to_dict())


def test_a_study_runs_a_hand_edited_run_again_and_says_so(tmp_path):
    path = study_file(tmp_path, tmp_path / "out", seeds=2, steps=60)
    run_study(path, **QUIET)
    files = sorted((tmp_path / "out" / "runs").rglob("*.json.gz"))
    document = _document(files[0])
    regret = document["checkpoints"]["regret"][-1]
    document["checkpoints"]["regret"][-1] = 123.0
    files[0].write_bytes(gzip.compress(json.dumps(document, separators=(",", ":")).encode()))
    again = run_study(path, **QUIET)
    assert len(again.executed) == 1 and len(again.skipped) == 1
    assert len(again.repaired) == 1 and "sha256 checksum" in again.repaired[0] and "running it again" in \
        again.repaired[0]
    assert load_trace(files[0]).checkpoints["regret"][-1] == regret  # the run again: bit-identical
