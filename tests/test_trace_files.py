"""Damaged run files: loading one raises a CurloptError naming the file (never a crash or a half-read trace),
and a study reports every damaged run and runs it again."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import study_file
from hypothesis import given, settings
from hypothesis import strategies as st

from curlopt import CurloptError

QUIET = dict(jobs=1, progress=False, figures=False, echo=None)


def _edit(change):
    def damage(path: Path) -> None:
        data = json.loads(gzip.decompress(path.read_bytes()))
        change(data)
        path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return damage


def _bytes(make):
    def damage(path: Path) -> None:
        path.write_bytes(make(path.read_bytes()))
    return damage


def _bad_deflate(raw: bytes) -> bytes:
    body = bytearray(raw)
    body[20:60] = b"\xff" * 40  # the 10-byte gzip header stays valid; the deflate stream does not
    return bytes(body)


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("x")


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def change(data):
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value(target[keys[-1]]) if callable(value) else value
    return change


DAMAGE = {
    "bad deflate stream": _bytes(_bad_deflate),
    "truncated": _bytes(lambda raw: raw[: len(raw) // 2]),
    "empty file": _bytes(lambda raw: b""),
    "not gzip": _bytes(lambda raw: b"{}"),
    "deeply nested JSON": _bytes(lambda raw: gzip.compress(b"[" * 100_000 + b"]" * 100_000)),
    "empty t": _edit(_set("checkpoints", "t", [])),
    "2-D t": _edit(_set("checkpoints", "t", lambda t: [[v] for v in t])),
    "t decreasing": _edit(_set("checkpoints", "t", lambda t: t[::-1])),
    "t as strings": _edit(_set("checkpoints", "t", lambda t: [str(v) for v in t])),
    "optimum a string": _edit(_set("optimum", "4.47")),
    "optimum objective a string": _edit(_set("optimum", "objective", "4.47")),
    "NaN final objective": _edit(_set("checkpoints", "objective", lambda c: c[:-1] + [float("nan")])),
    "NaN final regret": _edit(_set("checkpoints", "regret", lambda c: c[:-1] + [float("nan")])),
    "NaN final constraint": _edit(_set("checkpoints", "constraints", lambda c: c[:-1] + [[float("nan"), 0.0]])),
    "constraints shorter than t": _edit(_set("checkpoints", "constraints", lambda c: c[:-1])),
    "a 400-digit reward": _edit(_set("checkpoints", "rewards", lambda c: [[10 ** 400]] + c[1:])),
    "missing column": _edit(lambda data: data["checkpoints"].pop("violation")),
    "meta a list": _edit(_set("meta", [])),
    "epoch length a string": _edit(lambda data: data["epochs"][0].update(length="x")),
    "epochs an object": _edit(_set("epochs", {})),
    "wall_time a string": _edit(_set("wall_time", "1.5")),
    "a directory at the path": _directory,
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_load_trace_refuses_every_damaged_file_with_a_curlopt_error(case, reference_trace, tmp_path):
    from curlopt.experiments.simulation.trace import load_trace

    path = tmp_path / reference_trace.name
    path.write_bytes(reference_trace.read_bytes())
    DAMAGE[case](path)
    with pytest.raises(CurloptError) as error:
        load_trace(path)
    assert str(path) in str(error.value)


def test_three_hundred_bit_flips_load_identically_or_raise_a_curlopt_error(reference_trace, tmp_path):
    from curlopt.experiments.simulation.trace import load_trace

    raw = reference_trace.read_bytes()
    reference = json.dumps(load_trace(reference_trace).to_dict())
    rng = random.Random(14)
    path = tmp_path / reference_trace.name
    outcomes = {"identical": 0, "refused": 0}
    for _ in range(300):
        flipped = bytearray(raw)
        bit = rng.randrange(len(flipped) * 8)
        flipped[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(flipped))
        try:
            trace = load_trace(path)
        except CurloptError:
            outcomes["refused"] += 1
        else:  # e.g. a flip in the gzip header's time stamp
            assert json.dumps(trace.to_dict()) == reference
            outcomes["identical"] += 1
    assert outcomes["refused"] > 250, outcomes


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=6)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_any_replaced_field_loads_consistently_or_raises_a_curlopt_error(data, reference_trace):
    from curlopt.experiments.simulation.trace import Trace

    document = json.loads(gzip.decompress(reference_trace.read_bytes()))
    parent, key = None, None
    node = document
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans(), label="descend"):
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, data.draw(st.sampled_from(keys), label="key")
        node = parent[key]
    replacement = data.draw(_json, label="value")
    if parent is None:
        document = replacement
    else:
        parent[key] = replacement
    try:
        trace = Trace.from_dict(document)
    except CurloptError:
        return
    summary = trace.summary()  # what every reader of a loaded run uses: it must work
    assert summary["steps"] == int(trace.checkpoints["t"][-1])
    n = trace.checkpoints["t"].size
    assert all(np.shape(trace.checkpoints[k])[0] == n for k in trace.checkpoints)


def test_a_study_reports_and_reruns_every_damaged_run_file(tmp_path):
    from curlopt.experiments import run_study
    from curlopt.experiments.simulation.trace import load_trace

    cases = list(DAMAGE)
    path = study_file(tmp_path, tmp_path / "out", seeds=len(cases), steps=30)
    first = run_study(path, **QUIET)
    files = sorted((tmp_path / "out" / "runs").rglob("*.json.gz"))
    assert len(files) == len(cases) and not first.failed
    for case, file in zip(cases, files, strict=True):
        DAMAGE[case](file)
    messages: list[str] = []
    second = run_study(path, **{**QUIET, "echo": messages.append})
    assert not second.failed and not second.skipped
    assert len(second.executed) == len(second.repaired) == len(cases)
    assert all("running it again" in line for line in second.repaired)
    for file in files:
        assert int(load_trace(file).checkpoints["t"][-1]) == 30
    moved = [p for p in files[0].parent.iterdir() if ".moved-aside" in p.name]
    assert len(moved) == 1 and (moved[0] / "inside").exists()
    assert any("moved it to" in message for message in messages)
    third = run_study(path, **QUIET)
    assert len(third.skipped) == len(cases) and not third.executed
