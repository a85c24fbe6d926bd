# SPDX-License-Identifier: BSD-3-Clause
# voxfe-optimize --checkpoint-every and --resume, and SIGTERM through the
# program: a run stopped at iteration k (by its iteration limit with a
# checkpoint, or by a signal) and resumed has the design, the state, the
# history (all but the wall times) and the final numbers of the run never
# stopped, to the bit (CPU, one thread count), also for the other
# objectives and a periodic cell's; the interrupted run writes
# its design with stop_reason "interrupted" and exits 143; a resume with
# other options or another model is refused.
. "$(dirname "$0")/lib.sh"

N=12
RUN_OPTIONS=(--max-iterations $N --device cpu --threads 2)
make_model model.nc 12x6x6 || finish
make_model other.nc 12x6x4 || finish

"$OPTIMIZE" model.nc -o full.nc "${RUN_OPTIONS[@]}" >"$LOG/full" 2>/dev/null ||
  { fail "the uninterrupted run failed"; finish; }

# one final objective and CG count: the last line's are the summary's (the
# design in the file, evaluated after the last update), with the stop reason
"$EXPORT" full.nc -o full.json && "$EXPORT" full.nc -o full.csv ||
  fail "export of the summaries failed"
/usr/bin/python3 - "$LOG/full" <<'PY' || fail "the summaries disagree with the last line: $(cat "$LOG/full")"
import csv, json, re, sys
line = open(sys.argv[1]).read()
m = re.search(r"with continuation unfinished after 12 iterations: final design compliance (\S+), "
              r"volume fraction (\S+), .* (\d+) CG iterations \(p 1 of 3, q 1 of 1\)", line)
assert m, line
d = json.load(open("full.json"))["design"]
assert d["stop_reason"] == "continuation_unfinished", d
assert f'{d["objective"]:.6g}' == m.group(1) and f'{d["volume_fraction"]:.4f}' == m.group(2), d
assert d["cg_iterations"] == int(m.group(3)), (d["cg_iterations"], m.group(3))
row = next(csv.DictReader(open("full.csv")))
assert row["stop_reason"] == "continuation_unfinished" and float(row["objective"]) == d["objective"]
PY

# compare A B: the same design, state, history and end, to the bit
compare() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
import netCDF4, numpy as np
a, b = (netCDF4.Dataset(p) for p in sys.argv[1:3])
for v in ("density", "displacement", "temperature"):
    if v not in a.variables and v not in b.variables:
        continue
    x, y = a[v][:], b[v][:]
    assert x.shape == y.shape and np.array_equal(x, y), f"{v} differs: {np.abs(x - y).max()}"
ha, hb = a["optimization"], b["optimization"]
for v in ha.variables:
    if v == "seconds":
        continue
    assert np.array_equal(ha[v][:], hb[v][:]), f"history {v} differs"
for k in ha.ncattrs():
    assert str(ha.getncattr(k)) == str(hb.getncattr(k)), f"{k}: {ha.getncattr(k)} {hb.getncattr(k)}"
PY
}

# --- a checkpoint at iteration 4 (the run's limit), resumed to N
"$OPTIMIZE" model.nc -o part.nc --checkpoint-every 4 --max-iterations 4 --device cpu --threads 2 \
  >"$LOG/part" 2>/dev/null || fail "the run with checkpoints failed"
[ -f part.checkpoint.nc ] || fail "no part.checkpoint.nc"
grep -q "; checkpoint part.checkpoint.nc" "$LOG/part" || fail "last line: $(cat "$LOG/part")"
"$OPTIMIZE" model.nc -o resumed.nc "${RUN_OPTIONS[@]}" --resume part.checkpoint.nc \
  >"$LOG/resumed" 2>"$LOG/err" || fail "resume: $(cat "$LOG/err")"
compare full.nc resumed.nc || fail "resumed at 4: not the uninterrupted run"
# the last line's numbers are the uninterrupted run's too (not the time)
[ "$(sed 's/; [0-9.]* s,/;/; s/^[a-z]*\.nc//' "$LOG/full")" = \
  "$(sed 's/; [0-9.]* s,/;/; s/^[a-z]*\.nc//' "$LOG/resumed")" ] ||
  fail "last lines differ: '$(cat "$LOG/full")' '$(cat "$LOG/resumed")'"

# --- SIGTERM while iterating: the design iteration under way ends, then a
# checkpoint and the design so far, exit status 143. The progress comes
# through a FIFO, read as it is written, and the signal goes out as soon as
# the second iteration's line shows, so that it comes before the last
# iteration on any machine.
mkfifo "$LOG/progress"
"$OPTIMIZE" model.nc -o int.nc "${RUN_OPTIONS[@]}" >"$LOG/int" 2>"$LOG/progress" &
pid=$!
while IFS= read -r line; do
  case "$line" in "it 2/"*) kill -TERM $pid ;; esac
