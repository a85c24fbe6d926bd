#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configures, builds (warnings are errors) and runs the test suite.
#   scripts/test.sh                      build in ./build
#   VOXFE_BUILD_DIR=dir VOXFE_SANITIZE=ON scripts/test.sh   an ASan+UBSan build
set -euo pipefail
cd "$(dirname "$0")/.."
build=${VOXFE_BUILD_DIR:-build}
sanitize=${VOXFE_SANITIZE:-OFF}
type=Release
# sanitizer builds keep debug information, at -O1 so that the numerical tests
# stay quick
[ "$sanitize" = ON ] && type=Debug
# third-party caches that live until exit are not leaks of ours
[ "$sanitize" = ON ] && export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=$type -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
  -DVOXFE_WERROR=ON -DVOXFE_SANITIZE="$sanitize" \
  -DVOXFE_CUDA="${VOXFE_CUDA:-AUTO}" >/dev/null
cmake --build "$build" -j"$(nproc)"
# Tests run side by side (-j), each with an OpenMP team as large as the
# machine: threads that spin at barriers take the cores the other tests need
# (engine_sparse: 9.4 s under load with libgomp's default, 5.9 s passive).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
# GPU tests skip themselves without a device; the label lets a CPU-only
# machine leave them out entirely.
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" ${VOXFE_CTEST_ARGS:-}
