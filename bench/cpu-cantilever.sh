#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The CPU benchmark of docs/benchmarks.md: the 2:1:1 cantilever at 48x24x24
# and 96x48x48, 20 design iterations each.
#   bench/cpu-cantilever.sh [BUILD_DIR]      (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
for nx in 48 96; do
  "$build/bench/bench_cantilever" "$root/workflows/cantilever/cantilever.yaml" "$nx" 20
  echo
done
