# SPDX-License-Identifier: BSD-3-Clause
# Design constraints in problem files (docs/problem-file.md, "constraints"):
# the shipped example (workflows/cantilever/minimum_volume.yaml) voxelizes
# and optimizes with MMA, its design file holds each iteration's constraint
# values and the final ones, the summaries and the history plot show them;
# OC refuses it with one line (exit 2) and no output; bad constraints in a
# problem file are refused with one line naming the file (exit 2) and no
# model.
. "$(dirname "$0")/lib.sh"

EXAMPLE="$SOURCE_DIR/workflows/cantilever/minimum_volume.yaml"
"$VOXELIZE" --box 12x6x6 --voxel-size 1 -p "$EXAMPLE" -o model.nc >"$LOG/out" 2>"$LOG/err" ||
  { fail "voxelize the example: $(cat "$LOG/err")"; finish; }
"$OPTIMIZE" model.nc -o design.nc --optimizer mma --filter density --max-iterations 12 \
  --threads 2 -q >"$LOG/out" 2>"$LOG/err" || fail "optimize the example: $(cat "$LOG/err")"
/usr/bin/python3 - design.nc <<'PY' || fail "design.nc: the constraints are not in the file"
import sys
import netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1])
assert d.voxfe_schema_version == 5, d.voxfe_schema_version
assert d.objective == "volume"
assert list(d["design_constraint_name"][:]) == ["stiff_enough"]
assert int(d["design_constraint_kind"][0]) == 1 and float(d["design_constraint_limit"][0]) == 20
h = d["optimization"]
v = h["design_constraint_value"][:]
assert v.shape == (12, 1), v.shape
# the volume objective's history is the volume; the first row's compliance
# is the uniform start's, larger than at the end
assert np.allclose(h["objective"][:], h["volume_fraction"][:])
assert np.all(np.isfinite(v)) and v[0, 0] > 0
assert np.size(h.final_constraint_value) == 1
PY
# a file that says it is older than design constraints but holds them is refused
cp design.nc old.nc
/usr/bin/python3 -c '
import sys, netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], "a")
d.voxfe_schema_version = np.int32(4)
d.close()' old.nc
expect_usage_error "design constraints in a version 4 file" \
  "old\.nc: design constraints or the volume objective need voxfe_schema_version 5, not 4" \
  "$EXPORT" old.nc -o old.json
rm -f old.nc
"$EXPORT" design.nc -o summary.json >"$LOG/out" 2>"$LOG/err" || fail "summary.json: $(cat "$LOG/err")"
/usr/bin/python3 - summary.json <<'PY' || fail "summary.json: no constraints"
import json, sys
s = json.load(open(sys.argv[1]))
(c,) = s["design"]["constraints"]
assert c["name"] == "stiff_enough" and c["kind"] == "compliance" and c["relation"] == "<="
assert c["limit"] == 20 and c["load_case"] == "case1" and c["value"] > 0, c
PY
"$EXPORT" design.nc -o summary.csv >"$LOG/out" 2>"$LOG/err" || fail "summary.csv: $(cat "$LOG/err")"
/usr/bin/python3 - summary.csv <<'PY' || fail "summary.csv: no design_constraints column"
import csv, sys
(row,) = list(csv.DictReader(open(sys.argv[1])))
assert row["design_constraints"].startswith("stiff_enough: compliance of load case case1 <= 20: ")
PY
"$EXPORT" design.nc -o history.png >"$LOG/out" 2>"$LOG/err" || fail "history.png: $(cat "$LOG/err")"

# a run resumed from its checkpoint has the uninterrupted run's history,
# constraint values included; a model of another limit is refused
"$OPTIMIZE" model.nc -o part.nc --optimizer mma --filter density --max-iterations 12 \
  --threads 2 -q --checkpoint-every 8 --checkpoint ck.nc >"$LOG/out" 2>"$LOG/err" ||
  fail "optimize with checkpoints: $(cat "$LOG/err")"
"$OPTIMIZE" model.nc -o resumed.nc --optimizer mma --filter density --max-iterations 12 \
  --threads 2 -q --resume ck.nc >"$LOG/out" 2>"$LOG/err" || fail "resume: $(cat "$LOG/err")"
/usr/bin/python3 - design.nc resumed.nc <<'PY' || fail "resumed.nc differs from design.nc"
import sys
import netCDF4, numpy as np
a, b = (netCDF4.Dataset(p) for p in sys.argv[1:])
for name in ("design_constraint_value", "objective"):
    assert np.array_equal(a["optimization"][name][:], b["optimization"][name][:]), name
assert np.array_equal(a["density"][:], b["density"][:])
PY
sed 's/compliance: 20 /compliance: 21 /' "$EXAMPLE" >other.yaml
"$VOXELIZE" --box 12x6x6 --voxel-size 1 -p other.yaml -o other.nc >"$LOG/out" 2>"$LOG/err" ||
  fail "voxelize other.yaml: $(cat "$LOG/err")"
expect_usage_error "resume with another compliance limit" "the checkpoint is of another model" \
  "$OPTIMIZE" other.nc -o x.nc --optimizer mma --filter density --max-iterations 12 --resume ck.nc

