"""Different random numbers on every worker: dropout masks, noise and augmentations.

hiapi's random layers (``hiapi.layers.seeded.SeededLayer``) draw from counter-based streams
keyed by the layer's seed and a step counter. Data-parallel workers start with rank 0's
counters (broadcast at the start of ``fit``), so without this every worker would apply the
*same* masks to its part of the global batch: the global batch of N workers would repeat one
mask pattern N times, a correlated regularizer that single-process training on that batch does
not have. Horovod and ``tf.distribute`` give each replica its own stream for the same reason.

Each worker therefore moves its counters ``rank * RANK_STRIDE`` along the stream at the first
step of each ``fit`` (after ``BackupAndRestore`` restored rank 0's counters, so the offset is
applied once, on top of whatever was loaded). Rank 0 keeps offset 0, so the counters it saves
are the ones a resumed run starts from, and a resumed run draws what an uninterrupted one
would. 2**40 steps apart, the streams of different ranks never meet.
"""
RANK_STRIDE = 2**40


def _layers(layer):
    yield layer
    for sublayer in getattr(layer, "_sublayers", ()):
        yield from _layers(sublayer)


def offset_for_rank(model, rank):
    """Move every random layer's counter of ``model`` to this rank's stream."""
    from hiapi.layers.seeded import SeededLayer
    if rank == 0:
        return
    seen = set()
    for layer in _layers(model):
        if isinstance(layer, SeededLayer) and layer.built and id(layer) not in seen:
            seen.add(id(layer))
            layer.counter.assign(layer.counter.numpy() + rank * RANK_STRIDE)
