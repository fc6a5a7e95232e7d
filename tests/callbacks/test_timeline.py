"""The timeline (``hiapi.timeline``, ``hiapi.callbacks.Timeline``, ``HIAPI_TIMELINE``): a
Chrome trace whose spans nest per thread, with every op of each step, and ranks that line up."""
import json
from collections import defaultdict

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.runtime import timeline

from tests.distribute.mpi import run_mpi


def check_nesting(events):
    """Complete events on one (pid, tid) either nest or follow each other; returns, for each
    event, the names of the spans enclosing it."""
    by_thread, parents = defaultdict(list), {}
    for n, event in enumerate(events):
        if event["ph"] == "X":
            by_thread[event["pid"], event["tid"]].append(n)
    for members in by_thread.values():
        members.sort(key=lambda n: (events[n]["ts"], -events[n]["dur"]))
        stack = []
        for n in members:
            start, end = events[n]["ts"], events[n]["ts"] + events[n]["dur"]
            while stack and events[stack[-1]]["ts"] + events[stack[-1]]["dur"] <= start + 1e-3:
                stack.pop()
            if stack:
                outer = events[stack[-1]]
                assert end <= outer["ts"] + outer["dur"] + 1e-2, \
                    f"{events[n]} overlaps {outer} without nesting in it"
            parents[n] = [events[k]["name"] for k in stack]
            stack.append(n)
    return parents


def small_model():
    model = hiapi.Sequential([hiapi.Input(shape=(8,)), layers.Dense(16, activation="relu"),
                              layers.Dense(3)])
    model.compile(optimizer="sgd",
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def test_fit_writes_a_trace_of_epochs_steps_and_ops(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 8)).astype("float32"), rng.integers(0, 3, 40)
    path = tmp_path / "trace.json"
    small_model().fit(x, y, batch_size=10, epochs=2, verbose=0, validation_split=0.25,
                      callbacks=[hiapi.callbacks.Timeline(path)])
    assert timeline.ACTIVE is None                    # off again: the plain op loop
    events = json.loads(path.read_text())["traceEvents"]
    parents = check_nesting(events)
    complete = [(n, e) for n, e in enumerate(events) if e["ph"] == "X"]
    steps = [e for _, e in complete if e["name"] == "train step"]
    assert [(e["args"]["epoch"], e["args"]["batch"]) for e in steps] == \
        [(epoch, batch) for epoch in range(2) for batch in range(3)]
    assert [e["name"] for _, e in complete].count("epoch") == 2
    ops_in_steps = [e["name"] for n, e in complete if e["cat"] == "op" and
                    "train step" in parents[n]]
    assert "matmul" in ops_in_steps and len(ops_in_steps) >= 6 * 10
    assert all(parents[n][:1] == ["epoch"] for n, e in complete if e["name"] == "train step")
    assert {e["pid"] for e in events} == {0}


def test_hiapi_timeline_environment_variable(tmp_path, monkeypatch):
    path = tmp_path / "env_trace.json"
    monkeypatch.setenv("HIAPI_TIMELINE", str(path))
    small_model().fit(np.zeros((8, 8), "float32"), np.zeros(8, "int64"), batch_size=4,
                      verbose=0)
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"]]
    assert names.count("train step") == 2 and "matmul" in names


def test_bad_path_is_named():
    with pytest.raises(TypeError, match="Timeline: path must be a file name, got 3"):
        hiapi.callbacks.Timeline(3)


@pytest.mark.parametrize("compression", ["dgc", "none"])
def test_two_ranks_merge_into_one_trace_that_lines_up(tmp_path, compression):
    path = tmp_path / "trace.json"
    run_mpi(2, "timeline.py", compression, env={"HIAPI_TIMELINE": str(path)}, timeout=240)
    events = json.loads(path.read_text())["traceEvents"]
    check_nesting(events)
    steps = {pid: [(e["args"]["epoch"], e["args"]["batch"]) for e in events
                   if e["ph"] == "X" and e["name"] == "train step" and e["pid"] == pid]
             for pid in (0, 1)}
    assert steps[0] == steps[1] == [(epoch, batch) for epoch in range(2) for batch in range(4)]
    names = defaultdict(set)
    for event in events:
        names[event["pid"]].add(event["name"])
    start, wait = ("compressed_start", "compressed_wait") if compression == "dgc" else \
        ("allreduce_start", "allreduce_wait")
    for pid in (0, 1):
        assert {start, wait, "matmul", "epoch"} <= names[pid]
    if compression == "dgc":
        assert "compress" in names[0] and "sparse allreduce" in names[1]
        begins = sorted(e["id"] for e in events if e["ph"] == "b" and e["pid"] == 0)
        ends = sorted(e["id"] for e in events if e["ph"] == "e" and e["pid"] == 0)
        assert begins == ends and len(begins) >= 8       # every exchange posted is completed


def test_render_timeline_draws_the_step(tmp_path):
    """docs/render_timeline.py (the performance guide's picture) draws a trace fit wrote."""
    pytest.importorskip("PIL")
    import runpy
    from pathlib import Path
    from PIL import Image
    trace, png = tmp_path / "trace.json", tmp_path / "step.png"
    small_model().fit(np.zeros((8, 8), "float32"), np.zeros(8, "int64"), batch_size=4,
                      verbose=0, callbacks=[hiapi.callbacks.Timeline(trace)])
    script = Path(__file__).resolve().parents[2] / "docs" / "render_timeline.py"
    render = runpy.run_path(str(script))["render"]
    render(json.loads(trace.read_text())["traceEvents"], -1, png)
    image = Image.open(png)
    assert image.width == 1400 and image.height > 150
    colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert len(colours) > 5                                  # bars in several colours
