# SPDX-License-Identifier: BSD-3-Clause
# Signals never leave temporary files: voxfe-analyze writes its result
# beside the solve (the file exists from the start), and SIGTERM at any
# moment of a run must leave no "*.tmp.*" and either no result or a whole
# one; voxfe-optimize's second SIGINT ends it at once, also without one; a
# SIGINT voxfe-optimize defers ends it with status 130.
#
# usage: signals.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR ANALYZE
. "$(dirname "$0")/lib.sh"
ANALYZE=$(realpath "$1")

/usr/bin/python3 "$SOURCE_DIR/tests/analyze/make_model.py" cube cube.nc 40 40 40 ||
  { fail "make_model cube"; finish; }

# no_leftovers WHAT: no temporary file, and a result there is whole
no_leftovers() {
  if ls -A | grep -q "\.tmp\."; then fail "$1: temporary files left: $(ls -A | tr '\n' ' ')"; fi
  for f in result.nc design.nc; do
    [ -f "$f" ] && ! ncdump -h "$f" >/dev/null 2>&1 && fail "$1: $f is not a whole file"
  done
  rm -f result.nc design.nc design.checkpoint.nc
}

for delay in 0.1 0.3 0.5 1 2; do
  "$ANALYZE" cube.nc -o result.nc -q >/dev/null 2>&1 &
  pid=$!
  sleep $delay
  kill -TERM $pid 2>/dev/null
  wait $pid
  status=$?
  [ "$status" -eq 0 ] || [ "$status" -eq 143 ] || fail "analyze, SIGTERM after $delay s: status $status"
  no_leftovers "analyze, SIGTERM after $delay s"
done

make_model model.nc 12x6x6 || finish
# (runs long enough that every signal finds them running: 400 iterations
# of this model took under 1.5 s on a quiet machine)
# job control: a background job of a script ignores SIGINT otherwise (and
# voxfe-optimize keeps a signal ignored that it was started with)
set -m
for delay in 0.2 0.6 1.5; do
  "$OPTIMIZE" model.nc -o design.nc --max-iterations 100000 --change-tol 0 --device cpu --threads 2 >/dev/null 2>&1 &
  pid=$!
  sleep $delay
  kill -INT $pid 2>/dev/null
  sleep 0.05
  kill -INT $pid 2>/dev/null # the second: at once
  wait $pid
  status=$?
  [ "$status" -eq 130 ] || fail "optimize, two SIGINTs after $delay s: status $status, expected 130"
  no_leftovers "optimize, two SIGINTs after $delay s"
done

# one SIGINT once the loop runs (before, it ends the program at once): the
# iteration ends, the design is written, status 130
"$OPTIMIZE" model.nc -o design.nc --max-iterations 100000 --change-tol 0 --device cpu --threads 2 \
  >"$LOG/out" 2>"$LOG/progress" &
pid=$!
for _ in $(seq 1 3000); do
  grep -q "^it 1/" "$LOG/progress" 2>/dev/null && break
  sleep 0.01
done
kill -INT $pid
wait $pid
status=$?
[ "$status" -eq 130 ] || fail "optimize, SIGINT: status $status, expected 130"
grep -q "^design.nc: interrupted after" "$LOG/out" || fail "optimize, SIGINT: '$(cat "$LOG/out")'"
[ -f design.nc ] && [ -f design.checkpoint.nc ] || fail "optimize, SIGINT: no design or checkpoint"
no_leftovers "optimize, SIGINT"

# a periodic cell's run stops the same way, with its design and a
# checkpoint that holds the cell's fields
rm -f design.nc design.checkpoint.nc
write_cell_problem cell.yaml
"$VOXELIZE" --box 8x8x8 --voxel-size 1 --problem cell.yaml -o cell.nc || fail "voxelize cell"
"$OPTIMIZE" cell.nc -o design.nc --objective bulk --max-iterations 100000 --change-tol 0 \
  --device cpu --threads 2 >"$LOG/out" 2>"$LOG/progress" &
pid=$!
for _ in $(seq 1 3000); do
  grep -q "^it 1/" "$LOG/progress" 2>/dev/null && break
  sleep 0.01
done
kill -INT $pid
wait $pid
status=$?
[ "$status" -eq 130 ] || fail "cell, SIGINT: status $status, expected 130"
/usr/bin/python3 -c "
import netCDF4
assert netCDF4.Dataset('design.nc')['optimization'].stop_reason == 'interrupted'" ||
  fail "cell, SIGINT: the design does not say interrupted"
/usr/bin/python3 -c "
import netCDF4
c = netCDF4.Dataset('design.checkpoint.nc')['checkpoint']
assert int(c['iterations_done'][...]) >= 1 and any(v.startswith('cell_field_') for v in c.variables)" ||
  fail "cell, SIGINT: no checkpoint with the cell's fields"
no_leftovers "cell, SIGINT"
finish
