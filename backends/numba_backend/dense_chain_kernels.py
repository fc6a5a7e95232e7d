"""The numba loops of a dense chain (``dense_chain.py``): ``act(x @ W + b)`` layer after layer,
on a block of rows, with the weights kept transposed (``wt[n]`` is column ``n`` of ``W``).

Why transposed: the product is then a dot product over ``k`` of two contiguous rows, which LLVM
vectorises; a 4x4 block of outputs keeps 16 sums in registers, so each loaded row of ``x`` and
of ``wt`` serves four products. The same blocking over ``W`` as stored (the axpy form) stayed
scalar in numba: 420-740 us for 32x784 @ 784x128 against 59 us here (docs/performance.md).

Rows never mix, so a block of rows goes through every layer without waiting for the others:
threads split the batch by rows. The split falls on multiples of 4 and only the batch's last
``M % 4`` rows take the tail loop, so every row takes the same path, and gets the same bits,
whatever the number of threads.

``fastmath`` allows reassociation, contraction, approximate functions and reciprocals, and
ignores the sign of zero, but not ``nnan``/``ninf``: NaN and infinity still propagate as in
numpy (with those LLVM could assume they never occur).
"""
import numpy as np
from numba import carray, njit, types

from hiapi.backends.numba_backend.spin_workers import job_done, next_job, pointer_at

FASTMATH = {"reassoc", "contract", "nsz", "arcp", "afn"}

LINEAR, RELU, SIGMOID, TANH = 0, 1, 2, 3
ACTIVATIONS = {"linear": LINEAR, "relu": RELU, "sigmoid": SIGMOID, "tanh": TANH}


@njit(fastmath=FASTMATH, nogil=True, boundscheck=False, cache=True)
def _relu_if(v, relu):
    return np.float32(0) if relu and v < 0 else v      # NaN stays NaN, as np.maximum(v, 0)


@njit(fastmath=FASTMATH, nogil=True, boundscheck=False, cache=True, error_model="numpy")
def _activate(v, act):      # numpy's error model: no divide-by-zero check in the sigmoid
    if act == SIGMOID:
        if v >= 0:
            return np.float32(1) / (np.float32(1) + np.exp(-v))
        e = np.exp(v)
        return e / (np.float32(1) + e)
    if act == TANH:
        return np.tanh(v)
    return v


@njit(fastmath=FASTMATH, nogil=True, boundscheck=False, cache=True)
def _dot(a, b):
    """One output (the tails of the 4x4 blocking)."""
    s = np.float32(0)
    for k in range(a.shape[0]):
        s += a[k] * b[k]
    return s


@njit(fastmath=FASTMATH, nogil=True, boundscheck=False, cache=True)
def _store(c, i, j, s0, s1, s2, s3, bias, relu):
    """Four sums of row ``i`` into columns ``j..j+3``, with the bias (and ReLU)."""
    c[i, j] = _relu_if(s0 + bias[j], relu)
    c[i, j + 1] = _relu_if(s1 + bias[j + 1], relu)
    c[i, j + 2] = _relu_if(s2 + bias[j + 2], relu)
    c[i, j + 3] = _relu_if(s3 + bias[j + 3], relu)


