"""Each rank checks ring and native allreduce, allgather and bcast against numpy."""
import numpy as np

from hiapi.distribute import MPICommunicator

native, ring = MPICommunicator(algorithm="native"), MPICommunicator(algorithm="ring")
rank, size = native.rank, native.size
for length in (1, 2, 3, 7, 13, 1001, 4099):
    for dtype in (np.float32, np.float64, np.int32, np.int64):
        def mine(r):
            return (np.arange(length) * (r + 1) + r).astype(dtype)
        expected = sum(mine(r) for r in range(size)).astype(dtype)
        for comm in (native, ring):
            got = comm.allreduce(mine(rank))
            assert np.array_equal(got, expected), (comm.algorithm, length, dtype)
        for chunk_bytes in (4, 12, 1 << 20):
            from hiapi.distribute.ring import ring_allreduce
            got = ring_allreduce(native.comm, mine(rank), chunk_bytes=chunk_bytes)
            assert np.array_equal(got, expected), ("ring chunks", chunk_bytes, length, dtype)
        request = native.iallreduce(mine(rank))
        assert np.array_equal(request.wait(), expected)
matrix = np.arange(12, dtype=np.float32).reshape(3, 4) * (rank + 1)
assert np.array_equal(ring.allreduce(matrix), np.arange(12).reshape(3, 4) *
                      sum(range(1, size + 1)))
gathered, sizes = native.allgather(np.full(rank + 1, rank, np.int64))
assert sizes == [r + 1 for r in range(size)]
assert np.array_equal(gathered, np.concatenate([np.full(r + 1, r) for r in range(size)]))
value = np.full(5, rank, np.float64)
native.bcast(value, root=size - 1)
assert np.all(value == size - 1)
print(f"rank {rank}: ok", flush=True)