done <"$LOG/progress"
wait $pid
status=$?
if [ "$status" -eq 0 ]; then
  fail "the run ended before SIGTERM came (status 0): the test needs a slower run"
else
  [ "$status" -eq 143 ] || fail "SIGTERM: exit status $status, expected 143"
  grep -q "^int.nc: interrupted after [0-9]* iterations: final design compliance" "$LOG/int" ||
    fail "SIGTERM: last line '$(cat "$LOG/int")'"
  [ -f int.checkpoint.nc ] || fail "SIGTERM: no checkpoint"
  /usr/bin/python3 - <<'PY' || fail "SIGTERM: the design so far"
import netCDF4
d = netCDF4.Dataset("int.nc")
assert d["optimization"].stop_reason == "interrupted", d["optimization"].stop_reason
c = netCDF4.Dataset("int.checkpoint.nc")
k = int(c["checkpoint/iterations_done"][...])
assert k == len(d["optimization/iteration"]) and 2 <= k < 12, k
PY
  ls | grep -q "\.tmp\." && fail "SIGTERM: temporary files left: $(ls)"
  "$OPTIMIZE" model.nc -o resumed2.nc "${RUN_OPTIONS[@]}" --resume int.checkpoint.nc \
    >/dev/null 2>"$LOG/err" || fail "resume after SIGTERM: $(cat "$LOG/err")"
  compare full.nc resumed2.nc || fail "resumed after SIGTERM: not the uninterrupted run"
fi

# --- the other objectives' state: heat conduction, two load cases, a
# compliant mechanism (its adjoint and springs), each stopped at 3 of 6
cat >two_cases.yaml <<'YAML'
voxfe-problem: 1
material: {name: solid, E: 1.0, nu: 0.3}
load_cases: [tip, side]
supports:
  - {name: clamped_end, region: {face: x-}, fix: [x, y, z]}
loads:
  - {name: tip_load, region: {edge: [x+, z-]}, force: [0, 0, -1], case: tip}
  - {name: side_load, region: {edge: [x+, z-]}, force: [0, 1, 0], case: side}
YAML
# a small inverter: input and output springs, the adjoint of l.u
cat >mechanism.yaml <<'YAML'
voxfe-problem: 1
material: {name: solid, E: 1.0, nu: 0.3}
objective: output_displacement
supports:
  - {name: clamped, region: {face: y-}, fix: [x, y, z]}
loads:
  - {name: f_in, region: &input {face: x-}, force: [1, 0, 0]}
springs:
  - {name: k_in, region: *input, stiffness: [1, 0, 0]}
  - {name: k_out, region: &output {face: x+}, stiffness: [1, 0, 0]}
outputs:
  - {name: pull, region: *output, direction: [-1, 0, 0]}
YAML
"$VOXELIZE" --box 8x4x4 --voxel-size 1 --problem two_cases.yaml -o two_cases.nc &&
  "$VOXELIZE" --box 8x4x16 --voxel-size 16 --problem "$SOURCE_DIR/workflows/heatsink/heatsink.yaml" \
    -o heat.nc &&
  "$VOXELIZE" --box 8x4x4 --voxel-size 1 --problem mechanism.yaml -o mechanism.nc ||
  fail "voxelize of the other models failed"
for m in two_cases heat mechanism; do
  [ -f $m.nc ] || continue
  "$OPTIMIZE" $m.nc -o $m-full.nc --max-iterations 6 --device cpu --threads 2 \
    >/dev/null 2>&1 || fail "$m: the uninterrupted run failed"
  "$OPTIMIZE" $m.nc -o $m-part.nc --max-iterations 3 --checkpoint-every 3 --device cpu \
    --threads 2 >/dev/null 2>&1 || fail "$m: the run with a checkpoint failed"
  "$OPTIMIZE" $m.nc -o $m-resumed.nc --max-iterations 6 --resume $m-part.checkpoint.nc \
    --device cpu --threads 2 >/dev/null 2>"$LOG/err" || fail "$m: resume: $(cat "$LOG/err")"
  compare $m-full.nc $m-resumed.nc || fail "$m: resumed at 3: not the uninterrupted run"
done

