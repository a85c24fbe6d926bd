#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The element-free Galerkin loop against voxfe's finite elements on one
# problem: the cantilever of Lu, Gong, Zhang, Xie and Yin 2021 (example I,
# workflows/efg_cantilever: 80 x 40 x 4 voxels, 16,605 nodes) optimized with
# --discretization efg and with --discretization fe on the GPU. Prints a
# markdown table of each run's seconds, design iterations, CG iterations and
# compliance, both final designs' compliance under one discretization (the
# FE one), and how far the two designs lie apart (docs/benchmarks.md).
#
#   bench/efg-vs-fe.sh BIN [ITERATIONS] [OPTIONS...]
#
#   BIN          the folder of the programs (build/cli)
#   ITERATIONS   the most design iterations of each run (default 100, the
#                workflow's); a run stops before when converged
#   OPTIONS      any further voxfe-optimize options, the same for both runs
#                (--threads 16, ...)
#
# Both runs: volume 0.4, SIMP p = 3 from the first iteration, OC with move
# 0.2 and damping 0.5, CG to 1e-5, the FE path's stopping rule (largest
# density change <= 0.01, relative compliance change <= 1e-3). Each keeps
# its own discretization's ways: EFG a density per node, no filter,
# multigrid PCG (voxfe's default; block Jacobi, the paper's, with
# EFG_PRECONDITIONER=jacobi); FE a density per voxel, the sensitivity filter
# of 1.5 voxel edges (without it FE designs checkerboard), geometric
# multigrid PCG.
#
# The compliances: each run's own is of a different discretization (EFG:
# moving least-squares shape functions, supports held by a penalty; FE:
# trilinear bricks, supports exact) and of a different density field (EFG's
# smooth nodal interpolation, FE's piecewise constant one), so they differ
# even for one design. The table also evaluates both final designs with one
# discretization, FE at CG 1e-8 (voxfe-optimize --max-iterations 0): the
# EFG design enters as its voxel densities (the mean of each voxel's Gauss
# points), which SIMP then penalizes per voxel, a little softer in grey
# voxels than EFG's per Gauss point penalty. The design difference is of the
# voxel densities: largest and mean |difference|, and the share of voxels
# solid (>= 0.5) in one design and void in the other.
#
# The environment may change:
#   DEVICE       cuda (default) or cpu
#   SCALE        paper (default) or small: 40 x 20 x 2 voxels of 2.5 x 2.5 x
#                2 mm (2,583 nodes) that run in seconds on a CPU
#   TIME_LIMIT   seconds after which a run is stopped at the end of its
#                design iteration and its design so far evaluated (default
#                240; 0: none)
#   EFG_PRECONDITIONER  the EFG run's --efg-preconditioner (default mg,
#                voxfe's; jacobi: the paper's block Jacobi)
#   PYTHON       the python that compares the designs (default python3;
#                needs numpy with netCDF4 or h5py, else that line is left out)
#
#   bench/efg-vs-fe.sh .gpu/build/cli                        # on the GPU machine
#   DEVICE=cpu SCALE=small bench/efg-vs-fe.sh build/cli 2 --threads 2
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '/^#   bench/,/^# Both runs/p; /^# Both runs/q' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
bin=$1 iterations=100
shift
if [ $# -ge 1 ] && [[ $1 != -* ]]; then iterations=$1; shift; fi
device=${DEVICE:-cuda} scale=${SCALE:-paper} limit=${TIME_LIMIT:-240} python=${PYTHON:-python3}
efg_preconditioner=${EFG_PRECONDITIONER:-mg}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$bin/voxfe-optimize" ] || { echo "$0: no voxfe-optimize in $bin" >&2; exit 2; }
[[ $iterations =~ ^[1-9][0-9]*$ ]] || { echo "$0: ITERATIONS: expected a positive integer, got '$iterations'" >&2; exit 2; }
case $scale in
  paper) grid=(--box 80x40x4 --voxel-size "1.25,1.25,1") ;;
  small) grid=(--box 40x20x2 --voxel-size "2.5,2.5,2") ;;
  *) echo "$0: SCALE: expected paper or small, got '$scale'" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/bench/efg-run.sh"
"$bin/voxfe-voxelize" "${grid[@]}" -p "$here/workflows/efg_cantilever/efg_cantilever.yaml" \
  -o "$work/model.nc" -q

commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo "?")
echo "EFG against FE, the cantilever of Lu et al. 2021 ($scale scale), on" \
  "$(efg_device_name "$device") (--device $device), commit $commit: volume 0.4, p = 3, CG to" \
  "1e-5, at most $iterations design iterations and $limit s a run (0: no limit)${*:+; options: $*}"
echo
echo "| discretization | design iterations (stop) | seconds: optimize | the design iterations' stages | per design iteration | CG iterations | CG per solve | final compliance (its own discretization) | the final design under FE | its voxels' volume fraction | M_nd % |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
common=(--volume-fraction 0.4 --penalty 3 --no-continuation --cg-tol 1e-5
  --max-iterations "$iterations" --device "$device")
for kind in efg fe; do
  if [ $kind = efg ]; then
    label="EFG (PCG with --efg-preconditioner $efg_preconditioner, no filter)"
    efg_run efg "$limit" "$work/model.nc" --discretization efg \
      --efg-preconditioner "$efg_preconditioner" \
      --cg-max-iterations 1000000 "${common[@]}" "$@"
  else
    label="FE (multigrid PCG, sensitivity filter)"
    efg_run fe "$limit" "$work/model.nc" --discretization fe "${common[@]}" "$@"
  fi
  if [ "$run_ok" != 1 ]; then
    echo "| $label | failed ($run_error) | | | | | | | | | |"
    continue
  fi
  row="| $label | $run_iterations ($run_stop) | $run_optimize | $run_stages"
  row+=" | $(efg_per "$run_stages" "$run_iterations") | $run_cg"
  row+=" | $(efg_per "$run_cg" $((run_iterations + 1))) | $run_compliance"
  # the final design's voxel densities under FE, to CG 1e-8
  efg_run "${kind}_under_fe" 0 "$work/$kind.nc" --discretization fe --max-iterations 0 \
    --penalty 3 --cg-tol 1e-8 --device "$device" "$@"
  if [ "$run_ok" = 1 ]; then
    row+=" | $run_compliance | $run_volume | $run_mnd |"
  else
    row+=" | failed ($run_error) | | |"
  fi
  echo "$row"
done
echo
if [ -s "$work/efg.nc" ] && [ -s "$work/fe.nc" ] &&
  difference=$("$python" "$here/bench/efg_design.py" compare "$work/efg.nc" "$work/fe.nc"); then
  read -r largest mean disagree <<<"$difference"
  echo "The designs' voxel densities differ by at most $largest, by $mean on average;" \
    "$(awk -v s="$disagree" 'BEGIN { printf "%.2f", 100 * s }') % of the voxels are solid" \
    "(density >= 0.5) in one design and void in the other."
else
  echo "The designs' difference is left out (a run failed, or python cannot read the files)."
fi
