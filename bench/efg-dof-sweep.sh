#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The cantilever of Lu, Gong, Zhang, Xie and Yin 2021 (example I) at the
# sizes of their table 2, 19,488 to 110,880 degrees of freedom, and at ten
# times the largest (1.1 M), on voxfe's element-free Galerkin loop on the
# GPU. Prints a markdown table: each size's grid, nodes and DoF, design
# iterations, seconds (in all, per design iteration, and the whole program
# with its files), CG iterations, final compliance, and their GPU seconds
# (RTX 2070) with the speed-up; the 1.1 M row against the target of 60 s in
# all (docs/benchmarks.md).
#
#   bench/efg-dof-sweep.sh BIN [ITERATIONS [BIG_ITERATIONS]] [OPTIONS...]
#
#   BIN             the folder of the programs (build/cli)
#   ITERATIONS      the most design iterations of each of table 2's sizes
#                   (default 100, the workflow's; 0: leave them out); a run
#                   stops before when converged
#   BIG_ITERATIONS  the most design iterations at 1.1 M DoF (default 10;
#                   0: leave it out)
#   OPTIONS         any further voxfe-optimize options, the same for every
#                   run (--threads 16, --efg-penalty 1e5, ...)
#
# The grids: the beam is 100 x 50 x 4 mm, its load on the line x = 100,
# y = 25, so a grid needs an even number of voxels along y. Every size of
# table 2 factors into such a grid exactly; of the factorizations, each
# row takes the one whose voxels are nearest to cubes (longest over
# shortest edge):
#   19,488 DoF   6,496 nodes    55 x 28 x 3 voxels   1.818 x 1.786 x 1.333 mm
#   49,815      16,605          80 x 40 x 4          1.25 x 1.25 x 1 (the workflow's)
#   77,265      25,755         100 x 50 x 4          1 x 1 x 1
#   110,880     36,960         111 x 54 x 5          0.901 x 0.926 x 0.8
# 1,108,800 DoF (ten times 110,880) factors only into grids of voxels 1.47
# times longer than wide; the nearest grid of voxels within 4 % of cubes:
#   1,111,011   370,337        256 x 130 x 10        0.391 x 0.385 x 0.4 (+0.2 %)
# The shape functions reach d_max = 2 times the shortest voxel edge, so a
# node couples with more nodes (blocks in its row of K) on grids of voxels
# nearer to cubes; the paper gives its nodes' spacing for none of the sizes.
#
# The settings are table 1's (bench/efg-table1.sh): block Jacobi PCG to
# 1e-5 (at most 1,000,000 CG iterations a solve), volume 0.4, p = 3 from the
# first iteration; the paper gives no number of OC iterations: the runs stop
# by the FE path's rule (largest density change <= 0.01, relative compliance
# change <= 1e-3), after ITERATIONS, or at the time limit (the table says
# which). Their totals are over all their OC iterations: compare the
# seconds per design iteration where the lengths differ.
#
# The environment may change:
#   DEVICE          cuda (default) or cpu
#   SCALE           paper (default) or small: 462- to 2,583-node grids that
#                   run in seconds on a CPU, to try the script
#   TIME_LIMIT      seconds after which a run of table 2's sizes is stopped
#                   at the end of its design iteration and its design so far
#                   evaluated (default 45; 0: none): the four within about
#                   4 minutes
#   BIG_TIME_LIMIT  the same for the 1.1 M DoF run (default 240: with its
#                   setup and final evaluation about 5 minutes)
#
#   bench/efg-dof-sweep.sh .gpu/build/cli                  # on the GPU machine
#   bench/efg-dof-sweep.sh .gpu/build/cli 100 0            # table 2's sizes alone
#   bench/efg-dof-sweep.sh .gpu/build/cli 0 30             # the 1.1 M DoF run alone
#   DEVICE=cpu SCALE=small bench/efg-dof-sweep.sh build/cli 2 1 --threads 2
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '/^#   bench/,/^# The grids/p; /^# The grids/q' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
bin=$1 iterations=100 big_iterations=10
shift
if [ $# -ge 1 ] && [[ $1 != -* ]]; then iterations=$1; shift; fi
if [ $# -ge 1 ] && [[ $1 != -* ]]; then big_iterations=$1; shift; fi
device=${DEVICE:-cuda} scale=${SCALE:-paper}
limit=${TIME_LIMIT:-45} big_limit=${BIG_TIME_LIMIT:-240}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$bin/voxfe-optimize" ] || { echo "$0: no voxfe-optimize in $bin" >&2; exit 2; }
for n in "$iterations" "$big_iterations"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "$0: ITERATIONS, BIG_ITERATIONS: expected integers, got '$n'" >&2; exit 2; }
done
case $scale in paper | small) ;; *) echo "$0: SCALE: expected paper or small, got '$scale'" >&2; exit 2 ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/bench/efg-run.sh"
efg_warm_up "$device" "$@"

