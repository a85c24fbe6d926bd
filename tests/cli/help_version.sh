# SPDX-License-Identifier: BSD-3-Clause
# --help and --version of every program: exit 0, text on stdout, nothing on
# stderr; --version says "<program> <version>".
. "$(dirname "$0")/lib.sh"

for program in "$VOXELIZE" "$OPTIMIZE" "$EXPORT"; do
  name=$(basename "$program")
  "$program" --help >"$LOG/out" 2>"$LOG/err" || fail "$name --help: exit status $?"
  grep -q "^Usage: $name " "$LOG/out" || fail "$name --help: no usage line"
  grep -q -- "--output" "$LOG/out" || fail "$name --help: -o/--output not listed"
  [ -s "$LOG/err" ] && fail "$name --help: printed on stderr"

  "$program" --version >"$LOG/out" 2>"$LOG/err" || fail "$name --version: exit status $?"
  grep -qE "^$name [0-9]+\.[0-9]+\.[0-9]+" "$LOG/out" ||
    fail "$name --version: printed '$(cat "$LOG/out")'"
  [ "$(wc -l <"$LOG/out")" -eq 1 ] || fail "$name --version: more than one line"
  [ -s "$LOG/err" ] && fail "$name --version: printed on stderr"
done

# The defaults the optimizer's help promises.
"$OPTIMIZE" --help >"$LOG/out"
for expected in "volume-fraction=F" "penalty=P" "filter=KIND" "filter-radius=R" \
  "1.5 times the longest voxel edge" "move-limit" "damping" "q-max" "no-continuation" \
  "max-iterations" "change-tol" "objective-tol" "cg-tol" "cg-max-iterations" \
  "device=DEV" "threads" "quiet"; do
  grep -q -- "$expected" "$LOG/out" || fail "voxfe-optimize --help does not mention '$expected'"
done
finish
