"""Finding the ``mpiexec`` hiapi installs, and the command line for one attempt.

The ``mpich`` wheel (hiapi's ``mpi`` extra) puts its Hydra ``mpiexec`` beside the Python
interpreter (``.venv/bin/mpiexec``); a user who activated nothing should not need to know
that, so it is looked for there first, then on ``PATH``."""
import os
import shutil
import sys
from pathlib import Path

SUPERVISOR = Path(__file__).with_name("rank_supervisor.py")


def find_mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError("hiapi.run: no mpiexec found beside this Python "
                                f"({beside}) or on PATH; install the MPI extra: "
                                "pip install 'hiapi[mpi]' (the mpich wheel brings one)")
    return found


def ranks_per_host(ranks, hosts):
    """The most ranks any host runs: from ``h1:2,h2:2``, else all ``ranks`` on one host."""
    if not hosts:
        return ranks
    counts = [int(part.split(":")[1]) if ":" in part else 1 for part in hosts.split(",")]
    return max(1, min(ranks, max(counts)))


def threads_per_rank(ranks, hosts, cpus=None):
    """This machine's CPUs shared by the ranks one host runs (at least 1)."""
    cpus = cpus or len(os.sched_getaffinity(0))
    return max(1, cpus // ranks_per_host(ranks, hosts))


def command(ranks, script_args, hosts=None, hostfile=None, threads=1, environment=()):
    """``mpiexec -n N [-hosts ...|-f file] -genv ... python rank_supervisor.py script ...``."""
    line = [find_mpiexec(), "-n", str(ranks)]
    if hosts:
        line += ["-hosts", hosts]
    if hostfile:
        line += ["-f", str(hostfile)]
    variables = {"HIAPI_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1",
                 **dict(environment)}
    for name, value in variables.items():
        if name == "HIAPI_NUM_THREADS" and name in os.environ:
            continue                                 # the user's own choice wins
        line += ["-genv", name, value]
    return line + [sys.executable, str(SUPERVISOR), *script_args]
