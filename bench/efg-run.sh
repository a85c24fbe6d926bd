# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2154,SC2034 # bin, work: the caller's; run_*: for the caller
# One voxfe-optimize run and the numbers of its output, for the element-free
# Galerkin bench scripts (efg-table1.sh, efg-dof-sweep.sh, efg-vs-fe.sh),
# which source this file after setting bin (the programs' folder), work
# (a scratch folder) and here (the checkout's root).
#
#   efg_run NAME LIMIT MODEL OPTIONS...
#
# runs "$bin/voxfe-optimize MODEL OPTIONS... --timings -o $work/NAME.nc",
# its stdout in $work/NAME.out and stderr in $work/NAME.err. LIMIT, in
# seconds (0: none), stops the run with SIGTERM, which voxfe-optimize takes
# as the end of the design iteration under way: it evaluates the design so
# far and writes it ("interrupted" for the stop). It sets
#   run_ok          1 when the design file was written, else 0 (run_error
#                   then holds the last line of stderr)
#   run_stop        converged, limit (--max-iterations), time (LIMIT) or the
#                   program's own words
#   run_iterations  design iterations
#   run_compliance  the final design's compliance
#   run_volume      its volume fraction
#   run_mnd         its non-discreteness M_nd in per cent (0: all 0 or 1)
#   run_cg          CG iterations in all (the final evaluation's included)
#   run_optimize    seconds of the optimization: the design iterations, the
#                   setup before them (EFG: the shape functions) and the
#                   final design's evaluation
#   run_assembly run_solve run_sensitivity run_update
#                   seconds of the design iterations' stages (EFG: the
#                   program's "stages" line, the stages of Lu, Gong, Zhang,
#                   Xie and Yin 2021 table 1; FE: --timings' solve,
#                   sensitivities + filter, update, and no assembly: "-")
#   run_stages      the sum of the stages: what the paper's "Global" sums
#   run_setup       run_optimize less run_stages: setup and final evaluation
#   run_total       seconds of the whole program: reading the model, starting
#                   the device, the optimization, writing the design

#   efg_warm_up DEVICE OPTIONS...
#
# runs two design iterations of a small EFG cantilever on DEVICE first and
# keeps nothing of it: the first program on a fresh GPU machine took twice
# the time of the same run after it (docs/experiments.md).
efg_warm_up() {
  local device=$1
  shift
  run_ok=0 run_error="the model was not made"
  "$bin/voxfe-voxelize" --box 20x10x1 --voxel-size 5,5,4 \
    -p "$here/workflows/efg_cantilever/efg_cantilever.yaml" -o "$work/warm_up_model.nc" -q &&
    efg_run warm_up 0 "$work/warm_up_model.nc" --discretization efg --volume-fraction 0.4 \
      --max-iterations 2 --device "$device" "$@"
  [ "$run_ok" = 1 ] || echo "$0: the warm-up run failed ($run_error)" >&2
  rm -f "$work"/warm_up*
}

