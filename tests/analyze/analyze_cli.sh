#!/usr/bin/env bash
# voxfe-analyze as a program: a run with both summaries (the CSV row appended
# by a second run under its one header), the result file's variables, the
# compression tests along each axis against E A eps, and bad input (empty
# model, disconnected model, no bone at a plate, bad options): exit status 2,
# one line, no file.
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
# a uniform strain: every element at 1 %, the failure load scales the force by 0.7
assert abs(s["failure_load"] / (0.7 * E * A * 0.01) - 1) < 1e-5, s["failure_load"]
assert abs(s["sed_mean"] / (0.5 * E * eps * eps) - 1) < 1e-5
rows = list(csv.DictReader(open("table.csv")))
assert [r["test"] for r in rows] == ["uniaxial", "friction"] and rows[1]["axis"] == "x"
assert float(rows[0]["reaction_force"]) == s["reaction_force"]
with netCDF4.Dataset("result.nc") as d:
    assert d.stage == "analysis"
    for v, shape in (("displacement", (1, 5, 5, 5, 3)), ("reaction_force", (5, 5, 5, 3)),
                     ("strain", (4, 4, 4, 6)), ("stress", (4, 4, 4, 6)),
                     ("strain_energy_density", (4, 4, 4)), ("von_mises", (4, 4, 4)),
                     ("effective_strain", (4, 4, 4))):
        assert d[v].shape == shape, (v, d[v].shape)
    assert abs(d["strain"][1, 1, 1, 2] - eps) < 1e-8
    assert abs(d["reaction_force"][4, :, :, 2].sum() / (E * A * eps) - 1) < 1e-5
    assert d["results"].reaction_force == s["reaction_force"]
    assert "voxfe-analyze cube.nc -o result.nc" in d.history
PY
rm -f result.nc result2.nc s.json table.csv

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
    fields = {"sed": d["strain_energy_density"], "von_mises": d["von_mises"],
              "effective_strain": d["effective_strain"]}
    fields = {k: np.array(v[:], float)[bone] for k, v in fields.items()}
    fields["strain_axial"] = np.array(d["strain"][:], float)[bone][:, 2]
for name, x in fields.items():
    want = [x.mean(), x.std()] + list(np.percentile(x, [5, 25, 50, 75, 95]))
    got = [s[name + k] for k in ("_mean", "_sd", "_p05", "_p25", "_p50", "_p75", "_p95")]
    # the file holds the fields in single precision
    assert np.allclose(got, want, rtol=2e-6, atol=1e-7 * np.abs(x).max()), (name, got, want)
# Pistoia: the k-th largest effective strain, k = ceil(2 % of the bone)
eff = np.sort(fields["effective_strain"])[::-1]
k = math.ceil(0.02 * len(eff))
want = abs(s["reaction_force"]) * 0.007 / eff[k - 1]
assert abs(s["failure_load"] / want - 1) < 1e-6, (s["failure_load"], want)
shares = [v for k, v in s.items() if k.startswith("load_share_label")]
# the top layer of make_model's porous model is all label 1: it carries all
assert len(shares) == 2 and abs(shares[0] - 1) < 1e-9 and abs(shares[1]) < 1e-12, shares
assert s["bone_elements"] == bone.sum()
PY
rm -f porous_r.nc p.json

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

# --- bad input
expect_usage_error "empty model" "empty.nc: the model has no bone" "$ANALYZE" empty.nc -o r.nc
expect_usage_error "disconnected model" "split.nc: the bone is not connected from plate to plate along z" \
  "$ANALYZE" split.nc -o r.nc
expect_usage_error "disconnected model, 6-connectivity" "not connected from plate to plate" \
  "$ANALYZE" split.nc -o r.nc --connectivity 6
expect_usage_error "no bone at a plate" "no_top.nc: no bone at the top plate" \
  "$ANALYZE" no_top.nc -o r.nc
expect_usage_error "bad test" "--test: expected uniaxial, friction, confined or model" \
  "$ANALYZE" cube.nc -o r.nc --test shear
expect_usage_error "bad summary name" "--summary: expected a file name ending in .json or .csv" \
  "$ANALYZE" cube.nc -o r.nc --summary s.txt
expect_usage_error "bad connectivity" "--connectivity: expected 6 or 26" \
  "$ANALYZE" cube.nc -o r.nc --connectivity 18
expect_usage_error "--test model without supports" "cube.nc: --test model needs the model's supports" \
  "$ANALYZE" cube.nc -o r.nc --test model
expect_usage_error "missing input" "nothere.nc" "$ANALYZE" nothere.nc -o r.nc
finish
