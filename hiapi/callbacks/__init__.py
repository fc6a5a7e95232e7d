"""Callbacks with Keras's names and hook names."""
from hiapi.callbacks.callback import Callback, CallbackList
from hiapi.callbacks.history import History
from hiapi.callbacks.progbar import ProgbarLogger
from hiapi.callbacks.early_stopping import EarlyStopping
from hiapi.callbacks.checkpoint import BackupAndRestore, ModelCheckpoint
from hiapi.callbacks.lr_callbacks import LearningRateScheduler, ReduceLROnPlateau
from hiapi.callbacks.batch_size_scheduler import BatchSizeScheduler
from hiapi.callbacks.simple import CSVLogger, LambdaCallback, TerminateOnNaN
from hiapi.callbacks.tensorboard import TensorBoard
from hiapi.callbacks.timeline import Timeline
