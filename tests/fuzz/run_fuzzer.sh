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
status=0
run || status=$?
# LeakSanitizer stops the process's threads with ptrace, which some
# sandboxes refuse: the leak checks go, the rest of the run stays
if [ "$status" != 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$work/log"; then
  echo "run_fuzzer: LeakSanitizer cannot run here; fuzzing without leak detection"
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  status=0
  run || status=$?
fi
if [ "$status" != 0 ]; then
  # A fuzzer that never ran its seeds and reported nothing could not start
  # here (the loader, the sanitizer's runtime): its own words, and a skip
  # (CTest's SKIP_RETURN_CODE), not a finding
  if ! grep -q "INITED" "$work/log" && ! grep -qE "$findings" "$work/log"; then
    echo "run_fuzzer: $(basename "$fuzzer") could not start here (status $status):"
    tail -n 15 "$work/log"
    exit 77
  fi
  grep -E "$findings" "$work/log" | head -30 || true
  grep -qE "$findings" "$work/log" || tail -n 15 "$work/log"
  cp "$work"/crash-* "$work"/oom-* "$work"/leak-* "$work"/timeout-* "${FUZZ_KEEP:-/nonexistent}" 2>/dev/null || true
  exit "$status"
fi
tail -n 3 "$work/log"
