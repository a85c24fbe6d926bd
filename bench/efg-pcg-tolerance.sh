#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The PCG tolerance study of Lu, Gong, Zhang, Xie and Yin 2021 (section 6.3)
# on voxfe's element-free Galerkin loop: the same design run at each CG
# tolerance, with its CG iterations, seconds, final compliance and how far
# its final design lies from the tightest tolerance's. A markdown table on
# stdout (docs/benchmarks.md).
#
#   bench/efg-pcg-tolerance.sh BIN MODEL ITERATIONS "TOLERANCES" [OPTIONS...]
#
#   BIN          the folder of voxfe-optimize (build/cli)
#   MODEL        a model file (workflows/efg_cantilever: make model.nc)
#   ITERATIONS   design iterations of each run
#   TOLERANCES   the --cg-tol values, tightest first: "1e-8 1e-6 1e-4 1e-2 1e-1"
#   OPTIONS      any further voxfe-optimize options (--threads 2, --penalty 3,
#                --efg-preconditioner mg, ...), the same for every run; the
#                preconditioner is the paper's block Jacobi unless they say
#
# The design difference is the largest |difference| of the voxel densities
# from the first (tightest) run's, and of the compliances relatively.
# Needs python3 with netCDF4 (/usr/bin/python3 on Debian).
set -euo pipefail
if [ $# -lt 4 ]; then
  sed -n '/^#   bench/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
bin=$1 model=$2 iterations=$3 tolerances=$4
shift 4
[ -x "$bin/voxfe-optimize" ] || { echo "$0: no voxfe-optimize in $bin" >&2; exit 2; }
[ -r "$model" ] || { echo "$0: cannot read $model" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "| CG tolerance | CG iterations | seconds | final compliance | compliance vs tightest | largest voxel density difference |"
echo "|---|---|---|---|---|---|"
first=""
for tol in $tolerances; do
  out="$work/design_$tol.nc"
  summary=$("$bin/voxfe-optimize" "$model" --discretization efg --max-iterations "$iterations" \
    --cg-tol "$tol" --cg-max-iterations 1000000 --efg-preconditioner jacobi "$@" -o "$out" \
    2>/dev/null | grep 'final design compliance')
  # "...: final design compliance C, volume fraction F, M_nd M%; S s, N CG iterations"
  compliance=$(sed -n 's/.*final design compliance \([^,]*\),.*/\1/p' <<<"$summary")
  seconds=$(sed -n 's/.*; \([0-9.]*\) s, .*/\1/p' <<<"$summary")
  cg=$(sed -n 's/.*s, \([0-9]*\) CG iterations.*/\1/p' <<<"$summary")
  [ -n "$first" ] || first=$out
  diff=$(/usr/bin/python3 - "$first" "$out" <<'PY'
import sys
import netCDF4
import numpy as np
a, b = (netCDF4.Dataset(f) for f in sys.argv[1:3])
da, db = (np.asarray(d.variables["density"][:], dtype=float) for d in (a, b))
print("%.2e" % np.max(np.abs(da - db)))
PY
)
  first_c=${first_c:-$compliance}
  rel=$(/usr/bin/python3 -c "print('%.1e' % (abs($compliance - $first_c) / abs($first_c)))")
  echo "| $tol | $cg | $seconds | $compliance | $rel | $diff |"
done
