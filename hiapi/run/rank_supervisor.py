"""What ``python -m hiapi.run`` starts on every rank, in place of the user's script.

It runs the script as its child (the same interpreter, the same environment and inherited
file descriptors, so MPI's process-manager connection reaches it), writes each line of its
output with a ``[rank R] `` prefix, and when the child ends abnormally reports how on a
marker line the launcher reads (``MARK`` + JSON): the signal that killed it (a SIGKILL leaves
no traceback, and MPICH's own report names the wrong process), or its exit code.

Run by path, not as ``-m hiapi.run...``: it imports nothing of hiapi (a second hiapi import
per rank would cost every start a third of a second). The child dies with it
(``PR_SET_PDEATHSIG``), so when MPICH kills the job no rank is left behind; SIGINT and
SIGTERM are passed on to the child.
"""
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading

MARK = "\x1ehiapi.run "
PR_SET_PDEATHSIG = 1


def rank():
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):      # not Linux: MPICH's own cleanup has to do
        pass


def forward(source, target, prefix):
    for line in iter(source.readline, b""):
        target.write(prefix + line if line.endswith(b"\n") else prefix + line + b"\n")
        target.flush()


def main(argv):
    me = rank()
    prefix = f"[rank {me}] ".encode()
    child = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, close_fds=False,
                             preexec_fn=die_with_parent)
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda sig, frame: child.send_signal(sig))
    readers = [threading.Thread(target=forward, args=(child.stdout, sys.stdout.buffer, prefix)),
               threading.Thread(target=forward, args=(child.stderr, sys.stderr.buffer, prefix))]
    for reader in readers:
        reader.start()
    code = child.wait()
    for reader in readers:
        reader.join()
    if code != 0:
        report = {"rank": me, "pid": child.pid, "host": socket.gethostname()}
        report.update({"signal": signal.Signals(-code).name} if code < 0 else {"exit": code})
        sys.stderr.write(MARK + json.dumps(report) + "\n")
        sys.stderr.flush()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
