"""Fixtures of the backend tests."""
import pytest

from hiapi.backends import chunk_workers


@pytest.fixture
def blas_count_restored():
    """The test leaves BLAS's thread count as it found it (tests that set it to compare
    1 and 2 threads)."""
    libraries = chunk_workers.workers.blas_libraries()
    saved = [lib.num_threads for lib in libraries]
    yield
    for lib, count in zip(libraries, saved):
        lib.set_num_threads(count)
