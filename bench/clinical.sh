#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The clinical benchmark of voxfe-analyze (docs/benchmarks.md):
#
#   bench/clinical.sh BIN_DIR [SAMPLES [JOBS]]
#
# BIN_DIR is a build folder (bench/bench_clinical_model, cli/voxfe-analyze).
# Makes SAMPLES synthetic HR-pQCT-like distal tibiae (bench_clinical_model,
# about 3 M bone elements each, seeds 1..SAMPLES) in a scratch folder, then
#  1. one sample, uniaxial compression along z on the default device: a
#     first run (device start-up, cold page cache), then two timed runs
#     with --timings (read, connectivity, setup, solve, fields, write);
#  2. the same sample written as .n88model (bone elements only), and with
#     the modulus from intensity (--modulus-from-intensity);
#  3. the batch workflow (workflows/bone/Makefile) on all samples with
#     make -j JOBS (5 by default: with the solves taking turns, -j5 with
#     3 threads a job was the fastest of -j5 and -j6 on an H100 with 16
#     cores; each job on THREADS OpenMP threads, default all cores
#     over JOBS): the wall time and the samples per hour;
#     The jobs' solves take turns on the GPU (the workflow's DEVICE_LOCK;
#     DEVICE_LOCK= in the environment lets them solve side by side).
#     With MPS=1 the batch runs under CUDA's Multi-Process Service
#     (nvidia-cuda-mps-control, started before and stopped after it), which
#     lets the jobs' kernels share the GPU at once instead of by time slices.
#  4. with VARIANTS="OPTS;OPTS;..." the one sample again with each set of
#     solver options (the CG iterations of other smoothing degrees, levels).
# Prints times and counts; the result files stay in the scratch folder
# (WORK, default a new folder under /tmp), which is removed at the end
# unless KEEP=1.
set -euo pipefail
bin=$(cd "$1" && pwd)
samples=${2:-8}
jobs=${3:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-$(mktemp -d /tmp/voxfe-clinical.XXXXXX)}
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
analyze=$bin/cli/voxfe-analyze
TIMEFORMAT='%R s wall'
mkdir -p "$work/scans"

echo "== models"
time for i in $(seq 1 "$samples"); do
  "$bin/bench/bench_clinical_model" "$work/scans/tibia$i.nc" "$i"
done
"$bin/bench/bench_clinical_model" "$work/tibia1_intensity.nc" 1 --intensity
ls -l "$work/scans" | awk 'NR > 1 {s += $5} END {print "model files: " s / NR / 1e6 " MB each"}'

echo "== one sample: a first run, then two timed runs"
time "$analyze" "$work/scans/tibia1.nc" -o "$work/first.nc" --timings
for r in 1 2; do
  time "$analyze" "$work/scans/tibia1.nc" -o "$work/r$r.nc" --summary "$work/r$r.json" --timings
done
ls -l "$work/r1.nc" | awk '{print "result file: " $5 / 1e6 " MB"}'
keys='cg_iterations|relative_residual|solver_storage|solver_levels|solve_seconds'
keys="$keys|solver_setup_seconds|reaction_force|failure_load"
grep -E "\"($keys)\"" "$work/r1.json" | tr -d ' \n'
echo

echo "== the same sample as .n88model"
time "$analyze" "$work/scans/tibia1.nc" -o "$work/r.n88model" --timings
ls -l "$work/r.n88model" | awk '{print "n88model file: " $5 / 1e6 " MB"}'

echo "== modulus from intensity (mg HA/ccm, Morgan et al. 2003)"
time "$analyze" "$work/tibia1_intensity.nc" -o "$work/ri.nc" --modulus-from-intensity --timings \
  || echo "intensity run failed: $?"

threads=${THREADS:-$(( $(nproc) / jobs > 0 ? $(nproc) / jobs : 1 ))}
mps=
if [ "${MPS:-0}" = 1 ]; then
  export CUDA_MPS_PIPE_DIRECTORY="$work/mps" CUDA_MPS_LOG_DIRECTORY="$work/mps-log"
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && mps=", under CUDA MPS"
fi
echo "== batch: workflows/bone, $samples samples, make -j$jobs, $threads threads a job$mps"
start=$(date +%s.%N)
OMP_NUM_THREADS=$threads make -s -C "$here/workflows/bone" SCANS="$work/scans" \
  OUT="$work/batch" VOXFE_BIN="$bin/cli" -j"$jobs" || echo "make failed: $?"
end=$(date +%s.%N)
if [ -n "$mps" ]; then
  echo quit | nvidia-cuda-mps-control
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
fi
ok=$(($(wc -l <"$work/batch/summary.csv") - 1))
awk -v s="$start" -v e="$end" -v n="$ok" \
  'BEGIN {t = e - s; printf "batch: %d samples in %.2f s: %.2f s a sample, %.0f samples per hour\n",
         n, t, t / n, 3600 * n / t}'
# the stage times of the batch's samples, from their summaries
awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; next}
  {r += $c["read_seconds"]; k += $c["components_seconds"]; s += $c["solve_seconds"];
   f += $c["fields_seconds"]; g += $c["cg_iterations"]; n++}
  END {printf "batch means: read %.3f, connectivity %.3f, solve %.3f, fields %.3f s; " \
              "%.0f CG iterations\n", r / n, k / n, s / n, f / n, g / n}' "$work/batch/summary.csv"

if [ -n "${VARIANTS:-}" ]; then
  echo "== solver variants on one sample"
  IFS=';' read -ra variants <<<"$VARIANTS"
  for v in "${variants[@]}"; do
    echo "-- $v"
    # shellcheck disable=SC2086
    "$analyze" "$work/scans/tibia1.nc" -o "$work/v.nc" --timings -q $v || echo "failed: $?"
  done
fi
