# SPDX-License-Identifier: BSD-3-Clause
# A run whose state solve cannot converge (one CG iteration allowed) fails
# with exit status 1, says so in one line naming the design it did not
# write, and writes nothing.
. "$(dirname "$0")/lib.sh"

make_model model.nc 12x6x6 || finish
before=$(listing)
"$OPTIMIZE" model.nc -o design.nc --max-iterations 3 --cg-max-iterations 1 --cg-tol 1e-10 \
  --device cpu --quiet >"$LOG/out" 2>"$LOG/err"
status=$?
[ "$status" -eq 1 ] || fail "exit status $status, expected 1"
[ "$(wc -l <"$LOG/err")" -eq 1 ] || fail "stderr is not one line: $(cat "$LOG/err")"
grep -qE "^voxfe-optimize: .*design\.nc not written" "$LOG/err" ||
  fail "the message does not say design.nc was not written: $(cat "$LOG/err")"
[ -s "$LOG/out" ] && fail "printed on stdout: $(cat "$LOG/out")"
[ "$(listing)" = "$before" ] || fail "the folder changed: $(listing)"
finish
