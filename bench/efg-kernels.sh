#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Where an EFG design iteration's GPU time goes: Nsight Compute's duration
# of every kernel of one design iteration of an example of Lu, Gong, Zhang,
# Xie and Yin 2021 (table 1's grids, as bench/efg-table1.sh makes them)
# with the multigrid preconditioner, as a markdown table by kernel and
# launch shape (bench/ncu_kernels.py). The kernels run one at a time under
# the profiler, so their sum leaves out what the host adds between them
# (launches, waits): compare it with `voxfe-optimize --timings`.
#
#   bench/efg-kernels.sh BIN [EXAMPLE [ITERATIONS [OPTIONS...]]]
#
#   BIN          the folder of the programs (build/cli)
#   EXAMPLE      cantilever (default), annulus or cube
#   ITERATIONS   design iterations run (default 4); the table is of the
#                last whole one, from the second-last assembly to the last
#                (the final state's), so the one numbered ITERATIONS
#   OPTIONS      further voxfe-optimize options (--precision double, ...)
#
# The environment may change: NCU (default ncu), PYTHON (default python3).
#
#   bench/efg-kernels.sh .gpu/build/cli annulus 4 --efg-patch-size 2
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '/^#   bench/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
bin=$1 example=${2:-cantilever} iterations=${3:-4}
shift $(($# < 3 ? $# : 3))
here=$(cd "$(dirname "$0")/.." && pwd)
flows=$here/workflows ncu=${NCU:-ncu} python=${PYTHON:-python3}
[ -x "$bin/voxfe-optimize" ] || { echo "$0: no voxfe-optimize in $bin" >&2; exit 2; }
[[ $iterations =~ ^[1-9][0-9]*$ ]] || { echo "$0: ITERATIONS: expected a positive integer, got '$iterations'" >&2; exit 2; }
command -v "$ncu" > /dev/null || { echo "$0: no Nsight Compute ($ncu) on the PATH" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $example in
  cantilever)
    "$bin/voxfe-voxelize" --box 80x40x4 --voxel-size 1.25,1.25,1 \
      -p "$flows/efg_cantilever/efg_cantilever.yaml" -o "$work/model.nc" -q
    fraction=0.4 ;;
  annulus)
    "$python" "$flows/efg_annulus/quarter_annulus.py" --inner 60 --outer 100 --thickness 20 \
      -o "$work/quarter_annulus.stl"
    "$bin/voxfe-voxelize" --mesh "$work/quarter_annulus.stl" --voxel-size 2 \
      -p "$flows/efg_annulus/efg_annulus.yaml" -o "$work/model.nc" -q
    fraction=0.5 ;;
  cube)
    "$bin/voxfe-voxelize" --box 30x30x29 \
      --voxel-size "6.666666666666667,6.666666666666667,6.896551724137931" \
      -p "$flows/efg_cube/efg_cube.yaml" -o "$work/model.nc" -q
    fraction=0.05 ;;
  *) echo "$0: EXAMPLE: expected cantilever, annulus or cube, got '$example'" >&2; exit 2 ;;
esac
"$ncu" --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
  --log-file "$work/ncu.csv" "$bin/voxfe-optimize" "$work/model.nc" -o "$work/design.nc" \
  --discretization efg --efg-preconditioner mg --volume-fraction "$fraction" --penalty 3 \
  --no-continuation --cg-tol 1e-5 --cg-max-iterations 1000000 --max-iterations "$iterations" \
  --device cuda "$@" > "$work/run.log" 2>&1 ||
  { echo "$0: the profiled run failed:" >&2; tail -5 "$work/run.log" >&2; exit 1; }
commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo "?")
echo "EFG $example of Lu et al. 2021, design iteration $iterations of $iterations, commit" \
  "$commit${*:+, options: $*}: Nsight Compute's gpu__time_duration.sum"
echo
"$python" "$here/bench/ncu_kernels.py" "$work/ncu.csv" assemble_rows_kernel
