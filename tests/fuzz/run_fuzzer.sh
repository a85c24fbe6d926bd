#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs one reader's fuzzer for a bounded time from seeds made by
# make_seeds.py: exit 0 when it found nothing, else libFuzzer's status and
# the crashing input's name.  Usage: run_fuzzer.sh FUZZER SEED_KIND SECONDS
set -euo pipefail
fuzzer=$(realpath "$1")
kind=$2
seconds=$3
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d "${TMPDIR:-/tmp}/voxfe-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/seeds" "$work/corpus"
/usr/bin/python3 "$here/make_seeds.py" "$kind" "$work/seeds"
cd "$work"
# assimp's own leaks are suppressed (lsan-assimp.supp); they show up only
# with full stacks, which the slow unwinder gives
if [ "$kind" = mesh ]; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
  export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$here/lsan-assimp.supp"
fi
# libfyaml's own leak on escaped quotes likewise (lsan-fyaml.supp), also
# seen only with full stacks
if [ "$kind" = problem ]; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
  export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$here/lsan-fyaml.supp"
fi
# libhdf5's own leaks on damaged files likewise (lsan-hdf5.supp)
if [ "$kind" = model ] || [ "$kind" = n88model ]; then
  export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$here/lsan-hdf5.supp"
fi
# In the test suite the inputs are the same on every machine: a fixed seed
# and a fixed number of runs (FUZZ_SEED=0 and FUZZ_RUNS=-1 fuzz at random
# for the time alone). The time stays a bound on slow machines.
# The corpus grows in a folder of its own; the seeds stay as they are.
# malloc_limit: a corrupt header must not make a reader ask for gigabytes.
run() {
  TMPDIR="$work" "$fuzzer" -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-20000}" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -artifact_prefix="$work/" -print_final_stats=1 corpus seeds 2>"$work/log"
}
findings="ERROR: [A-Za-z]+Sanitizer|ERROR: libFuzzer|SUMMARY|Test unit written|^    #[0-9]+ |deadly signal"
run || {
  status=$?
  # the finding, or else the fuzzer's own last words (a loader's or a
  # sanitizer runtime's refusal to start)
  grep -E "$findings" "$work/log" | head -30 || tail -n 15 "$work/log"
  # the input the fuzzer itself names: a harness's probe child may leave
  # files of its own in the folder (libFuzzer's malloc limit, inherited
  # through fork, writes an oom-* for the library's allocation there)
  if [ -n "${FUZZ_KEEP:-}" ]; then
    sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$work/log" |
      while read -r unit; do cp "$unit" "$FUZZ_KEEP"/ 2>/dev/null || true; done
  fi
  exit "$status"
}
tail -n 3 "$work/log"
