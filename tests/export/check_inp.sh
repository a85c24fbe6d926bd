#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs CalculiX (ccx) on the decks test_export_inp wrote and has the test
# program compare ccx's results with voxfe's own solve.
#
# usage: check_inp.sh TEST_PROGRAM DIR
# Exits 77 (skipped) when ccx is not installed (Debian: calculix-ccx).
set -euo pipefail
program=$1
dir=$2
if ! command -v ccx >/dev/null 2>&1; then
  echo "ccx not found (apt-get install calculix-ccx): skipped"
  exit 77
fi
cd "$dir"
for job in cantilever design; do
  rm -f "$job.dat" "$job.frd" "$job.sta" "$job.cvg" "$job.log"
  # One thread: the models are tiny and ctest may run tests side by side.
  if ! OMP_NUM_THREADS=1 CCX_NPROC_EQUATION_SOLVER=1 ccx -i "$job" >"$job.log" 2>&1; then
    echo "ccx failed on $dir/$job.inp:"
    cat "$job.log"
    exit 1
  fi
  # ccx reports errors in its output and may still exit 0.
  if grep -qi '\*ERROR' "$job.log" || [ ! -s "$job.dat" ]; then
    echo "ccx did not solve $dir/$job.inp:"
    cat "$job.log"
    exit 1
  fi
  if grep -qi '\*WARNING' "$job.log"; then
    echo "ccx warned on $dir/$job.inp:"
    grep -i -A2 '\*WARNING' "$job.log"
  fi
done
exec "$program" compare "$dir"
