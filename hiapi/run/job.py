"""One attempt of a job: ``mpiexec`` started, every rank's output passed on (prefixed by
rank, or only rank 0's) and read for the first failure (``failures.FailureLog``)."""
import json
import re
import subprocess
import sys
import threading
from dataclasses import dataclass

from hiapi.run.failures import Failure, FailureLog
from hiapi.run.rank_supervisor import MARK

RANK_LINE = re.compile(r"^\[rank (\d+)\] ?(.*)$", re.S)


@dataclass
class Attempt:
    returncode: int
    failure: Failure | None


def run_attempt(command, output="all", environment=None, folder=None):
    """Run ``command`` (``mpiexec.command``) to its end; ``output`` is "all" (every rank's
    lines, each prefixed ``[rank R]``) or "rank0" (rank 0's, unprefixed; the others' are
    still read for the failure summary); ``folder``: where ranks record their failures
    (``HIAPI_RUN_DIR``)."""
    log, lock = FailureLog(), threading.Lock()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=environment)
    readers = [threading.Thread(target=_relay, args=(stream, target, output, log, lock),
                                daemon=True)
               for stream, target in ((process.stdout, sys.stdout), (process.stderr, sys.stderr))]
    for reader in readers:
        reader.start()
    try:
        code = process.wait()
    except KeyboardInterrupt:            # Ctrl-C reached mpiexec too; it ends the ranks
        _wait_through_interrupts(process)
        raise
    finally:
        for reader in readers:
            reader.join()
    return Attempt(code, log.failure(folder) if code != 0 else None)


def _wait_through_interrupts(process):
    """Wait for ``mpiexec`` to end its ranks, however often Ctrl-C is pressed meanwhile."""
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            continue


def _relay(stream, target, output, log, lock):
    for raw in iter(stream.readline, b""):
        text = raw.decode(errors="replace").rstrip("\n")
        with lock:
            if text.startswith(MARK):
                log.report(json.loads(text[len(MARK):]))
                continue
            match = RANK_LINE.match(text)
            if match:
                rank, line = int(match.group(1)), match.group(2)
                log.line(rank, line)
                if output == "all":
                    print(text, file=target, flush=True)
                elif rank == 0:
                    print(line, file=target, flush=True)
            else:                              # mpiexec's own messages
                print(text, file=target, flush=True)
