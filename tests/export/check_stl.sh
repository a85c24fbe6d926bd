#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs admesh (Debian package admesh) on the STL files that test_export_stl
# wrote, and checks its summary: the facets all connected (no holes, no
# disconnected facets), nothing repaired (no degenerate facets, no edges
# fixed, no facets removed, added or reversed, no backwards edges, no normals
# fixed), the expected number of parts, a positive volume, and the binary
# files 84 + 50 n bytes long.
#
# usage: check_stl.sh FOLDER [FILE PARTS TYPE]...   exits 77 (skipped) where
# admesh is missing. Without FILE arguments, the files of test_export_stl.
set -u
dir=${1:?usage: check_stl.sh FOLDER}
if ! command -v admesh >/dev/null 2>&1; then
  echo "admesh is not installed (apt-get install admesh): skipped"
  exit 77
fi

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# the value after "NAME :" in admesh's summary, first column (Original for
# the facet table)
value() {
  printf '%s\n' "$report" | sed -n "s/^$1 *: *\([-0-9.]*\).*/\1/p" | head -n 1
}

# check FILE PARTS TYPE  (PARTS "-": any number; TYPE binary or ascii)
check() {
  file=$dir/$1 parts=$2 type=$3
  if [ ! -f "$file" ]; then
    fail "$file is missing"
    return
  fi
  if ! report=$(admesh "$file" 2>&1); then
    fail "admesh $file failed: $report"
    return
  fi
  facets=$(value "Number of facets")
  case $type in
  binary)
    printf '%s\n' "$report" | grep -q "^File type *: Binary STL" || fail "$1: not read as binary STL"
    size=$(wc -c <"$file")
    [ "$size" -eq $((84 + 50 * facets)) ] || fail "$1: $size bytes for $facets facets"
    ;;
  ascii)
    printf '%s\n' "$report" | grep -q "^File type *: ASCII STL" || fail "$1: not read as ASCII STL"
    ;;
  esac
  [ "${facets:-0}" -gt 0 ] || fail "$1: no facets"
  for field in "Facets with 1 disconnected edge" "Facets with 2 disconnected edges" \
    "Facets with 3 disconnected edges" "Total disconnected facets" "Degenerate facets" \
    "Edges fixed" "Facets removed" "Facets added" "Facets reversed" "Backwards edges" \
    "Normals fixed"; do
    v=$(value "$field")
    [ "$v" = 0 ] || fail "$1: $field: '${v}' (expected 0)"
  done
  printf '%s\n' "$report" | grep -q "No holes need to be filled" || fail "$1: admesh filled holes"
  if [ "$parts" != - ]; then
    v=$(value "Number of parts")
    [ "$v" = "$parts" ] || fail "$1: $v parts, expected $parts"
  fi
  volume=$(printf '%s\n' "$report" | sed -n 's/.*Volume *: *\([-0-9.e+]*\).*/\1/p' | head -n 1)
  awk -v v="$volume" 'BEGIN { exit !(v > 0) }' || fail "$1: volume '$volume' not positive"
  echo "$1: $facets facets, parts $(value "Number of parts"), volume $volume: ok"
}

if [ $# -gt 1 ]; then # the files named on the command line: FILE PARTS TYPE...
  shift
  while [ $# -ge 3 ]; do
    check "$1" "$2" "$3"
    shift 3
  done
else
  check sphere.stl 1 binary
  check sphere_ascii.stl 1 ascii
  check two_spheres.stl 2 binary
  check torus_ascii.stl 1 ascii
  check noise.stl - binary
  check sphere_decimated.stl 1 binary
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "admesh: all STL files closed, consistently oriented, nothing to repair"
