#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The periodic cell's measurements on the GPU in one call (docs/benchmarks.md,
# "Periodic cells"), most wanted first, each
# step skipped once DEADLINE seconds have passed: the CUDA test of the
# periodic operator and the cell CLI test, the 25-iteration timing at 128^3
# for CG tolerances 1e-6, 1e-3 and 1e-2, Zhang et al. 2023's setup run 300 iterations
# at 64^3 and 128^3 with the binarized moduli, and the CG-tolerance study at
# 128^3.   cell-gpu.sh BUILD OUT CLI_TESTS_DIR ROOT [DEADLINE]
BUILD=${1:?build folder}; OUT=${2:?log folder}; CLI=${3:?cli test scripts}; ROOT=${4:?root}
DEADLINE=${5:-280}
B=$BUILD/bench
left() { [ "$SECONDS" -lt "$DEADLINE" ] || { echo "skipped (deadline): $*"; return 1; }; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
{
  timeout 60 $BUILD/tests/gpu/test_cuda_periodic; echo "test_cuda_periodic rc=$?"
  OMP_WAIT_POLICY=PASSIVE timeout 60 bash $CLI/cell_run_cuda.sh $BUILD/cli/voxfe-voxelize \
    $BUILD/cli/voxfe-optimize $BUILD/cli/voxfe-export $ROOT; echo "cell_run_cuda rc=$?"
} > $OUT/tests.log 2>&1
grep -E "strain_energy|FAIL|passed|rc=" $OUT/tests.log | head -30
run() { # N ITERATIONS RTOL [START]: bench_cell, the per-iteration lines thinned
  left "bench_cell $*" || return
  echo "== bench_cell $1 cuda 0.3 $2 ${4:+--start=$4 }--rtol=$3  (t=$SECONDS s)"
  timeout 100 $B/bench_cell $1 cuda 0.3 $2 --start=${4:-cosine} --rtol=$3 |
    awk '/^  it/ && ($2 % 50 != 0 && $2 != 25 && $2 != 1) {next} {print}'
}
for t in 1e-6 1e-3 1e-2; do run 128 25 $t; done > $OUT/timing128.log 2>&1
cat $OUT/timing128.log
for n in 64 128; do
  for t in 1e-2 1e-6 1e-3; do run $n 300 $t zhang2023; done
done > $OUT/zhang2023.log 2>&1
cat $OUT/zhang2023.log
if left "bench_cell_rtol"; then
  timeout $((DEADLINE + 40 - SECONDS)) $B/bench_cell_rtol 128 cuda 20 1e-8 1e-6 1e-3 1e-2 \
    > $OUT/rtol128.log 2>&1
  cat $OUT/rtol128.log
fi
echo "total $SECONDS s"
