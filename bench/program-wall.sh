#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The large optimizations through voxfe-optimize as a user runs them, files
# included (docs/benchmarks.md, the `program-wall` rows):
#
#   bench/program-wall.sh BIN_DIR OUT_DIR [CANTILEVER_ITS [CELL_ITS [OPTIONS...]]]
#
# BIN_DIR is a build folder (cli/voxfe-voxelize, cli/voxfe-optimize), OUT_DIR
# a scratch folder for the models and designs. Runs
#  1. the 2:1:1 cantilever of workflows/cantilever at 512 x 256 x 256,
#     CANTILEVER_ITS (10) design iterations;
#  2. a periodic cell of 512^3 voxels, bulk modulus, volume 0.3, CELL_ITS (4)
#     design iterations (0 skips it);
# each with --timings (its stages on stderr) and the wall time of the
# process, from its start to its exit, with every OPTION given to both.
set -euo pipefail
bin=$(cd "${1:?usage: program-wall.sh BIN_DIR OUT_DIR [CANTILEVER_ITS [CELL_ITS [OPTIONS...]]]}" && pwd)
mkdir -p "${2:?usage: program-wall.sh BIN_DIR OUT_DIR [CANTILEVER_ITS [CELL_ITS [OPTIONS...]]]}"
out=$(cd "$2" && pwd)
cantilever_its=${3:-10}
cell_its=${4:-4}
options=("${@:5}")
here=$(cd "$(dirname "$0")/.." && pwd)
TIMEFORMAT='wall %R s'

[ -f "$out/c512.nc" ] ||
  "$bin/cli/voxfe-voxelize" --box 512x256x256 --voxel-size 1 \
    -p "$here/workflows/cantilever/cantilever.yaml" -o "$out/c512.nc"
echo "== cantilever 512 x 256 x 256, $cantilever_its design iterations ${options[*]:-}"
time "$bin/cli/voxfe-optimize" "$out/c512.nc" -o "$out/c512-design.nc" -q --timings \
  --max-iterations "$cantilever_its" ${options[@]+"${options[@]}"}
ls -l "$out/c512-design.nc" | awk '{printf "design file %.2f GB\n", $5 / 1e9}'

[ "$cell_its" -gt 0 ] || exit 0
if [ ! -f "$out/cell512.nc" ]; then
  printf 'voxfe-problem: 1\ntitle: a periodic unit cell\nmaterial: {name: solid, E: 1.0, nu: 0.3}\ncell: true\n' \
    >"$out/cell.yaml"
  "$bin/cli/voxfe-voxelize" --box 512x512x512 --voxel-size 1 -p "$out/cell.yaml" \
    -o "$out/cell512.nc"
fi
echo "== periodic cell 512^3, bulk, $cell_its design iterations ${options[*]:-}"
time "$bin/cli/voxfe-optimize" "$out/cell512.nc" -o "$out/cell512-design.nc" -q --timings \
  --objective bulk --volume-fraction 0.3 --max-iterations "$cell_its" \
  ${options[@]+"${options[@]}"}
ls -l "$out/cell512-design.nc" | awk '{printf "design file %.2f GB\n", $5 / 1e9}'
