#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# workflows/bone/Makefile on generated scans, one of them bad (its bone does
# not connect the plates): make -j2 analyses the good ones, reports the bad
# one, writes the table with the good rows only (one with other columns left
# out and reported), leaves no result or temporary file of the bad one, and
# fails; make clean removes the outputs.
#
# usage: workflow_bone.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR ANALYZE
source "$(dirname "$0")/../cli/lib.sh"
ANALYZE=$(realpath "$1")
MAKE_MODEL="/usr/bin/python3 $SOURCE_DIR/tests/analyze/make_model.py"

cp "$SOURCE_DIR/workflows/bone/Makefile" . && mkdir scans || { fail "setup"; finish; }
# other.nc is good but has one material where good.nc has two: its row has
# other columns and stays out of the table, reported
$MAKE_MODEL porous scans/good.nc 8 8 6 11 && $MAKE_MODEL split scans/bad.nc 4 4 6 &&
  $MAKE_MODEL cube scans/other.nc 4 4 4 ||
  { fail "make_model"; finish; }
make -j2 VOXFE_BIN="$(dirname "$ANALYZE")" ANALYZE_OPTIONS="--device cpu --threads 1" \
  >"$LOG/out" 2>&1
status=$?
[ "$status" -ne 0 ] || fail "make succeeded with a bad sample"
grep -q "^FAILED: bad: voxfe-analyze: scans/bad.nc: the bone is not connected" "$LOG/out" ||
  fail "the bad sample is not reported: $(cat "$LOG/out")"
grep -q "^ok: good" "$LOG/out" || fail "the good sample is not reported ok: $(cat "$LOG/out")"
[ -s results/samples/good.nc ] && [ -s results/samples/good.json ] ||
  fail "no result or summary for the good sample"
[ "$(wc -l <results/summary.csv)" -eq 2 ] || fail "summary.csv: $(cat results/summary.csv)"
head -n 1 results/summary.csv | grep -q "^sample,test,axis," || fail "summary.csv has no header"
sed -n 2p results/summary.csv | grep -q "^good,uniaxial,z," || fail "summary.csv: no row of good"
# the jobs' solves take turns on a GPU through OUT's lock file (on the CPU it is not taken)
ncdump -h results/samples/good.nc | grep -q -- "--device-lock=results/device.lock" ||
  fail "the history lacks the batch's device lock: $(ncdump -h results/samples/good.nc | grep -- --device)"
ls results/samples | grep -qE '^bad\.(nc|json|csv|done)$' && fail "outputs of the bad sample left"
ls -A results results/samples | grep -q tmp && fail "temporary files left: $(ls -A results/samples)"
grep -q "^FAILED: bad" results/failed.txt || fail "failed.txt does not list bad"
grep -q "^FAILED: other: its summary has other columns" results/failed.txt ||
  fail "failed.txt does not list other: $(cat results/failed.txt)"
[ -s results/samples/other.nc ] || fail "other was not analysed"

# the good sample is not redone; the bad one is tried again
make -n VOXFE_BIN="$(dirname "$ANALYZE")" ANALYZE_OPTIONS="--device cpu --threads 1" \
  >"$LOG/plan" 2>&1
grep -q "scans/good.nc" "$LOG/plan" && fail "a second make redoes the good sample"
grep -q "scans/bad.nc" "$LOG/plan" || fail "a second make does not retry the bad sample"
grep -q -- "--device-lock results/device.lock" "$LOG/plan" || fail "the plan lacks the lock"
# DEVICE_LOCK= lets the jobs solve side by side
make -n VOXFE_BIN="$(dirname "$ANALYZE")" ANALYZE_OPTIONS="--device cpu --threads 1" \
  DEVICE_LOCK= >"$LOG/plan" 2>&1
grep -q "scans/bad.nc" "$LOG/plan" && grep -q -- "--device-lock" "$LOG/plan" &&
  fail "DEVICE_LOCK= still passes a lock: $(grep -- --device-lock "$LOG/plan")"

make clean >/dev/null 2>&1 || fail "make clean"
[ -z "$(ls -A results 2>/dev/null)" ] || fail "make clean left: $(ls -A results)"
finish
