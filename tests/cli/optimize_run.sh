# SPDX-License-Identifier: BSD-3-Clause
# End to end on a small cantilever: voxelize, optimize for a few iterations
# with the output piped (one progress line per iteration on stderr, a summary
# on stdout), --quiet (nothing at all), and export to .vti and .vtu.
. "$(dirname "$0")/lib.sh"

ITERATIONS=5
make_model model.nc 12x6x6 || finish

# stderr through a pipe, as under make or a batch scheduler
( "$OPTIMIZE" model.nc -o design.nc --max-iterations $ITERATIONS --device cpu --threads 2 \
    2>&1 >"$LOG/out"; echo $? >"$LOG/status" ) | cat >"$LOG/err"
status=$(cat "$LOG/status")
[ "$status" -eq 0 ] || { fail "optimize: exit status $status: $(tail -n 3 "$LOG/err")"; finish; }
[ -f design.nc ] || fail "optimize: no design.nc"
lines=$(wc -l <"$LOG/err")
[ "$lines" -eq $ITERATIONS ] || fail "optimize: $lines lines on stderr, expected $ITERATIONS"
for i in $(seq 1 $ITERATIONS); do
  sed -n "${i}p" "$LOG/err" | grep -qE "^it $i/$ITERATIONS .*obj .*vol .*ch .*Mnd .*p .*cg .*s/it$" ||
    fail "optimize: progress line $i is '$(sed -n "${i}p" "$LOG/err")'"
done
grep -q $'\r' "$LOG/err" && fail "optimize: carriage returns in piped progress"
[ "$(wc -l <"$LOG/out")" -eq 1 ] && grep -q "^design\.nc: " "$LOG/out" ||
  fail "optimize: stdout is not one summary line: '$(cat "$LOG/out")'"

ncdump -h design.nc >"$LOG/header" || fail "ncdump cannot read design.nc"
grep -qE "stage = \"design\"" "$LOG/header" || fail "design.nc: stage is not design"
grep -qE "^[[:space:]]*double density\(z, y, x\)" "$LOG/header" || fail "design.nc: no density"
grep -qE "iteration = ($ITERATIONS|UNLIMITED ; // \($ITERATIONS currently\))" "$LOG/header" ||
  fail "design.nc: the optimization history does not have $ITERATIONS rows"
grep -q "voxfe-voxelize --box 12x6x6" "$LOG/header" || fail "design.nc: history lost the voxelize line"
grep -q "voxfe-optimize model.nc -o design.nc --max-iterations $ITERATIONS" "$LOG/header" ||
  fail "design.nc: history lacks the optimize command line"
grep -q -- "--volume-fraction=0.3 .*--filter=sensitivity .*--device=cpu" "$LOG/header" ||
  fail "design.nc: history lacks the resolved options"
grep -q -- "--device=cpu --kernel=auto --fp16-levels=auto" "$LOG/header" ||
  fail "design.nc: history lacks the backend's resolved options"

# --fp16-levels: parsed, in --help and recorded as given
"$OPTIMIZE" model.nc -o fp16.nc --max-iterations 1 --device cpu --fp16-levels on -q ||
  fail "optimize --fp16-levels on"
ncdump -h fp16.nc | grep -q -- "--fp16-levels=on" || fail "fp16.nc: history lacks --fp16-levels=on"
"$OPTIMIZE" --help | grep -q -- "--fp16-levels=USE" || fail "optimize --help lacks --fp16-levels"
"$OPTIMIZE" model.nc -o bad.nc --fp16-levels 2 2>"$LOG/err"
[ $? -eq 2 ] && grep -q "fp16-levels: expected auto, on or off" "$LOG/err" && [ ! -e bad.nc ] ||
  fail "optimize --fp16-levels 2: not refused: $(cat "$LOG/err")"

# --quiet: nothing but errors, and there are none
"$OPTIMIZE" model.nc -o quiet.nc --max-iterations 2 --device cpu --quiet >"$LOG/out" 2>"$LOG/err"
status=$?
[ "$status" -eq 0 ] || fail "optimize --quiet: exit status $status"
[ -s "$LOG/out" ] && fail "optimize --quiet: printed on stdout: $(head -c 200 "$LOG/out")"
[ -s "$LOG/err" ] && fail "optimize --quiet: printed on stderr: $(head -c 200 "$LOG/err")"
[ -f quiet.nc ] || fail "optimize --quiet: no quiet.nc"

for out in design.vti design.vtu; do
  "$EXPORT" design.nc -o $out >"$LOG/out" 2>"$LOG/err"
  status=$?
  [ "$status" -eq 0 ] || fail "export $out: exit status $status: $(cat "$LOG/err")"
  [ -s "$LOG/out" ] || [ -s "$LOG/err" ] && fail "export $out: not silent"
done
head -c 400 design.vti | grep -q '<VTKFile type="ImageData"' || fail "design.vti is not ImageData"
head -c 400 design.vtu | grep -q '<VTKFile type="UnstructuredGrid"' ||
  fail "design.vtu is not an UnstructuredGrid"
finish
