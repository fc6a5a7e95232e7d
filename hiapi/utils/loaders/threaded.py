"""``workers > 1``: batches read by a pool of threads, handed to the step in order.

Threads share the dataset (no copy), so they suit ``__getitem__`` code that spends its time
outside the GIL: numpy, Pillow's decoders, file reads. Batch k+``max_queue_size`` is asked
for only once batch k has been taken, which bounds the memory read ahead. An exception in
``__getitem__`` reaches the step's thread with its own traceback (``Future.result``)."""
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from hiapi.runtime import threads


class ThreadLoader:
    def __init__(self, dataset, workers, max_queue_size):
        self.dataset, self.workers, self.ahead = dataset, workers, max(1, max_queue_size)

    def items(self, indices):
        indices = [int(index) for index in indices]
        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="hiapi-loader")
        pending = deque()
        try:
            with threads.loader_workers(self.workers):
                for next_index in range(len(indices)):
                    while len(pending) < self.ahead and next_index + len(pending) < len(
                            indices):
                        pending.append(pool.submit(self.dataset.__getitem__,
                                                   indices[next_index + len(pending)]))
                    yield pending.popleft().result()
        finally:             # reads not started are dropped; those running finish first
            for future in pending:
                future.cancel()
            pool.shutdown(wait=True)

    def close(self):
        pass
