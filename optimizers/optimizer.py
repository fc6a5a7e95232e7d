"""``Optimizer``: the base that turns gradients into update ops in the train graph.

A subclass writes only ``build`` (its slot Variables) and ``update_step`` (the update rule as
ops); the base owns what every optimizer shares: the learning rate, fed as a graph input every
step so a schedule never recompiles, and the iteration counter, a Variable updated in the graph.
"""
import numpy as np

from hiapi.graph import Variable, ops


class Optimizer:
    def __init__(self, learning_rate=0.001, name=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        self.name = name or type(self).__name__
        self.learning_rate = learning_rate
        self.iterations = Variable(np.int64(0), name=f"{self.name}/iterations", trainable=False)
        self._slots = {}
        self.built = False

    @property
    def learning_rate(self):
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        if not callable(value) and (not np.isscalar(value) or not value > 0):
            raise ValueError(f"{self.name}: learning_rate must be a positive number or a "
                             f"schedule, got {value!r}")
        self._learning_rate = value

    def current_learning_rate(self):
        """The value fed to the graph this step (a schedule is evaluated at ``iterations``)."""
        lr = self._learning_rate
        return float(lr(int(self.iterations.numpy())) if callable(lr) else lr)

    def build(self, variables):
        self.built = True

    def add_slot(self, variable, slot_name, initial=0.0):
        """A Variable shaped like ``variable`` holding per-parameter optimizer state."""
        slot = Variable(np.full(variable.shape, initial, variable.dtype),
                        name=f"{self.name}/{variable.name}/{slot_name}", trainable=False)
        self._slots[(id(variable), slot_name)] = slot
        return slot

    def get_slot(self, variable, slot_name):
        return self._slots[(id(variable), slot_name)]

    @property
    def variables(self):
        return [self.iterations] + list(self._slots.values())

    def update_step(self, gradient, variable, learning_rate):
        """Update ops for one parameter: a list of ``(Variable, new_value_Var)``."""
        raise NotImplementedError

    def get_updates(self, gradients, variables, learning_rate):
        """All update pairs for one step; ``learning_rate`` is the scalar graph input."""
        pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
        if not self.built:
            self.build([v for _, v in pairs])
        updates = []
        for gradient, variable in pairs:
            lr = ops.cast(learning_rate, variable.dtype)
            updates += self.update_step(gradient, variable, lr)
        updates.append((self.iterations, self.iterations.read + 1))
        return updates

    def get_config(self):
        lr = self._learning_rate
        return {"name": self.name, "learning_rate": lr if not callable(lr) else repr(lr)}
