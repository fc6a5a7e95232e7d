"""Keras's ``keras.mixed_precision``: policies and the loss-scale optimizer in one place.

    import hiapi
    hiapi.mixed_precision.set_global_policy("mixed_float16")   # or "mixed_bfloat16"
    hiapi.mixed_precision.global_policy()                      # <DTypePolicy "mixed_float16">

See ``docs/mixed_precision.md`` for what runs in which type and what it costs on CPU.
"""
from hiapi.dtype_policy import DTypePolicy, dtype_policy, get, set_dtype_policy
from hiapi.optimizers.loss_scale_optimizer import LossScaleOptimizer

Policy = DTypePolicy          # Keras 3 keeps the old name as an alias
set_global_policy = set_dtype_policy
global_policy = dtype_policy

__all__ = ["DTypePolicy", "Policy", "LossScaleOptimizer", "set_global_policy", "global_policy",
           "dtype_policy", "set_dtype_policy", "get"]