# the sizes: their DoF, the grid (voxels, voxel size) and their GPU
# seconds in all (table 2; "-": none); the last is the 1.1 M DoF run
if [ "$scale" = paper ]; then
  sizes=("19,488 55x28x3 1.8181818181818181,1.7857142857142858,1.3333333333333333 39.8"
    "49,815 80x40x4 1.25,1.25,1 315.5"
    "77,265 100x50x4 1 938.4"
    "110,880 111x54x5 0.9009009009009009,0.9259259259259259,0.8 1703.4"
    "1,108,800 256x130x10 0.390625,0.38461538461538464,0.4 -")
else
  sizes=("19,488 20x10x1 5,5,4 39.8"
    "49,815 30x14x2 3.3333333333333335,3.5714285714285716,2 315.5"
    "1,108,800 40x20x2 2.5,2.5,2 -")
fi

commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo "?")
echo "Lu et al. 2021 table 2 (example I) on $(efg_device_name "$device") (--device $device)," \
  "commit $commit, $scale scale: block Jacobi PCG to 1e-5, volume 0.4, p = 3; at most" \
  "$iterations design iterations and $limit s a run, at 1.1 M DoF $big_iterations and" \
  "$big_limit s (0: no limit)${*:+; options: $*}"
echo
echo "| DoF of table 2 | grid (voxels) | nodes | DoF | design iterations (stop) | seconds: the four stages | per design iteration | optimize (with setup and final state) | program in all | CG iterations | CG per solve | final compliance | their GPU seconds | speed-up (stages) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
last=$((${#sizes[@]} - 1))
for i in "${!sizes[@]}"; do
  read -r their grid voxel theirs <<<"${sizes[$i]}"
  cap=$iterations time_limit=$limit
  [ "$i" -eq "$last" ] && cap=$big_iterations time_limit=$big_limit
  [ "$cap" -gt 0 ] || continue
  IFS=x read -r nx ny nz <<<"$grid"
  nodes=$(((nx + 1) * (ny + 1) * (nz + 1)))
  "$bin/voxfe-voxelize" --box "$grid" --voxel-size "$voxel" \
    -p "$here/workflows/efg_cantilever/efg_cantilever.yaml" -o "$work/model_$i.nc" -q
  efg_run "size_$i" "$time_limit" "$work/model_$i.nc" --discretization efg \
    --efg-preconditioner jacobi --volume-fraction 0.4 --penalty 3 --no-continuation \
    --cg-tol 1e-5 --cg-max-iterations 1000000 --max-iterations "$cap" --device "$device" "$@"
  rm -f "$work/model_$i.nc" "$work/size_$i.nc"
  if [ "$run_ok" != 1 ]; then
    echo "| $their | $grid | $nodes | $((3 * nodes)) | failed ($run_error) | | | | | | | | $theirs | |"
    continue
  fi
  if [ "$theirs" = - ]; then
    their="$their (10 x 110,880)" theirs="none (target: < 60 s in all)"
    speedup=$(awk -v t="$run_total" 'BEGIN { print (t < 60 ? "target met" : "target missed") }')
    [ "$run_stop" = converged ] || speedup+="*"
  else
    speedup=$(efg_ratio "$theirs" "$run_stages")$([ "$run_stop" = converged ] || echo "*")
  fi
  echo "| $their | $grid | $nodes | $((3 * nodes)) | $run_iterations ($run_stop)" \
    "| $run_stages | $(efg_per "$run_stages" "$run_iterations") | $run_optimize | $run_total" \
    "| $run_cg | $(efg_per "$run_cg" $((run_iterations + 1))) | $run_compliance | $theirs" \
    "| $speedup |"
done
echo
echo "*: our run stopped before it converged (limit: the iteration cap; time: the time limit)," \
  "so its totals leave out the design iterations still to come; the seconds per design" \
  "iteration do not depend on it."