# OC cannot meet a compliance limit: one line, exit 2, no design file
expect_usage_error "OC with the volume objective" \
  "model\.nc: the optimality-criteria update \(optimizer oc\) meets one volume constraint .*optimizer mma" \
  "$OPTIMIZE" model.nc -o oc.nc --max-iterations 2

# a volume of label 1 (the design domain's label, a region of its own):
# MMA meets it; OC refuses a region's volume
cat >region.yaml <<'YAML'
voxfe-problem: 1
material: {E: 1, nu: 0.3}
supports: [{region: {face: x-}, fix: [x, y, z]}]
loads: [{region: {edge: [x+, z-]}, force: [0, 0, -1]}]
constraints:
  - {name: budget, volume: 0.25, region: {label: 1}, relation: "="}
YAML
"$VOXELIZE" --box 8x4x4 --voxel-size 1 -p region.yaml -o region.nc >"$LOG/out" 2>"$LOG/err" ||
  fail "voxelize region.yaml: $(cat "$LOG/err")"
expect_usage_error "OC with a labelled region's volume" "the volume constraint 'budget' of label 1" \
  "$OPTIMIZE" region.nc -o oc.nc --max-iterations 2
"$OPTIMIZE" region.nc -o region_design.nc --optimizer mma --filter density --no-continuation \
  --max-iterations 40 --threads 2 -q >"$LOG/out" 2>"$LOG/err" ||
  fail "optimize region.nc: $(cat "$LOG/err")"
/usr/bin/python3 - region_design.nc <<'PY' || fail "region_design.nc: the volume is not met"
import sys
import netCDF4
d = netCDF4.Dataset(sys.argv[1])
v = float(d["optimization"].final_constraint_value)
assert abs(v / 0.25 - 1) <= 2e-3, v
assert abs(float(d["density"][:].mean()) - v) < 1e-12
PY

# bad constraints: one line naming the file and where, exit 2, no model
bad() { # NAME PATTERN YAML-of-the-constraints-and-more
  printf 'voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\nsupports: [{region: {face: x-}, fix: [x, y, z]}]\n%s\n' \
    "$3" >"$1.yaml"
  expect_usage_error "problem file: $1" "$1\.yaml:[0-9]+:[0-9]+: .*$2" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 -p "$1.yaml" -o bad.nc
}
LOAD='loads: [{region: {edge: [x+, z-]}, force: [0, 0, -1]}]'
bad both "constraints\[0\]: needs one of 'volume' .* not both" \
  "$LOAD
constraints: [{volume: 0.3, compliance: 2}]"
bad neither "constraints\[0\]: needs one of 'volume'" "$LOAD
constraints: [{name: x}]"
bad fraction "constraints\[0\]\.volume: is a volume fraction in \(0, 1\], not 1.5" \
  "$LOAD
constraints: [{volume: 1.5}]"
bad negative "constraints\[0\]\.compliance: must be positive, not -2" "$LOAD
constraints: [{compliance: -2}]"
bad region_of_compliance "constraints\[0\]: 'region' is for a volume constraint" "$LOAD
constraints: [{compliance: 2, region: {label: 1}}]"
bad equal_compliance "constraints\[0\]: 'relation' is for a volume constraint" "$LOAD
constraints: [{compliance: 2, relation: \"=\"}]"
bad case_of_volume "constraints\[0\]: 'case' is for a compliance constraint" "$LOAD
constraints: [{volume: 0.3, case: case1}]"
bad relation "constraints\[0\]\.relation: unknown relation '<' \(one of <=, =\)" "$LOAD
constraints: [{volume: 0.3, relation: \"<\"}]"
bad box_region "constraints\[0\]\.region: a volume constraint takes a labelled region" "$LOAD
constraints: [{volume: 0.3, region: {box: {min: [0, 0, 0], max: [1, 1, 1]}}}]"
bad unknown_key "constraints\[0\]: unknown key 'limit'" "$LOAD
constraints: [{volume: 0.3, limit: 2}]"
bad duplicate "constraints\[1\]: the name 'a' is already used by constraints\[0\]" "$LOAD
constraints: [{name: a, volume: 0.3}, {name: a, volume: 0.4}]"
bad unknown_case "constraints\[0\]\.case: unknown load case 'side'" "$LOAD
constraints: [{compliance: 2, case: side}]"
bad no_case "constraints\[0\]: needs 'case': the file declares 2 load cases" \
  "load_cases: [a, b]
loads: [{region: {face: x+}, force: [0, 0, -1], case: a}, {region: {face: x+}, force: [0, 1, 0], case: b}]
constraints: [{compliance: 2}]"
bad volume_alone "objective: 'volume' needs a compliance constraint" "$LOAD
objective: volume
constraints: [{volume: 0.3}]"
bad not_a_list "constraints: must be a list" "$LOAD
constraints: {volume: 0.3}"
# rasterising: a label that is passive or has no voxel (no line:column there)
for label in 2 7; do
  printf 'voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\nsupports: [{region: {face: x-}, fix: [x, y, z]}]\n%s\nconstraints: [{name: r, volume: 0.3, region: {label: %d}}]\n' \
    "$LOAD" "$label" >"label$label.yaml"
  expect_usage_error "problem file: label $label" "label$label\.yaml: constraint 'r': (label 2 is not a design material|no voxel of the model has label 7)" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 -p "label$label.yaml" -o bad.nc
done
finish
