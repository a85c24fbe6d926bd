#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# voxfe-analyze --device-lock (cli/cli_device_lock.h): the lock file is
# made empty where missing and never written; a folder, a FIFO, the input
# or the output is refused with one line, exit status 2 and no result; the
# option is recorded in the history line; a run on the CPU does not wait
# for a lock another process holds. With CUDA (argument "cuda"; exit 77
# without a device): a run waits for the lock a process holds, says how
# long with --timings, and gives the force of a run without it.
#
# usage: device_lock.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR ANALYZE [cuda]
source "$(dirname "$0")/../cli/lib.sh"
ANALYZE=$(realpath "$1")
DEVICE=${2:-cpu}
MAKE="/usr/bin/python3 $SOURCE_DIR/tests/analyze/make_model.py"

if [ "$DEVICE" = cuda ]; then
  # neither ncdump nor Python's netCDF module, which the GPU machines may lack
  make_model block.nc 6x3x3 || finish
  "$ANALYZE" block.nc -o plain.nc -q --device cuda --summary plain.json 2>"$LOG/err"
  status=$?
  if [ "$status" -ne 0 ] && grep -Eq "no CUDA device|without CUDA" "$LOG/err"; then
    echo "skipped: $(cat "$LOG/err")"
    exit 77
  fi
  [ "$status" -eq 0 ] || { fail "--device cuda: exit $status: $(cat "$LOG/err")"; finish; }
  # another process holds the lock for 3 s: the run waits for it, then solves
  (flock 9 && sleep 3) 9>gpu.lock >/dev/null 2>&1 &
  holder=$!
  sleep 0.5
  "$ANALYZE" block.nc -o locked.nc --device cuda --device-lock gpu.lock --timings \
    --summary locked.json >"$LOG/out" 2>"$LOG/err" || fail "locked run: $(cat "$LOG/err")"
  wait "$holder"
  waited=$(sed -n 's/.*waited \([0-9.]*\) s of the setup for the device lock gpu.lock$/\1/p' \
    "$LOG/err")
  [ -n "$waited" ] || fail "--timings does not say the wait: $(cat "$LOG/err")"
  awk -v w="${waited:-0}" 'BEGIN {exit !(w >= 2 && w < 60)}' ||
    fail "waited $waited s for a lock held 2.5 s more"
  force() { sed -n 's/.*"reaction_force": *\([-0-9][-0-9.eE+]*\).*/\1/p' "$1" | head -n 1; }
  a=$(force plain.json) b=$(force locked.json)
  awk -v a="$a" -v b="$b" 'function abs(x) {return x < 0 ? -x : x}
    BEGIN {exit !(a != "" && abs(a - b) <= 1e-9 * abs(a))}' ||
    fail "the locked run's force $b against $a"
  # free again: no wait to speak of
  "$ANALYZE" block.nc -o again.nc --device cuda --device-lock gpu.lock --timings \
    >"$LOG/out" 2>"$LOG/err" || fail "second locked run: $(cat "$LOG/err")"
  waited=$(sed -n 's/.*waited \([0-9.]*\) s of the setup.*/\1/p' "$LOG/err")
  awk -v w="${waited:-99}" 'BEGIN {exit !(w < 1)}' || fail "waited $waited s for a free lock"
  finish
fi

$MAKE cube cube.nc 4 4 4 || { fail "make_model cube"; finish; }

# --- a run with a lock file: made empty, recorded, and one that exists is kept as it is
"$ANALYZE" cube.nc -o result.nc -q --device-lock made.lock || fail "run with --device-lock"
[ -f made.lock ] && [ ! -s made.lock ] || fail "made.lock: not made empty"
ncdump -h result.nc | grep -q -- "--device-lock=made.lock" ||
  fail "history lacks --device-lock: $(ncdump -h result.nc | grep voxfe-analyze)"
echo "keep" >kept.lock
"$ANALYZE" cube.nc -o result.nc -q --device-lock kept.lock || fail "run with an existing lock"
[ "$(cat kept.lock)" = keep ] || fail "kept.lock was written"
rm -f result.nc made.lock

# --- on the CPU the lock is not taken: a lock another process holds does not stop the run
exec 9>held.lock
flock 9 || fail "flock held.lock"
timeout 50 "$ANALYZE" cube.nc -o cpu.nc -q --device-lock held.lock --timings 2>"$LOG/err" ||
  fail "the CPU run with a held lock: exit $? $(cat "$LOG/err")"
grep -q "waited" "$LOG/err" && fail "the CPU run waited for the lock: $(cat "$LOG/err")"
exec 9>&-
rm -f cpu.nc held.lock

# --- refusals: one line naming the file, exit status 2, no result
mkdir folder.lock
expect_usage_error "a folder as the lock" "folder.lock: cannot open as the device lock" \
  "$ANALYZE" cube.nc -o r.nc --device-lock folder.lock
mkfifo fifo.lock
expect_usage_error "a FIFO as the lock" "fifo.lock: cannot use as the device lock: not a regular" \
  "$ANALYZE" cube.nc -o r.nc --device-lock fifo.lock
expect_usage_error "the input as the lock" "cube.nc: cannot use as the device lock: it is the input" \
  "$ANALYZE" cube.nc -o r.nc --device-lock cube.nc
cp cube.nc old.nc
expect_usage_error "the output as the lock" "old.nc: cannot use as the device lock: it is the output" \
  "$ANALYZE" cube.nc -o old.nc --device-lock old.nc
cmp -s cube.nc old.nc || fail "the output named as the lock was changed"
expect_usage_error "a lock in a missing folder" "nowhere/x.lock: cannot open as the device lock" \
  "$ANALYZE" cube.nc -o r.nc --device-lock nowhere/x.lock
finish
