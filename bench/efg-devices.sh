#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The element-free Galerkin loop on the CPU and on the GPU (Lu, Gong, Zhang,
# Xie and Yin 2021, table 1): the cantilever of their example I voxelized
# (workflows/efg_cantilever), the same design iterations run with
# --device cpu and --device cuda, and a markdown table on stdout of each
# run's seconds, its stages (assembly, solve, sensitivity, update), CG
# iterations and final compliance, and how far the GPU's final design lies
# from the CPU's (docs/benchmarks.md).
#
#   bench/efg-devices.sh BIN ITERATIONS [OPTIONS...]
#
#   BIN          the folder of the programs (build/cli)
#   ITERATIONS   design iterations of each run
#   OPTIONS      any further voxfe-optimize options, the same for both runs
#                (--threads 16, --cg-tol 1e-4, ...)
#
# SIZE and VOXEL_SIZE in the environment give another grid (80x40x4 and
# 1.25,1.25,1: the paper's 16,605 nodes). The runs are the workflow's:
# volume 0.4, p = 3 from the start, the paper's block Jacobi CG to 1e-5
# unless OPTIONS say otherwise (--efg-preconditioner mg: voxfe's default).
# Needs python3 with netCDF4 (/usr/bin/python3 on Debian).
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '/^#   bench/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
bin=$1 iterations=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$bin/voxfe-optimize" ] || { echo "$0: no voxfe-optimize in $bin" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/voxfe-voxelize" --box "${SIZE:-80x40x4}" --voxel-size "${VOXEL_SIZE:-1.25,1.25,1}" \
  -p "$here/workflows/efg_cantilever/efg_cantilever.yaml" -o "$work/model.nc" -q

echo "| device | seconds | assembly | solve | sensitivity | update | CG iterations | final compliance |"
echo "|---|---|---|---|---|---|---|---|"
for device in cpu cuda; do
  out=$("$bin/voxfe-optimize" "$work/model.nc" --discretization efg --volume-fraction 0.4 \
    --max-iterations "$iterations" --penalty 3 --no-continuation --cg-tol 1e-5 \
    --cg-max-iterations 100000 --efg-preconditioner jacobi --device "$device" "$@" \
    -o "$work/$device.nc" 2>/dev/null)
  # "...: final design compliance C, volume fraction F, M_nd M%; S s, N CG iterations"
  compliance=$(sed -n 's/.*final design compliance \([^,]*\),.*/\1/p' <<<"$out")
  seconds=$(sed -n 's/.*; \([0-9.]*\) s, .*/\1/p' <<<"$out")
  cg=$(sed -n 's/.*s, \([0-9]*\) CG iterations.*/\1/p' <<<"$out")
  # "stages ...: assembly A s, solve S s (...), sensitivity T s, update U s"
  stage() { sed -n "s/^stages .* $1 \([0-9.]*\) s.*/\1/p" <<<"$out"; }
  echo "| $device | $seconds | $(stage assembly) | $(stage solve) | $(stage sensitivity) | $(stage update) | $cg | $compliance |"
done
/usr/bin/python3 - "$work/cpu.nc" "$work/cuda.nc" <<'PY'
import sys
import netCDF4
import numpy as np
a, b = (netCDF4.Dataset(f) for f in sys.argv[1:3])
da, db = (np.asarray(d.variables["density"][:], dtype=float) for d in (a, b))
ha, hb = (np.asarray(d.groups["optimization"].variables["objective"][:], dtype=float)
          for d in (a, b))
print("\nGPU against CPU: the compliance history within %.1e (relative), the voxel densities "
      "within %.1e" % (np.max(np.abs(ha - hb) / np.abs(ha)), np.max(np.abs(da - db))))
PY
