"""The numba kernel of ``dense_chain`` (``hiapi/graph/passes/dense_chain.py``): a chain of dense
layers in one call, its rows split between the calling thread and spinning helpers.

Batches of ``MIN_ROWS`` to ``MAX_ROWS`` rows run the register-blocked loops of
``dense_chain_kernels.py`` on transposed copies of the weights; measured on the 2-core VM
(``benchmarks/dense_chain.py``), 2 threads, ``relu(x @ W + b)``: 32x784 @ 784x128 40 us
(OpenBLAS + numpy 71, torch 34), 64 rows 67 us (100, 56), 32x1024 @ 1024x1024 385 us (493,
290), 64 rows of it 1005 us (864, 622); at 256 rows of 784x128 BLAS's packed kernels win (the
loops 270 us, OpenBLAS 243). So larger batches (``MAX_ROWS``, ``MAX_WORK``), fewer than 4 rows
(a single sample: a GEMV, and the transposed copy would cost more than the call), and weights
that are not Variables or not in C order run layer by layer: the backend's ``matmul``, then
the bias and activation in one numba pass, as the unfused graph would (float64, the numpy
backend's kernel). Except a larger batch's last layers when they are narrow (``NARROW``: a
classifier's head of 10 columns), where BLAS does badly: those run in the loops, on the
calling thread, after the wide layers' BLAS calls, and add the last wide layer's bias and
activation themselves, 16 rows at a time, just before they read those rows (a pass of its
own over the 1 MB of a 256x1024 output, then read again by the head, took 168-180 us for
the two against 152-153). Which path a call takes depends only on its shapes and layouts,
so the same batch gives the same bits at every call.

The transposed copies (of Variables only: the pass says so with ``weights_are_state``; a
weight fed as an input may change in place between calls) are kept, one per weight and as
large as it, until a Variable is written anywhere (``hiapi.runtime.state_writes``), and then
made again only if the weight's fingerprint changed: a ``predict`` over 10,000 rows transposes
each weight at most once (a 784x128 weight in 60-150 us), not once per batch. They live outside
the memory plan, as a BLAS library's packed panels do.
"""
import threading
import weakref

import numpy as np

from hiapi.runtime import state_writes, threads
from hiapi.backends.numba_backend import dense_chain_kernels as K
from hiapi.backends.numba_backend.registry import backend
from hiapi.backends.numba_backend.spin_workers import SpinWorkers
from hiapi.backends.dense_chain_layers import (by_layer, hidden_blocks, new_workspace,
                                               workspace_bytes)
from hiapi.backends.numpy_backend import backend as numpy_backend

MIN_ROWS, MAX_ROWS = 4, 64
# rows times the largest layer's weights above which BLAS's packed GEMM wins: 32 rows of a
# 1024x1024 layer ran 0.80-0.88x OpenBLAS's time, 64 rows 1.16x; 64 rows of 784x128, 0.58x
MAX_WORK = 1 << 25
# A chain of more rows than MAX_ROWS ends in the loops from its last layers that are at most
# NARROW columns wide (a classifier's head), up to NARROW_WORK of rows x weights each, on the
# calling thread. BLAS packs the whole input for a handful of columns and wakes its threads for
# it: in the batch-256 evaluate step of the 784-1024-1024-10 MLP, 256x1024 @ 1024x10 took it
# 209-223 us, the loops 85-90 (3 % of the step). One thread: a helper woken for it would spin
# on into the next batch's first BLAS call, on the cores that call wants.
NARROW = 16
NARROW_WORK = 1 << 23

workers = SpinWorkers(K.chain_job, K.serve)


