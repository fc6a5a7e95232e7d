"""The loop a ``use_multiprocessing=True`` worker process runs (``ProcessLoader``).

It receives only what it needs: the pickled dataset (again at every epoch, so what
``on_epoch_end`` changed reaches it) and batch indices; it sends back each batch, or the
exception ``__getitem__`` raised, pickled, with its formatted traceback. It ignores SIGINT:
Ctrl-C in a terminal reaches the whole process group, and the training process, not each
worker, decides how to stop (it asks the workers to leave, then terminates any that do not).
It leaves when asked (``None``) or when the training process is gone (the pipe closes), so a
killed training process leaves no worker behind."""
import pickle
import signal
import traceback


def serve(conn):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    dataset, broken = None, None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        kind, value = message
        if kind == "dataset":
            try:
                dataset, broken = pickle.loads(value), None
            except Exception as error:        # reported with the first batch asked for
                broken = describe(error, "unpickling the PyDataset in a worker process")
            continue
        try:
            answer = ("error", broken) if broken is not None else ("batch", dataset[value])
        except Exception as error:
            answer = ("error", describe(error, f"batch {value}"))
        try:
            conn.send(answer)
        except (BrokenPipeError, ConnectionResetError):
            return                                     # the training process is gone
        except Exception as error:                     # the batch does not pickle
            conn.send(("error", describe(error, f"sending batch {value}")))


def describe(error, where):
    """What the training process needs to raise ``error`` again: the exception pickled (or
    None if it cannot be), its type and message, and its traceback as text."""
    try:
        payload = pickle.dumps(error)
    except Exception:
        payload = None
    return {"payload": payload, "type": type(error).__name__, "message": str(error),
            "traceback": "".join(traceback.format_exception(error)), "where": where}
