"""Gradient compression for data-parallel training, pluggable by name or object.

A compressor turns one worker's gradient into a small *payload* (a list of 1-D arrays) and
turns every worker's payloads back into the summed dense gradient. Lossy compressors keep what
they did not send in local state (residual / error feedback), so no gradient mass is lost, only
delayed. State arrays are named by ``state_slots`` and live in Variables the strategy creates.

- ``fp16``: half precision (Horovod's compression).
- ``topk`` (``ratio`` kept) and ``threshold`` (``|r| >= threshold``): sparsification with the
  unsent remainder accumulated locally (Strom 2015; Aji & Heafield 2017).
- ``qsgd``: stochastic quantization to ``levels`` levels of the L2 norm, unbiased
  (Alistarh et al. 2017, https://arxiv.org/abs/1610.02132).
- ``onebit``: sign and one scale per tensor with error feedback (Seide et al. 2014).
- ``dgc``: deep gradient compression (Lin et al. 2018, https://arxiv.org/abs/1712.01887): top-k
  of the locally accumulated *velocity* (momentum correction), momentum factor masking, local
  gradient clipping, and an exponential sparsity warm-up over the first epochs.
"""
import math

import numpy as np


class Compressor:
    name = "none"
    state_slots: tuple[str, ...] = ()
    dense = False          # True: payloads can be summed by a plain allreduce

    def compress(self, gradient, state):
        raise NotImplementedError

    def decompress(self, payloads, shape, dtype):
        raise NotImplementedError

    def on_epoch_begin(self, epoch):
        pass


class NoCompression(Compressor):
    dense = True

    def compress(self, gradient, state):
        return [gradient.reshape(-1)]

    def decompress(self, payloads, shape, dtype):
        return np.sum([p[0] for p in payloads], axis=0).reshape(shape).astype(dtype)


class FP16(Compressor):
    name = "fp16"

    def compress(self, gradient, state):
        return [gradient.reshape(-1).astype(np.float16)]

    def decompress(self, payloads, shape, dtype):
        total = np.zeros(int(np.prod(shape)), np.float32)
        for payload in payloads:
            total += payload[0].astype(np.float32)
        return total.reshape(shape).astype(dtype)


def _sparse_sum(payloads, shape, dtype):
    total = np.zeros(int(np.prod(shape)), dtype)
    for indices, values in payloads:
        np.add.at(total, indices, values.astype(dtype))
    return total.reshape(shape)


class _Sparse(Compressor):
    pairs = True           # payload is (indices, values): summable by a sparse allreduce

    def decompress(self, payloads, shape, dtype):
        return _sparse_sum(payloads, shape, dtype)

    @staticmethod
    def _send(buffer, indices):
        """Payload of ``buffer`` at ``indices``; those coordinates are cleared (sent)."""
        values = buffer[indices].copy()
        buffer[indices] = 0
        return [indices.astype(np.int32), values]


class TopK(_Sparse):
    """Send the ``ratio`` fraction of largest-magnitude coordinates of gradient + residual."""
    name = "topk"
    state_slots = ("residual",)

    def __init__(self, ratio=0.01):
        if not 0 < ratio <= 1:
            raise ValueError(f"topk: ratio must be in (0, 1], got {ratio!r}")
        self.ratio = ratio

    def compress(self, gradient, state):
        residual = state["residual"].reshape(-1)
        residual += gradient.reshape(-1)
        k = max(1, math.ceil(self.ratio * residual.size))
        indices = np.argpartition(np.abs(residual), residual.size - k)[-k:]
        return self._send(residual, indices)


class Threshold(_Sparse):
    """Send the coordinates of gradient + residual whose magnitude reaches ``threshold``."""
    name = "threshold"
    state_slots = ("residual",)

    def __init__(self, threshold=1e-3):
        self.threshold = threshold

    def compress(self, gradient, state):
        residual = state["residual"].reshape(-1)
        residual += gradient.reshape(-1)
        return self._send(residual, np.flatnonzero(np.abs(residual) >= self.threshold))


