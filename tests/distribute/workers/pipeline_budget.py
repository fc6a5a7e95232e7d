"""Train an MLP whose layers alternate wide and narrow on ``Strategy(pipeline_stages=2,
schedule="gpipe")`` under a per-process ``memory_budget`` (float64), and write per rank the
weights and what ``explain`` says, with the time-balanced split for comparison (when the
budget fits no split, fit fails on every rank and aborts the job). Run without mpiexec with ``reference``: the same model trained
in one process without a budget.

usage: pipeline_budget.py OUT_DIR (pipeline|reference) BUDGET_BYTES [FIRST_LAYER_OF_STAGE_1]
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers
from hiapi.distribute.pipeline import split

WIDTHS = (64, 512, 16, 512, 16, 64)   # cutting after a 512 makes stage 1 hold 4 x 512 wide


def main(out, mode, budget, pipeline_split=None):
    hiapi.config.set_floatx("float64")
    strategy = None if mode == "reference" else hiapi.distribute.Strategy(
        pipeline_stages=2, micro_batches=4, schedule="gpipe", pipeline_split=pipeline_split)
    hiapi.utils.set_random_seed(3)
    with strategy.scope() if strategy else _Nothing():
        model = hiapi.Sequential([hiapi.Input(shape=(16,))] +
                                 [layers.Dense(w, activation="tanh") for w in WIDTHS] +
                                 [layers.Dense(3, activation="softmax")])
        model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                      memory_budget=None if strategy is None else budget)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(128, 16))
    y = (x[:, :3].argmax(axis=1)).astype("int64")
    rank = strategy.rank if strategy else 0
    model.fit(x, y, batch_size=64, epochs=2, verbose=0)     # no split fits: fit aborts the job
    np.savez(f"{out}/{mode}_{rank}.npz", *model.get_weights())
    report = {} if strategy is None else strategy.explain(print_fn=lambda text: None)
    if strategy is not None:
        report = {key: report[key] for key in ("split", "planned_stage_bytes", "memory_budget",
                                                "planned_arena_bytes_this_rank")}
        report["balanced_split"] = split.balanced_split(strategy.costs, 2)
        report["starts"] = strategy.starts
    with open(f"{out}/{mode}_{rank}.json", "w") as handle:
        json.dump(report, handle)


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:] or None)
