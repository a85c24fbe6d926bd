#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# voxfe-analyze as a program: a run with both summaries (the CSV row appended
# by a second run under its one header), the result file's variables, the
# compression tests along each axis against E A eps, and bad input (empty
# model, disconnected model, no bone at a plate, bad options): exit status 2,
# one line, no file; a solve that does not converge: exit status 1, no file.
#
# usage: analyze_cli.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR ANALYZE
source "$(dirname "$0")/../cli/lib.sh"
ANALYZE=$(realpath "$1")
MAKE="/usr/bin/python3 $SOURCE_DIR/tests/analyze/make_model.py"

$MAKE cube cube.nc 4 4 4 || fail "make_model cube"
for kind in empty split no_top islands; do $MAKE $kind $kind.nc 4 4 6 || fail "make $kind"; done

# --- a run, its summaries and result file
"$ANALYZE" cube.nc -o result.nc --summary s.json --summary table.csv >"$LOG/out" 2>"$LOG/err" ||
  fail "run: exit $? $(cat "$LOG/err")"
grep -q "uniaxial z, 64 bone elements" "$LOG/out" || fail "run: stdout $(cat "$LOG/out")"
"$ANALYZE" cube.nc -o result2.nc --axis x --test friction --summary table.csv -q >"$LOG/out" 2>&1 ||
  fail "second run: $(cat "$LOG/out")"
