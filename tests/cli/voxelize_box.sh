# SPDX-License-Identifier: BSD-3-Clause
# voxfe-voxelize on a small box with the cantilever problem: exit 0, silent,
# and a voxfe model file with labels, constraints and loads, and its history.
. "$(dirname "$0")/lib.sh"

"$VOXELIZE" --box 8x4x4 --voxel-size 0.5 --origin 1,2,3 --problem "$CANTILEVER" -o model.nc \
  >"$LOG/out" 2>"$LOG/err"
status=$?
[ "$status" -eq 0 ] || fail "exit status $status: $(cat "$LOG/err")"
[ -s "$LOG/out" ] && fail "printed on stdout: $(cat "$LOG/out")"
[ -s "$LOG/err" ] && fail "printed on stderr: $(cat "$LOG/err")"
[ -f model.nc ] || { fail "no model.nc"; finish; }

ncdump -h model.nc >"$LOG/header" || fail "ncdump cannot read model.nc"
# the label array over the cells, and the boundary conditions as node lists
grep -qE "^[[:space:]]*(u?byte|char) label\(z, y, x\)" "$LOG/header" ||
  fail "no label(z, y, x) variable"
grep -qiE "^[[:space:]]*[a-z0-9 ]+ constraint[a-z_]*\(" "$LOG/header" ||
  fail "no constraint variable"
grep -qiE "^[[:space:]]*[a-z0-9 ]+ load[a-z_]*\(" "$LOG/header" || fail "no load variable"
grep -qE "^[[:space:]]*z = 4 ;" "$LOG/header" || fail "dimension z is not 4"
grep -qE "^[[:space:]]*x = 8 ;" "$LOG/header" || fail "dimension x is not 8"
# the history records the command line and the resolved options
grep -q "voxfe-voxelize --box 8x4x4" "$LOG/header" || fail "history lacks the command line"
grep -q -- "--origin=1,2,3" "$LOG/header" || fail "history lacks the resolved origin"
finish