class TransposedWeights:
    """``of(w)``: ``w.T`` as a C-contiguous copy. After a Variable write (``predict`` and
    ``evaluate`` count as one as they start once a weight's array was handed out, so that an
    in-place edit is seen: ``hiapi/runtime/state_writes.py``) the weight's
    fingerprint is taken again (``dense_chain_kernels.fingerprint``, ~18 us for 784x128):
    only if it changed is the copy made again. Transposing costs 130-160 us there, and a copy
    written by this thread is then read from this core's cache by the helpers (another
    60 us): every ``predict`` call paid both before, though only training changes weights."""

    def __init__(self):
        self._copies = {}     # id(w) -> [weak reference to w, copy, write count, fingerprint]

    def of(self, w):
        writes = state_writes.count()
        entry = self._copies.get(id(w))
        if entry is not None and entry[0]() is w and entry[1].shape == w.shape[::-1]:
            if entry[2] == writes:
                return entry[1]
            entry[2] = writes
            fingerprint = K.fingerprint(w)
            if fingerprint == entry[3]:
                return entry[1]
            entry[3] = fingerprint
            K.transpose_into(w, entry[1])
            return entry[1]
        self._copies = {k: e for k, e in self._copies.items() if e[0]() is not None}
        copy = np.empty(w.shape[::-1], np.float32)
        K.transpose_into(w, copy)
        self._copies[id(w)] = [weakref.ref(w), copy, writes, K.fingerprint(w)]
        return copy


transposed = TransposedWeights()


class _Site:
    """What one call site (a compiled step's node, known by its output buffer) keeps between
    batches: the descriptor of its chain with every address but the input's filled in, made
    again after a Variable write (the transposed copies themselves are made again only if
    the weight's fingerprint changed). Called without a workspace (outside an executor), it
    keeps its own for the hidden layers."""

    def __init__(self, out, params, weights_are_state, workspace):
        rows = out.shape[0]
        self.out = weakref.ref(out)
        self.ids = _ids(params, workspace)
        self.writes = None
        self.descriptor = None
        self.copies = []              # the transposed copies the descriptor points to
        self.workspace = workspace if workspace is not None else \
            new_workspace(backend, out, params)
        # decided once: the shapes and buffers are the site's for as long as it lives (the
        # descriptor gives the biases' bare addresses: each must be one run of floats)
        self.first = _first_served(rows, params[0::2]) if weights_are_state and \
            all(p.flags.c_contiguous and p.dtype == np.float32 for p in params) else None
        self.hidden = None              # each layer's output block, with the descriptor
        if self.first is not None:
            _warm_up(_parts(rows))

    def descriptor_for(self, out, params, activations):
        """The descriptor, or None where this site runs layer by layer (too few or too many
        rows, weights that are not Variables, or not float32 in C order)."""
        writes = state_writes.count()
        if self.first is not None and writes != self.writes:
            weights = params[0::2]
            copies = [transposed.of(w) for w in weights[self.first:]]   # remade if changed
            if self.descriptor is None or any(a is not b for a, b in zip(copies, self.copies)):
                self.hidden = hidden_blocks(self.workspace, out.shape[0], weights, np.float32,
                                            out)
                first = self.first
                owed = (params[2 * first - 1], activations[first - 1]) if first else None
                self.descriptor = _chain_descriptor(copies, params[1::2][first:],
                                                    activations[first:], self.hidden[first:],
                                                    owed)
            self.copies, self.writes = copies, writes
        return self.descriptor


_warmed = []


def _first_served(rows, weights):
    """The first layer the loops run, or None: every layer for ``MIN_ROWS`` to ``MAX_ROWS``
    rows within ``MAX_WORK``; for more rows, the last layers that are at most ``NARROW``
    columns wide, within ``NARROW_WORK`` each (the wide ones before them go to BLAS)."""
    if MIN_ROWS <= rows <= MAX_ROWS and rows * max(w.size for w in weights) <= MAX_WORK:
        return 0
    if rows <= MAX_ROWS:
        return None
    first = len(weights)
    while first and weights[first - 1].shape[1] <= NARROW and \
            rows * weights[first - 1].size <= NARROW_WORK:
        first -= 1
    return first if first < len(weights) else None


def _warm_up(parts):
    """The first site in a process starts the helpers (each loads its loop from numba's
    cache as it starts) and loads the other kernels on a thread of its own, so that the
    loads overlap: one after the other inside the first call, 0.06-0.24 s fell inside the
    thread tuner's first probe."""
    workers.prepare(parts)
    if not _warmed:
        _warmed.append(threading.Thread(target=_load_kernels, name="hiapi-dense-chain-warm-up",
                                        daemon=True))
        _warmed[0].start()


