# SPDX-License-Identifier: BSD-3-Clause
# voxfe-optimize --optimizer mma: in --help, runs, meets the volume, and the
# history line of the design file names it with its parameters (the
# subproblem by the dual method by default); the same with --mma-subproblem
# primal-dual; a compliant mechanism; an unknown method or subproblem method
# and q > 1 with MMA are refused with one line (exit 2) before any device work.
. "$(dirname "$0")/lib.sh"

"$OPTIMIZE" --help >"$LOG/help" || fail "--help failed"
grep -q -- "--optimizer=METHOD" "$LOG/help" || fail "--help lacks --optimizer"
grep -q "Svanberg 1987" "$LOG/help" || fail "--help does not cite Svanberg 1987"
grep -q -- "--mma-asymptote-init" "$LOG/help" || fail "--help lacks the MMA parameters"

make_model model.nc 12x6x6 || finish
"$OPTIMIZE" model.nc -o mma.nc --optimizer mma --max-iterations 8 --threads 2 -q \
  >"$LOG/out" 2>"$LOG/err" || { fail "optimize --optimizer mma: $(cat "$LOG/err")"; finish; }
ncdump -h mma.nc >"$LOG/header" || fail "ncdump cannot read mma.nc"
grep -q -- "--optimizer=mma .*--mma-asymptote-init=0.5 --mma-asymptote-increase=1.2 \
--mma-asymptote-decrease=0.7 --mma-objective-scale=1 --mma-subproblem=dual" "$LOG/header" ||
  fail "mma.nc: the history line does not name the optimizer and its parameters"
# the history names the device that ran ("auto" resolved)
grep -Eq -- "--device=(cpu|cuda) " "$LOG/header" || fail "mma.nc: the history names no device"
/usr/bin/python3 - mma.nc <<'PY' || fail "mma.nc: volume or history wrong"
import sys
import netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1])
h = d["optimization"]
assert len(h["objective"][:]) == 8
assert abs(float(h["volume_fraction"][-1]) - 0.3) < 2e-3, h["volume_fraction"][:]
PY
# the subproblems by the primal-dual method: the same volume, the history names it
grep -q -- "--mma-subproblem=METHOD" "$LOG/help" || fail "--help lacks --mma-subproblem"
"$OPTIMIZE" model.nc -o pd.nc --optimizer mma --mma-subproblem primal-dual --max-iterations 8 \
  --threads 2 -q >"$LOG/out" 2>"$LOG/err" ||
  { fail "optimize --mma-subproblem primal-dual: $(cat "$LOG/err")"; finish; }
ncdump -h pd.nc | grep -q -- "--mma-subproblem=primal-dual" ||
  fail "pd.nc: the history line does not name the subproblem method"
/usr/bin/python3 - mma.nc pd.nc <<'PY' || fail "pd.nc: volume or objective wrong"
import sys
import netCDF4
a, b = (netCDF4.Dataset(f)["optimization"] for f in sys.argv[1:3])
assert abs(float(b["volume_fraction"][-1]) - 0.3) < 2e-3, b["volume_fraction"][:]
oa, ob = float(a["objective"][-1]), float(b["objective"][-1])
assert abs(oa - ob) < 1e-2 * oa, (oa, ob)
PY
# a compliant mechanism (the gripper workflow, coarse): MMA maximises the
# output displacement (the objective, -u_out, falls from its first value
# well below zero) under the volume limit (<=), as OC does
"$VOXELIZE" --box 24x6x12 --voxel-size 6.6666666667 -p "$SOURCE_DIR/workflows/gripper/gripper.yaml" \
  -o gripper.nc -q || fail "voxelize the gripper failed"
"$OPTIMIZE" gripper.nc -o gripper_mma.nc --optimizer mma --max-iterations 15 --threads 2 \
  --emin-ratio 1e-3 --filter-radius 12 -q >"$LOG/out" 2>"$LOG/err" ||
  fail "optimize the gripper with mma: $(cat "$LOG/err")"
/usr/bin/python3 - gripper_mma.nc <<'PY' || fail "gripper_mma.nc: the mechanism did not improve"
import sys
import netCDF4
h = netCDF4.Dataset(sys.argv[1])["optimization"]
f, v = h["objective"][:], h["volume_fraction"][:]
assert f[0] > 0 and f[-1] < -0.05 and f[-1] < f[-5], f[:]
assert v[-1] <= 0.3 + 1e-3, v[:]
PY
# OC's run by default: the history names oc
"$OPTIMIZE" model.nc -o oc.nc --max-iterations 1 --device cpu -q || fail "optimize (oc) failed"
ncdump -h oc.nc | grep -q -- "--optimizer=oc" || fail "oc.nc: the history does not name oc"

expect_usage_error "an unknown optimizer" "--optimizer: expected oc or mma, got 'sqp'" \
  "$OPTIMIZE" model.nc -o x.nc --optimizer sqp
expect_usage_error "an unknown subproblem method" \
  "--mma-subproblem: expected primal-dual or dual, got 'newton'" \
  "$OPTIMIZE" model.nc -o x.nc --optimizer mma --mma-subproblem newton
expect_usage_error "mma with q > 1" "q 2: the intermediate-density exponent is part of the" \
  "$OPTIMIZE" model.nc -o x.nc --optimizer mma --q-max 2
finish
