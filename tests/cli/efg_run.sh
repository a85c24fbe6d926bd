# SPDX-License-Identifier: BSD-3-Clause
# The element-free Galerkin discretisation end to end: a small cantilever
# voxelized, optimized with --discretization efg for a few iterations (the
# option in --help and in the history line, the voxel density in [0, 1] that
# meets the volume fraction, the nodal densities on the node grid), exported
# to .vti, .vtu and .stl; --device auto with the smoothed-aggregation
# preconditioner on the CPU; and the combinations EFG does not support
# refused with one line, exit status 2 and no file.
. "$(dirname "$0")/lib.sh"

"$OPTIMIZE" --help | grep -q -- "--discretization=KIND" || fail "optimize --help lacks --discretization"
make_model model.nc 8x4x4 || finish

"$OPTIMIZE" model.nc -o design.nc --discretization efg --max-iterations 4 --volume-fraction 0.4 \
  --threads 2 >"$LOG/out" 2>"$LOG/err" ||
  { fail "optimize --discretization efg: $(tail -n 3 "$LOG/err")"; finish; }
[ "$(wc -l <"$LOG/err")" -eq 4 ] || fail "optimize: not one progress line per iteration"
grep -qE "^design\.nc: iteration limit reached .*after 4 iterations: final design compliance" "$LOG/out" ||
  fail "optimize: summary is '$(cat "$LOG/out")'"
grep -qE "^stages of the design iterations .*: assembly [0-9.]+ s, solve [0-9.]+ s .*, sensitivity [0-9.]+ s, update [0-9.]+ s$" "$LOG/out" ||
  fail "optimize: no line with the stages' seconds in '$(cat "$LOG/out")'"
grep -qE "the last level factored [1-4] times\)" "$LOG/out" ||
  fail "optimize: the multigrid's last level factored '$(tail -n 1 "$LOG/out")'"
# the default drift (0.3) keeps the factor while the diagonal holds: on this
# model made 6 times in 10 design iterations (every time in the first four)
"$OPTIMIZE" model.nc -o kept.nc --discretization efg --max-iterations 10 --volume-fraction 0.4 \
  --threads 2 >"$LOG/out-kept" 2>/dev/null || fail "optimize --max-iterations 10 failed"
grep -qE "the last level factored [1-9] times\)" "$LOG/out-kept" ||
  fail "optimize: the last level's factor not kept: '$(tail -n 1 "$LOG/out-kept")'"
ncdump -h design.nc >"$LOG/header" || fail "ncdump cannot read design.nc"
grep -q -- "--discretization=efg" "$LOG/header" || fail "design.nc: history lacks --discretization=efg"
grep -q -- "--efg-support=2 --efg-penalty=10000 --efg-preconditioner=mg --efg-sa-smoother=schwarz --efg-mg-coarse-dofs=0 --efg-mg-lanczos-steps=10 --efg-mg-refactor=1 --efg-mg-refactor-drift=0.3 --efg-mg-chebyshev-lower=0.1 --efg-record=1 --efg-penalty-patches=1 --efg-patch-size=1 --efg-penalty-patch-weight=1 --efg-penalty-relative=1 --efg-sa-degree=2 --efg-sa-aggregate=3 --efg-sa-strength=0.2" "$LOG/header" ||
  fail "design.nc: history lacks the EFG support, penalty and preconditioner"
# auto: the GPU where this build and the machine have one, else the CPU
grep -qE -- "--device=(cpu|cuda)" "$LOG/header" || fail "design.nc: --device auto did not become a device"
grep -qE "double nodal_density\(node_z, node_y, node_x\)" "$LOG/header" ||
  fail "design.nc: no nodal_density(node_z, node_y, node_x)"
/usr/bin/python3 - design.nc >"$LOG/py" 2>&1 <<'PY' || fail "design.nc values: $(cat "$LOG/py")"
import sys
import netCDF4
import numpy as np
d = netCDF4.Dataset(sys.argv[1])
rho = np.asarray(d["density"][:])
nodal = np.asarray(d["nodal_density"][:])
assert rho.shape == (4, 4, 8) and nodal.shape == (5, 5, 9), (rho.shape, nodal.shape)
assert rho.min() >= 0 and rho.max() <= 1 and rho.max() - rho.min() > 0.1, (rho.min(), rho.max())
assert abs(rho.mean() - 0.4) < 1e-3, rho.mean()
assert nodal.min() >= 1e-3 and nodal.max() <= 1, (nodal.min(), nodal.max())
u = np.asarray(d["displacement"][0])
assert np.abs(u[:, :, 0, :]).max() < 1e-3 * np.abs(u).max(), "the clamp at x = 0 moves"
PY

