"""fit's hook for the thread tuner of the runtime floor (``hiapi.runtime.thread_tuner``).

The tuner itself knows no callback and no kernel; this adapter calls it around each train
step, and switches the matrix products to fixed bands when it runs, so the thread count it
picks changes no bit of the weights (``backends/gemm_bands.py``).
"""
from hiapi.backends import gemm_bands
from hiapi.callbacks.callback import Callback
from hiapi.runtime import thread_tuner


class ThreadTuning(Callback):
    """Runs ``tuner`` (by default the process's one) during ``fit``."""

    def __init__(self, tuner=None):
        super().__init__()
        self.tuner = tuner if tuner is not None else thread_tuner.shared()

    def set_model(self, model):
        """Not kept: this callback never reads the model, and its tuner outlives the fit, so
        keeping it would keep the last trained model alive, its compiled steps and their
        buffers with it (a strategy's shared-memory gradient buckets, which are freed only
        once nothing holds them)."""

    def reads_batch_logs(self, hook, batch):
        return False                # it times the steps; fit need not build logs for it

    def on_train_begin(self, logs=None):
        if self.tuner.train_begin():
            gemm_bands.enable()     # products in fixed bands: the count changes no bit

    def on_train_batch_begin(self, batch, logs=None):
        self.tuner.batch_begin()

    def on_train_batch_end(self, batch, logs=None):
        self.tuner.batch_end()

    def on_train_end(self, logs=None):
        self.tuner.train_end()
