# SPDX-License-Identifier: BSD-3-Clause
# voxfe-optimize's periodic-cell design options end to end on a 4^3 cell:
# --initial random|trigonometric|uniform starts at the volume fraction (one
# iteration with a move limit of 1e-9 and no filter writes the start to
# 1e-9), the trigonometric start repeats with its seed and changes with
# another; --symmetry reflect6 gives a design with the cube's mirrors and
# axis swaps, value for value, in the file; --objective custom with the
# bulk formula gives the bulk objective's numbers; a problem file's `cell:`
# objective, formula and symmetry are taken unless the options say
# otherwise; --cell-solver on, off and phased, and zz's start from the
# hydrostatic field at the final evaluation against its start from rest;
# and the refusals, each
# one line with exit status 2 and nothing written: a symmetry the grid
# cannot have, bad formulas (naming the character), custom without a
# formula, a formula without custom, a formula undefined at C^H.
. "$(dirname "$0")/lib.sh"

write_cell_problem cell.yaml
for box in 4x4x4:cell 4x4x8:flat; do
  "$VOXELIZE" --box "${box%:*}" --voxel-size 0.25 -p cell.yaml -o "${box#*:}.nc" ||
    { fail "voxelize ${box#*:}.nc"; finish; }
done

# the density of a design file, one value a line, x fastest
densities() {
  ncdump -v density "$1" | sed -n '/^ density =/,/;/p' | sed '1d; s/[ ;]//g' | tr ',' '\n' |
    grep -v '^$'
}

# the starting design of KIND with SEED, written by one frozen iteration
start() {
  "$OPTIMIZE" cell.nc -o "$1" --objective bulk --initial "$2" --seed "$3" --max-iterations 1 \
    --move-limit 1e-9 --filter none --no-continuation --device cpu --quiet 2>"$LOG/err" ||
    fail "optimize --initial $2 --seed $3: $(tail -n 2 "$LOG/err")"
}

for kind in uniform random trigonometric; do
  start "$kind.nc" "$kind" 5
  densities "$kind.nc" >"$kind.txt"
  # mean 0.3; spread none for uniform, some for the others
  awk -v kind="$kind" '{ s += $1; q += $1 * $1; n++ }
    END { m = s / n; v = q / n - m * m; sd = v > 0 ? sqrt(v) : 0;
          printf "ok: --initial %s: %d values, mean %.9f, standard deviation %.3f\n",
                 kind, n, m, sd;
          if (n != 64 || m < 0.3 - 1e-6 || m > 0.3 + 1e-6) exit 1;
          if (kind == "uniform" ? sd > 1e-6 : sd < 0.1) exit 1 }' "$kind.txt" ||
    fail "--initial $kind: not a start at volume fraction 0.3"
done
start again.nc trigonometric 5
densities again.nc >again.txt
cmp -s trigonometric.txt again.txt ||
  fail "--initial trigonometric --seed 5 twice: different designs"
start other.nc trigonometric 6
densities other.nc >other.txt
paste trigonometric.txt other.txt | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > m) m = d }
  END { exit !(m > 0.1) }' || fail "--seed 6 gives the design of --seed 5"

# reflect6: the mirror x -> 3 - x and the swap of x and y, value for value
"$OPTIMIZE" cell.nc -o sym.nc --objective bulk --initial trigonometric --seed 3 \
  --symmetry reflect6 --max-iterations 3 --no-continuation --device cpu --quiet 2>"$LOG/err" ||
  fail "optimize --symmetry reflect6: $(tail -n 2 "$LOG/err")"
densities sym.nc | awk '{ d[NR - 1] = $1 }
  END { bad = 0
        for (e = 0; e < 64; e++) {
          i = e % 4; j = int(e / 4) % 4; k = int(e / 16)
          if (d[e] != d[k * 16 + j * 4 + 3 - i] || d[e] != d[k * 16 + i * 4 + j]) bad++
        }
        exit NR != 64 || bad != 0 }' || fail "--symmetry reflect6: the design is not symmetric"
ncdump -h sym.nc | grep -q -- "--symmetry=reflect6 --initial=trigonometric --seed=3" ||
  fail "the history does not record the resolved options"

# the bulk modulus written as a formula (three solves): the same run as
# --objective bulk (one hydrostatic solve), both solved tightly with fields
# in double (half fields would round the two sets differently): the two
# agree to the solves' tolerance, so the printed values to 6 digits
common=(--initial trigonometric --seed 2 --max-iterations 3 --no-continuation --cg-tol 1e-12
  --precision double --device cpu)
"$OPTIMIZE" cell.nc -o bulk.nc --objective bulk "${common[@]}" >"$LOG/bulk" 2>/dev/null ||
  fail "optimize --objective bulk"
"$OPTIMIZE" cell.nc -o custom.nc --objective custom \
  --expression '-(C11 + C22 + C33 + 2*(C12 + C13 + C23)) / 9' "${common[@]}" >"$LOG/custom" \
  2>/dev/null || fail "optimize --objective custom"