# --- a periodic cell's fields, the warm starts of its next solves: in
# double, in half precision, with the cell solver, and with its fields
# parked in host memory between uses (phased), each stopped at 3 of 6
write_cell_problem cell.yaml
"$VOXELIZE" --box 8x8x8 --voxel-size 0.125 -p cell.yaml -o cell.nc || fail "voxelize cell.nc"
for fields in "--precision double" "--cell-solver off" "--cell-solver on" "--cell-solver phased"; do
  [ -f cell.nc ] || break
  name=cell-$(echo "$fields" | tr -c 'a-z\n' '-' | tr -s '-')
  CELL_OPTIONS=(--objective bulk --device cpu --threads 2 $fields)
  "$OPTIMIZE" cell.nc -o $name-full.nc --max-iterations 6 "${CELL_OPTIONS[@]}" >/dev/null \
    2>"$LOG/err" || fail "$name: the uninterrupted run failed: $(tail -n 1 "$LOG/err")"
  "$OPTIMIZE" cell.nc -o $name-part.nc --max-iterations 3 --checkpoint-every 3 \
    "${CELL_OPTIONS[@]}" >/dev/null 2>&1 || fail "$name: the run with a checkpoint failed"
  "$OPTIMIZE" cell.nc -o $name-resumed.nc --max-iterations 6 --resume $name-part.checkpoint.nc \
    "${CELL_OPTIONS[@]}" >/dev/null 2>"$LOG/err" || fail "$name: resume: $(cat "$LOG/err")"
  compare $name-full.nc $name-resumed.nc || fail "$name: resumed at 3: not the uninterrupted run"
done

# --- MMA (--optimizer mma): its state (the last two designs, the asymptotes,
# the subproblem's multipliers, the objective's scale) comes back too
MMA_OPTIONS=(--optimizer mma --device cpu --threads 2)
"$OPTIMIZE" model.nc -o mma-full.nc --max-iterations $N "${MMA_OPTIONS[@]}" >/dev/null 2>&1 ||
  fail "mma: the uninterrupted run failed"
"$OPTIMIZE" model.nc -o mma-part.nc --max-iterations 5 --checkpoint-every 5 "${MMA_OPTIONS[@]}" \
  >/dev/null 2>&1 || fail "mma: the run with a checkpoint failed"
"$OPTIMIZE" model.nc -o mma-resumed.nc --max-iterations $N --resume mma-part.checkpoint.nc \
  "${MMA_OPTIONS[@]}" >/dev/null 2>"$LOG/err" || fail "mma: resume: $(cat "$LOG/err")"
compare mma-full.nc mma-resumed.nc || fail "mma: resumed at 5: not the uninterrupted run"
expect_usage_error "resume of an OC checkpoint with MMA" \
  "--resume part.checkpoint.nc: the checkpoint's run had optimizer oc, this one has mma" \
  "$OPTIMIZE" model.nc -o x.nc --resume part.checkpoint.nc "${MMA_OPTIONS[@]}"
expect_usage_error "resume of an MMA checkpoint with OC" \
  "--resume mma-part.checkpoint.nc: the checkpoint's run had optimizer mma, this one has oc" \
  "$OPTIMIZE" model.nc -o x.nc --resume mma-part.checkpoint.nc --device cpu
expect_usage_error "resume of an MMA checkpoint with other asymptotes" \
  "--resume mma-part.checkpoint.nc: the checkpoint's run had other MMA parameters" \
  "$OPTIMIZE" model.nc -o x.nc --resume mma-part.checkpoint.nc "${MMA_OPTIONS[@]}" \
  --mma-asymptote-init 0.2
expect_usage_error "resume of an MMA checkpoint with another sensitivity floor" \
  "--resume mma-part.checkpoint.nc: the checkpoint's run had sensitivity floor 0.05, this one has 0.001" \
  "$OPTIMIZE" model.nc -o x.nc --resume mma-part.checkpoint.nc "${MMA_OPTIONS[@]}" \
  --sensitivity-floor 1e-3

# --- what a resume refuses: exit 2, one line naming the checkpoint, no file
expect_usage_error "resume with another volume fraction" \
  "--resume part.checkpoint.nc: the checkpoint's run had volume_fraction 0.3, this one has 0.4" \
  "$OPTIMIZE" model.nc -o x.nc --resume part.checkpoint.nc --volume-fraction 0.4 --device cpu
expect_usage_error "resume of another model" \
  "--resume part.checkpoint.nc: the checkpoint is of another model" \
  "$OPTIMIZE" other.nc -o x.nc --resume part.checkpoint.nc --device cpu
expect_usage_error "resume from a design file" "full.nc: not a checkpoint" \
  "$OPTIMIZE" model.nc -o x.nc --resume full.nc --device cpu
finish
