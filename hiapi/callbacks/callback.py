"""``Callback``: hooks into fit/evaluate/predict with Keras's names.

A callback reads (and may add to) the ``logs`` dict and can stop training by setting
``self.model.stop_training = True``; it never touches backend arrays.
"""
from __future__ import annotations

from typing import Any, Optional

#: what the hooks get: metric name -> value (None where a hook has nothing to report)
Logs = Optional[dict[str, Any]]


class Callback:
    def __init__(self) -> None:
        # the Model being trained, once ``set_model`` is called (Any: hooks read and set its
        # attributes freely, ``self.model.stop_training = True``, as in Keras)
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def on_train_begin(self, logs: Logs = None) -> None: pass
    def on_train_end(self, logs: Logs = None) -> None: pass
    def on_epoch_begin(self, epoch: int, logs: Logs = None) -> None: pass
    def on_epoch_end(self, epoch: int, logs: Logs = None) -> None: pass
    def on_train_batch_begin(self, batch: int, logs: Logs = None) -> None: pass
    def on_train_batch_end(self, batch: int, logs: Logs = None) -> None: pass
    def on_test_begin(self, logs: Logs = None) -> None: pass
    def on_test_end(self, logs: Logs = None) -> None: pass
    def on_test_batch_begin(self, batch: int, logs: Logs = None) -> None: pass
    def on_test_batch_end(self, batch: int, logs: Logs = None) -> None: pass
    def on_predict_begin(self, logs: Logs = None) -> None: pass
    def on_predict_end(self, logs: Logs = None) -> None: pass
    def on_predict_batch_begin(self, batch: int, logs: Logs = None) -> None: pass
    def on_predict_batch_end(self, batch: int, logs: Logs = None) -> None: pass

    def reads_batch_logs(self, hook: str, batch: int) -> bool:
        """Whether this callback's batch hook ``hook`` (``"on_train_batch_end"``,
        ``"on_test_batch_end"``) reads the logs of batch ``batch``. ``fit`` and ``evaluate``
        build a batch's logs only when some callback overriding the hook reads them, as Keras
        converts logs only for the callbacks that need them: on a 4 ms step, building them
        every step cost more than the rest of the bookkeeping. A callback that overrides a
        batch hook gets the logs unless it overrides this to say it does not read them (it is
        then called with an empty dict on the batches nobody reads)."""
        return True


class CallbackList:
    """Calls a hook on each callback in order; the trainer talks to this only."""

    def __init__(self, callbacks, model, params):
        self.callbacks, self.params = list(callbacks), params    # shared: fit updates steps
        for callback in self.callbacks:
            callback.set_model(model)
            callback.set_params(params)

    def __getattr__(self, hook):
        """The dispatcher of ``hook``, built on first use and kept on the instance (so later
        calls skip ``__getattr__``). It calls only the callbacks that override the hook: fit
        calls two batch hooks per step, and the base class's empty methods cost more than
        nothing on a 3 ms step."""
        if not hook.startswith("on_"):
            raise AttributeError(hook)
        takes_index = "epoch" in hook or "batch" in hook
        methods = [getattr(callback, hook) for callback in self.callbacks
                   if _overrides(callback, hook)]

        def call(*args):
            if len(args) < 1 + takes_index:      # hooks always get a logs dict, as in Keras
                args = args + ({},)
            for method in methods:
                method(*args)
        self.__dict__[hook] = call if methods else _ignore     # no callback: a bare call
        return call

    def logs_wanted(self, hook):
        """A function of the batch number: whether any callback overriding ``hook`` reads that
        batch's logs (``Callback.reads_batch_logs``). The loops call it every step, so the
        common answers are constant functions."""
        readers = [callback for callback in self.callbacks if _overrides(callback, hook)]
        if not readers:
            return _never
        if not all(_overrides(callback, "reads_batch_logs") for callback in readers):
            return _always
        return lambda batch: any(callback.reads_batch_logs(hook, batch) for callback in readers)


def _ignore(*args):
    pass


def _never(batch):
    return False


def _always(batch):
    return True


def _overrides(callback, hook):
    """False only for ``Callback``'s own empty hook (a function set on the instance, as
    ``LambdaCallback`` does, or any other object's method counts as an override)."""
    method = getattr(callback, hook)
    return getattr(method, "__func__", None) is not getattr(Callback, hook, None)
