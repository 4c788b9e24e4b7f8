#!/usr/bin/env bash
# The first run on a GPU machine, from this checkout on the image's CuPy and numba-cuda (no
# package index: nothing installed): versions, GPU tests, then gpu_check, all under $OUT
# (env.txt, gpu_tests.log, gpu_check.json/.md/.log). About 8 minutes: a 10-minute call.
# GA_DEVICE_SIMULATE=1: the same, tiny, on the CuPy stand-in and numba-cuda's simulator (CI).
set -u; cd "$(dirname "$0")/.."; O=${OUT:-/tmp/out}; mkdir -p "$O"; P=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
B=410 T=150 S= A=(--rows 1000000 10000000)
if [ -n "${GA_DEVICE_SIMULATE:-}" ]; then
  export NUMBA_ENABLE_CUDASIM=1; S=:$PWD/tests/standin B=300 T=120
  A=(--rows 200 400 --warmup-rows 150 --parity-rows 200)
fi
# CUDA_HOME kept if it holds libNVVM, else a toolkit (/usr/local/cuda*, nvcc/nvvm wheels) no
# newer than the driver; a toolkit's nvvm/lib64 first on the loader path
read -r H L <<< "$(PYTHONPATH=$PWD$S $P benchmarks/gpu_check.py --cuda-home)"
[ "${H:--}" != - ] && export CUDA_HOME=$H
[ "${L:--}" != - ] && export LD_LIBRARY_PATH=$L${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{ nvidia-smi; env | grep -E '^(CUDA_HOME|LD_LIBRARY_PATH)='
  PYTHONPATH=$PWD$S $P -c 'import sys, cupy, numba; from importlib.metadata import version
print("python", sys.version.split()[0], "cupy", cupy.__version__, "numba", numba.__version__,
      "numba-cuda", version("numba-cuda"))'
} > "$O/env.txt" 2>&1
tail -1 "$O/env.txt"
# the tests take their stand-in themselves (conftest.py)
timeout $T $P -m pytest -q -p no:cacheprovider ${GA_DEVICE_TESTS:-tests/test_gpu.py \
  tests/backend/test_cuda_kernels.py} > "$O/gpu_tests.log" 2>&1
echo "pytest rc=$? after ${SECONDS}s" | tee -a "$O/gpu_tests.log"
B=$((B - SECONDS))
PYTHONPATH=$PWD$S timeout $((B + 45)) $P benchmarks/gpu_check.py --budget $B --grace 20 \
  "${A[@]}" --skip-tests --results "${TMPDIR:-/tmp}/gpu_check" --out "$O"; R=$?
echo "gpu_check rc=$R after ${SECONDS}s"; exit $R
