#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The mesh fill benchmark of docs/benchmarks.md: voxfe's fill of a rippled
# ball against VTK's vtkPolyDataToImageStencil (python3-vtk9, the system
# /usr/bin/python3) on the same STL, the same grid (voxel centres) and the same
# number of threads, side by side; the voxels that differ are counted.
#   bench/mesh-vs-vtk.sh [BUILD_DIR] [THREADS] [TRIANGLES:N ...]
# defaults: build, 2 threads, 200000:256 and 1000000:512.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
threads=${2:-2}
shift $(($# < 2 ? $# : 2))
cases=("${@:-200000:256 1000000:512}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for c in ${cases[@]}; do
  triangles=${c%%:*} n=${c##*:}
  echo "== $triangles triangles, $n voxels along the longest side"
  OMP_NUM_THREADS=$threads "$build/bench/bench_mesh_fill" "$triangles" "$n" "$threads" cpu "$tmp/m"
  /usr/bin/python3 - "$tmp/m" "$threads" <<'PY'
import sys, time
import numpy as np
from vtkmodules.vtkCommonCore import vtkMultiThreader, vtkSMPTools
from vtkmodules.vtkIOGeometry import vtkSTLReader
from vtkmodules.vtkImagingStencil import vtkPolyDataToImageStencil, vtkImageStencilToImage
from vtkmodules.util.numpy_support import vtk_to_numpy

prefix, threads = sys.argv[1], int(sys.argv[2])
vtkSMPTools().Initialize(threads)
vtkMultiThreader.SetGlobalMaximumNumberOfThreads(threads)
g = open(prefix + ".grid").read().split()
n = [int(v) for v in g[:3]]
origin = [float(v) for v in g[3:6]]
h = [float(v) for v in g[6:9]]
reader = vtkSTLReader()
reader.SetFileName(prefix + ".stl")
reader.Update()
poly = reader.GetOutput()
best = None
for run in range(3):
    t0 = time.perf_counter()
    stencil = vtkPolyDataToImageStencil()
    stencil.SetInputData(poly)
    # VTK's image points are the voxel centres
    stencil.SetOutputOrigin(*[o + 0.5 * s for o, s in zip(origin, h)])
    stencil.SetOutputSpacing(*h)
    stencil.SetOutputWholeExtent(0, n[0] - 1, 0, n[1] - 1, 0, n[2] - 1)
    stencil.SetTolerance(0)
    stencil.Update()
    t1 = time.perf_counter()
    image = vtkImageStencilToImage()
    image.SetInputConnection(stencil.GetOutputPort())
    image.SetInsideValue(1)
    image.SetOutsideValue(0)
    image.SetOutputScalarTypeToUnsignedChar()
    image.Update()
    t2 = time.perf_counter()
    if best is None or t2 - t0 < best[0]:
        best = (t2 - t0, t1 - t0, t2 - t1)
    vtk_mask = vtk_to_numpy(image.GetOutput().GetPointData().GetScalars())
print("vtk:   %d triangles, %d threads: %.3f s = stencil %.3f s + to image %.3f s"
      % (poly.GetNumberOfCells(), threads, *best))
ours = np.fromfile(prefix + ".raw", dtype=np.uint8)
differ = int(np.count_nonzero(ours != vtk_mask))
print("voxels inside: voxfe %d, vtk %d; differ %d (%.2g of the inside voxels)"
      % (ours.sum(dtype=np.int64), vtk_mask.sum(dtype=np.int64), differ,
         differ / max(1, ours.sum(dtype=np.int64))))
PY
done
