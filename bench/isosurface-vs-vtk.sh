#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The isosurface benchmark of docs/benchmarks.md: voxfe's isosurface and
# binary STL writer against VTK's vtkFlyingEdges3D (python3-vtk9, the system
# /usr/bin/python3), on the same density field, the same number of threads,
# side by side.
#   bench/isosurface-vs-vtk.sh [BUILD_DIR] [THREADS] [CASES...]
# A case is N (an N^3 gyroid) or DESIGN.nc:FACTOR (the density of a
# voxfe-optimize result, upsampled FACTOR times by trilinear interpolation;
# VTK reads the same upsampled field from a raw file).
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

for case in "${sizes[@]}"; do
  if [[ $case == *:* ]]; then
    "$build/bench/bench_isosurface" --design "${case%:*}" "${case##*:}" "$threads" \
      "$tmp/voxfe.stl" 5 "$tmp/field.raw"
    field=$tmp/field.raw
  else
    "$build/bench/bench_isosurface" "$case" "$threads" "$periods" "$tmp/voxfe.stl"
    field=gyroid:$case
  fi
  rm -f "$tmp/voxfe.stl"
  /usr/bin/python3 - "$field" "$threads" "$periods" "$tmp/vtk.stl" <<'PY'
import sys, time
import numpy as np
from vtkmodules.vtkCommonCore import vtkSMPTools
from vtkmodules.vtkCommonDataModel import vtkImageData
from vtkmodules.vtkFiltersCore import vtkFlyingEdges3D
from vtkmodules.vtkIOGeometry import vtkSTLWriter
from vtkmodules.util.numpy_support import numpy_to_vtk

field, threads, periods, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
smp = vtkSMPTools()
smp.Initialize(threads)
image = vtkImageData()
if field.startswith("gyroid:"):
    # the same field as bench_isosurface.c, at the voxel centres (VTK's points)
    n = int(field[7:])
    x = 2 * np.pi * periods * (np.arange(n) + 0.5) / n
    z, y, xx = np.meshgrid(x, x, x, indexing="ij")  # (z, y, x): x fastest, as VTK
    v = np.sin(xx) * np.cos(y) + np.sin(y) * np.cos(z) + np.sin(z) * np.cos(xx)
    density = np.ascontiguousarray(((v + 1.5) / 3.0).ravel())  # float64, as voxfe's
    del v, xx, y, z
    image.SetDimensions(n, n, n)
    image.SetOrigin(0.5, 0.5, 0.5)
    what = f"{n}^3 gyroid ({periods:g} periods)"
else:
    # the upsampled design that bench_isosurface wrote, points at the voxel centres
    with open(field + ".dims") as f:
        d = f.read().split()
    nx, ny, nz = (int(t) for t in d[:3])
    h, o = [float(t) for t in d[3:6]], [float(t) for t in d[6:9]]
    density = np.fromfile(field, dtype=np.float64)
    image.SetDimensions(nx, ny, nz)
    image.SetSpacing(*h)
    image.SetOrigin(*(o[k] + 0.5 * h[k] for k in range(3)))
    what = f"{nx}x{ny}x{nz} design"
array = numpy_to_vtk(density, deep=0)
array.SetName("density")
image.GetPointData().SetScalars(array)

best, best_cpu, out_poly = 1e30, 1e30, None
for _ in range(5):
    fe = vtkFlyingEdges3D()
    fe.SetInputData(image)
    fe.SetValue(0, 0.5)
    fe.ComputeNormalsOff()
    fe.ComputeGradientsOff()
    fe.ComputeScalarsOff()
    t, c = time.perf_counter(), time.process_time()
    fe.Update()
    t, c = time.perf_counter() - t, time.process_time() - c
    best_cpu = min(best_cpu, c)
    if t < best:
        best, out_poly = t, fe.GetOutput()
writer = vtkSTLWriter()
writer.SetFileName(out)
writer.SetFileTypeToBinary()
writer.SetInputData(out_poly)
t = time.perf_counter()
writer.Write()
t_stl = time.perf_counter() - t
print(f"VTK    {what}, {smp.GetEstimatedNumberOfThreads()} threads "
      f"({smp.GetBackend()}): vtkFlyingEdges3D {best:.4f} s (best of 5; CPU {best_cpu:.4f} s), "
      f"{out_poly.GetNumberOfPolys()} triangles, {out_poly.GetNumberOfPoints()} vertices; "
      f"vtkSTLWriter {t_stl:.4f} s (no fsync)")
PY
  rm -f "$tmp/vtk.stl" "$tmp/field.raw" "$tmp/field.raw.dims"
  echo
done