[ -s "$LOG/out" ] && fail "-q printed: $(cat "$LOG/out")"
[ "$(grep -c '^sample,' table.csv)" -eq 1 ] || fail "table.csv: header not once"
[ "$(wc -l <table.csv)" -eq 3 ] || fail "table.csv: $(wc -l <table.csv) lines, expected 3"
/usr/bin/python3 - <<'PY' || fail "result and summary contents"
import csv, json, math
import netCDF4
s = json.load(open("s.json"))
E, A, eps = 1000.0, 2.0 * 2.0, -0.01
assert abs(s["reaction_force"] / (E * A * eps) - 1) < 1e-5, s["reaction_force"]
assert abs(s["apparent_modulus"] / E - 1) < 1e-5
assert abs(s["stiffness"] - s["reaction_force"] / s["applied_displacement"]) < 1e-9
assert s["units"]["stiffness"] == "N/mm" and s["test"] == "uniaxial" and s["axis"] == "z"
# a uniform strain: every element at 1 %, the failure load scales the force
# by 0.7 (negative in compression, like the force)
assert abs(s["failure_load"] / (0.7 * E * A * eps) - 1) < 1e-5, s["failure_load"]
assert abs(s["sed_mean"] / (0.5 * E * eps * eps) - 1) < 1e-5
rows = list(csv.DictReader(open("table.csv")))
assert [r["test"] for r in rows] == ["uniaxial", "friction"] and rows[1]["axis"] == "x"
assert float(rows[0]["reaction_force"]) == s["reaction_force"]
import numpy as np
with netCDF4.Dataset("result.nc") as d:
    assert d.stage == "analysis" and d.voxfe_schema_version == 4
    # the bone only: 64 elements, 125 nodes of the solid 4^3 cube
    for v, shape in (("displacement", (1, 125, 3)), ("bone_node_index", (125,)),
                     ("bone_element_index", (64,)),
                     ("constraint_reaction", (d.dimensions["constraint"].size,)),
                     ("strain", (64, 6)), ("stress", (64, 6)),
                     ("strain_energy_density", (64,)), ("von_mises", (64,)),
                     ("effective_strain", (64,))):
        assert d[v].shape == shape, (v, d[v].shape)
    assert (np.array(d["bone_element_index"][:]) == np.arange(64)).all()
    assert (np.array(d["bone_node_index"][:]) == np.arange(125)).all()
    assert abs(d["strain"][(1 * 4 + 1) * 4 + 1, 2] - eps) < 1e-8
    # the top plate: constraints along z at node layer 4
    node = np.array(d["constraint_node"][:])
    top = (np.array(d["constraint_component"][:]) == 2) & (node // 25 == 4)
    assert top.sum() == 25
    assert abs(np.array(d["constraint_reaction"][:])[top].sum() / (E * A * eps) - 1) < 1e-5
    w = np.array(d["displacement"][0])
    assert abs(w[124, 2] - eps * 2.0) < 1e-9  # the top corner moves by eps L
    assert d["results"].reaction_force == s["reaction_force"]
    assert "voxfe-analyze cube.nc -o result.nc" in d.history
    assert "--fp16-levels=auto" in d.history and "--kernel=auto" in d.history, d.history
PY
rm -f result.nc result2.nc s.json table.csv

# --- the backend's options reach the history line as given
"$ANALYZE" cube.nc -o fp16.nc -q --device cpu --kernel nbn --fp16-levels off ||
  fail "run with --fp16-levels off"
ncdump -h fp16.nc | grep -q -- "--device=cpu --kernel=nbn --fp16-levels=off" ||
  fail "history lacks --fp16-levels=off: $(ncdump -h fp16.nc | grep voxfe-analyze)"
"$ANALYZE" --help | grep -q -- "--fp16-levels=USE" || fail "--help lacks --fp16-levels"
rm -f fp16.nc

# --- on a porous two-material model: the statistics, the failure load and
# the load shares of the summary against numpy on the result's own fields
$MAKE porous porous.nc 10 10 8 5 || fail "make_model porous"
"$ANALYZE" porous.nc -o porous_r.nc --summary p.json -q --cg-tol 1e-10 ||
  fail "porous run"
/usr/bin/python3 - <<'PY' || fail "porous: summary against numpy"
import json, math
import netCDF4
import numpy as np
s = json.load(open("p.json"))
with netCDF4.Dataset("porous_r.nc") as d:
    bone = np.array(d["label"][:]) != 0
    # the element fields are over the bone elements, in element order
    assert (np.array(d["bone_element_index"][:]) == np.flatnonzero(bone)).all()
    fields = {"sed": d["strain_energy_density"], "von_mises": d["von_mises"],
              "effective_strain": d["effective_strain"]}
    fields = {k: np.array(v[:], float) for k, v in fields.items()}
    fields["strain_axial"] = np.array(d["strain"][:], float)[:, 2]
    # the bone nodes: the corners of the bone voxels, in node order
    nz, ny, nx = bone.shape
    corner = np.zeros((nz + 1, ny + 1, nx + 1), bool)
    for dk in (0, 1):
        for dj in (0, 1):
            for di in (0, 1):
                corner[dk:dk + nz, dj:dj + ny, di:di + nx] |= bone
    assert (np.array(d["bone_node_index"][:]) == np.flatnonzero(corner)).all()
    # the support reactions of the summary: the constraints' reactions summed
    react = np.array(d["constraint_reaction"][:])
    comp = np.array(d["constraint_component"][:])
    for c, axis in enumerate("xyz"):
        want = react[comp == c].sum()
        assert abs(s["support_reaction_" + axis] - want) <= 1e-9 * abs(s["reaction_force"]), axis
    assert abs(s["support_reaction_z"]) < 1e-6 * abs(s["reaction_force"])  # equilibrium
for name, x in fields.items():
    want = [x.mean(), x.std()] + list(np.percentile(x, [5, 25, 50, 75, 95]))
    got = [s[name + k] for k in ("_mean", "_sd", "_p05", "_p25", "_p50", "_p75", "_p95")]
    # the file holds the fields in single precision
    assert np.allclose(got, want, rtol=2e-6, atol=1e-7 * np.abs(x).max()), (name, got, want)
# Pistoia: the k-th largest effective strain, k = ceil(2 % of the bone)
eff = np.sort(fields["effective_strain"])[::-1]
k = math.ceil(0.02 * len(eff))
want = s["reaction_force"] * 0.007 / eff[k - 1]
assert abs(s["failure_load"] / want - 1) < 1e-6, (s["failure_load"], want)
shares = [v for k, v in s.items() if k.startswith("load_share_label")]
# the top layer of make_model's porous model is all label 1: it carries all
assert len(shares) == 2 and abs(shares[0] - 1) < 1e-9 and abs(shares[1]) < 1e-12, shares
assert s["bone_elements"] == bone.sum()
PY
# the result file to VTK: voxfe-export reads the displacement of the bone
# nodes back onto the node grid (0 elsewhere)
"$EXPORT" porous_r.nc -o porous_r.vti >"$LOG/out" 2>&1 ||
  fail "export of a result: $(cat "$LOG/out")"
/usr/bin/python3 - <<'PY' || fail "porous: the exported displacement"
import sys
import netCDF4
import numpy as np
try:
    from vtkmodules.vtkIOXML import vtkXMLImageDataReader
    from vtkmodules.util.numpy_support import vtk_to_numpy
except ImportError:
    sys.exit(0)  # the CI installs VTK; a bare machine checks the export's exit status only
r = vtkXMLImageDataReader()
r.SetFileName("porous_r.vti")
r.Update()
pd = r.GetOutput().GetPointData()
names = [pd.GetArrayName(i) for i in range(pd.GetNumberOfArrays())]
got = vtk_to_numpy(pd.GetArray([n for n in names if n.startswith("displacement")][0]))
with netCDF4.Dataset("porous_r.nc") as d:
    want = np.zeros((got.shape[0], 3))
    want[np.array(d["bone_node_index"][:])] = np.array(d["displacement"][0])
assert np.abs(want).max() > 0
assert np.allclose(got, want, rtol=1e-6, atol=1e-7 * np.abs(want).max()), np.abs(got - want).max()
PY
rm -f porous_r.nc porous_r.vti p.json

# --- the CG's stop: by default the reactions' work on the plates (the
# residual a backstop at 1e-10) stops the solve near a tight solve's force
# long before the residual gets there; a --cg-tol given turns it off; a
# model of loads alone stops at the residual's 1e-6
$MAKE porous stop.nc 16 16 12 3 || fail "make_model porous (stop)"
"$ANALYZE" stop.nc -o stop_r.nc --summary stop.json -q || fail "stop: default run"
"$ANALYZE" stop.nc -o tight_r.nc --summary tight.json -q --cg-tol 1e-11 || fail "stop: tight run"
/usr/bin/python3 - <<'PY' || fail "stop: the reaction test against a tight solve"
import json
s, t = json.load(open("stop.json")), json.load(open("tight.json"))
assert s["relative_residual"] > 1e-8 and s["cg_iterations"] < t["cg_iterations"], (s, t)
assert abs(s["reaction_force"] / t["reaction_force"] - 1) < 1e-5, (s["reaction_force"], t["reaction_force"])
assert abs(s["failure_load"] / t["failure_load"] - 1) < 1e-4, (s["failure_load"], t["failure_load"])
PY
ncdump -h stop_r.nc | grep -q -- "--cg-tol=1e-10 .*--cg-reaction-tol=1e-05" ||
  fail "stop: default history $(ncdump -h stop_r.nc | grep -o -- '--cg-[a-z-]*=[^ ]*')"
ncdump -h tight_r.nc | grep -q -- "--cg-tol=1e-11 .*--cg-reaction-tol=0 " ||
  fail "stop: --cg-tol history $(ncdump -h tight_r.nc | grep -o -- '--cg-[a-z-]*=[^ ]*')"
"$VOXELIZE" --box 8x4x4 --voxel-size 1 -p "$CANTILEVER" -o loads.nc -q || fail "voxelize loads"
"$ANALYZE" loads.nc -o loads_r.nc --test model -q || fail "loads alone: exit $?"
ncdump -h loads_r.nc | grep -q -- "--cg-tol=1e-06 " ||
  fail "loads alone: history $(ncdump -h loads_r.nc | grep -o -- '--cg-[a-z-]*=[^ ]*')"

# --- parallel jobs appending to one table: one header, one whole row each
for i in 1 2 3 4 5 6; do
  "$ANALYZE" cube.nc -o par$i.nc --summary shared.csv -q --threads 1 &
done
wait
[ "$(grep -c '^sample,' shared.csv)" -eq 1 ] || fail "shared.csv: header not once"
[ "$(grep -c '^cube,uniaxial,z,' shared.csv)" -eq 6 ] || fail "shared.csv: $(cat shared.csv)"
[ "$(awk -F, '{print NF}' shared.csv | sort -u | wc -l)" -eq 1 ] ||
  fail "shared.csv: rows of different lengths"
rm -f par?.nc shared.csv

# --- the removed voxels are counted
"$ANALYZE" islands.nc -o islands_r.nc --summary i.json >"$LOG/out" 2>"$LOG/err" ||
  fail "islands: $(cat "$LOG/err")"
grep -q "removed 1 voxels" "$LOG/err" || fail "islands: no removal reported: $(cat "$LOG/err")"
grep -q '"removed_voxels": 1,' i.json || fail "islands: summary $(cat i.json)"
rm -f islands_r.nc i.json

# --- the modulus from CT intensity through E = a rho^b: two layers side by
# side (uniaxial: the same strain in both, F = eps h^2 sum E_i n_i), stacked
# (nu = 0 uniaxial, or confined with the constrained modulus M: F = A delta /
# sum L_i / M_i); the FE solution of these piecewise linear fields is exact
for kind in parallel series series_hu; do $MAKE $kind $kind.nc 4 4 4 || fail "make $kind"; done
"$ANALYZE" parallel.nc -o par_r.nc --modulus-from-intensity --summary par.json -q --cg-tol 1e-10 ||
  fail "parallel layers: exit $?"
"$ANALYZE" series.nc -o ser_r.nc --modulus-from-intensity --poisson-ratio 0 --summary ser.json \
  --density-modulus 1000,2 -q || fail "series layers: exit $?"
"$ANALYZE" series.nc -o conf_r.nc --modulus-from-intensity --test confined --summary conf.json \
  -q || fail "series layers, confined: exit $?"
"$ANALYZE" parallel.nc -o low_r.nc --modulus-from-intensity --density-calibration 0.001,-0.5 \
  --min-modulus 50 --summary low.json -q || fail "parallel layers, floored: exit $?"
"$ANALYZE" series_hu.nc -o hu_r.nc --modulus-from-intensity --density-calibration 0.002,0 \
  --density-modulus 1000,2 --poisson-ratio 0 --summary hu.json -q || fail "HU calibrated: exit $?"
/usr/bin/python3 - <<'PY' || fail "moduli from intensity against the analytic stiffness"
import json
def load(name): return json.load(open(name))
h, eps, n = 0.5, -0.01, 4
A, L = (n * h) ** 2, n * h
morgan = lambda rho: 8920 * rho ** 1.83
# parallel: each half of the cross-section at its own E, the same strain
s = load("par.json")
E1, E2 = morgan(0.8), morgan(0.4)
want = eps * (A / 2) * (E1 + E2)
assert abs(s["reaction_force"] / want - 1) < 1e-8, (s["reaction_force"], want)
assert s["modulus_source"] == "intensity" and s["modulus_floored_elements"] == 0
assert abs(s["youngs_modulus_mean"] / ((E1 + E2) / 2) - 1) < 1e-12
# every element at the applied strain: the effective strain sqrt(2 SED / E_e)
# is |eps| in both layers (with the label's E it would not be), and the
# failure load is F * 0.007 / 0.01
assert abs(s["failure_load"] / (want * 0.7) - 1) < 1e-8, (s["failure_load"], want * 0.7)
# series, nu = 0, E = 1000 rho^2: springs in series
s = load("ser.json")
E1, E2 = 1000 * 0.8 ** 2, 1000 * 0.4 ** 2
want = A * eps * L / (L / 2 / E1 + L / 2 / E2)
assert abs(s["reaction_force"] / want - 1) < 1e-8, (s["reaction_force"], want)
# series, confined, nu = 0.3: the constrained moduli M = E (1 - nu) / ((1 + nu) (1 - 2 nu))
s = load("conf.json")
nu = 0.3
M = lambda E: E * (1 - nu) / ((1 + nu) * (1 - 2 * nu))
want = A * eps * L / (L / 2 / M(morgan(0.8)) + L / 2 / M(morgan(0.4)))
assert abs(s["reaction_force"] / want - 1) < 1e-8, (s["reaction_force"], want)
# a calibration that puts the 400 layer at rho = -0.1: raised to --min-modulus
s = load("low.json")
want = eps * (A / 2) * (morgan(0.3) + 50)
assert abs(s["reaction_force"] / want - 1) < 1e-8, (s["reaction_force"], want)
assert s["modulus_floored_elements"] == 32, s["modulus_floored_elements"]
# HU with its own calibration: rho = 0.002 HU
s = load("hu.json")
E1, E2 = 1000 * 1.6 ** 2, 1000 * 0.8 ** 2
want = A * eps * L / (L / 2 / E1 + L / 2 / E2)
assert abs(s["reaction_force"] / want - 1) < 1e-8, (s["reaction_force"], want)
# without the option, the materials' E and no modulus statistics
PY
"$ANALYZE" parallel.nc -o plain_r.nc --summary plain.json -q || fail "parallel, no option"
grep -q '"modulus_source": "materials"' plain.json || fail "plain: $(grep modulus plain.json)"
grep -q '"youngs_modulus_mean": null' plain.json || fail "plain: $(grep youngs plain.json)"
rm -f par_r.nc ser_r.nc conf_r.nc low_r.nc hu_r.nc plain_r.nc par.json ser.json conf.json \
  low.json hu.json plain.json

# --- passive-void voxels are not bone: a 4 x 4 x 4 cube with its last x
# layer void carries E A' eps on the 3 x 4 voxels that are left
$MAKE void void.nc 4 4 4 || fail "make void"
"$ANALYZE" void.nc -o void_r.nc --summary v.json >"$LOG/out" 2>"$LOG/err" ||
  fail "void: $(cat "$LOG/err")"
grep -q "16 voxels of passive-void materials are left out" "$LOG/err" ||
  fail "void: not reported: $(cat "$LOG/err")"
/usr/bin/python3 - <<'PY' || fail "void: the reaction force"
import json
s = json.load(open("v.json"))
want = 1000 * (3 * 0.5) * (4 * 0.5) * -0.01
assert abs(s["reaction_force"] / want - 1) < 1e-6 and s["void_voxels"] == 16, s
PY
rm -f void_r.nc v.json

# --- bad input
for kind in heat design; do $MAKE $kind $kind.nc 4 4 4 || fail "make $kind"; done
expect_usage_error "heat model" "heat.nc: a heat-conduction model \\(physics = heat\\); voxfe-analyze solves linear elasticity only" \
  "$ANALYZE" heat.nc -o r.nc
expect_usage_error "design file" "design.nc: a design file \\(voxfe-optimize output\\)" \
  "$ANALYZE" design.nc -o r.nc
expect_usage_error "intensity without calibration" \
  "series_hu.nc: --modulus-from-intensity: the intensity is in 'HU', not mg HA/ccm; give --density-calibration" \
  "$ANALYZE" series_hu.nc -o r.nc --modulus-from-intensity
expect_usage_error "no intensity" "cube.nc: --modulus-from-intensity: the model has no intensity" \
  "$ANALYZE" cube.nc -o r.nc --modulus-from-intensity
expect_usage_error "intensity and --youngs-modulus" "--youngs-modulus and --modulus-from-intensity" \
  "$ANALYZE" series.nc -o r.nc --modulus-from-intensity --youngs-modulus 5000
expect_usage_error "intensity to n88model" "n88model material table" \
  "$ANALYZE" series.nc -o r.n88model --modulus-from-intensity
expect_usage_error "bad power law" "--density-modulus: the factor A must be positive" \
  "$ANALYZE" series.nc -o r.nc --modulus-from-intensity --density-modulus -1,2
expect_usage_error "empty model" "empty.nc: the model has no bone" "$ANALYZE" empty.nc -o r.nc
expect_usage_error "bad --fp16-levels" "--fp16-levels: expected auto, on or off, got 'half'" \
  "$ANALYZE" cube.nc -o r.nc --fp16-levels half
expect_usage_error "disconnected model" "split.nc: the bone is not connected from plate to plate along z" \
  "$ANALYZE" split.nc -o r.nc
expect_usage_error "disconnected model, 6-connectivity" "not connected from plate to plate" \
  "$ANALYZE" split.nc -o r.nc --connectivity 6
expect_usage_error "no bone at a plate" "no_top.nc: no bone at the top plate" \
  "$ANALYZE" no_top.nc -o r.nc
$MAKE lump lump.nc 5 5 6 || fail "make lump"
expect_usage_error "largest component off a plate" \
  "lump.nc: the largest connected component of the bone \\(26-connectivity\\) does not reach from plate to plate along z" \
  "$ANALYZE" lump.nc -o r.nc
expect_usage_error "bad test" "--test: expected uniaxial, friction, confined or model" \
  "$ANALYZE" cube.nc -o r.nc --test shear
expect_usage_error "bad summary name" "--summary: expected a file name ending in .json or .csv" \
  "$ANALYZE" cube.nc -o r.nc --summary s.txt
expect_usage_error "bad connectivity" "--connectivity: expected 6 or 26" \
  "$ANALYZE" cube.nc -o r.nc --connectivity 18
expect_usage_error "--test model without supports" "cube.nc: --test model needs the model's supports" \
  "$ANALYZE" cube.nc -o r.nc --test model
expect_usage_error "missing input" "nothere.nc" "$ANALYZE" nothere.nc -o r.nc

# --- a solve that fails: exit status 1 and the folder as it was, though the
# result file's writing starts before the solve (its temporary file removed)
before=$(listing)
"$ANALYZE" cube.nc -o r.nc --cg-max-iterations 1 --cg-tol 1e-15 >"$LOG/out" 2>&1
status=$?
[ "$status" -eq 1 ] || fail "unconverged solve: exit status $status, expected 1"
grep -q "not converged (iteration limit) after 1 CG iterations.*r.nc not written" "$LOG/out" ||
  fail "unconverged solve: $(cat "$LOG/out")"
[ "$before" = "$(listing)" ] || fail "unconverged solve: the folder changed: $(listing)"
# at the default stop the message names the reaction test too
"$ANALYZE" stop.nc -o r.nc --cg-max-iterations 2 >"$LOG/out" 2>&1
status=$?
[ "$status" -eq 1 ] || fail "unconverged default solve: exit status $status, expected 1"
grep -q "(--cg-tol 1e-10, --cg-reaction-tol 1e-05, --cg-max-iterations 2); r.nc not written" \
  "$LOG/out" || fail "unconverged default solve: $(cat "$LOG/out")"
[ "$before" = "$(listing)" ] || fail "unconverged default solve: the folder changed: $(listing)"
finish