@njit(fastmath=FASTMATH, nogil=True, boundscheck=False, cache=True)
def dense_rows(a, wt, bias, act, c, r0, r1):
    """``c[r0:r1] = act(a[r0:r1] @ wt.T + bias)``. Sigmoid and tanh are applied in a pass of
    their own: inlined into the blocked loop, their code made LLVM spill the sums (16 rows of
    784 @ 784x128: 41 us against 31)."""
    K = a.shape[1]
    N = wt.shape[0]
    relu = act == RELU
    full = r0 + (r1 - r0) // 4 * 4              # rows in blocks of 4; the rest, one by one
    j = 0
    while j + 4 <= N:                           # columns outside: each weight row read once
        for i in range(r0, full, 4):
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = np.float32(0)
            s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = np.float32(0)
            for k in range(K):
                x0, x1, x2, x3 = a[i, k], a[i + 1, k], a[i + 2, k], a[i + 3, k]
                y0, y1, y2, y3 = wt[j, k], wt[j + 1, k], wt[j + 2, k], wt[j + 3, k]
                s00 += x0 * y0; s01 += x0 * y1; s02 += x0 * y2; s03 += x0 * y3  # noqa: E702
                s10 += x1 * y0; s11 += x1 * y1; s12 += x1 * y2; s13 += x1 * y3  # noqa: E702
                s20 += x2 * y0; s21 += x2 * y1; s22 += x2 * y2; s23 += x2 * y3  # noqa: E702
                s30 += x3 * y0; s31 += x3 * y1; s32 += x3 * y2; s33 += x3 * y3  # noqa: E702
            _store(c, i, j, s00, s01, s02, s03, bias, relu)
            _store(c, i + 1, j, s10, s11, s12, s13, bias, relu)
            _store(c, i + 2, j, s20, s21, s22, s23, bias, relu)
            _store(c, i + 3, j, s30, s31, s32, s33, bias, relu)
        j += 4
    for jj in range(j, N):                      # the last N % 4 columns
        for i in range(r0, full):
            c[i, jj] = _relu_if(_dot(a[i], wt[jj]) + bias[jj], relu)
    for i in range(full, r1):                   # the last rows (r1 - r0) % 4
        for jj in range(N):
            c[i, jj] = _relu_if(_dot(a[i], wt[jj]) + bias[jj], relu)
    if act == SIGMOID or act == TANH:
        for i in range(r0, r1):
            for jj in range(N):
                c[i, jj] = _activate(c[i, jj], act)


@njit(fastmath=FASTMATH, nogil=True, boundscheck=False, cache=True)
def epilogue_rows(c, bias, act, r0, r1):
    """``c[r0:r1] = act(c[r0:r1] + bias)`` in place (the epilogue of a layer whose product BLAS
    computed): the same arithmetic as the unfused graph's fused loop, so the same bits."""
    relu = act == RELU
    for i in range(r0, r1):
        for j in range(c.shape[1]):
            v = _relu_if(c[i, j] + bias[j], relu)
            c[i, j] = _activate(v, act) if act == SIGMOID or act == TANH else v


@njit(fastmath=FASTMATH, nogil=True, boundscheck=False, cache=True)
def add_bias_activate(c, bias, act):
    """``c = act(c + bias)`` in place, one pass over every row."""
    epilogue_rows(c, bias, act, 0, c.shape[0])


# The descriptor of a chain (int64): its header, then one record per layer. Addresses, not
# arrays, so that a helper thread that never takes the GIL can be handed a new batch.
# X_BIAS (an address, or 0) and X_ACTIVATION: the epilogue still owed to the input, the
# output of a wide layer whose product BLAS computed, run here block by block of rows.
LAYERS, ROWS, PARTS, X, X_COLUMNS, X_BIAS, X_ACTIVATION = 0, 1, 2, 3, 4, 5, 6
HEADER, RECORD = 7, 5
# Rows per block when the input's epilogue runs here: 16 rows of 1024 floats (64 KiB) stay in
# this core's cache from the epilogue to the last of the head's passes over them (one per 4
# columns), where the whole 1 MiB input was read from further out by each
TAIL_BLOCK = 16
WT, COLUMNS, BIAS, ACTIVATION, OUT = 0, 1, 2, 3, 4


_float32_at = pointer_at(types.float32)


@njit(nogil=True, boundscheck=False, cache=True)
def rows_of_part(rows, parts, part):
    """Rows ``[r0, r1)`` of ``part``: blocks of 4 dealt out evenly, the tail to the last."""
    blocks = (rows + 3) // 4
    per_part = (blocks + parts - 1) // parts
    r0 = min(rows, part * per_part * 4)
    return r0, min(rows, r0 + per_part * 4)


