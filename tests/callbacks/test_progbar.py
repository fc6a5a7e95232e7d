"""Progress output: a tqdm bar on a terminal; one plain line per epoch, as Keras prints, when
stdout is a file or a pipe (a bar redrawn with carriage returns would make one huge line)."""
import io
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.callbacks.progbar import format_logs, format_step_time

EPOCH_LINE = re.compile(r"^4/4 - \d+s \d+(us|ms|s)/step - loss: \d+\.\d{4} - "
                        r"accuracy: \d\.\d{4}$")
REPO = pathlib.Path(__file__).resolve().parents[2]


def fit(verbose=1, epochs=3):
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32)
    model.fit(x, (x[:, 0] > 0).astype(np.int64), batch_size=8, epochs=epochs, verbose=verbose)


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_redirected_to_a_file_prints_one_plain_line_per_epoch(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / "tests" / "callbacks")!r})
        from test_progbar import fit
        fit()
    """)
    log = tmp_path / "fit.log"
    with open(log, "w") as out:
        done = subprocess.run([sys.executable, "-c", script], stdout=out, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert lines[0::2] == ["Epoch 1/3", "Epoch 2/3", "Epoch 3/3"]
    assert len(lines) == 6 and all(EPOCH_LINE.match(line) for line in lines[1::2]), lines


def test_captured_stdout_is_not_a_terminal(capsys):
    fit(epochs=2)
    out = capsys.readouterr().out
    assert "\r" not in out
    lines = out.splitlines()
    assert lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2" and len(lines) == 4
    assert EPOCH_LINE.match(lines[1]) and EPOCH_LINE.match(lines[3])


def test_a_terminal_gets_the_tqdm_bar(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    fit(epochs=1)
    out = terminal.getvalue()
    assert not out.startswith("Epoch")          # one epoch: no header, as in Keras
    assert "\r" in out and "4/4" in out and "loss: " in out     # the bar, redrawn in place
    assert not any(EPOCH_LINE.match(line) for line in out.splitlines())


def test_verbose_2_and_0(capsys):
    fit(verbose=2, epochs=2)
    out = capsys.readouterr().out
    lines = out.splitlines()[-4:]                # Keras's: a header, then the epoch's line
    assert "\r" not in out and lines[0] == "Epoch 1/2" and lines[2] == "Epoch 2/2"
    assert re.fullmatch(r"4/4 - \d+s - \d+(m|u)?s/step - loss: \d\.\d{4} - "
                        r"accuracy: \d\.\d{4}", lines[1]), lines[1]
    fit(verbose=0)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("seconds, text", [(0, "0s/step"), (2.4, "2s/step"),
                                           (0.0314, "31ms/step"), (0.00085, "850us/step")])
def test_step_time_units_follow_keras(seconds, text):
    assert format_step_time(seconds) == text


def test_small_values_are_written_in_scientific_notation_as_keras_does():
    logs = {"loss": 0.00024393, "accuracy": 1.0, "mae": -0.5, "lr": 0.001, "zero": 0.0}
    assert format_logs(logs) == ("loss: 2.4393e-04 - accuracy: 1.0000 - mae: -0.5000 - "
                                 "lr: 1.0000e-03 - zero: 0.0000e+00")


def test_evaluate_and_predict_print_their_pass_as_keras_does_but_not_fit_validation(capsys):
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model.fit(x, y, batch_size=8, epochs=1, validation_split=0.25)
    assert len(capsys.readouterr().out.splitlines()) == 1      # one epoch: its line alone
    model.evaluate(x, y, batch_size=8)                          # verbose="auto": 1
    model.predict(x, batch_size=8)
    evaluated, predicted = capsys.readouterr().out.splitlines()
    assert re.match(r"^4/4 - \d+s \d+(us|ms|s)/step - loss: \d+\.\d{4} - "
                    r"accuracy: \d\.\d{4}$", evaluated), evaluated
    assert re.match(r"^4/4 - \d+s \d+(us|ms|s)/step$", predicted), predicted
    model.evaluate(x, y, verbose=0)
    model.predict(x, verbose=0)
    assert capsys.readouterr().out == ""


def test_predict_on_a_terminal_gets_the_tqdm_bar(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(2)])
    model.predict(np.zeros((32, 3), np.float32), batch_size=8)
    assert "\r" in terminal.getvalue() and "4/4" in terminal.getvalue()
