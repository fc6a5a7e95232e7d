"""Checks that every worker is about to read the same amount of data.

Each worker runs one step per batch, and each step is a collective (the gradient allreduce): a
worker with one more batch than the others waits forever for partners that have finished.
Workers holding different sample counts also split each global batch differently, so even when
the step counts happen to agree the gradients are scaled wrongly. Both are found here, with one
small allgather, before the first step, and every rank raises the same error (it sees every
rank's numbers) instead of some ranks hanging.
"""
import numpy as np


def agree_counts(communicator, what, counts):
    """Raise on every rank unless all ranks hold the same ``counts`` ({name: int})."""
    names = list(counts)
    mine = np.array([int(counts[name]) for name in names], np.int64)
    everyone, _ = communicator.allgather(mine)
    everyone = everyone.reshape(communicator.size, len(names))
    differing = [k for k, name in enumerate(names) if (everyone[:, k] != everyone[0, k]).any()]
    if not differing:
        return
    detail = "; ".join(
        f"{names[k].replace('_', ' ')}: " + ", ".join(
            f"rank {r}: {_show(everyone[r, k])}" for r in range(communicator.size))
        for k in differing)
    raise ValueError(f"{what}: the workers have different amounts of data ({detail}). Under "
                     f"hiapi.distribute.Strategy every rank must load the same arrays (each "
                     f"takes its share of every global batch) or the same number of batches")


def agree_batch(communicator, local_n, has_batch, step, what):
    """The global batch size of this step, None when every rank's data has run out; an error
    on every rank when only some have."""
    everyone, _ = communicator.allgather(np.array([int(has_batch), int(local_n)], np.int64))
    everyone = everyone.reshape(communicator.size, 2)
    have = everyone[:, 0].astype(bool)
    if have.all():
        return int(everyone[:, 1].sum())
    if not have.any():
        return None
    raise ValueError(f"{what}: at step {step} rank(s) {np.flatnonzero(have).tolist()} have a "
                     f"batch but rank(s) {np.flatnonzero(~have).tolist()} ran out of data; "
                     f"every rank's generator must yield the same number of batches")


def _show(value):
    return "until it runs out" if value < 0 else str(value)