b=$(sed -n 's/.*bulk objective \([^,]*\),.*/\1/p' "$LOG/bulk")
c=$(sed -n 's/.*custom objective \([^,]*\),.*/\1/p' "$LOG/custom")
[ -n "$b" ] && [ "$b" = "$c" ] || fail "custom bulk formula: objective '$c', bulk objective '$b'"
grep -q "strains hydrostatic solved per design iteration" "$LOG/bulk" ||
  fail "--objective bulk does not say it solves the hydrostatic strain alone"
paste <(grep -A6 "C^H" "$LOG/bulk" | tail -n 6) <(grep -A6 "C^H" "$LOG/custom" | tail -n 6) |
  awk '{ for (i = 1; i <= 6; i++) { d = $i - $(i + 6); if (d < 0) d = -d
                                    if (d > 1e-5 * ($i < 0 ? -$i : $i) + 1e-12) bad++ } }
       END { exit NR != 6 || bad }' ||
  fail "custom bulk formula: C^H differs from --objective bulk's"
echo "ok: --objective custom (bulk formula) = --objective bulk: objective $c"

# the cell's settings in the problem file: taken unless the options say otherwise
cat >shear.yaml <<'YAML'
voxfe-problem: 1
material: {name: solid, E: 1.0, nu: 0.3}
cell:
  objective: custom
  expression: "-(C44 + C55 + C66)/3"
  symmetry: rotate3
YAML
"$VOXELIZE" --box 4x4x4 --voxel-size 0.25 -p shear.yaml -o shear.nc || fail "voxelize shear.nc"
"$OPTIMIZE" shear.nc -o shear-design.nc --initial random --max-iterations 2 --device cpu \
  >"$LOG/out" 2>"$LOG/err" || fail "optimize shear.nc: $(tail -n 2 "$LOG/err")"
grep -q "custom objective" "$LOG/out" || fail "shear.nc: not the file's custom objective"
ncdump -h shear-design.nc |
  grep -q -- "--objective=custom .*--symmetry=rotate3 .*--expression=.*C44" ||
  fail "shear.nc: the history does not record the file's objective, symmetry and formula"
ncdump -h shear-design.nc | grep -q 'cell_expression = "-(C44 + C55 + C66)/3"' ||
  fail "shear-design.nc does not carry the cell's formula on"
"$OPTIMIZE" shear.nc -o shear-bulk.nc --objective bulk --symmetry none --max-iterations 1 \
  --device cpu >"$LOG/out" 2>/dev/null || fail "optimize shear.nc --objective bulk"
grep -q "bulk objective" "$LOG/out" || fail "--objective bulk does not override the file's"
ncdump -h shear-bulk.nc | grep -q -- "--objective=bulk .*--symmetry=none" ||
  fail "the history does not record the options over the file's settings"
printf '%s\n' 'voxfe-problem: 1' 'material: {E: 1, nu: 0.3}' \
  'cell: {objective: custom, expression: "C11 +"}' >bad-cell.yaml
expect_usage_error "a bad formula in the problem file" \
  "bad-cell.yaml:3:40: cell.expression: expression .*at character 6" \
  "$VOXELIZE" --box 4x4x4 --voxel-size 0.25 -p bad-cell.yaml -o bad-cell.nc

"$VOXELIZE" --box 16x16x16 --voxel-size 0.0625 -p cell.yaml -o cell16.nc ||
  fail "voxelize cell16.nc"
# --cell-solver on: the single-precision cell solver solves the fields, and
# says so; the design iterations' bulk modulus is the double solver's to
# its tolerance (both solve to 1e-2 here; 1 % is far from either's error)
for use in on off phased; do
  "$OPTIMIZE" cell16.nc -o cs-$use.nc --objective bulk --initial trigonometric --max-iterations 3 \
    --no-continuation --cell-solver $use --device cpu >"$LOG/cs-$use" 2>"$LOG/err" ||
    fail "optimize --cell-solver $use: $(tail -n 2 "$LOG/err")"
done
grep -q "solved by the single-precision cell solver" "$LOG/cs-on" ||
  fail "--cell-solver on does not say the cell solver solved"
grep -q "single-precision cell solver" "$LOG/cs-off" && fail "--cell-solver off used the cell solver"
# phased: the same run as on, the solver and the optimizer's state taking turns
cmp -s <(grep -A7 "C^H" "$LOG/cs-on") <(grep -A7 "C^H" "$LOG/cs-phased") ||
  fail "--cell-solver phased: not the run of --cell-solver on"
