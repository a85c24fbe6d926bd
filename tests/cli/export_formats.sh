# SPDX-License-Identifier: BSD-3-Clause
# voxfe-export's formats on a small optimized cantilever: each extension
# writes its kind of file, silently, and each file is what it claims to be.
# Deeper checks of each writer are in tests/export.
. "$(dirname "$0")/lib.sh"

make_model model.nc 12x6x6 || finish
"$OPTIMIZE" model.nc -o design.nc --max-iterations 3 --device cpu --threads 2 --quiet ||
  { fail "optimize failed"; finish; }

export_ok() { # export_ok OUT [OPTIONS...]
  local out=$1
  shift
  "$EXPORT" design.nc -o "$out" "$@" >"$LOG/out" 2>"$LOG/err"
  local status=$?
  [ "$status" -eq 0 ] || { fail "export $out: exit status $status: $(cat "$LOG/err")"; return 1; }
  [ -s "$LOG/out" ] || [ -s "$LOG/err" ] && fail "export $out: not silent"
  [ -s "$out" ] || fail "export $out: empty or missing"
}

export_ok design.stl && {
  # binary STL: 80-byte header, a count, 50 bytes a triangle
  n=$(od -An -tu4 -j80 -N4 design.stl | tr -d ' ')
  [ "$(stat -c %s design.stl)" -eq $((84 + 50 * n)) ] || fail "design.stl: size is not 84 + 50 n"
  [ "$n" -gt 0 ] || fail "design.stl: no triangles"
}
export_ok ascii.stl --ascii --smooth 5 && {
  head -c 5 ascii.stl | grep -q "solid" || fail "ascii.stl does not start with 'solid'"
}
export_ok label.stl --label 1
# --device: cpu and auto (the CPU) give the same bytes as the default
export_ok device-cpu.stl --device cpu && {
  cmp -s device-cpu.stl design.stl || fail "--device cpu: not the default's STL"
}
export_ok device-auto.stl --device auto && {
  cmp -s device-auto.stl design.stl || fail "--device auto: not the default's STL"
}
export_ok small.stl --smooth 5 --triangles 60 && {
  n=$(od -An -tu4 -j80 -N4 small.stl | tr -d ' ')
  [ "$n" -le 60 ] && [ "$n" -ge 4 ] || fail "small.stl: $n triangles for --triangles 60"
  [ "$n" -lt "$(od -An -tu4 -j80 -N4 design.stl | tr -d ' ')" ] || fail "small.stl: not decimated"
}
export_ok design.vtp --smooth 5 && {
  head -c 300 design.vtp | grep -q '<VTKFile type="PolyData"' || fail "design.vtp is not VTK PolyData"
  grep -aq 'Name="normals"' design.vtp || fail "design.vtp has no normals"
}
export_ok design.inp --threshold 0.3 && {
  grep -q "^\*NODE" design.inp && grep -q "^\*ELEMENT" design.inp && grep -q "^\*STEP" design.inp ||
    fail "design.inp lacks *NODE, *ELEMENT or *STEP"
}
export_ok history.png --width 640 --height 480 && {
  [ "$(head -c 8 history.png | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ||
    fail "history.png is not a PNG"
  [ "$(od -An -tu1 -j16 -N8 history.png | awk '{print $3*256+$4, $7*256+$8}')" = "640 480" ] ||
    fail "history.png is not 640 x 480"
}
export_ok surface.png --picture surface --view -y --width 400 --height 300 && {
  [ "$(od -An -tu1 -j16 -N8 surface.png | awk '{print $3*256+$4, $7*256+$8}')" = "400 300" ] ||
    fail "surface.png is not 400 x 300"
  cmp -s surface.png history.png && fail "surface.png is the history plot"
}
export_ok summary.json && {
  /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' summary.json ||
    fail "summary.json is not JSON"
}
export_ok summary.csv && {
  [ "$(wc -l <summary.csv)" -eq 2 ] || fail "summary.csv is not a header and a row"
}
export_ok row.csv --no-header && {
  [ "$(wc -l <row.csv)" -eq 1 ] || fail "row.csv --no-header is not one row"
}

# --tile: an array of the cell, one closed surface (checked with admesh where
# it is installed); the grid of a .vti array is the cell's times the counts
export_ok tiled.stl --tile 2x1x3 && {
  n=$(od -An -tu4 -j80 -N4 tiled.stl | tr -d ' ')
  [ "$n" -gt "$(od -An -tu4 -j80 -N4 design.stl | tr -d ' ')" ] || fail "tiled.stl: no more triangles than one cell"
  if command -v admesh >/dev/null 2>&1; then
    admesh tiled.stl >"$LOG/admesh" 2>&1 || fail "admesh tiled.stl failed"
    grep -q "No holes need to be filled" "$LOG/admesh" || fail "tiled.stl is not closed"
  fi
}
export_ok tiled.vti --tile 2 && {
  grep -aq 'WholeExtent="0 24 0 12 0 12"' tiled.vti || fail "tiled.vti: not 2 x 2 x 2 cells of 12 x 6 x 6"
}
for bad in "0" "2x2" "2x0x1" "1001"; do
  "$EXPORT" design.nc -o bad.stl --tile "$bad" >"$LOG/out" 2>"$LOG/err"
  [ $? -eq 2 ] || fail "--tile $bad did not exit 2"
  [ "$(wc -l <"$LOG/err")" -eq 1 ] || fail "--tile $bad: not one line: $(cat "$LOG/err")"
done
"$EXPORT" design.nc -o bad.json --tile 2 >"$LOG/out" 2>"$LOG/err"
[ $? -eq 2 ] || fail "--tile with .json did not exit 2"
ls bad.* >/dev/null 2>&1 && fail "a refused --tile left a file"

# a budget below a tetrahedron's: a usage error, no file
"$EXPORT" design.nc -o tiny.stl --triangles 3 >"$LOG/out" 2>"$LOG/err"
[ $? -eq 2 ] || fail "--triangles 3 did not exit 2"
[ -e tiny.stl ] && fail "--triangles 3 left a file"

# an unknown device: a usage error, no file
"$EXPORT" design.nc -o dev.stl --device gpu >"$LOG/out" 2>"$LOG/err"
[ $? -eq 2 ] || fail "--device gpu did not exit 2"
[ -e dev.stl ] && fail "--device gpu left a file"

# the density snapshots of an optimization as a .pvd collection: iterations 2
# (a snapshot) and 3 (the final design, added), each .vti holding that
# iteration's density as the design file stores it
"$OPTIMIZE" model.nc -o snapshots.nc --max-iterations 3 --snapshot-every 2 --device cpu \
  --threads 2 --quiet || fail "optimize --snapshot-every failed"
mkdir frames
"$EXPORT" snapshots.nc -o frames/history.pvd >"$LOG/out" 2>"$LOG/err" ||
  fail "export frames/history.pvd: $(cat "$LOG/err")"
[ -s "$LOG/out" ] || [ -s "$LOG/err" ] && fail "export frames/history.pvd: not silent"
for f in frames/history_0002.vti frames/history_0003.vti; do [ -s "$f" ] || fail "$f is missing"; done
[ "$(ls frames | wc -l)" -eq 3 ] || fail "frames/ holds $(ls frames | tr '\n' ' ')"
/usr/bin/python3 - snapshots.nc frames/history.pvd <<'PY' || fail "history.pvd does not hold the snapshots"
import os, sys, xml.etree.ElementTree as ET
import numpy as np
try:
    import netCDF4
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader
    from vtkmodules.util.numpy_support import vtk_to_numpy
except ImportError:
    sys.exit(0)  # the CI installs both; a bare machine checks the files' presence only
nc = netCDF4.Dataset(sys.argv[1])
snap_it = nc["snapshot_iteration"][:].tolist()
assert snap_it == [2], snap_it
expect = {2: nc["density_snapshot"][0, :, :, :], 3: nc["density"][:]}
root = ET.parse(sys.argv[2]).getroot()
assert root.get("type") == "Collection", root.attrib
sets = root.findall("./Collection/DataSet")
assert [int(d.get("timestep")) for d in sets] == [2, 3], [d.attrib for d in sets]
folder = os.path.dirname(sys.argv[2])
for d in sets:
    r = vtkXMLImageDataReader()
    r.SetFileName(os.path.join(folder, d.get("file")))
    r.Update()
    img = r.GetOutput()
    rho = vtk_to_numpy(img.GetCellData().GetArray("density"))
    want = np.asarray(expect[int(d.get("timestep"))], dtype=np.float64).ravel()
    assert rho.shape == want.shape, (rho.shape, want.shape)
    assert np.allclose(rho, want, rtol=1e-6, atol=1e-7), d.get("file")
    assert img.GetPointData().GetArray("displacement_tip") is None
assert not np.allclose(expect[2], expect[3]), "the snapshots do not differ"
print("history.pvd: iterations", [int(d.get("timestep")) for d in sets])
PY
# without snapshots: a clear refusal, no file
"$EXPORT" design.nc -o none.pvd >"$LOG/out" 2>"$LOG/err"
[ $? -eq 2 ] || fail "export of a design without snapshots to .pvd did not exit 2"
grep -q "snapshot-every" "$LOG/err" || fail "the .pvd refusal does not say how to save snapshots"
ls none*.vti none.pvd >/dev/null 2>&1 && fail "a refused .pvd export left files"

# a model without history has no plot: a clear error, no file
"$EXPORT" model.nc -o none.png --picture history >"$LOG/out" 2>"$LOG/err"
status=$?
[ "$status" -ne 0 ] || fail "export of a model without history to .png succeeded"
[ -e none.png ] && fail "a failed .png export left a file"
[ "$(wc -l <"$LOG/err")" -eq 1 ] || fail "the .png refusal is not one line: $(cat "$LOG/err")"
finish
