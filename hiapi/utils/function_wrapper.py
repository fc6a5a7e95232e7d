"""Saving a loss or metric made from a function ``fn(y_true, y_pred, **kwargs)``
(``LossFunctionWrapper``, ``MeanMetricWrapper``): one config rule for both, as in Keras."""
from hiapi.serialization.objects import deserialize_function, serialize_object


class WrapsFunctionConfig:
    """``get_config``/``from_config`` for a class that wraps a function: the function's keyword
    arguments are saved beside the rest of the config, and the function itself (by name) only
    by the class that lists this mixin directly, the plain wrapper. A subclass such as
    ``MeanSquaredError`` makes its own function, so its config has none, as in Keras.
    ``_fn_attribute`` names the attribute holding the function."""
    _fn_attribute = "fn"

    @classmethod
    def _saves_function(cls):
        return WrapsFunctionConfig in cls.__bases__

    def get_config(self):
        config = super().get_config()
        if self._saves_function():
            config["fn"] = serialize_object(getattr(self, self._fn_attribute))
        return {**config, **self._fn_kwargs}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if cls._saves_function():
            config["fn"] = deserialize_function(config["fn"])
        return cls(**config)
