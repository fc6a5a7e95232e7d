"""Arrays larger than memory as ``fit``/``evaluate``/``predict`` inputs: a ``np.memmap`` or
an h5py dataset passed as ``x`` is read batch by batch, never whole.

Why not just index the memmap: pages of a memory-mapped file that a process has touched stay
mapped into it and count in its resident memory until the kernel needs them back, so one
epoch over a 20 GB memmap shows a 20 GB process (and a container's memory limit counts it).
``DiskArray`` instead reads each batch's rows with ``os.pread`` into an ordinary buffer: the
file's pages go through the page cache, which the kernel reclaims freely and which is not
this process's memory. An h5py dataset reads its own rows (a slice, or sorted row indices).

Batches: ``shuffle="batch"`` (batch-sized chunks in random order) makes every batch one
contiguous read; ``shuffle=True`` reads each batch's rows sorted, coalescing neighbours, then
puts them in the batch's order (many small reads: slower on spinning disks). The whole-array
check for NaN that ``fit`` makes on in-memory data is skipped (it would read everything); a
NaN then shows as a NaN loss, which ``fit`` reports.

A ``DiskArray`` behaves as the trainer needs: ``shape``, ``dtype``, ``len``, a slice is a
lazy view (``validation_split``), ``np.asarray(view)`` reads it, ``take(rows, out=...)``
gathers rows into a buffer (``data.BatchGatherer``).
"""
import mmap
import os

import numpy as np


def on_disk(item):
    """Whether ``item`` is an array to read per batch: a ``np.memmap`` or an h5py dataset."""
    return isinstance(item, np.memmap) or type(item).__module__.startswith("h5py")


class DiskArray:
    def __init__(self, source, start=0, stop=None):
        self.reader = source if isinstance(source, _Reader) else _reader(source)
        self.start = start
        self.stop = self.reader.rows if stop is None else stop
        self.shape = (self.stop - self.start,) + self.reader.row_shape
        self.dtype = self.reader.dtype
        self.ndim, self.itemsize = len(self.shape), self.dtype.itemsize
        self.size = int(np.prod(self.shape))

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, index):
        if not isinstance(index, slice) or index.step not in (None, 1):
            raise TypeError(f"an array on disk is sliced by rows (a[i:j]) or read with "
                            f"np.asarray; got index {index!r}")
        start, stop, _ = index.indices(len(self))
        return DiskArray(self.reader, self.start + start, self.start + max(start, stop))

    def __array__(self, dtype=None, copy=None):
        out = np.empty(self.shape, self.dtype)
        self.reader.read_range(self.start, self.stop, out)
        return out if dtype is None else out.astype(dtype)

    def take(self, indices, axis=0, out=None, mode="raise"):
        """Rows ``indices`` (of this view) into ``out``, as ``ndarray.take`` does."""
        if axis != 0:
            raise ValueError("an array on disk is read by rows (axis=0)")
        indices = np.asarray(indices, np.int64)
        if out is None:
            out = np.empty((len(indices),) + self.shape[1:], self.dtype)
        order = np.argsort(indices, kind="stable")
        rows = indices[order] + self.start
        runs = np.flatnonzero(np.diff(rows) != 1) + 1          # coalesced neighbours
        sorted_out = np.empty_like(out)
        for first, last in zip(np.r_[0, runs], np.r_[runs, len(rows)]):
            if first < last:
                self.reader.read_range(int(rows[first]), int(rows[last - 1]) + 1,
                                       sorted_out[first:last])
        out[order] = sorted_out
        return out


class _Reader:
    rows, row_shape, dtype = 0, (), np.dtype(np.float32)

    def read_range(self, start, stop, out):
        raise NotImplementedError


class _MemmapReader(_Reader):
    """Rows of the file behind a C-contiguous ``np.memmap`` (or a row slice of one)."""

    def __init__(self, array):
        self.fd = None
        root = array
        while isinstance(root.base, np.ndarray):
            root = root.base
        if not isinstance(root.base, mmap.mmap) or not array.flags.c_contiguous:
            raise ValueError(f"x: a np.memmap is read row by row from its file, which needs "
                             f"C-contiguous rows of the whole mapping; got strides "
                             f"{array.strides} (copy it into a new np.memmap first)")
        address = array.__array_interface__["data"][0]
        self.offset = root.offset + address - root.__array_interface__["data"][0]
        self.filename, self.rows = array.filename, len(array)
        self.row_shape, self.dtype = array.shape[1:], array.dtype
        self.row_bytes = int(np.prod(self.row_shape, dtype=np.int64)) * self.dtype.itemsize

    def read_range(self, start, stop, out):
        if self.fd is None:
            self.fd = os.open(self.filename, os.O_RDONLY)
        view = memoryview(out.reshape(-1).view(np.uint8))
        position, done = self.offset + start * self.row_bytes, 0
        while done < len(view):           # pread may return fewer bytes than asked
            got = os.preadv(self.fd, [view[done:]], position + done)
            if got == 0:
                raise OSError(f"{self.filename}: the file ends before row {stop}")
            done += got

    def __del__(self):
        if self.fd is not None:
            os.close(self.fd)


class _H5Reader(_Reader):
    """Rows of an h5py dataset (h5py reads only the selection)."""

    def __init__(self, dataset):
        self.dataset, self.rows = dataset, dataset.shape[0]
        self.row_shape, self.dtype = tuple(dataset.shape[1:]), np.dtype(dataset.dtype)

    def read_range(self, start, stop, out):
        self.dataset.read_direct(out, source_sel=np.s_[start:stop])


def _reader(source):
    return _MemmapReader(source) if isinstance(source, np.memmap) else _H5Reader(source)
