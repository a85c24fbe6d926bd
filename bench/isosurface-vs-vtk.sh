#!/usr/bin/env bash
# The isosurface benchmark of docs/benchmarks.md: voxfe's isosurface and
# binary STL writer against VTK's vtkFlyingEdges3D (python3-vtk9, the system
# /usr/bin/python3), on the same gyroid density field, the same number of
# threads, side by side.
#   bench/isosurface-vs-vtk.sh [BUILD_DIR] [THREADS] [SIZES...]
# defaults: build, 2 threads, 256 (add 512 for the large case: ~1 GiB of
# density per program, and several GiB for the meshes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
threads=${2:-2}
shift $(($# < 2 ? $# : 2))
sizes=("${@:-256}")
periods=4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for n in "${sizes[@]}"; do
  "$build/bench/bench_isosurface" "$n" "$threads" "$periods" "$tmp/voxfe.stl"
  rm -f "$tmp/voxfe.stl"
  /usr/bin/python3 - "$n" "$threads" "$periods" "$tmp/vtk.stl" <<'PY'
import sys, time
import numpy as np
from vtkmodules.vtkCommonCore import vtkSMPTools
from vtkmodules.vtkCommonDataModel import vtkImageData
from vtkmodules.vtkFiltersCore import vtkFlyingEdges3D
from vtkmodules.vtkIOGeometry import vtkSTLWriter
from vtkmodules.util.numpy_support import numpy_to_vtk

n, threads, periods, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
smp = vtkSMPTools()
smp.Initialize(threads)
# the same field as bench_isosurface.c, at the voxel centres (VTK's points)
x = 2 * np.pi * periods * (np.arange(n) + 0.5) / n
z, y, xx = np.meshgrid(x, x, x, indexing="ij")  # (z, y, x): x fastest, as VTK
v = np.sin(xx) * np.cos(y) + np.sin(y) * np.cos(z) + np.sin(z) * np.cos(xx)
density = np.ascontiguousarray(((v + 1.5) / 3.0).ravel())  # float64, as voxfe's
del v, xx, y, z
image = vtkImageData()
image.SetDimensions(n, n, n)
image.SetOrigin(0.5, 0.5, 0.5)
array = numpy_to_vtk(density, deep=0)
array.SetName("density")
image.GetPointData().SetScalars(array)

best, out_poly = 1e30, None
for _ in range(5):
    fe = vtkFlyingEdges3D()
    fe.SetInputData(image)
    fe.SetValue(0, 0.5)
    fe.ComputeNormalsOff()
    fe.ComputeGradientsOff()
    fe.ComputeScalarsOff()
    t = time.perf_counter()
    fe.Update()
    t = time.perf_counter() - t
    if t < best:
        best, out_poly = t, fe.GetOutput()
writer = vtkSTLWriter()
writer.SetFileName(out)
writer.SetFileTypeToBinary()
writer.SetInputData(out_poly)
t = time.perf_counter()
writer.Write()
t_stl = time.perf_counter() - t
print(f"VTK    {n}^3 gyroid ({periods:g} periods), {smp.GetEstimatedNumberOfThreads()} threads "
      f"({smp.GetBackend()}): vtkFlyingEdges3D {best:.4f} s (best of 5), "
      f"{out_poly.GetNumberOfPolys()} triangles, {out_poly.GetNumberOfPoints()} vertices; "
      f"vtkSTLWriter {t_stl:.4f} s (no fsync)")
PY
  rm -f "$tmp/vtk.stl"
  echo
done
