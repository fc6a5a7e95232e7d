"""Under mpiexec: print this rank's thread budget, from the launcher's variables and from an MPI
shared-memory split (the launcher's local-size variables removed), and the BLAS threads."""
import json
import os

import hiapi
from threadpoolctl import threadpool_info

from_env = hiapi.threads.budget()
for name in hiapi.threads.LOCAL_SIZE_VARS:
    os.environ.pop(name, None)
from_split = hiapi.threads.ranks_per_node()
blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
print(json.dumps({"threads": from_env.threads, "cpus": from_env.cpus,
                  "ranks": from_env.ranks_per_node, "split_ranks": from_split, "blas": blas}),
      flush=True)
