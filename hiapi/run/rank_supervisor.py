"""What ``python -m hiapi.run`` starts on every rank, in place of the user's script.

It runs the script as its child (the same interpreter, the same environment and inherited
file descriptors, so MPI's process-manager connection reaches it), writes each line of its
output with a ``[rank R] `` prefix, and when the child ends abnormally reports how on a
marker line the launcher reads (``MARK`` + JSON): the signal that killed it (a SIGKILL leaves
no traceback, and MPICH's own report names the wrong process), or its exit code.

Run by path, not as ``-m hiapi.run...``: it imports nothing of hiapi (a second hiapi import
per rank would cost every start a third of a second). The child dies with it
(``PR_SET_PDEATHSIG``), so when MPICH kills the job no rank is left behind; SIGINT and
SIGTERM are passed on to the child, which runs in a process group of its own so that it gets
each of them once: MPICH signals every rank's process group (``killpg``), and a child in the
supervisor's group got a Ctrl-C twice, from MPICH and passed on here. On a loaded machine the
second came late, inside the script's handling of the first (hiapi's abort hook waits before
``MPI_Abort``), and cut that short: the rank ended without aborting the job and the others
waited in their collective.
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


def die_with_parent(parent):
    """Run in the child before the script: a process group of its own (see above), and a
    SIGKILL when the supervisor ``parent`` dies, which also ends it when MPICH kills the
    supervisor's group. A supervisor that died before the ``prctl`` sends nothing, and the
    child would live on holding MPICH's pipes (the job would never end): it ends itself."""
    os.setpgid(0, 0)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):      # not Linux: MPICH's own cleanup has to do
        pass
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


def forward(source, target, prefix):
    for line in iter(source.readline, b""):
        target.write(prefix + line if line.endswith(b"\n") else prefix + line + b"\n")
        target.flush()


def main(argv):
    me = rank()
    prefix = f"[rank {me}] ".encode()
    supervisor = os.getpid()
    child = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, close_fds=False,
                             preexec_fn=lambda: die_with_parent(supervisor))
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