efg_run() {
  local name=$1 limit=$2 model=$3
  shift 3
  local out="$work/$name.out" err="$work/$name.err" status=0
  rm -f "$work/$name.nc"
  timeout -s TERM "$limit" "$bin/voxfe-optimize" "$model" "$@" --timings \
    -o "$work/$name.nc" >"$out" 2>"$err" || status=$?
  run_ok=0 run_error="" run_stop="-" run_iterations="-" run_compliance="-" run_cg="-"
  run_volume="-" run_mnd="-"
  run_optimize="-" run_assembly="-" run_solve="-" run_sensitivity="-" run_update="-"
  run_stages="-" run_setup="-" run_total="-"
  # 124: the time limit's SIGTERM, after which the design is written all the same
  if { [ "$status" -ne 0 ] && [ "$status" -ne 124 ]; } || [ ! -s "$work/$name.nc" ]; then
    run_error="exit $status: $(grep -v '^it [0-9]' "$err" | tail -n 1)"
    return 0
  fi
  run_ok=1
  # "DESIGN: REASON after N iterations: final design compliance C, volume
  #  fraction F, M_nd M%; S s, N CG iterations"
  local summary
  summary=$(grep -m1 ' iterations: final design compliance ' "$out")
  run_stop=$(sed -n 's/^.*: \([a-z ]*\) after [0-9]* iterations: .*/\1/p' <<<"$summary")
  case $run_stop in
    converged) ;;
    "iteration limit reached") run_stop=limit ;;
    interrupted) run_stop="time" ;;
  esac
  run_iterations=$(sed -n 's/.* after \([0-9]*\) iterations: .*/\1/p' <<<"$summary")
  run_compliance=$(sed -n 's/.*final design compliance \([^,]*\),.*/\1/p' <<<"$summary")
  run_cg=$(sed -n 's/.* s, \([0-9]*\) CG iterations.*/\1/p' <<<"$summary")
  run_volume=$(sed -n 's/.*, volume fraction \([0-9.]*\),.*/\1/p' <<<"$summary")
  run_mnd=$(sed -n 's/.*, M_nd \([0-9.]*\)%;.*/\1/p' <<<"$summary")
  # "MODEL: seconds: read R, device D, optimize O (design iterations: solve
  #  S, sensitivities T, filter F, update U; setup and final evaluation X), ..."
  local timings
  timings=$(grep -m1 ': seconds: read ' "$err")
  run_optimize=$(sed -n 's/.* optimize \([0-9.]*\) (.*/\1/p' <<<"$timings")
  run_total=$(sed -n 's/.*, total \([0-9.]*\)$/\1/p' <<<"$timings")
  # "stages of the design iterations (...): assembly A s, solve S s (...),
  #  sensitivity T s, update U s": the EFG path only
  local stages
  stages=$(grep -m1 '^stages of the design iterations' "$out" || true)
  if [ -n "$stages" ]; then
    run_assembly=$(sed -n 's/.* assembly \([0-9.]*\) s.*/\1/p' <<<"$stages")
    run_solve=$(sed -n 's/.* solve \([0-9.]*\) s.*/\1/p' <<<"$stages")
    run_sensitivity=$(sed -n 's/.* sensitivity \([0-9.]*\) s.*/\1/p' <<<"$stages")
    run_update=$(sed -n 's/.* update \([0-9.]*\) s.*/\1/p' <<<"$stages")
    run_stages=$(awk -v a="$run_assembly" -v s="$run_solve" -v t="$run_sensitivity" \
      -v u="$run_update" 'BEGIN { printf "%.3f", a + s + t + u }')
  else
    run_solve=$(sed -n 's/.*(design iterations: solve \([0-9.]*\),.*/\1/p' <<<"$timings")
    local sensitivities filter
    sensitivities=$(sed -n 's/.* sensitivities \([0-9.]*\),.*/\1/p' <<<"$timings")
    filter=$(sed -n 's/.* filter \([0-9.]*\),.*/\1/p' <<<"$timings")
    run_sensitivity=$(awk -v s="$sensitivities" -v f="$filter" 'BEGIN { printf "%.3f", s + f }')
    run_update=$(sed -n 's/.* update \([0-9.]*\);.*/\1/p' <<<"$timings")
    run_stages=$(awk -v s="$run_solve" -v t="$run_sensitivity" -v u="$run_update" \
      'BEGIN { printf "%.3f", s + t + u }')
  fi
  run_setup=$(awk -v o="$run_optimize" -v s="$run_stages" 'BEGIN { printf "%.3f", o - s }')
}

# The ratio A / B to three significant digits with a "x", or "-" when
# either is missing or B is 0.
efg_ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a == "-" || b == "-" || a == "" || b == "" || b + 0 == 0) { print "-"; exit }
    r = a / b; printf (r >= 100 ? "%.0fx" : "%.3gx"), r }'
}

# A / B to four significant digits, or "-".
efg_per() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a == "-" || b == "-" || a == "" || b == "" || b + 0 == 0) { print "-"; exit }
    printf "%.4g", a / b }'
}

# The device's name for the tables' heading: the GPU's for cuda (where
# nvidia-smi answers), else the CPU's model.
efg_device_name() {
  if [ "$1" != cpu ] && command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1
  else
    sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1
  fi
}