class QSGD(Compressor):
    """Each coordinate becomes ``norm * sign * l / levels`` with l the integer below or above
    ``|g| / norm * levels``, rounded up with probability equal to the fractional part, so the
    expectation is exactly the gradient."""
    name = "qsgd"

    def __init__(self, levels=127, seed=0):
        if not 1 <= levels <= 127:
            raise ValueError(f"qsgd: levels must be in [1, 127] (int8 payload), got {levels!r}")
        self.levels = levels
        self.rng = np.random.default_rng(seed)

    def reseed(self, rank):
        self.rng = np.random.default_rng([self.rng.integers(2**32), rank])

    def compress(self, gradient, state):
        g = gradient.reshape(-1).astype(np.float64)
        norm = float(np.linalg.norm(g))
        if norm == 0.0:
            return [np.zeros(1, np.float32), np.zeros(g.size, np.int8)]
        scaled = np.abs(g) / norm * self.levels
        lower = np.floor(scaled)
        level = lower + (self.rng.random(g.size) < scaled - lower)
        return [np.array([norm], np.float32), (np.sign(g) * level).astype(np.int8)]

    def decompress(self, payloads, shape, dtype):
        total = np.zeros(int(np.prod(shape)), np.float64)
        for norm, levels in payloads:
            total += float(norm[0]) * levels.astype(np.float64) / self.levels
        return total.reshape(shape).astype(dtype)


class OneBit(Compressor):
    """Signs (packed 8 per byte) and the mean magnitude; what the signs miss is fed back."""
    name = "onebit"
    state_slots = ("residual",)

    def compress(self, gradient, state):
        residual = state["residual"].reshape(-1)
        residual += gradient.reshape(-1)
        # rounded to the float32 that is sent, so the residual keeps exactly what was not
        scale = float(np.float32(np.abs(residual).mean())) if residual.size else 0.0
        positive = residual >= 0
        residual -= np.where(positive, scale, -scale).astype(residual.dtype)
        return [np.packbits(positive), np.array([scale], np.float32)]

    def decompress(self, payloads, shape, dtype):
        n = int(np.prod(shape))
        total = np.zeros(n, np.float64)
        for bits, scale in payloads:
            signs = np.unpackbits(bits)[:n].astype(np.float64) * 2 - 1
            total += signs * float(scale[0])
        return total.reshape(shape).astype(dtype)


class DGC(_Sparse):
    """Deep gradient compression with momentum correction (Lin et al. 2018).

    Per tensor, with local velocity u and accumulator v::

        g <- clip(g, clip_norm / sqrt(workers))        (local gradient clipping, optional)
        u <- momentum * u + g;  v <- v + u              (momentum correction)
        send the top (1 - sparsity) of |v|;  u, v <- 0 where sent   (momentum factor masking)

    The momentum lives here, so the optimizer must apply none: the strategy takes ``momentum``
    from an ``SGD(momentum=m)`` optimizer and makes its own update plain SGD. Sparsity warms up
    exponentially over the first epochs: 75 %, 93.75 %, 98.4375 %, 99.6 %, then ``sparsity``.
    """
    name = "dgc"
    state_slots = ("velocity", "accumulation")
    WARMUP = (0.75, 0.9375, 0.984375, 0.996)

    def __init__(self, sparsity=0.999, momentum=None, clip_norm=None, warmup_epochs=4):
        if not 0 <= sparsity < 1:
            raise ValueError(f"dgc: sparsity must be in [0, 1), got {sparsity!r}")
        self.final_sparsity, self.momentum, self.clip_norm = sparsity, momentum, clip_norm
        self.warmup_epochs = warmup_epochs
        self.sparsity = sparsity if not warmup_epochs else min(self.WARMUP[0], sparsity)
        self.workers = 1

    def on_epoch_begin(self, epoch):
        schedule = self.WARMUP[:self.warmup_epochs]
        self.sparsity = min(schedule[epoch], self.final_sparsity) if epoch < len(schedule) \
            else self.final_sparsity

    def compress(self, gradient, state):
        g = gradient.reshape(-1)
        if self.clip_norm is not None:
            limit = self.clip_norm / math.sqrt(self.workers)
            norm = float(np.linalg.norm(g))
            g = g * (limit / norm) if norm > limit else g
        velocity, accumulation = state["velocity"].reshape(-1), state["accumulation"].reshape(-1)
        velocity *= self.momentum or 0.0
        velocity += g
        accumulation += velocity
        k = max(1, math.ceil((1 - self.sparsity) * accumulation.size))
        indices = np.argpartition(np.abs(accumulation), accumulation.size - k)[-k:]
        velocity[indices] = 0
        return self._send(accumulation, indices)


_BY_NAME = {"none": NoCompression, "fp16": FP16, "topk": TopK, "threshold": Threshold,
            "qsgd": QSGD, "onebit": OneBit, "dgc": DGC}


def get(identifier, **options):
    """A compressor from a name (options passed to it) or an instance."""
    if isinstance(identifier, Compressor):
        return identifier
    if identifier is None:
        return NoCompression()
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()](**options)
    raise ValueError(f"Unknown compression {identifier!r}: expected one of "
                     f"{', '.join(_BY_NAME)} or a Compressor instance")


def payload_bytes(payload):
    return int(sum(a.nbytes for a in payload))