@njit(nogil=True, cache=True)
def set_input(descriptor, x, parts):
    """The batch's address and the number of parts into ``descriptor`` (from Python,
    ``x.ctypes.data`` alone costs 0.8 us; this call 0.2)."""
    descriptor[X] = x.ctypes.data
    descriptor[PARTS] = parts


@njit(fastmath=FASTMATH, nogil=True, boundscheck=False, cache=True)
def chain_job(descriptor, part):
    """Part ``part`` of the rows of the chain that ``descriptor`` describes, through every
    layer; each layer writes its own output array (the last, the chain's output)."""
    rows = descriptor[ROWS]
    r0, r1 = rows_of_part(rows, descriptor[PARTS], part)
    if r0 >= r1:
        return
    x = carray(_float32_at(descriptor[X]), (rows, descriptor[X_COLUMNS]))
    owed = descriptor[X_BIAS]
    # blocks start on multiples of 4 from r0: each row takes the path it takes whole
    block = TAIL_BLOCK if owed else r1 - r0
    for b0 in range(r0, r1, block):
        b1 = min(r1, b0 + block)
        if owed:
            epilogue_rows(x, carray(_float32_at(owed), (x.shape[1],)),
                          descriptor[X_ACTIVATION], b0, b1)
        a = x
        for layer in range(descriptor[LAYERS]):
            at = HEADER + RECORD * layer
            columns = descriptor[at + COLUMNS]
            wt = carray(_float32_at(descriptor[at + WT]), (columns, a.shape[1]))
            bias = carray(_float32_at(descriptor[at + BIAS]), (columns,))
            c = carray(_float32_at(descriptor[at + OUT]), (rows, columns))
            dense_rows(a, wt, bias, descriptor[at + ACTIVATION], c, b0, b1)
            a = c


@njit(nogil=True, cache=True)
def serve(flags, part, turns):
    """A spin worker's loop over ``chain_job`` (``spin_workers.py``): job after job until none
    comes for ``turns`` yields (False) or the caller sleeps on the one just done (True)."""
    while True:
        descriptor = next_job(flags, turns)
        if descriptor.size == 0:
            return False
        chain_job(descriptor, part)
        if job_done(flags):
            return True


@njit(nogil=True, boundscheck=False, cache=True)
def transpose_into(w, wt):
    """``wt = w.T`` in 32x32 tiles (a straight strided copy misses the cache on every read)."""
    K, N = w.shape
    for k0 in range(0, K, 32):
        for n0 in range(0, N, 32):
            for n in range(n0, min(n0 + 32, N)):
                for k in range(k0, min(k0 + 32, K)):
                    wt[n, k] = w[k, n]


@njit(nogil=True, boundscheck=False, cache=True)
def _mixed_sum(words):
    h = np.uint64(0)
    for i in range(words.size):
        v = words[i] * np.uint64(0x9E3779B97F4A7C15) + np.uint64(i)
        v ^= v >> np.uint64(31)
        v *= np.uint64(0xBF58476D1CE4E5B9)
        v ^= v >> np.uint64(29)
        h += v
    return h


def fingerprint(w):
    """A 64-bit hash of a float32 array's bits: each 8-byte word mixed with its position by a
    bijective multiply-xorshift (after SplitMix64's) and the results added, so changing
    one word always changes it and several changes cancel with probability ~2^-64; an odd
    last element counts as a word of its own. 784x128 float32 in ~18 us, where comparing
    with the transposed copy (a strided read) took 130-160 us."""
    flat = np.ascontiguousarray(w).reshape(-1).view(np.uint32)
    even = flat.size // 2 * 2
    h = _mixed_sum(flat[:even].view(np.uint64))
    if even < flat.size:
        h = _mixed_sum(np.array([h, flat[-1], flat.size], np.uint64))
    return int(h)
