#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# How close voxfe-analyze's stop comes to a tight solve (docs/benchmarks.md,
# "Defaults and why"):
#
#   bench/clinical-stop.sh BIN_DIR [SAMPLES]
#
# BIN_DIR is a build folder (bench/bench_clinical_model, cli/voxfe-analyze).
# Makes SAMPLES synthetic distal tibiae (default 8, seeds 1..SAMPLES) and
# sample 1 with its CT intensity, then solves each case twice: with the
# REFERENCE options (default --cg-tol 1e-9) and with OPTIONS (default none:
# the program's own stop). The cases: compression along z of every sample,
# sample 1 with the modulus from intensity and with the friction test, and
# across the shaft (samples 1 and 2 along x, 3 along y; fewer samples,
# fewer of these). MODELS="a.nc b.nc ..." takes those models instead (along
# z, then across them as above; no intensity case). Prints a markdown
# table: CG iterations, seconds (wall, the program as a whole), and the
# relative differences of the reaction force and the failure load from the
# reference's. Scratch in WORK (default a new folder under /tmp), removed
# at the end unless KEEP=1.
set -euo pipefail
bin=$(cd "$1" && pwd)
samples=${2:-8}
reference=${REFERENCE:---cg-tol 1e-9}
options=${OPTIONS:-}
work=${WORK:-$(mktemp -d /tmp/voxfe-stop.XXXXXX)}
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
analyze=$bin/cli/voxfe-analyze
mkdir -p "$work"

models=()
if [ -n "${MODELS:-}" ]; then
  read -ra models <<<"$MODELS"
else
  for i in $(seq 1 "$samples"); do
    "$bin/bench/bench_clinical_model" "$work/tibia$i.nc" "$i" >/dev/null
    models+=("$work/tibia$i.nc")
  done
  "$bin/bench/bench_clinical_model" "$work/tibia1_intensity.nc" 1 --intensity >/dev/null
fi

# name|model and test options
cases=()
for i in "${!models[@]}"; do cases+=("z$((i + 1))|${models[$i]}"); done
if [ -z "${MODELS:-}" ]; then
  cases+=("intensity1|$work/tibia1_intensity.nc --modulus-from-intensity")
fi
cases+=("friction1|${models[0]} --test friction")
axes=(x x y)
for i in 0 1 2; do
  [ "$i" -lt "${#models[@]}" ] && cases+=("${axes[$i]}$((i + 1))|${models[$i]} --axis ${axes[$i]}")
done

# solve NAME MODEL_AND_TEST OPTIONS: the summary in $work/NAME.json, the wall
# time in $work/NAME.seconds
solve() {
  local start end
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$analyze" $2 -o "$work/result.nc" -q --summary "$work/$1.json" $3
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {print b - a}' >"$work/$1.seconds"
}

"$analyze" "${models[0]}" -o "$work/result.nc" -q # a first run: device start-up, page cache
shown=${options:-none, the default stop}
echo "stop options: $shown; reference: $reference"
echo
echo "| case | CG | seconds | force off | failure load off | reference CG |"
echo "|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  name=${c%%|*} model=${c#*|}
  solve "$name.ref" "$model" "$reference"
  solve "$name" "$model" "$options"
  /usr/bin/env python3 - "$work" "$name" <<'PY'
import json, sys
work, name = sys.argv[1], sys.argv[2]
run = json.load(open(f"{work}/{name}.json"))
ref = json.load(open(f"{work}/{name}.ref.json"))
seconds = float(open(f"{work}/{name}.seconds").read())
off = lambda k: abs(run[k] / ref[k] - 1)
print(f"| {name} | {run['cg_iterations']} | {seconds:.2f} | {off('reaction_force'):.1e} "
      f"| {off('failure_load'):.1e} | {ref['cg_iterations']} |")
PY
done
