#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# TopOpt_in_PETSc (Aage, Andreassen and Lazarov 2015) and voxfe side by side on
# its default cantilever (bench/topopt_petsc_cantilever.yaml), both with MMA,
# on CORES CPU cores (2 unless the environment's CORES says otherwise):
# TopOpt_in_PETSc under `mpirun -np CORES`, voxfe with --threads CORES and
# the options in VOXFE_OPTIONS after its own (e.g. --precision double).
#   [CORES=N] [VOXFE_OPTIONS=...] bench/topopt-petsc.sh TOPOPT_BIN VOXFE_OPTIMIZE [NX NY NZ] [ITERATIONS]
# NX NY NZ are TopOpt_in_PETSc's node counts (default 65 33 33; each minus 1
# must be a multiple of 8 for its 4 multigrid levels), ITERATIONS the design
# iterations of both (default 50). voxfe-voxelize is taken from beside
# VOXFE_OPTIMIZE. Prints both histories and a markdown table of the
# compliance after 1, 10, 20 and ITERATIONS iterations and the seconds per
# design iteration.
#
# Their settings, from its TopOpt.cc, LinearElasticity.cc and MMA.cc: a box of
# 2 x 1 x 1, E = 1, nu = 0.3, volume fraction 0.12, p = 3 throughout, Emin =
# 1e-9, a density filter of radius 0.08 (2.56 elements at the default size;
# kept at 2.56 elements for other sizes), move limit 0.2, MMA with asymptotes
# 0.5 / 0.7 / 1.2, a0 = 1, c = 1000, d = 0, the objective scaled to 10 in the
# first iteration, FGMRES with a multigrid preconditioner to a relative
# residual of 1e-5, the start x = volume fraction. Its MMA takes the move-limit
# box (max(0, x - 0.2) to min(1, x + 0.2)) as its bounds in every iteration
# (voxfe's --mma-bounds move), gives the objective's approximation the
# curvature 0.001 |df| + 0.5e-6 / (U - L) and the constraint's none (voxfe's
# --mma-convexity aage --mma-raa0 1e-6), and solves the subproblem by its
# dual, x explicit in the multipliers, as voxfe's dual method (its default
# --mma-subproblem) does; --mma-epsilon-min 1e-9 was needed by the
# primal-dual method (--mma-subproblem primal-dual in VOXFE_OPTIONS) to come
# close to it and is kept. Its d = 0 is not read by
# its dual method, whose y = max(0, lambda - c) is that of voxfe's d = 1. It
# stops at 400 iterations or a largest density change of at most 0.01;
# voxfe's tolerances are set to 0 so that both run ITERATIONS iterations.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
topopt=$(realpath "$1")
optimize=$(realpath "$2")
voxelize=$(dirname "$optimize")/voxfe-voxelize
nx=${3:-65} ny=${4:-33} nz=${5:-33}
iterations=${6:-50}
if [ $# -eq 3 ]; then iterations=$3; nx=65; ny=33; nz=33; fi
cores=${CORES:-2}
read -r -a extra <<< "${VOXFE_OPTIONS:-}"
ex=$((nx - 1)) ey=$((ny - 1)) ez=$((nz - 1))
h=$(awk -v e="$ey" 'BEGIN { printf "%.17g", 1 / e }')
force=$(awk -v e="$ey" 'BEGIN { printf "%.17g", 0.001 * e }')
rmin=$(awk -v e="$ey" 'BEGIN { printf "%.17g", 0.08 * 32 / e }')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed "s/force: \[0, 0, -0.032\]/force: [0, 0, -$force]/" \
  "$root/bench/topopt_petsc_cantilever.yaml" > "$work/problem.yaml"
"$voxelize" --box "${ex}x${ey}x${ez}" --voxel-size "$h" -p "$work/problem.yaml" \
  -o "$work/model.nc" >/dev/null

# TopOpt_in_PETSc writes its output files into the working directory.
(cd "$work" && OMP_NUM_THREADS=1 mpirun --allow-run-as-root -np "$cores" "$topopt" \
  -nx "$nx" -ny "$ny" -nz "$nz" -rmin "$rmin" -maxItr "$iterations") > "$work/topopt.log" 2>&1
OMP_WAIT_POLICY=PASSIVE "$optimize" "$work/model.nc" -o "$work/design.nc" \
  --optimizer mma --device cpu --threads "$cores" --volume-fraction 0.12 --penalty 3 \
  --emin-ratio 1e-9 --filter density --filter-radius "$rmin" --move-limit 0.2 \
  --no-continuation --cg-tol 1e-5 --mma-objective-scale 10 --mma-bounds move \
  --mma-convexity aage --mma-raa0 1e-6 --mma-epsilon-min 1e-9 \
  --max-iterations "$iterations" --change-tol 0 --objective-tol 0 "${extra[@]}" \
  > "$work/voxfe.log" 2>&1

# "It.: 10, True fx: 3.1, ..., time: 4.0" and "it 10/50 obj 3.1 ... 0.9 s/it"
sed -n 's/^It\.: \([0-9]*\), True fx: \([0-9.e+-]*\),.* time: \([0-9.e+-]*\)$/\1 \2 \3/p' \
  "$work/topopt.log" > "$work/topopt.hist"
sed -n 's|^it \([0-9]*\)/[0-9]* obj \([0-9.e+-]*\) .* \([0-9.e+-]*\) s/it$|\1 \2 \3|p' \
  "$work/voxfe.log" > "$work/voxfe.hist"
for f in topopt voxfe; do
  echo "## $f history (iteration, compliance, seconds)"
  cat "$work/$f.hist"
done
awk -v n="$iterations" -v size="${ex}x${ey}x${ez}" -v cores="$cores" '
  FNR == 1 { file++ }
  { c[file, $1] = $2; t[file] += $3; k[file]++ }
  END {
    printf "\n%s elements, %d design iterations, %d cores\n\n", size, n, cores
    printf "| | TopOpt_in_PETSc (MMA, mpirun -np %d) | voxfe (MMA, --threads %d) | voxfe / TopOpt_in_PETSc - 1 |\n", cores, cores
    print "|---|---|---|---|"
    split("1 10 20 " n, at, " ")
    for (i = 1; i <= 4; i++)
      printf "| compliance after %d | %.6g | %.6g | %+.2f %% |\n", at[i], c[1, at[i]], c[2, at[i]],
        100 * (c[2, at[i]] / c[1, at[i]] - 1)
    printf "| seconds per design iteration | %.3f | %.3f | TopOpt_in_PETSc / voxfe = %.2f |\n",
      t[1] / k[1], t[2] / k[2], (t[1] / k[1]) / (t[2] / k[2])
  }' "$work/topopt.hist" "$work/voxfe.hist"
