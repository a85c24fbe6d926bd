#!/usr/bin/env bash
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
# the corpus grows in a folder of its own; the seeds stay as they are.
# malloc_limit: a corrupt header must not make a reader ask for gigabytes.
TMPDIR="$work" "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
  -artifact_prefix="$work/" -print_final_stats=1 corpus seeds 2>"$work/log" || {
  status=$?
  grep -E "ERROR|SUMMARY|Test unit written|^    #[0-9]+ |deadly signal" "$work/log" | head -30 || true
  cp "$work"/crash-* "$work"/oom-* "$work"/leak-* "$work"/timeout-* "${FUZZ_KEEP:-/nonexistent}" 2>/dev/null || true
  exit "$status"
}
tail -n 3 "$work/log"
