"""The first step of a fit compiles (tens of seconds on a cold numba cache): the progress output
says so and leaves it out of the per-step time and the ETA."""
import io
import re

import pytest

from hiapi.callbacks import progbar
from hiapi.callbacks.progbar import ProgbarLogger


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def run_epochs(monkeypatch, stream, verbose, epochs=2, steps=10, compile_s=30.0, step_s=0.03):
    clock = Clock()
    monkeypatch.setattr(progbar.time, "perf_counter", clock)
    monkeypatch.setattr(progbar.sys, "stdout", stream)
    logger = ProgbarLogger(verbose)
    logger.set_params({"epochs": epochs, "steps": steps, "verbose": verbose})
    logger.on_train_begin()
    for epoch in range(epochs):
        logger.on_epoch_begin(epoch)
        for batch in range(steps):
            clock.now += compile_s if (epoch, batch) == (0, 0) else step_s
            logger.on_train_batch_end(batch, {"loss": 0.5})
        logger.on_epoch_end(epoch, {"loss": 0.5})
    logger.on_train_end()
    return stream.getvalue()


def test_plain_lines_leave_the_compiling_step_out_of_the_step_time(monkeypatch):
    out = run_epochs(monkeypatch, io.StringIO(), verbose=1)
    lines = out.splitlines()
    assert lines[1] == "10/10 - 30s 30ms/step - loss: 0.5000"      # elapsed keeps it
    assert lines[3] == "10/10 - 0s 30ms/step - loss: 0.5000"        # later epochs: all steps


def test_verbose_2_leaves_it_out_too(monkeypatch):
    lines = run_epochs(monkeypatch, io.StringIO(), verbose=2).splitlines()
    assert lines[:2] == ["Epoch 1/2", "10/10 - 30s - 30ms/step - loss: 0.5000"]


def test_the_bar_says_compiling_and_its_eta_ignores_the_first_step(monkeypatch):
    out = run_epochs(monkeypatch, FakeTerminal(), verbose=1, epochs=1, steps=200)
    assert "compiling the train step" in out
    assert "first step 30.0s (compiling)" in out
    assert "30ms/step" in out and not re.search(r"\d{4,}ms/step", out)
    # every ETA shown after the first step is under 10 s (199 steps of 30 ms), not hours
    etas = re.findall(r"<(\d+):(\d+)", out)
    assert etas and all(int(m) == 0 and int(s) < 10 for m, s in etas[1:]), etas


def test_a_single_step_epoch_reports_that_step(monkeypatch):
    lines = run_epochs(monkeypatch, io.StringIO(), verbose=1, epochs=1, steps=1).splitlines()
    assert lines[0] == "1/1 - 30s 30s/step - loss: 0.5000"      # one epoch: no header
