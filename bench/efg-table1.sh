#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The three examples of Lu, Gong, Zhang, Xie and Yin 2021 (section 6.1,
# table 1) on voxfe's element-free Galerkin loop: the cantilever (16,605
# nodes), the quarter annulus (14,949 nodes against their 14,840: a voxel
# grid has no polar node lines) and the cube (28,830 nodes), voxelized and
# set up as workflows/efg_cantilever, efg_annulus and efg_cube do (their
# problem files say what the paper leaves open), on the GPU. Prints two
# markdown tables: each run's seconds (in all and by the paper's stages:
# assembly, solve, sensitivity, update), design iterations, CG iterations
# and final compliance; and the paper's GPU column (RTX 2070) against ours,
# stage by stage, with the speed-up (docs/benchmarks.md).
#
#   bench/efg-table1.sh BIN [ITERATIONS [OPTIONS...]]
#
#   BIN          the folder of the programs (build/cli)
#   ITERATIONS   the most design iterations of a run (default 100, the
#                workflows'); a run stops before when converged
#   OPTIONS      any further voxfe-optimize options, the same for every run
#                (--threads 16, --efg-penalty 1e5, ...)
#
# The paper's settings: PCG with block Jacobi to a relative residual of
# 1e-5, volume fractions 0.4, 0.5 and 0.05, SIMP p = 3 (from the first
# iteration: no continuation), OC. The paper gives no number of OC
# iterations and no stopping rule: the runs stop by the FE path's rule
# (largest density change <= 0.01 and relative compliance change <= 1e-3),
# or after ITERATIONS, or at the time limit; the table says which, and the
# ratio of totals compares runs whose lengths may differ (the seconds per
# design iteration do not depend on it). CG may take up to 1,000,000
# iterations a solve (the paper gives no cap; a failed solve would end the
# run). Their "Global" is the sum of their four stages over the OC
# iterations; the shape functions, computed once before them (on the CPU,
# their figure 13), are not in it: ours are in the column "setup and final
# state" with the final design's evaluation, outside "the four stages". The
# cantilever's 16,605 nodes have 49,815 DoF (their table 2; their text says
# 49,950).
#
# The environment may change:
#   DEVICE       cuda (default) or cpu
#   SCALE        paper (default) or small: grids of 343 to 2,583 nodes
#                (cantilever 40x20x2, annulus 5 mm voxels, cube 6x6x6)
#                that run in seconds on a CPU, to try the script
#   TIME_LIMIT   seconds after which a run is stopped at the end of its
#                design iteration and its design so far evaluated (default
#                120; 0: none): the three runs stay within about 7 minutes
#   PYTHON       the python that counts the annulus's field nodes from its
#                design file (default python3; needs numpy with netCDF4 or
#                h5py, else the count is left out)
#
#   bench/efg-table1.sh .gpu/build/cli                      # on the GPU machine
#   DEVICE=cpu SCALE=small bench/efg-table1.sh build/cli 2 --threads 2
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '/^#   bench/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
bin=$1 iterations=100
shift
if [ $# -ge 1 ] && [[ $1 != -* ]]; then iterations=$1; shift; fi
device=${DEVICE:-cuda} scale=${SCALE:-paper} limit=${TIME_LIMIT:-120} python=${PYTHON:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$bin/voxfe-optimize" ] || { echo "$0: no voxfe-optimize in $bin" >&2; exit 2; }
[[ $iterations =~ ^[1-9][0-9]*$ ]] || { echo "$0: ITERATIONS: expected a positive integer, got '$iterations'" >&2; exit 2; }
case $scale in paper | small) ;; *) echo "$0: SCALE: expected paper or small, got '$scale'" >&2; exit 2 ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$here/bench/efg-run.sh"
efg_warm_up "$device" "$@"

# the models: the workflows' grids (small: coarser ones of the same shapes)
flows=$here/workflows
if [ "$scale" = paper ]; then
  cantilever_grid=(--box 80x40x4 --voxel-size "1.25,1.25,1")
  annulus_voxel=2
  cube_grid=(--box 30x30x29 --voxel-size "6.666666666666667,6.666666666666667,6.896551724137931")
else
  cantilever_grid=(--box 40x20x2 --voxel-size "2.5,2.5,2")
  annulus_voxel=5
  cube_grid=(--box 6x6x6 --voxel-size 33.333333333333336)
