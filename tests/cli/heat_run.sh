# SPDX-License-Identifier: BSD-3-Clause
# Heat conduction end to end: Martinez-Frutos et al. 2017's heat-sink problem file at 16 mm
# voxels, voxelized (physics heat, schema version 2), optimized for a few
# iterations (temperatures stored, zero on the heat sink), exported to .vti
# (a temperature array) but refused as .inp; and problem files that mix
# elasticity and heat keys, clash or fix no temperature, refused with one line.
. "$(dirname "$0")/lib.sh"

HEATSINK="$SOURCE_DIR/workflows/heatsink/heatsink.yaml"
"$VOXELIZE" --box 8x4x16 --voxel-size 16 --problem "$HEATSINK" -o model.nc >"$LOG/out" 2>&1 ||
  { fail "voxelize: $(tail -n 3 "$LOG/out")"; finish; }
ncdump -h model.nc >"$LOG/header" || fail "ncdump cannot read model.nc"
grep -q ':physics = "heat"' "$LOG/header" || fail "model.nc: no physics = \"heat\""
grep -q ':voxfe_schema_version = 2' "$LOG/header" || fail "model.nc: schema version is not 2"

"$OPTIMIZE" model.nc -o design.nc --max-iterations 4 --emin-ratio 1e-3 --filter-radius 20 \
  --device cpu --threads 2 >"$LOG/out" 2>"$LOG/err" ||
  { fail "optimize: $(tail -n 3 "$LOG/err")"; finish; }
ncdump -h design.nc >"$LOG/header" || fail "ncdump cannot read design.nc"
grep -qE "double temperature\(load_case, node_z, node_y, node_x\)" "$LOG/header" ||
  fail "design.nc: no temperature(load_case, node_z, node_y, node_x)"
grep -q "double displacement" "$LOG/header" && fail "design.nc: a heat design has a displacement"
# the heat sink (nodes x <= 16, y <= 8 of the top face: (0..1, 0, 16)) is at
# T = 0 and the block is warmer everywhere else
/usr/bin/python3 - design.nc >"$LOG/py" 2>&1 <<'PY' || fail "design.nc temperatures: $(cat "$LOG/py")"
import sys
import netCDF4
import numpy as np
d = netCDF4.Dataset(sys.argv[1])
t = np.asarray(d["temperature"][0])  # (node_z, node_y, node_x)
assert t.shape == (17, 5, 9), t.shape
assert np.all(t[16, 0, 0:2] == 0), t[16, 0, 0:3]
assert np.all(t.max() > 0) and t.min() == 0, (t.min(), t.max())
assert np.argmax(t.ravel()) != 0
PY

"$EXPORT" design.nc -o design.vti >"$LOG/out" 2>&1 || fail "export .vti: $(tail -n 3 "$LOG/out")"
grep -aq 'Name="temperature_case1"' design.vti || fail "design.vti: no temperature_case1 array"
grep -aq 'Name="displacement' design.vti && fail "design.vti: a displacement array"
expect_usage_error "export of a heat model to .inp" "heat-conduction model" \
  "$EXPORT" design.nc -o design.inp

cat >fix.yaml <<'YAML'
voxfe-problem: 1
physics: heat
material: {conductivity: 1}
supports:
  - {region: {face: x-}, fix: [x]}
loads:
  - {heat_source: 1}
YAML
expect_usage_error "heat problem with 'fix'" "fix.yaml.*'fix' is for elasticity" \
  "$VOXELIZE" --box 4x4x4 --voxel-size 1 --problem fix.yaml -o bad.nc
cat >temperature.yaml <<'YAML'
voxfe-problem: 1
material: {E: 1, nu: 0.3}
supports:
  - {region: {face: x-}, temperature: 0}
YAML
expect_usage_error "temperature without physics heat" \
  "temperature.yaml.*'temperature' needs 'physics: heat'" \
  "$VOXELIZE" --box 4x4x4 --voxel-size 1 --problem temperature.yaml -o bad.nc
cat >force.yaml <<'YAML'
voxfe-problem: 1
physics: heat
material: {conductivity: 1}
supports:
  - {region: {face: x-}, temperature: 0}
loads:
  - {region: {face: x+}, force: [1, 0, 0]}
YAML
expect_usage_error "heat problem with a force" "force.yaml.*'force' is for elasticity" \
  "$VOXELIZE" --box 4x4x4 --voxel-size 1 --problem force.yaml -o bad.nc
cat >clash.yaml <<'YAML'
voxfe-problem: 1
physics: heat
material: {conductivity: 1}
supports:
  - {name: cold, region: {face: x-}, temperature: 0}
  - {name: warm, region: {face: y-}, temperature: 1}
loads:
  - {heat_source: 1}
YAML
expect_usage_error "two temperatures on one node" \
  "supports 'cold' and 'warm' prescribe different temperatures" \
  "$VOXELIZE" --box 4x4x4 --voxel-size 1 --problem clash.yaml -o bad.nc
cat >unheld.yaml <<'YAML'
voxfe-problem: 1
physics: heat
material: {conductivity: 1}
loads:
  - {heat_source: 1}
YAML
expect_usage_error "heat problem without a temperature" "fixes no temperature" \
  "$VOXELIZE" --box 4x4x4 --voxel-size 1 --problem unheld.yaml -o bad.nc
rm -f fix.yaml temperature.yaml force.yaml clash.yaml unheld.yaml
finish
