"""``python -m hiapi.run``: the command line, and the restart loop."""
import argparse
import os
import sys
import tempfile

from hiapi.run import mpiexec
from hiapi.run.job import run_attempt

USAGE = "python -m hiapi.run -n N [--hosts h1:2,h2:2 | --hostfile FILE] [--max-restarts K] " \
        "[--output all|rank0] script.py [args ...]"


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m hiapi.run", usage=USAGE,
                                     description="Start a hiapi script on N MPI ranks, "
                                                 "restarting it when a rank dies.")
    parser.add_argument("-n", "--np", dest="ranks", type=int, required=True,
                        help="number of ranks")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--hosts", help="hosts and ranks per host, as MPICH's -hosts: h1:2,h2:2")
    where.add_argument("--hostfile", help="a file of host[:ranks] lines (MPICH's -f)")
    parser.add_argument("--max-restarts", type=int, default=0,
                        help="start the job again up to K times when it fails")
    parser.add_argument("--output", choices=("all", "rank0"), default="all",
                        help="every rank's output prefixed [rank R] (default), or rank 0's")
    parser.add_argument("--threads", type=int, default=None,
                        help="thread budget per rank (default: this machine's CPUs / ranks "
                             "per host)")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.ranks < 1 or args.max_restarts < 0 or (args.threads is not None and
                                                   args.threads < 1):
        parser.error("-n and --threads must be positive and --max-restarts not negative")
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        mpiexec.find_mpiexec()
    except FileNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    threads = args.threads or mpiexec.threads_per_rank(args.ranks, args.hosts)
    previous = None
    for attempt in range(args.max_restarts + 1):
        # a rank that aborted may still be writing its failure record there after mpiexec
        # returned: removing the folder then met a new file ("Directory not empty") and the
        # launcher died without its report (seen once in CI); what is left stays in /tmp
        with tempfile.TemporaryDirectory(prefix="hiapi-run-",
                                         ignore_cleanup_errors=True) as folder:
            variables = {"HIAPI_RUN_ATTEMPT": str(attempt), "HIAPI_RUN_DIR": folder}
            command = mpiexec.command(args.ranks, [args.script, *args.args], args.hosts,
                                      args.hostfile, threads, variables.items())
            try:
                result = run_attempt(command, args.output, {**os.environ, **variables},
                                     folder)
            except KeyboardInterrupt:
                say("interrupted: the ranks were stopped; no restart")
                return 130
        if result.returncode == 0:
            if attempt:
                say(f"the job finished after {attempt} restart(s)")
            return 0
        failure = result.failure
        say(f"attempt {attempt + 1} of {args.max_restarts + 1} failed (mpiexec exit code "
            f"{result.returncode}); first failure: " + (failure.describe() if failure else
                                                          "not found in the output"))
        if failure is not None and previous is not None and failure.repeatable and \
                failure.signature == previous.signature:
            say("the same failure as in the attempt before (same rank, error and step): a "
                "restart will not cure it; stopping")
            return result.returncode
        previous = failure
        if attempt < args.max_restarts:
            say(f"restarting ({attempt + 1} of {args.max_restarts} restarts); a script with "
                f"BackupAndRestore resumes from its last backup")
    return result.returncode


def say(text):
    print(f"hiapi.run: {text}", file=sys.stderr, flush=True)