fi
"$python" "$flows/efg_annulus/quarter_annulus.py" --inner 60 --outer 100 --thickness 20 \
  -o "$work/quarter_annulus.stl"
"$bin/voxfe-voxelize" "${cantilever_grid[@]}" -p "$flows/efg_cantilever/efg_cantilever.yaml" \
  -o "$work/cantilever_model.nc" -q
"$bin/voxfe-voxelize" --mesh "$work/quarter_annulus.stl" --voxel-size "$annulus_voxel" \
  -p "$flows/efg_annulus/efg_annulus.yaml" -o "$work/annulus_model.nc" -q
"$bin/voxfe-voxelize" "${cube_grid[@]}" -p "$flows/efg_cube/efg_cube.yaml" \
  -o "$work/cube_model.nc" -q

# each example's volume fraction, name, and the paper's nodes and GPU
# seconds (assembly, solve, sensitivity, update, global: table 1)
examples=(cantilever annulus cube)
declare -A fraction=([cantilever]=0.4 [annulus]=0.5 [cube]=0.05)
declare -A title=([cantilever]="I cantilever" [annulus]="II quarter annulus" [cube]="III cube")
declare -A paper_nodes=([cantilever]="16,605" [annulus]="14,840" [cube]="28,830")
declare -A paper=([cantilever]="191 110.5 7.7 6.3 315.5" [annulus]="291.7 150.7 10.5 7 459.9"
  [cube]="392.6 641.1 12.6 4.7 1051")

commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo "?")
echo "Lu et al. 2021 table 1 on $(efg_device_name "$device") (--device $device), commit $commit," \
  "$scale scale: block Jacobi PCG to 1e-5, p = 3, at most $iterations design iterations" \
  "and ${limit} s a run (0: no limit)${*:+, options: $*}"
echo
echo "| example | nodes | DoF | design iterations (stop) | seconds: optimize | the four stages | per design iteration | assembly | solve | sensitivity | update | setup and final state | CG iterations | CG per solve | final compliance |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
# a cell of the comparison: theirs / ours = speed-up, with a * where our
# run stopped before it converged
cell() { echo "$1 / $2 = $(efg_ratio "$1" "$2")$([ "$run_stop" = converged ] || echo "*")"; }
comparison=()
for example in "${examples[@]}"; do
  efg_run "$example" "$limit" "$work/${example}_model.nc" --discretization efg \
    --efg-preconditioner jacobi --volume-fraction "${fraction[$example]}" --penalty 3 \
    --no-continuation --cg-tol 1e-5 --cg-max-iterations 1000000 \
    --max-iterations "$iterations" --device "$device" "$@"
  if [ "$run_ok" != 1 ]; then
    echo "| ${title[$example]} | | | failed ($run_error) | | | | | | | | | | | |"
    comparison+=("| ${title[$example]} | failed | | | | |")
    continue
  fi
  nodes=$("$python" "$here/bench/efg_design.py" nodes "$work/$example.nc" || echo "?")
  dofs=$([ "$nodes" = "?" ] && echo "?" || echo $((3 * nodes)))
  echo "| ${title[$example]} | $nodes | $dofs | $run_iterations ($run_stop) | $run_optimize" \
    "| $run_stages | $(efg_per "$run_stages" "$run_iterations") | $run_assembly | $run_solve" \
    "| $run_sensitivity | $run_update | $run_setup | $run_cg" \
    "| $(efg_per "$run_cg" $((run_iterations + 1))) | $run_compliance |"
  read -r p_assembly p_solve p_sensitivity p_update p_global <<<"${paper[$example]}"
  comparison+=("| ${title[$example]} (their ${paper_nodes[$example]} nodes) | $(cell "$p_assembly" "$run_assembly") | $(cell "$p_solve" "$run_solve") | $(cell "$p_sensitivity" "$run_sensitivity") | $(cell "$p_update" "$run_update") | $(cell "$p_global" "$run_stages") |")
done
echo
echo "Their GPU column (RTX 2070, seconds in all OC iterations, iterations not given) / ours = speed-up:"
echo
echo "| example | assembly | solve | sensitivity | update | global (the four stages) |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${comparison[@]}"
echo
echo "*: our run stopped before it converged (limit: ITERATIONS; time: TIME_LIMIT), so its" \
  "totals leave out the design iterations still to come; the seconds per design iteration" \
  "above do not depend on it."
