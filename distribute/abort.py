"""An uncaught exception on one rank ends the whole MPI job.

Without this, the failing rank prints its traceback and exits while the others wait forever in
their next collective: the job hangs until someone kills it. ``python -m mpi4py script.py``
avoids that with an exception hook that calls ``MPI_Abort``; hiapi installs the same hook as
soon as a communicator spans more than one rank, so a plain ``mpiexec -n 4 python script.py``
fails fast (non-zero exit, the traceback in the output) wherever the exception happens: inside
``fit`` (where ``Strategy.guard`` also catches exceptions that user code swallows) or between
two ``fit`` calls.
"""
import json
import os
import sys
import time
import traceback as tracebacks

# MPI_Abort makes the launcher kill every rank at once; output a rank wrote just before may
# still sit in the pipe to MPICH's proxy and be dropped with it (seen in CI: a job that failed
# with a clear ValueError on every rank printed nothing). A short pause lets the proxy forward
# the traceback first; it only delays a job that is failing anyway.
OUTPUT_GRACE_SECONDS = 0.5


def abort_job(comm, code=1):
    """Flush this rank's output, give the launcher time to forward it, then ``comm.Abort``."""
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(OUTPUT_GRACE_SECONDS)
    comm.Abort(code)


def install_abort_on_uncaught_exception(comm):
    """Make an uncaught exception print its traceback, then ``comm.Abort(1)``. Installed once;
    the hook that was there before (Python's, or a user's) still prints the traceback."""
    previous = sys.excepthook
    if getattr(previous, "hiapi_aborts", False):
        return

    def abort_on_exception(kind, value, traceback):
        sys.stderr.write(f"[hiapi rank {comm.Get_rank()}/{comm.Get_size()}] uncaught "
                         f"{kind.__name__}; aborting the MPI job so the other ranks do not "
                         f"wait forever:\n")
        record_failure(comm.Get_rank(), None,
                       "".join(tracebacks.format_exception(kind, value, traceback)))
        previous(kind, value, traceback)
        abort_job(comm, 1)

    abort_on_exception.hiapi_aborts = True
    sys.excepthook = abort_on_exception


def record_failure(rank, position, text):
    """Under ``python -m hiapi.run`` (``HIAPI_RUN_DIR`` set): this rank's failure, with the
    fit ``position`` ("epoch E, batch B" or None) and its traceback ``text``, written to a
    file the launcher reads after the job. Written before the abort, synchronously: the
    output that also carries it may be cut short when MPICH kills the job (on a loaded
    machine the rank's last lines did not always get through)."""
    folder = os.environ.get("HIAPI_RUN_DIR")
    if not folder:
        return
    try:
        # "x": the first record stands (fit's guard, with the position, before the hook)
        with open(os.path.join(folder, f"failure-{rank}.json"), "x") as handle:
            json.dump({"rank": rank, "time": time.time(), "position": position,
                       "traceback": text}, handle)
    except OSError:         # recorded already, or a folder only the launcher's host has
        pass