# a second run reads the design file's nodal densities and goes on from them
"$OPTIMIZE" design.nc -o design2.nc --discretization efg --max-iterations 1 --volume-fraction 0.4 \
  --threads 2 -q 2>"$LOG/err" || fail "optimize design.nc: $(tail -n 3 "$LOG/err")"
ncdump -h design2.nc | grep -qE "iteration = (5|UNLIMITED ; // \(5 currently\))" ||
  fail "design2.nc: the history does not go on from design.nc's 4 rows"

# the smoothed-aggregation preconditioner is the CPU's: auto picks it
"$OPTIMIZE" model.nc -o design_sa.nc --discretization efg --efg-preconditioner sa --max-iterations 1 \
  --volume-fraction 0.4 --threads 2 -q 2>"$LOG/err" || fail "optimize efg sa: $(tail -n 3 "$LOG/err")"
ncdump -h design_sa.nc | grep -q -- "--device=cpu" || fail "design_sa.nc: --device auto with sa did not become cpu"

for out in design.vti design.vtu design.stl; do
  "$EXPORT" design.nc -o $out >"$LOG/out" 2>&1 || fail "export $out: $(tail -n 3 "$LOG/out")"
  [ -s $out ] || fail "export: $out is empty"
done
head -c 400 design.vti | grep -q '<VTKFile type="ImageData"' || fail "design.vti is not ImageData"
# the nodal densities as a point array of the .vti and .vtu, as VTK reads them
/usr/bin/python3 - design.nc design.vti design.vtu >"$LOG/py" 2>&1 <<'PY' ||
import sys
import netCDF4
import numpy as np
import vtk
from vtk.util.numpy_support import vtk_to_numpy
nodal = np.asarray(netCDF4.Dataset(sys.argv[1])["nodal_density"][:])  # (z, y, x)
for path, reader in ((sys.argv[2], vtk.vtkXMLImageDataReader()),
                     (sys.argv[3], vtk.vtkXMLUnstructuredGridReader())):
    reader.SetFileName(path)
    reader.Update()
    out = reader.GetOutput()
    got = out.GetPointData().GetArray("nodal_density")
    assert got is not None, path + ": no nodal_density"
    got = vtk_to_numpy(got)
    if path.endswith(".vti"):
        want = nodal.ravel()
    else:  # the kept voxels' points: 1 mm voxels from the origin, so x, y, z are the node's i, j, k
        i, j, k = np.rint(vtk_to_numpy(out.GetPoints().GetData())).astype(int).T
        want = nodal[k, j, i]
    assert np.abs(got - want).max() < 1e-7, (path, np.abs(got - want).max())
    units = out.GetFieldData().GetAbstractArray("units")
    assert "nodal_density: 1" in [units.GetValue(i) for i in range(units.GetNumberOfValues())]
PY
  fail "design.vti/.vtu nodal_density: $(tail -n 3 "$LOG/py")"
# the EFG design under FE to a tight tolerance: the stored displacement
# (penalty supports: not exactly 0 at the clamp) is only the start
"$OPTIMIZE" design.nc -o under_fe.nc --discretization fe --max-iterations 0 --cg-tol 1e-10 \
  --threads 2 >"$LOG/out" 2>&1 || fail "the EFG design under FE: $(tail -n 1 "$LOG/out")"
head -c 80 design.stl | grep -qiE "^solid|." || fail "design.stl is empty"

# what the EFG loop does not take: one line, exit status 2, no output
expect_usage_error "efg with checkpoints" "discretization efg has no checkpoints" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --checkpoint-every 2 --threads 2
expect_usage_error "efg with a periodic cell objective" "not the bulk objective of a periodic cell" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --objective bulk --threads 2
expect_usage_error "efg with a symmetry" "discretization efg does not take a symmetry" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --symmetry reflect3 --threads 2
expect_usage_error "efg with MMA" "discretization efg updates the nodal densities by optimality criteria" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --optimizer mma --threads 2
expect_usage_error "efg's smoothed aggregation on the GPU" "--efg-preconditioner sa runs on the CPU only" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --efg-preconditioner sa --device cuda --threads 2
expect_usage_error "no Lanczos steps" "--efg-mg-lanczos-steps: expected an integer in \\[1, 64\\], got '0'" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --efg-mg-lanczos-steps 0
expect_usage_error "no last-level factor" "--efg-mg-refactor: expected an integer in \\[1, 1000000\\], got '0'" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --efg-mg-refactor 0
expect_usage_error "a negative drift" "--efg-mg-refactor-drift: expected a number >= 0, got '-1'" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --efg-mg-refactor-drift -1
expect_usage_error "no penalty patches' weight" "--efg-penalty-patch-weight: expected a number in \\(0, 1\\], got '0'" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization efg --efg-penalty-patch-weight 0
expect_usage_error "an unknown discretization" "discretization: expected fe or efg, got 'fem'" \
  "$OPTIMIZE" model.nc -o bad.nc --discretization fem
finish
