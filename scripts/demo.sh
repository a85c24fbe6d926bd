#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One command from a fresh machine: install the packages, build, and run the
# cantilever pipeline (voxelize -> optimize -> export) of workflows/cantilever.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
make -C workflows/cantilever VOXFE_BIN="$PWD/build/cli"
echo
echo "Done: open workflows/cantilever/design.vtu (or design.vti) in ParaView."
