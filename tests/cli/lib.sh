# SPDX-License-Identifier: BSD-3-Clause
# Shared pieces of the CLI test scripts (sourced, not run): the programs under
# test, a temporary folder per test, and the checks every bad input must pass.
#
# Each script is run as: bash SCRIPT VOXELIZE OPTIMIZE EXPORT SOURCE_DIR [ARGS...]
# with the paths of the built programs and of the source tree.

set -u

# absolute, since the tests run in a folder of their own
VOXELIZE=$(realpath "$1")
OPTIMIZE=$(realpath "$2")
EXPORT=$(realpath "$3")
SOURCE_DIR=$(realpath "$4")
shift 4

CANTILEVER="$SOURCE_DIR/workflows/cantilever/cantilever.yaml"
MBB="$SOURCE_DIR/workflows/mbb/mbb.yaml"

# A problem file of a periodic unit cell of one material (E = 1, nu = 0.3).
write_cell_problem() {
  cat >"$1" <<'YAML'
voxfe-problem: 1
title: a periodic unit cell
material: {name: solid, E: 1.0, nu: 0.3}
cell: true
YAML
}

# $TOP/run is where the programs run (the current folder); $TOP/log holds
# what they print, apart, so that a check of the run folder sees only what
# the programs made.
TOP=$(mktemp -d "${TMPDIR:-/tmp}/voxfe-cli-test.XXXXXX") || exit 1
trap 'rm -rf "$TOP"' EXIT
RUN=$TOP/run
LOG=$TOP/log
mkdir "$RUN" "$LOG" && cd "$RUN" || exit 1

FAILURES=0

fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}

# Ends the script with the verdict.
finish() {
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES check(s) failed" >&2
    exit 1
  fi
  exit 0
}

# The listing of the run folder, hidden files too: a failed run must leave
# it as it was (no output, no temporary file).
listing() { ls -A "$RUN"; }

# expect_usage_error DESCRIPTION PATTERN COMMAND...
# COMMAND must exit 2, print nothing on stdout and exactly one line on
# stderr, "<program>: <message>" with the message matching the extended
# regular expression PATTERN, and create no file.
expect_usage_error() {
  local description=$1 pattern=$2
  shift 2
  local before after status lines program out=$LOG/stdout err=$LOG/stderr
  program=$(basename "$1")
  before=$(listing)
  "$@" >"$out" 2>"$err"
  status=$?
  after=$(listing)
  lines=$(wc -l <"$err")
  [ "$status" -eq 2 ] || fail "$description: exit status $status, expected 2"
  [ "$lines" -eq 1 ] || fail "$description: $lines lines on stderr, expected 1"
  [ -s "$out" ] && fail "$description: unexpected output on stdout: $(head -c 200 "$out")"
  grep -qE "^$program: " "$err" || fail "$description: stderr does not start with '$program: '"
  grep -qE -- "$pattern" "$err" || fail "$description: message does not match '$pattern'"
  [ "$before" = "$after" ] || fail "$description: the folder changed: '$before' -> '$after'"
  echo "ok: $description: $(head -n 1 "$err")"
  rm -f "$out" "$err"
}

# make_model FILE [BOX]: a small cantilever model, made by voxfe-voxelize.
make_model() {
  "$VOXELIZE" --box "${2:-6x3x3}" --voxel-size 1 --problem "$CANTILEVER" -o "$1" ||
    { fail "voxfe-voxelize could not make $1"; return 1; }
}
