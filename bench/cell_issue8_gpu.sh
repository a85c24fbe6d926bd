#!/bin/bash
# Issue 8's cell measurements on the GPU in one call (docs/benchmarks.md,
# "GPU: inverse homogenization of a periodic cell"): the CUDA test of the
# periodic operator, the CG-tolerance study at 128^3, the 25-iteration timing
# at the old and the new tolerance, and seed 003's setup run long at 64^3 and
# 128^3 with the binarized moduli. BUILD: the build folder; OUT: the log folder.
BUILD=${1:?build folder}; OUT=${2:?log folder}; NEW_RTOL=${3:-1e-2}
B=$BUILD/bench
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 60 $BUILD/tests/gpu/test_cuda_periodic > $OUT/test_periodic.log 2>&1
echo "test_cuda_periodic rc=$?" >> $OUT/test_periodic.log
grep -E "strain_energy|FAIL|passed" $OUT/test_periodic.log | head -20
{
  for t in 1e-6 $NEW_RTOL; do
    echo "== bench_cell 128 cuda 0.3 25, CG rtol $t"
    VOXFE_BENCH_RTOL=$t timeout 60 $B/bench_cell 128 cuda 0.3 25 | grep -v "^  it" 
  done
} > $OUT/timing128.log 2>&1
cat $OUT/timing128.log
{
  for n in 64 128; do
    for t in $NEW_RTOL 1e-6; do
      echo "== VOXFE_BENCH_START=seed003 bench_cell $n cuda 0.3 300, CG rtol $t"
      VOXFE_BENCH_START=seed003 VOXFE_BENCH_RTOL=$t timeout 100 $B/bench_cell $n cuda 0.3 300 \
        | awk '/^  it/ && ($2 % 50 != 0 && $2 != 25) {next} {print}'
    done
  done
} > $OUT/seed003.log 2>&1
cat $OUT/seed003.log
timeout 120 $B/bench_cell_rtol 128 cuda 30 1e-8 1e-6 1e-4 1e-3 1e-2 > $OUT/rtol128.log 2>&1
cat $OUT/rtol128.log
