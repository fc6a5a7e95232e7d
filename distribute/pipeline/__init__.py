"""Pipeline parallelism behind ``fit``: ``Strategy(pipeline_stages=K, micro_batches=M,
schedule="gpipe"|"1f1b")`` (see ``strategy.py``)."""
from hiapi.distribute.pipeline.strategy import PipelineStrategy

__all__ = ["PipelineStrategy"]
