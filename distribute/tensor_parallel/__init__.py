"""Tensor (operator) parallelism behind ``fit``: ``Strategy(tensor_parallel=T)`` (see
``strategy.py``; the graph rewrite is ``rewrite.py``, its collectives ``ops.py``)."""
from hiapi.distribute.tensor_parallel.strategy import TensorParallelStrategy

__all__ = ["TensorParallelStrategy"]