def _load_kernels():
    w, b, x = np.ones((4, 4), np.float32), np.zeros(4, np.float32), np.ones((4, 4), np.float32)
    wt, out = np.empty((4, 4), np.float32), np.empty((4, 4), np.float32)
    K.transpose_into(w, wt)
    K.fingerprint(w)
    descriptor = _chain_descriptor([wt], [b], ["linear"], [out])
    K.set_input(descriptor, x, 1)
    K.chain_job(descriptor, 0)


def _chain_descriptor(transposed_weights, biases, activations, outputs, owed=None):
    """The int64 descriptor ``chain_job`` reads (``dense_chain_kernels.py``): the header (the
    input's address and the number of parts are set per call; ``owed``, a (bias,
    activation) the input still needs), then each layer's record."""
    wt0 = transposed_weights[0]
    bias, act = owed if owed is not None else (None, "linear")
    descriptor = [len(activations), outputs[0].shape[0], 1, 0, wt0.shape[1],
                  0 if bias is None else bias.ctypes.data, K.ACTIVATIONS[act]]
    for wt, b, act, h in zip(transposed_weights, biases, activations, outputs):
        descriptor += [wt.ctypes.data, wt.shape[0], b.ctypes.data, K.ACTIVATIONS[act],
                       h.ctypes.data]
    return np.array(descriptor, np.int64)


def _parts(rows):
    """Threads for a batch: the pools' count now (the thread tuner's choice), at most one per
    4-row block; one past ``MAX_ROWS``, where the loops run only a narrow tail (``NARROW``)."""
    if rows > MAX_ROWS:
        return 1
    return max(1, min(threads.active_threads(), (rows + 3) // 4))


def _ids(params, workspace):
    return (id(workspace),) + tuple(map(id, params))


_sites = {}


def _site(out, params, weights_are_state, workspace):
    site = _sites.get(id(out))
    if site is None or site.out() is not out or site.ids != _ids(params, workspace):
        for key in [k for k, s in _sites.items() if s.out() is None]:
            del _sites[key]
        site = _sites[id(out)] = _Site(out, params, weights_are_state, workspace)
    return site


@backend.register("dense_chain", scratch=workspace_bytes)
def dense_chain(out, x_in, *params, activations, weights_are_state=False, workspace=None):
    if out.dtype != np.float32 or not out.flags.c_contiguous:
        numpy_backend.kernels["dense_chain"](out, x_in, *params, activations=activations,
                                             workspace=workspace)
        return
    site = _site(out, params, weights_are_state, workspace)
    descriptor = site.descriptor_for(out, params, activations)
    if descriptor is None:      # the site's workspace: a call outside an executor allocates none
        _by_layer(out, x_in, params, activations, site.workspace)
        return
    first = site.first
    if first:                   # the wide layers first, on BLAS; their output feeds the loops,
        x = site.hidden[first - 1]      # which add the last one's bias and activation
        _by_layer(x, x_in, params[:2 * first], activations[:first], site.workspace, False,
                  site.hidden[:first])
    else:
        x = np.ascontiguousarray(x_in)           # a copy only of a strided view
    parts = _parts(x.shape[0])
    K.set_input(descriptor, x, parts)
    workers.run(descriptor, parts)


def _by_layer(out, x, params, activations, workspace, last_epilogue=True, blocks=None):
    """Layer by layer: the backend's GEMM (BLAS, or its fixed bands while the thread tuner
    adapts), then the bias and activation in one numba pass, as the unfused graph's fused
    loop did (numpy's two passes made the 784-1024-1024-10 MLP's batch-256 predict 5 %
    slower). Without ``last_epilogue`` the last layer's bias and activation are left to the
    loops that read its output (the chain's narrow tail), which add them a block of rows at
    a time, while those rows are in cache."""
    def epilogue(h, bias, act):
        if last_epilogue or h is not out:
            K.add_bias_activate(h, bias, K.ACTIVATIONS[act])
    by_layer(backend, out, x, params, activations, workspace, epilogue, blocks)
