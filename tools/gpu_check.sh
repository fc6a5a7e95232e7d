#!/usr/bin/env bash
# The GPU acceptance checks of issue #28 in one run on a machine with an NVIDIA GPU:
#
#     tools/gpu_check.sh OUTDIR [CHECK ...]     # CHECK: env tests suite train bench gpu (all)
#
# Made for a lent GPU machine whose Python already holds cupy, torch, numba, mpi4py and pytest
# and which cannot download: it installs this checkout into that Python without dependencies
# (and the mpich wheel from .whl/ when one was carried there), runs each check under its own
# time limit, writes one log per check and summary.json into OUTDIR, and prints the summary.
# The correctness checks (tests, suite, train) run side by side; the timed ones (bench, gpu)
# run after them, alone on the GPU. Figures are the JSON lines the checks print.
set -u
OUT=${1:?usage: tools/gpu_check.sh OUTDIR [CHECK ...]}
shift
CHECKS=${*:-env tests suite train bench gpu}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
: >"$OUT/checks.tsv"

wants() { [[ " $CHECKS " == *" $1 "* ]]; }

# check NAME LIMIT_S LOG COMMAND...: run under a time limit, appending to LOG; record rc, time
check() {
    local name=$1 limit=$2 log=$3 start rc
    shift 3
    start=$(date +%s)
    echo "=== $name: $*" >>"$log"
    timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
    rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(( $(date +%s) - start ))" "$log" >>"$OUT/checks.tsv"
    return $rc
}

{
    echo "date: $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
        --format=csv 2>&1
    $PY -m pip install -q --no-deps --no-build-isolation --no-index -e . 2>&1 | tail -3
    if ls .whl/mpich-*.whl >/dev/null 2>&1 && ! command -v "$(dirname "$(command -v $PY)")/mpiexec" >/dev/null; then
        $PY -m pip install -q --no-deps --no-index .whl/mpich-*.whl 2>&1 | tail -3
    fi
    $PY -m pip list 2>/dev/null | grep -iE "^(cupy|numpy|numba|torch|mpi4py|mpich|nvidia-nccl|pytest) "
} >"$OUT/env.log" 2>&1
wants env && check env 45 "$OUT/env.log" $PY -m hiapi

pids=()
if wants tests; then
    check tests ${LIMIT_TESTS:-180} "$OUT/tests.log" $PY -m pytest -v -rfE -p no:cacheprovider --timeout 120 \
        tests/backends/test_cupy_backend.py tests/backends/test_cupy_step_graphs.py &
    pids+=($!)
fi
if wants suite; then
    HIAPI_BACKEND=cupy check suite ${LIMIT_SUITE:-180} "$OUT/suite.log" $PY -m pytest -v \
        --tb=short -rfE -p no:cacheprovider --timeout 120 -n 8 ${SUITE:-tests/graph tests/layers \
        tests/models tests/optimizers} &
    pids+=($!)
fi
if wants train; then
    (   # the GPU runs and their numpy references in two chains, side by side
        ( check train_mlp_cupy 60 "$OUT/train.log" $PY tools/gpu_checks.py train mlp cupy
          check train_convnet_cupy 90 "$OUT/train.log" $PY tools/gpu_checks.py train convnet \
              cupy --epochs 2 ) &
        OMP_NUM_THREADS=4 check train_mlp_numpy 60 "$OUT/train_numpy.log" \
            $PY tools/gpu_checks.py train mlp numpy
        OMP_NUM_THREADS=4 check train_convnet_numpy 120 "$OUT/train_numpy.log" \
            $PY tools/gpu_checks.py train convnet numpy --epochs 2
        wait
    ) &
    pids+=($!)
fi
for pid in "${pids[@]}"; do wait "$pid"; done
[ -f "$OUT/train_numpy.log" ] && cat "$OUT/train_numpy.log" >>"$OUT/train.log" && rm "$OUT/train_numpy.log"

wants bench && check bench ${LIMIT_BENCH:-120} "$OUT/bench.log" $PY benchmarks/gpu_train_step.py \
    --policies "${POLICIES:-float32}" --workloads "${WORKLOADS:-mlp,convnet,cifar,large}"
if wants gpu; then
    check profile 45 "$OUT/gpu.log" $PY tools/gpu_checks.py profile
    if [[ "${POLICIES:-float32}" == *mixed_float16* ]]; then
        check profile_float16 45 "$OUT/gpu.log" $PY tools/gpu_checks.py profile \
            --policy mixed_float16
    fi
    check memory 45 "$OUT/gpu.log" $PY tools/gpu_checks.py memory
fi

$PY tools/gpu_summary.py "$OUT"
