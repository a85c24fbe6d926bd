#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Martinez-Frutos et al. 2017's three benchmarks at the paper's sizes, one after the other, with
# the time of each stage (docs/benchmarks.md, "Martínez-Frutos et al. 2017's three benchmarks"):
#   bench/martinez-frutos2017.sh BUILD_DIR OUT_DIR [DEVICE [SETTING...]]
# BUILD_DIR holds cli/ and bench/ (a CUDA build), OUT_DIR receives the model
# files and the designs (<name>-design.nc). The problem files are read from VOXFE_WORKFLOWS (default: the
# source tree's workflows/, as <name>/<name>.yaml). The settings are those of the three workflows
# (workflows/bridge, workflows/gripper, workflows/heatsink) at full size;
# each SETTING (bench_optimize's --fine-smoothing-steps=N, --fp16-levels=USE or
# --kernel=K) goes to every run.
set -euo pipefail
build=${1:?usage: martinez-frutos2017.sh BUILD_DIR OUT_DIR [DEVICE]}
out=${2:?usage: martinez-frutos2017.sh BUILD_DIR OUT_DIR [DEVICE]}
device=${3:-cuda}
settings=("${@:4}")
workflows=${VOXFE_WORKFLOWS:-$(cd "$(dirname "$0")/.." && pwd)/workflows}
mkdir -p "$out"
run() { # name size problem bench-arguments...
  local name=$1 size=$2 problem=$3
  shift 3
  "$build/cli/voxfe-voxelize" --box "$size" --voxel-size 1 --problem "$problem" \
    -o "$out/$name.nc" >/dev/null
  echo "== $name"
  "$build/bench/bench_optimize" "$out/$name.nc" "$device" "$@" \
    --design="$out/$name-design.nc" ${settings[@]+"${settings[@]}"}
}
# bridge: volume 15%, R = 3, E_void/E = 1e-6, q up to 3, CG tolerance 1e-8
run bridge 184x40x90 "$workflows/bridge/bridge.yaml" 0.15 3 1e-6 3 150 0.5 0.2 1e-8
# gripper: volume 10%, R = 4, E_void/E = 1e-3 GPa / 3 GPa, eta 0.3, zeta 0.1
run gripper 160x40x80 "$workflows/gripper/gripper.yaml" 0.1 4 3.333333e-4 3 150 0.3 0.1 1e-6
# heat sink: volume 30%, R = 5, kmin/k0 = 1e-3
run heatsink 128x64x256 "$workflows/heatsink/heatsink.yaml" 0.3 5 1e-3 3 150