b_on=$(sed -n 's/.*bulk objective \([^,]*\),.*/\1/p' "$LOG/cs-on")
b_off=$(sed -n 's/.*bulk objective \([^,]*\),.*/\1/p' "$LOG/cs-off")
awk -v a="$b_on" -v b="$b_off" 'BEGIN { d = a - b; if (d < 0) d = -d
  exit !(b < 0 && d <= 0.01 * -b) }' ||
  fail "--cell-solver on: bulk objective $b_on, off: $b_off"
ncdump -h cs-on.nc | grep -q -- "--cell-solver=on" || fail "the history does not record --cell-solver"
expect_usage_error "unknown --cell-solver" "expected auto, off, on or phased, got 'maybe'" \
  "$OPTIMIZE" cell.nc -o out.nc --objective bulk --cell-solver maybe

# --cell-zz-from-hydrostatic: the final evaluation starts zz from the
# hydrostatic field less those of xx and yy (1, the default), says so and
# records it, or from rest (0); the same design iterations, C^H the same
# to its six printed digits (the solves' tolerance is 1e-8), no more CG
# iterations
for zz in 0 1; do
  "$OPTIMIZE" cell16.nc -o zz-$zz.nc --objective bulk --initial trigonometric --max-iterations 3 \
    --no-continuation --precision double --cg-tol 1e-8 --cell-zz-from-hydrostatic $zz \
    --device cpu >"$LOG/zz-$zz" 2>"$LOG/err" ||
    fail "optimize --cell-zz-from-hydrostatic $zz: $(tail -n 2 "$LOG/err")"
done
grep -q "^field of zz at the final design started from the hydrostatic one" "$LOG/zz-1" ||
  fail "--cell-zz-from-hydrostatic 1 does not say zz started from the hydrostatic field"
grep -q "^field of zz" "$LOG/zz-0" && fail "--cell-zz-from-hydrostatic 0 started zz elsewhere"
for zz in 0 1; do
  ncdump -h zz-$zz.nc | grep -q -- "--cell-zz-from-hydrostatic=$zz" ||
    fail "zz-$zz.nc's history does not record --cell-zz-from-hydrostatic=$zz"
done
cmp -s <(densities zz-0.nc) <(densities zz-1.nc) || fail "zz's start changed the design"
paste <(grep -A6 "C^H" "$LOG/zz-0" | tail -n 6) <(grep -A6 "C^H" "$LOG/zz-1" | tail -n 6) |
  awk '{ for (i = 1; i <= 6; i++) { d = $i - $(i + 6); if (d < 0) d = -d; if (d > worst) worst = d
         c = $i < 0 ? -$i : $i; if (c > scale) scale = c } }
       END { exit !(scale > 0 && worst <= 1e-5 * scale) }' ||
  fail "C^H with zz from the hydrostatic field is not C^H from rest"
cg0=$(sed -n 's/.*s, \([0-9]*\) CG iterations$/\1/p' "$LOG/zz-0")
cg1=$(sed -n 's/.*s, \([0-9]*\) CG iterations$/\1/p' "$LOG/zz-1")
[ -n "$cg0" ] && [ -n "$cg1" ] && [ "$cg1" -le "$cg0" ] ||
  fail "CG iterations with zz from the hydrostatic field: $cg1, from rest: $cg0"
expect_usage_error "--cell-zz-from-hydrostatic 2" "expected an integer in \[0, 1\], got '2'" \
  "$OPTIMIZE" cell.nc -o out.nc --objective bulk --cell-zz-from-hydrostatic 2

expect_usage_error "rotate3 on a 4x4x8 cell" "symmetry rotate3 needs a cubic cell" \
  "$OPTIMIZE" flat.nc -o out.nc --objective bulk --symmetry rotate3 --device cpu --quiet
expect_usage_error "unknown symmetry" "expected none, reflect3, reflect6 or rotate3" \
  "$OPTIMIZE" cell.nc -o out.nc --objective bulk --symmetry mirror
expect_usage_error "formula with a misplaced operator" "at character 7: expected a number" \
  "$OPTIMIZE" cell.nc -o out.nc --objective custom --expression 'C11 + * C22'
expect_usage_error "formula with an unknown entry" "at character 1: unknown name 'C07'" \
  "$OPTIMIZE" cell.nc -o out.nc --objective custom --expression 'C07 + C11'
expect_usage_error "unclosed parenthesis" "--expression: expression .*at character" \
  "$OPTIMIZE" cell.nc -o out.nc --objective custom --expression '-(C11 + C22'
expect_usage_error "custom without a formula" "--objective custom needs --expression" \
  "$OPTIMIZE" cell.nc -o out.nc --objective custom
expect_usage_error "a formula without custom" "--expression is the formula of --objective custom" \
  "$OPTIMIZE" cell.nc -o out.nc --objective bulk --expression '-C11'
expect_usage_error "a formula undefined at C^H" \
  "design iteration 1: expression .*log at character 8 .*not finite" \
  "$OPTIMIZE" cell.nc -o out.nc --objective custom --expression '-C11 + log(C12 - C11)' \
  --device cpu
finish
