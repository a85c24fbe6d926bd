# SPDX-License-Identifier: BSD-3-Clause
# A periodic unit cell end to end: voxelize a cell (problem file with
# `cell: true`), maximise its bulk modulus for two iterations, and find
# C^H in the summary and in the design file; a solid cell's C^H is the
# material's stiffness; a symmetric cell turns fields instead of solving. A cell with supports and a cell of 6 voxels are
# refused with exit status 2 and nothing written.
. "$(dirname "$0")/lib.sh"

write_cell_problem cell.yaml
"$VOXELIZE" --box 8x8x8 --voxel-size 0.125 -p cell.yaml -o cell.nc || { fail "voxelize cell.nc"; finish; }

"$OPTIMIZE" cell.nc -o design.nc --objective bulk --no-continuation --penalty 1 \
  --initial uniform --max-iterations 2 --device cpu >"$LOG/out" 2>"$LOG/err"
status=$?
[ "$status" -eq 0 ] || { fail "optimize: exit status $status: $(tail -n 3 "$LOG/err")"; finish; }
grep -q "^design\.nc: .*bulk objective" "$LOG/out" || fail "no summary line: $(cat "$LOG/out")"
grep -q "homogenized stiffness C^H" "$LOG/out" || fail "no C^H in the summary"
# a uniform density of 0.3 with p = 1 is the solid scaled by 0.3:
# C00 = 0.3 E (1 - nu) / ((1 + nu)(1 - 2 nu)) = 0.403846, bulk 0.3 E / (3 (1 - 2 nu)) = 0.25
row=$(grep -A1 "homogenized stiffness C^H" "$LOG/out" | tail -n 1)
awk -v r="$row" 'BEGIN { split(r, v, " "); exit !(v[1] > 0.40384 && v[1] < 0.40385) }' ||
  fail "C^H_00 is not 0.403846: '$row'"
grep -q "^bulk modulus 0\.25," "$LOG/out" || fail "bulk modulus is not 0.25: $(cat "$LOG/out")"
ncdump -h design.nc | grep -q "homogenized_stiffness = 0.40384" ||
  fail "design.nc has no homogenized_stiffness attribute"
# without --initial, a cell with no density of its own starts from the
# trigonometric family, not from the uniform stationary point: at p = 1 any
# other design of mean 0.3 lies below the uniform one's 0.25 (Voigt)
"$OPTIMIZE" cell.nc -o auto.nc --objective bulk --no-continuation --penalty 1 \
  --max-iterations 1 --device cpu >"$LOG/auto" 2>"$LOG/auto.err" ||
  fail "optimize with the default start: $(tail -n 3 "$LOG/auto.err")"
awk '/^bulk modulus/ { b = $3 + 0; found = 1 } END { exit !(found && b < 0.2499) }' \
  "$LOG/auto" || fail "the default start of a cell is uniform: $(grep '^bulk' "$LOG/auto")"
ncdump -h auto.nc | grep -q -- "--initial=trigonometric" ||
  fail "auto.nc's history does not name the trigonometric start"

# a reflect6 cell turns the fields of xx and xy for yy, zz, yz and zx,
# says so, and records the option; the shear moduli come out equal
"$OPTIMIZE" cell.nc -o turned.nc --objective shear --symmetry reflect6 --max-iterations 1 \
  --device cpu >"$LOG/turned" 2>"$LOG/turned.err" ||
  fail "optimize with reflect6: $(tail -n 3 "$LOG/turned.err")"
grep -q "^fields of yy, zz, yz and zx: those of xx and xy turned" "$LOG/turned" ||
  fail "no turned fields in the summary: $(cat "$LOG/turned")"
awk '/^Young.s moduli/ { exit !($12 + 0 == $14 + 0 && $14 + 0 == $16 + 0) }' "$LOG/turned" ||
  fail "unequal shear moduli: $(grep '^Young' "$LOG/turned")"
ncdump -h turned.nc | grep -q -- "--cell-turned-fields=1" ||
  fail "turned.nc's history does not name --cell-turned-fields"
# refused: supports in a cell, and a grid that is not a multiple of 4
before=$(listing)
cat >bad.yaml <<'YAML'
voxfe-problem: 1
material: {name: solid, E: 1.0, nu: 0.3}
cell: true
supports:
  - {name: base, region: {face: z-}, fix: [x, y, z]}
YAML
"$VOXELIZE" --box 8x8x8 --voxel-size 1 -p bad.yaml -o bad.nc 2>"$LOG/err"
status=$?
[ "$status" -eq 2 ] || fail "voxelize a cell with supports: exit status $status, expected 2"
grep -q "periodic unit cell takes no supports" "$LOG/err" || fail "message: $(cat "$LOG/err")"
"$VOXELIZE" --box 6x8x8 --voxel-size 1 -p cell.yaml -o six.nc || fail "voxelize six.nc"
before=$(listing)
"$OPTIMIZE" six.nc -o six-design.nc --objective shear --device cpu --quiet 2>"$LOG/err"
status=$?
[ "$status" -eq 2 ] || fail "optimize a 6x8x8 cell: exit status $status, expected 2"
grep -q "multiples of 4" "$LOG/err" || fail "message: $(cat "$LOG/err")"
[ "$(listing)" = "$before" ] || fail "the folder changed: $(listing)"
finish
