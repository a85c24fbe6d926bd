# SPDX-License-Identifier: BSD-3-Clause
# A periodic unit cell on the GPU through the program (label gpu): the same
# short bulk-modulus run with --device cpu and --device cuda gives the same
# C^H and moduli (to 1e-5), and --device auto takes the cell too; a custom
# objective with reflect6 symmetry from a trigonometric start gives the
# same C^H on both (to 1e-5: the designs move apart by the solves'
# rounding; that the GPU's design is symmetric to the bit is checked by
# gpu_cuda_periodic, since the GPU machine has no ncdump). Exit 77
# (skipped) without a CUDA build or device. Both devices take the GPU's
# coarsest multigrid level (--mg-coarse-dofs 6000), so that they solve with
# the same hierarchy.
. "$(dirname "$0")/lib.sh"

write_cell_problem cell.yaml
"$VOXELIZE" --box 16x16x16 --voxel-size 0.0625 -p cell.yaml -o cell.nc ||
  { fail "voxelize"; finish; }

levels=(--mg-coarse-dofs 6000)
"$OPTIMIZE" cell.nc -o gpu.nc --objective bulk --max-iterations 2 --device cuda "${levels[@]}" \
  >"$LOG/gpu" 2>"$LOG/gpu.err"
status=$?
if [ "$status" -ne 0 ] &&
   grep -Eq "no CUDA device|without CUDA|not built with CUDA" "$LOG/gpu.err"; then
  echo "skipped: $(cat "$LOG/gpu.err")"
  exit 77
fi
[ "$status" -eq 0 ] || { fail "--device cuda: exit status $status: $(cat "$LOG/gpu.err")"; finish; }
"$OPTIMIZE" cell.nc -o cpu.nc --objective bulk --max-iterations 2 --device cpu "${levels[@]}" \
  >"$LOG/cpu" 2>"$LOG/cpu.err" || { fail "--device cpu: $(cat "$LOG/cpu.err")"; finish; }
# the C^H block, the moduli and the ratios, without the timings
summary() { sed -n '/homogenized stiffness/,/Poisson ratios/p' "$1"; }
[ -n "$(summary "$LOG/gpu")" ] || fail "no C^H in the cuda run's summary: $(cat "$LOG/gpu")"
# the same numbers to 1e-5 (the zero entries are rounding noise of 1e-17;
# the start is the trigonometric one that --initial auto takes for a cell,
# and the designs move apart by the solves' rounding, as below)
numbers() { summary "$1" | grep -Eo -- '-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?'; }
paste <(numbers "$LOG/cpu") <(numbers "$LOG/gpu") |
  awk 'NF != 2 || ($1 - $2 > 1e-5 || $2 - $1 > 1e-5) { bad = 1 } END { exit bad || NR < 40 }' ||
  fail "cuda and cpu summaries differ: $(diff <(summary "$LOG/cpu") <(summary "$LOG/gpu"))"
"$OPTIMIZE" cell.nc -o auto.nc --objective bulk --max-iterations 1 --device auto --quiet \
  2>"$LOG/auto.err" || fail "--device auto: $(cat "$LOG/auto.err")"

design=(--objective custom --expression '-(C44 + C55 + C66)/3' --symmetry reflect6
        --initial trigonometric --seed 3 --max-iterations 3 --no-continuation "${levels[@]}")
for device in cpu cuda; do
  "$OPTIMIZE" cell.nc -o "sym-$device.nc" "${design[@]}" --device "$device" \
    >"$LOG/sym-$device" 2>"$LOG/sym-$device.err" ||
    fail "custom reflect6 on $device: $(tail -n 2 "$LOG/sym-$device.err")"
done
paste <(numbers "$LOG/sym-cpu") <(numbers "$LOG/sym-cuda") |
  awk 'NF != 2 || ($1 - $2 > 1e-5 || $2 - $1 > 1e-5) { bad = 1 } END { exit bad || NR < 40 }' ||
  fail "custom reflect6: cuda and cpu differ: $(diff <(summary "$LOG/sym-cpu") \
    <(summary "$LOG/sym-cuda"))"
finish
