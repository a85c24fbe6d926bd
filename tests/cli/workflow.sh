# SPDX-License-Identifier: BSD-3-Clause
# A workflow Makefile on a small grid, run on a copy of its folder with the
# built programs: all four files, nothing to redo on a second run, the right
# stages redone when the problem file or a setting changes, and make clean.
# Usage: bash workflow.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR WORKFLOW [MAKE_VARIABLE=VALUE...]
# (the variables replace the small-grid defaults below, e.g. a SIZE and
# VOXEL_SIZE that fit a problem file given in mm)
. "$(dirname "$0")/lib.sh"

workflow=$1
shift
# the workflow's folder beside the shared pipeline.mk, as in the source tree
# (every file of it: a workflow may bring a script that writes its mesh)
mkdir "$workflow" && cp "$SOURCE_DIR/workflows/pipeline.mk" . &&
  cp "$SOURCE_DIR/workflows/$workflow/"* "$workflow/" && cd "$workflow" ||
  { fail "cannot copy the $workflow workflow"; finish; }
MAKE_ARGS=(VOXFE_BIN="$(dirname "$VOXELIZE")" SIZE=12x6x6 ITERATIONS=3
  "OPTIMIZE_OPTIONS=--device cpu --threads 2" "$@")
outputs="model.nc design.nc design.vti design.vtu"
# the sources alone: a checkout where scripts/demo.sh ran holds the
# cantilever's outputs beside them
make -s "${MAKE_ARGS[@]}" clean >/dev/null 2>&1
sources="$(ls -A | sort | tr '\n' ' ')"

make -s "${MAKE_ARGS[@]}" >"$LOG/out" 2>&1 || { fail "make: $(tail -n 5 "$LOG/out")"; finish; }
for f in $outputs; do [ -s "$f" ] || fail "make did not make $f"; done
make -q "${MAKE_ARGS[@]}" || fail "a second make would redo work"

# a newer problem file redoes every stage
sleep 1
touch "$workflow.yaml"
make -n "${MAKE_ARGS[@]}" >"$LOG/plan"
grep -q voxfe-voxelize "$LOG/plan" && grep -q voxfe-optimize "$LOG/plan" &&
  grep -q voxfe-export "$LOG/plan" || fail "touching the problem file does not redo every stage"
make -s "${MAKE_ARGS[@]}" >"$LOG/out" 2>&1 || fail "make after touch: $(tail -n 5 "$LOG/out")"

# a changed optimize setting redoes optimize and export, not voxelize
make -n "${MAKE_ARGS[@]}" ITERATIONS=2 >"$LOG/plan"
grep -q voxfe-voxelize "$LOG/plan" && fail "changing ITERATIONS redoes voxelize"
grep -q voxfe-optimize "$LOG/plan" || fail "changing ITERATIONS does not redo optimize"

make -s "${MAKE_ARGS[@]}" clean >"$LOG/out" 2>&1 || fail "make clean failed"
for f in $outputs; do [ -e "$f" ] && fail "make clean left $f"; done
[ "$(ls -A | sort | tr '\n' ' ')" = "$sources" ] ||
  fail "make clean left: $(ls -A | tr '\n' ' ')"
finish
