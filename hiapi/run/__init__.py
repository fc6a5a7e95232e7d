"""``python -m hiapi.run``: start a script on N MPI ranks and restart it when a rank dies.

    python -m hiapi.run -n 4 train.py --epochs 10
    python -m hiapi.run -n 8 --hosts node1:4,node2:4 --max-restarts 3 train.py

It runs the ``mpiexec`` that hiapi's ``mpi`` extra installs (found beside the interpreter),
sets each rank's thread budget (``HIAPI_NUM_THREADS``: this machine's CPUs over the ranks per
host, unless set), prefixes every output line with its rank (``--output rank0``: only rank
0's), and when the job fails says which rank failed first and how (its traceback, or the
signal that killed it). With ``--max-restarts K`` a failed job is started again, up to K
times; a script with ``BackupAndRestore`` continues from its last backup, and since a backup
holds everything the step depends on, the restarted job ends with the weights an
uninterrupted one would have. The same failure twice in a row (the same rank, error and
step) stops the restarts. Each attempt sees ``HIAPI_RUN_ATTEMPT`` (0, 1, ...).

Why restart the whole job: MPI cannot continue without a rank (MPICH ends every rank when
one dies), so a restart is a new job that resumes from the backup, as torchrun's
``--max-restarts`` does for its workers. The guide is docs/launch.md.
"""
from hiapi.run.cli import main

__all__ = ["main"]
