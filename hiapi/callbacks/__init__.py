"""Callbacks with Keras's hook names."""
from hiapi.callbacks.callback import Callback, CallbackList
from hiapi.callbacks.history import History
from hiapi.callbacks.progbar import ProgbarLogger
