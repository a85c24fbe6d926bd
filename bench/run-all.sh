#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every headline row of docs/benchmarks.md, part by part:
#
#   bench/run-all.sh BUILD_DIR OUT_DIR [PART...]
#
# BUILD_DIR is a Release build of this tree (a CUDA build for the GPU parts:
# -DVOXFE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90), OUT_DIR a scratch folder for
# models, designs and one log per part (OUT_DIR/PART.log). Without PART it runs
# `gpu` on a machine with nvidia-smi and `cpu` otherwise. Parts:
#
#   gpu             cantilever256 cantilever512 clinical program-wall perlin cell128
#                   cell512 cell512-phased martinez-frutos2017 isosurface-gpu mesh-gpu   (about 21 min)
#   cpu             cpu-cantilever isosurface mesh dicom decimation  (about 30 min on 2 cores)
#   cantilever256   the 2:1:1 cantilever, 256 x 128 x 128, 100 design iterations, mixed
#   cantilever512   the same at 512 x 256 x 256, 10 design iterations
#   clinical        voxfe-analyze on the synthetic HR-pQCT sample, and the batch of 8
#   clinical-stop   the default stop's force and failure load against a 1e-9 solve on
#                   the 8 samples, along and across (about 4 min on an H100; not in `gpu`)
#   program-wall    voxfe-optimize with its files: the cantilever at 512 x 256 x 256
#                   (10 its) and the bulk-modulus cell at 512^3 (4 its), --timings
#   perlin          the sparse bone solve of the 550^3 and 160^3 perlin bones to 1e-6
#   perlin-2gpu     the 550^3 perlin bone on one GPU and on two MPI ranks with a GPU each,
#                   V- and W-cycles (a machine with two GPUs and mpirun; not in `gpu`)
#   cell128         the bulk-modulus cell at 128^3, 30 design iterations
#   cell512         the same at 512^3, 4 design iterations (the solver auto picks)
#   cell512-phased  512^3 with --cell-solver phased, 250 design iterations (about 4 min)
#   martinez-frutos2017  the bridge, gripper and heat sink of Martinez-Frutos et al. 2017
#   isosurface-gpu  the GPU isosurface of a 512^3 gyroid and an upsampled design
#   mesh-gpu        the GPU fill of a million-triangle ball at 512^3
#   cpu-cantilever  the CPU cantilever at 48 x 24 x 24 and 96 x 48 x 48, 20 iterations
#   isosurface      the CPU isosurface and STL writer against VTK's flying edges
#   mesh            the CPU mesh fill against VTK's vtkPolyDataToImageStencil
#   dicom           a 1000-slice CT series read into a model file
#   decimation      2.9 M triangles of a gyroid decimated to 100 000
#
# A device call of the lab's GPU machine runs at most 10 minutes: run `gpu` as
# two or three calls of a few parts each. THREADS (default: all cores for the
# GPU parts, 2 for the CPU parts) sets the host threads.
set -euo pipefail
build=$(cd "${1:?usage: run-all.sh BUILD_DIR OUT_DIR [PART...]}" && pwd)
mkdir -p "${2:?usage: run-all.sh BUILD_DIR OUT_DIR [PART...]}"
out=$(cd "$2" && pwd)
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$build/bench
cli=$build/cli
cantilever=$root/workflows/cantilever/cantilever.yaml
if [ $# -eq 0 ]; then
  if command -v nvidia-smi >/dev/null; then set -- gpu; else set -- cpu; fi
fi

# the 64 x 32 x 32 cantilever optimized for 60 iterations: the design the
# isosurface parts upsample
design() { # DEVICE
  [ -f "$out/design.nc" ] && return
  "$cli/voxfe-voxelize" --box 64x32x32 --voxel-size 1 -p "$cantilever" -o "$out/model.nc"
  "$cli/voxfe-optimize" "$out/model.nc" -o "$out/design.nc" --volume-fraction 0.3 \
    --filter-radius 2 --max-iterations 60 --device "$1"
}

part() {
  case $1 in
  gpu)
    for p in cantilever256 cantilever512 clinical program-wall perlin cell128 cell512 \
             cell512-phased martinez-frutos2017 isosurface-gpu mesh-gpu; do
      part "$p"
    done
    return ;;
  cpu)
    for p in cpu-cantilever isosurface mesh dicom decimation; do part "$p"; done
    return ;;
  esac
  echo "== $1 ($(date -u +%FT%TZ), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'))"
  case $1 in
  cantilever256) "$bench/bench_cuda" cantilever "$cantilever" 256 100 mixed ;;
  cantilever512) "$bench/bench_cuda" cantilever "$cantilever" 512 10 mixed ;;
  clinical) "$root/bench/clinical.sh" "$build" 8 3 ;;
  clinical-stop) "$root/bench/clinical-stop.sh" "$build" 8 ;;
  program-wall) "$root/bench/program-wall.sh" "$build" "$out/program-wall" 10 4 ;;
  perlin)
    "$bench/bench_sparse" 550 cuda 1e-6
    "$bench/bench_sparse" 160 cuda 1e-6 ;;
  perlin-2gpu)
    "$bench/bench_sparse" 550 cuda 1e-6 --write="$out/perlin550.nc"
    for cycle in v w; do
      "$bench/bench_sparse" "$out/perlin550.nc" cuda 1e-6 --cycle=$cycle
      mpirun -np 2 --bind-to none -x OMP_NUM_THREADS=$(($(nproc) / 2)) "$bench/bench_mpi_sparse" \
        "$out/perlin550.nc" mixed 1e-6 --device=cuda --cycle=$cycle
    done ;;
  cell128) "$bench/bench_cell" 128 cuda 0.3 30 --binary=0 ;;
  cell512) "$bench/bench_cell" 512 cuda 0.3 4 --binary=0 ;;
  cell512-phased)
    "$bench/bench_cell" 512 cuda 0.3 250 --cell-solver=phased --start=zhang2023 --penalty=4 \
      --filter-radius=4 --binary=volume ;;
  martinez-frutos2017) "$root/bench/martinez-frutos2017.sh" "$build" "$out/martinez-frutos2017" cuda ;;
  isosurface-gpu)
    design cuda
    "$bench/bench_isosurface" --device cuda 512 "${THREADS:-16}" 4 "$out/g.stl" 5
    "$bench/bench_isosurface" --device cuda --design "$out/design.nc" 8 "${THREADS:-16}" \
      "$out/d.stl" 5
    "$bench/bench_isosurface" 512 "${THREADS:-16}" 4 "$out/g.stl" 3 ;;
  mesh-gpu)
    OMP_NUM_THREADS=${THREADS:-16} "$bench/bench_mesh_fill" 1000000 512 "${THREADS:-16}" cuda \
      "$out/ball" ;;
  cpu-cantilever) OMP_NUM_THREADS=${THREADS:-2} "$root/bench/cpu-cantilever.sh" "$build" ;;
  isosurface)
    design cpu
    OMP_WAIT_POLICY=PASSIVE "$root/bench/isosurface-vs-vtk.sh" "$build" "${THREADS:-2}" 256 512 \
      "$out/design.nc:4" "$out/design.nc:8" ;;
  mesh) "$root/bench/mesh-vs-vtk.sh" "$build" "${THREADS:-2}" 200000:256 1000000:512 ;;
  dicom) "$root/bench/dicom-series.sh" "$build" 1000 "${THREADS:-2}" ;;
  decimation) "$bench/bench_isosurface" --triangles 100000 256 "${THREADS:-2}" 4 "$out/dec.stl" 1 ;;
  *) echo "run-all.sh: unknown part $1" >&2; exit 2 ;;
  esac 2>&1 | tee "$out/$1.log"
}

for p in "$@"; do part "$p"; done
