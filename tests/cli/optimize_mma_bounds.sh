# SPDX-License-Identifier: BSD-3-Clause
# voxfe-optimize --mma-bounds, --mma-convexity, --mma-raa0, --mma-epsilon-min:
# in --help, recorded in the history line, a run with the move-limit box as
# MMA's bounds ends elsewhere than the default's, and unknown kinds are
# refused with one line (exit 2) before any device work.
. "$(dirname "$0")/lib.sh"

"$OPTIMIZE" --help >"$LOG/help" || fail "--help failed"
for option in mma-bounds=KIND mma-convexity=KIND mma-raa0=R mma-epsilon-min=E; do
  grep -q -- "--$option" "$LOG/help" || fail "--help lacks --$option"
done
grep -q "Aage, Andreassen" "$LOG/help" || fail "--help does not cite Aage, Andreassen and Lazarov"

make_model model.nc 12x6x6 || finish
run() {
  local out=$1
  shift
  "$OPTIMIZE" model.nc -o "$out" --optimizer mma --device cpu --max-iterations 6 --threads 2 \
    --change-tol 0 -q "$@" >"$LOG/out" 2>"$LOG/err" || fail "optimize $*: $(cat "$LOG/err")"
}
run design.nc
run box.nc --mma-bounds move --mma-convexity aage --mma-raa0 1e-6 --mma-epsilon-min 1e-9
ncdump -h design.nc | grep -q -- "--mma-bounds=design --mma-convexity=svanberg --mma-raa0=1e-05 \
--mma-epsilon-min=1e-07" || fail "design.nc: the history line lacks the defaults"
ncdump -h box.nc | grep -q -- "--mma-bounds=move --mma-convexity=aage --mma-raa0=1e-06 \
--mma-epsilon-min=1e-09" || fail "box.nc: the history line lacks the options given"
/usr/bin/python3 - design.nc box.nc <<'PY' || fail "the runs do not differ as they should"
import sys
import netCDF4
a, b = (netCDF4.Dataset(f)["optimization"]["objective"][:] for f in sys.argv[1:])
assert len(a) == len(b) == 6
assert a[0] == b[0], (a[0], b[0])  # the same start
assert abs(a[-1] / b[-1] - 1) > 1e-3, (a[-1], b[-1])
PY

expect_usage_error "unknown MMA bounds" "--mma-bounds: expected design or move, got 'box'" \
  "$OPTIMIZE" model.nc -o x.nc --optimizer mma --mma-bounds box
expect_usage_error "unknown MMA convexity" "--mma-convexity: expected svanberg or aage, got 'x'" \
  "$OPTIMIZE" model.nc -o x.nc --optimizer mma --mma-convexity x
finish
