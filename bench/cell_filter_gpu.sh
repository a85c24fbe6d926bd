#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Zhang et al. 2023's setup with the density filter (its section 5.2 filters the
# density) at 64^3 and 128^3, 300 iterations at the cell default CG rtol 1e-2,
# with the binarized moduli, on the GPU.   cell_filter_gpu.sh BUILD OUT
BUILD=${1:?build folder}; OUT=${2:?log folder}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for n in 64 128; do
  echo "== bench_cell $n cuda 0.3 300 --filter=density --start=zhang2023 --rtol=1e-2"
  timeout 60 $BUILD/bench/bench_cell $n cuda 0.3 300 --filter=density --start=zhang2023 \
    --rtol=1e-2 |
    awk '/^  it/ && ($2 % 50 != 0 && $2 != 25) {next} {print}'
done 2>&1 | tee $OUT/filter.log
