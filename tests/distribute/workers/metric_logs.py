"""Evaluate with built-in and custom (host-side) metrics under a Strategy; each rank writes its
logs. Every rank must report the metrics of the whole data set.

usage: metric_logs.py OUT_DIR
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers


class LabelSum(hiapi.metrics.Metric):
    """A Keras-style metric updated on the host: the sum of all labels seen."""

    def __init__(self, name="label_sum", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable((), "zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.total.assign_add(np.sum(y_true))

    def result(self):
        return self.total


def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(103, 3)).astype(np.float32), rng.normal(size=103).astype(np.float32)


def model():
    net = hiapi.Sequential([hiapi.Input((3,)), layers.Dense(1)])
    net.compile(optimizer="sgd", loss="mse",
                metrics=["mae", hiapi.metrics.RootMeanSquaredError(), LabelSum()])
    net.set_weights([np.array([[0.5], [-1.0], [2.0]], np.float32), np.array([0.25], np.float32)])
    return net


if __name__ == "__main__":
    strategy = hiapi.distribute.Strategy()
    with strategy.scope():
        net = model()
    x, y = data()
    logs = net.evaluate(x, y, batch_size=10, verbose=0, return_dict=True)
    with open(f"{sys.argv[1]}/metrics_{strategy.rank}.json", "w") as handle:
        json.dump(logs, handle)
