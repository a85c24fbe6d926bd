# SPDX-License-Identifier: BSD-3-Clause
# Hostile and careless input, one kind per CASE, through the programs: each
# attempt exits with the status the input deserves (2 for bad input), prints
# one line naming the file (or option) and the cause, writes no output and
# leaves nothing behind (tests/cli/lib.sh, expect_usage_error).
# Usage: bash hostile_input.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR ANALYZE CASE
. "$(dirname "$0")/lib.sh"

ANALYZE=$(realpath "$1")
case_name=$2
PY=/usr/bin/python3

# A cap on the address space, so that a regression fails instead of eating
# the machine's memory; none under AddressSanitizer, whose shadow memory
# needs terabytes of address space.
limit_memory() { # KIB
  ldd "$VOXELIZE" 2>/dev/null | grep -q libasan || ulimit -v "$1"
}

# set_nc FILE PYTHON: runs PYTHON with `d`, FILE open for appending (netCDF4).
set_nc() {
  $PY - "$1" "$2" <<'PY' || fail "could not edit $1"
import sys
import numpy as np
import netCDF4
with netCDF4.Dataset(sys.argv[1], "a") as d:
    exec(sys.argv[2])
PY
}

# A cantilever problem with an extra passive region and a force of its own.
write_problem() { # FILE FORCE [EXTRA YAML]
  local extra=${3:-}
  cat >"$1" <<YAML
voxfe-problem: 1
material: {name: steel, E: 1000, nu: 0.3}
supports:
  - {name: wall, region: {face: x-}, fix: [x, y, z]}
loads:
  - {name: tip, region: {face: x+}, force: $2}
$extra
YAML
}

case $case_name in
output_not_regular)
  # -o naming a FIFO, a symbolic link (to a file, dangling), a folder's
  # link: refused before any work, the node left as it was
  make_model "$LOG/model.nc" || finish
  cp "$LOG/model.nc" model.nc
  mkfifo pipe.nc
  printf 'keep me\n' >"$LOG/target.nc"
  ln -s "$LOG/target.nc" link.nc
  ln -s "$LOG/nowhere.nc" dangling.nc
  expect_usage_error "optimize -o FIFO" "pipe\.nc: is a FIFO" \
    "$OPTIMIZE" model.nc -o pipe.nc --max-iterations 1
  expect_usage_error "optimize -o symlink" "link\.nc: is a symbolic link" \
    "$OPTIMIZE" model.nc -o link.nc --max-iterations 1
  expect_usage_error "voxelize -o dangling symlink" "dangling\.nc: is a symbolic link" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem "$CANTILEVER" -o dangling.nc
  mkfifo pipe.vti
  expect_usage_error "export -o FIFO" "pipe\.vti: is a FIFO" "$EXPORT" model.nc -o pipe.vti
  ln -s "$LOG/target.vti" link.vti
  expect_usage_error "export -o symlink" "link\.vti: is a symbolic link" \
    "$EXPORT" model.nc -o link.vti
  expect_usage_error "analyze -o symlink" "link\.nc: is a symbolic link" \
    "$ANALYZE" model.nc -o link.nc
  [ -p pipe.nc ] && [ -p pipe.vti ] || fail "a FIFO was replaced"
  [ -L link.nc ] && [ "$(readlink link.nc)" = "$LOG/target.nc" ] || fail "link.nc was replaced"
  [ "$(cat "$LOG/target.nc")" = "keep me" ] || fail "the link's target was written"
  [ -L dangling.nc ] && [ ! -e "$LOG/nowhere.nc" ] || fail "dangling.nc was replaced"
  # a character device is written through, never replaced
  if [ -w /dev/null ]; then
    before=$(ls /tmp | grep -c '^voxfe-null\.tmp\.')
    "$OPTIMIZE" model.nc -o /dev/null --max-iterations 1 -q >"$LOG/out" 2>&1 ||
      fail "optimize -o /dev/null: exit $?: $(cat "$LOG/out")"
    [ -c /dev/null ] || fail "/dev/null is no longer a character device"
    [ "$(ls /tmp | grep -c '^voxfe-null\.tmp\.')" -le "$before" ] ||
      fail "a temporary file of /dev/null was left in /tmp"
    [ ! -s /dev/null ] || fail "/dev/null holds data"
    echo "ok: optimize -o /dev/null wrote through the device"
  fi
  ;;
yaml_alias_bomb)
  # nine levels of nine aliases: 9^9 nodes once expanded, 533 bytes written;
  # under 2 GB of address space the old reader ran out of memory and said
  # "holds no YAML document"
  {
    echo "voxfe-problem: 1"
    echo "a: &a [x, x, x, x, x, x, x, x, x]"
    prev=a
    for level in b c d e f g h i; do
      echo "$level: &$level [*$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev, *$prev]"
      prev=$level
    done
  } >bomb.yaml
  (
    limit_memory 2000000
    expect_usage_error "alias bomb" "bomb\.yaml: .*aliases" \
      "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem bomb.yaml -o model.nc
    exit $FAILURES
  ) || FAILURES=$((FAILURES + 1))
  # aliases within the budget still work: one region used twice
  cat >alias.yaml <<'YAML'
voxfe-problem: 1
material: {name: steel, E: 1000, nu: 0.3}
supports:
  - {name: wall, region: &wall {face: x-}, fix: [x, y, z]}
loads:
  - {name: tip, region: {face: x+}, force: [0, 0, -1]}
passive:
  - {name: plate, region: *wall, type: solid}
YAML
  "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem alias.yaml -o "$LOG/alias.nc" \
    >"$LOG/out" 2>&1 || fail "a problem with an alias: $(cat "$LOG/out")"
  ;;
many_names)
  # 65536 supports and loads: the duplicate name at the end is found
  # without comparing every pair (51 s before; a fraction of a second now)
  $PY - <<'PY' || fail "could not write the problem files"
n = 65536
for kind, item in (("supports", "fix: [x]"), ("loads", "force: [0, 0, 1]")):
    with open(f"{kind}.yaml", "w") as f:
        f.write("voxfe-problem: 1\nmaterial: {name: s, E: 1, nu: 0.3}\n")
        if kind == "loads":
            f.write("supports:\n  - {region: {face: x-}, fix: [x, y, z]}\n")
        f.write(f"{kind}:\n")
        for i in range(n):
            name = f"n{i}" if i < n - 1 else "n7"
            f.write(f"  - {{name: {name}, region: {{face: x+}}, {item}}}\n")
PY
  for kind in supports loads; do
    expect_usage_error "$kind: 65536 names" "$kind\.yaml:.*'n7' is already used by $kind\[7\]" \
      "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem $kind.yaml -o model.nc
    # processor seconds, not the wall clock of a busy machine: about 1 s
    # (most of it libfyaml's own parse), where comparing every pair took 51
    seconds=$($PY - "$VOXELIZE" $kind.yaml <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "--box", "4x2x2", "--voxel-size", "1", "--problem", sys.argv[2],
                "-o", "unused.nc"], capture_output=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{r.ru_utime + r.ru_stime:.2f}")
PY
)
    echo "$kind: $seconds processor seconds"
    [ "$($PY -c "print(int($seconds < 10))")" -eq 1 ] || fail "$kind: $seconds s to find the duplicate"
  done
  ;;
bad_geometry)
  # voxel size and origin of a model file that make no grid
  make_model "$LOG/good.nc" || finish
  i=0
  for edit in "d.voxel_size = np.array([np.inf, 1, 1])" "d.voxel_size = np.array([1, np.nan, 1])" \
              "d.voxel_size = np.array([1, 1, 1e308])" "d.voxel_size = np.array([1e-320, 1, 1])" \
              "d.origin = np.array([np.nan, 0, 0])" "d.origin = np.array([0, 0, -np.inf])"; do
    i=$((i + 1))
    cp "$LOG/good.nc" "$LOG/g$i.nc"
    set_nc "$LOG/g$i.nc" "$edit"
    cp "$LOG/g$i.nc" g$i.nc
    expect_usage_error "optimize: $edit" "g$i\.nc: .*(voxel size|origin)" \
      "$OPTIMIZE" g$i.nc -o design.nc
    expect_usage_error "export: $edit" "g$i\.nc: .*(voxel size|origin)" \
      "$EXPORT" g$i.nc -o out.stl
    expect_usage_error "analyze: $edit" "g$i\.nc: .*(voxel size|origin)" \
      "$ANALYZE" g$i.nc -o result.nc
    rm g$i.nc
  done
  for size in 1e308 1e-320 inf nan 0 1,1,2e6; do
    expect_usage_error "--voxel-size $size" "--voxel-size: .*'$size'" \
      "$VOXELIZE" --box 4x2x2 --voxel-size $size --problem "$CANTILEVER" -o model.nc
  done
  for origin in nan,0,0 0,inf,0 0,0,1e300; do
    expect_usage_error "--origin $origin" "--origin: .*'$origin'" \
      "$VOXELIZE" --box 4x2x2 --voxel-size 1 --origin $origin --problem "$CANTILEVER" -o model.nc
  done
  ;;
bad_values)
  # NaN and Inf in a model: exit 2 naming the file and the entry
  make_model "$LOG/good.nc" || finish
  "$OPTIMIZE" "$LOG/good.nc" -o "$LOG/design.nc" --max-iterations 1 -q ||
    { fail "could not make a design"; finish; }
  try() { # NAME PATTERN PROGRAM-ARGS... (the model is NAME.nc)
    local name=$1 pattern=$2
    shift 2
    expect_usage_error "$name" "$name\.nc: .*$pattern" "$@"
  }
  cp "$LOG/good.nc" "$LOG/E_inf.nc" && set_nc "$LOG/E_inf.nc" 'd["material_youngs_modulus"][0] = np.inf'
  cp "$LOG/good.nc" "$LOG/load_nan.nc" && set_nc "$LOG/load_nan.nc" 'd["load_value"][0] = np.nan'
  cp "$LOG/good.nc" "$LOG/load_inf.nc" && set_nc "$LOG/load_inf.nc" 'd["load_value"][1] = np.inf'
  cp "$LOG/good.nc" "$LOG/fix_inf.nc" &&
    set_nc "$LOG/fix_inf.nc" 'd["constraint_value"][2] = np.inf'
  for rho in nan -5 7; do
    cp "$LOG/design.nc" "$LOG/rho_$rho.nc"
    set_nc "$LOG/rho_$rho.nc" "d['density'][0, 1, 2] = float('$rho')"
  done
  cp "$LOG"/E_inf.nc "$LOG"/load_*.nc "$LOG"/fix_inf.nc "$LOG"/rho_*.nc .
  try E_inf "material 'solid' .*finite E" "$OPTIMIZE" E_inf.nc -o design.nc
  try E_inf "finite E" "$ANALYZE" E_inf.nc -o result.nc --test model
  try load_nan "load 0 .*not finite" "$OPTIMIZE" load_nan.nc -o design.nc
  try load_inf "load 1 .*not finite" "$OPTIMIZE" load_inf.nc -o design.nc
  try load_inf "load 1 .*not finite" "$ANALYZE" load_inf.nc -o result.nc --test model
  try fix_inf "constraint 2 .*not finite" "$ANALYZE" fix_inf.nc -o result.nc --test model
  for rho in nan -5 7; do
    try "rho_$rho" "'density': voxel 8 \(x 2, y 1, z 0\) holds .*not a number in \[0, 1\]" "$EXPORT" rho_$rho.nc -o out.stl
  done
  rm -f ./*.nc
  ;;
empty_problem)
  # problems that solve to nothing
  write_problem zero.yaml "[0, 0, 0]"
  write_problem void.yaml "[0, 0, -1]" "passive:
  - {name: hole, region: {box: {min: [5, -1, -1], max: [7, 4, 4]}}, type: void}"
  for p in zero void; do
    "$VOXELIZE" --box 6x3x3 --voxel-size 1 --problem $p.yaml -o "$LOG/$p.nc" >"$LOG/out" 2>&1 ||
      { fail "voxelize $p: $(cat "$LOG/out")"; finish; }
    cp "$LOG/$p.nc" .
  done
  expect_usage_error "optimize: zero force" "zero\.nc: .*has no load" \
    "$OPTIMIZE" zero.nc -o design.nc
  # forces kept in the file but all zero
  make_model "$LOG/zeroed.nc" && cp "$LOG/zeroed.nc" . && set_nc zeroed.nc 'd["load_value"][:] = 0'
  expect_usage_error "optimize: forces all zero" \
    "zeroed\.nc: load case 'tip' has no load \([0-9]+ nodal forces, all zero\)" \
    "$OPTIMIZE" zeroed.nc -o design.nc
  expect_usage_error "optimize: load on a passive void" \
    "void\.nc: load 0 .*touches no element of a material that is not a passive void" \
    "$OPTIMIZE" void.nc -o design.nc
  expect_usage_error "analyze --test model: load on a passive void" \
    "void\.nc: load 0 .*touches no element of the bone" \
    "$ANALYZE" void.nc -o result.nc --test model -q
  expect_usage_error "--strain 0" "--strain: .*non-zero.*'0'" \
    "$ANALYZE" zero.nc -o result.nc --strain 0
  for p in 1e308 101 nan; do
    expect_usage_error "--penalty $p" "--penalty: .*\[1, 100\].*'$p'" \
      "$OPTIMIZE" zero.nc -o design.nc --penalty $p
  done
  rm -f zero.nc zeroed.nc void.nc
  ;;
summary_table)
  # a --summary table of other columns: refused before the solve, nothing
  # written (no result, no JSON, the table as it was)
  make_model "$LOG/model.nc" || finish
  cp "$LOG/model.nc" model.nc
  printf 'sample,test,stiffness\ncube,uniaxial,12\n' >table.csv
  sum=$(sha256sum <table.csv)
  expect_usage_error "analyze: a table of other columns" \
    "table\.csv: the table's header is not that of this summary row: column 3 is 'stiffness'" \
    "$ANALYZE" model.nc -o result.nc --summary s.json --summary table.csv -q
  [ "$(sha256sum <table.csv)" = "$sum" ] || fail "table.csv was changed"
  # a table written by a run of the same model takes the next row
  rm table.csv
  for run in 1 2; do
    "$ANALYZE" model.nc -o "$LOG/r$run.nc" --summary "$LOG/t.csv" -q >"$LOG/out" 2>&1 ||
      fail "run $run: $(cat "$LOG/out")"
  done
  [ "$(wc -l <"$LOG/t.csv")" -eq 3 ] || fail "t.csv: $(wc -l <"$LOG/t.csv") lines, expected 3"
  rm model.nc
  ;;
memory)
  # sizes that cannot fit: refused before allocating, with the bytes
  start=$(date +%s)
  "$VOXELIZE" --box 100000x100000x100000 --voxel-size 1 --problem "$CANTILEVER" -o model.nc \
    >"$LOG/out" 2>"$LOG/err"
  status=$?
  [ $status -eq 1 ] || fail "--box 100000^3: exit $status"
  grep -qE "100000x100000x100000 voxels needs .* GB of memory \([0-9]+ bytes\), and .* are available" \
    "$LOG/err" || fail "--box 100000^3: $(cat "$LOG/err")"
  [ "$(wc -l <"$LOG/err")" -eq 1 ] || fail "--box 100000^3: $(wc -l <"$LOG/err") lines"
  [ -z "$(listing)" ] || fail "--box 100000^3 left $(listing)"
  echo "ok: $(cat "$LOG/err")"
  # an OFF file of 60 bytes claiming 3e8 faces
  printf 'OFF\n3 300000000 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n' >claim.off
  (
    limit_memory 3000000
    expect_usage_error "OFF claiming 3e8 faces" "claim\.off: its header claims 3 vertices and 300000000 faces" \
      "$VOXELIZE" --mesh claim.off --resolution 8 --problem "$CANTILEVER" -o model.nc
    exit $FAILURES
  ) || FAILURES=$((FAILURES + 1))
  seconds=$(($(date +%s) - start))
  [ $seconds -lt 20 ] || fail "the refusals took $seconds s"
  ;;
damaged_netcdf)
  # a damaged HDF5 superblock is refused before nc_open (where libhdf5
  # 1.10 freed an invalid pointer on a mutated file): version, end of file,
  # checksum, a byte inserted after the superblock (the heap then corrupted
  # by nc_open showed at exit, status 134) or one removed, and a file that
  # is no netCDF at all
  make_model "$LOG/good.nc" || finish
  i=0
  for edit in "b[8] = 7" "b[28] ^= 0x40" "b[44] ^= 1" "b[4000:4000] = b'='" "del b[4000]" \
    "b[0:8] = b'NOTHDF5!'"; do
    i=$((i + 1))
    $PY - "$LOG/good.nc" "d$i.nc" "$edit" <<'PY' || fail "could not damage the file"
import sys
b = bytearray(open(sys.argv[1], "rb").read())
assert b[:8] == b"\x89HDF\r\n\x1a\n" and b[8] == 2, "a version 2 superblock expected"
exec(sys.argv[3])
open(sys.argv[2], "wb").write(b)
PY
    why="an HDF5 superblock|not a netCDF file or truncated \(neither"
    expect_usage_error "optimize: superblock $edit" "d$i\.nc: ($why)" \
      "$OPTIMIZE" d$i.nc -o design.nc
    expect_usage_error "analyze: superblock $edit" "d$i\.nc: ($why)" \
      "$ANALYZE" d$i.nc -o result.n88model
    rm d$i.nc
  done
  ;;
design_to_analyze)
  # a design file refused by voxfe-analyze (its displacement read and
  # dropped: AddressSanitizer's leak check sees it in the sanitizer build)
  make_model "$LOG/model.nc" || finish
  "$OPTIMIZE" "$LOG/model.nc" -o "$LOG/design.nc" --max-iterations 1 -q ||
    { fail "could not make a design"; finish; }
  cp "$LOG/design.nc" design.nc
  expect_usage_error "analyze a design file" "design\.nc: a design file" \
    "$ANALYZE" design.nc -o result.nc
  rm design.nc
  ;;
messages)
  # messages that name the file and the cause
  cat >free.yaml <<'YAML'
voxfe-problem: 1
material: {name: steel, E: 1000, nu: 0.3}
supports:
  - {name: pin, region: {face: x-}, fix: [z]}
loads:
  - {name: tip, region: {face: x+}, force: [0, 0, -1]}
YAML
  "$VOXELIZE" --box 6x3x3 --voxel-size 1 --problem free.yaml -o "$LOG/free.nc" >"$LOG/out" 2>&1 ||
    { fail "voxelize free: $(cat "$LOG/out")"; finish; }
  cp "$LOG/free.nc" .
  expect_usage_error "optimize: supports that hold z only" \
    "free\.nc: the supports do not hold the structure against rigid motion \(4 free modes: translation along x, translation along y, rotation about y, rotation about z\)" \
    "$OPTIMIZE" free.nc -o design.nc
  expect_usage_error "analyze --test model: supports that hold z only" \
    "free\.nc: the supports do not hold the structure against rigid motion" \
    "$ANALYZE" free.nc -o result.nc --test model
  # a prescribed displacement, which the optimizer does not take
  cat >pull.yaml <<'YAML'
voxfe-problem: 1
material: {name: steel, E: 1000, nu: 0.3}
supports:
  - {name: wall, region: {face: x-}, fix: [x, y, z]}
  - {name: pull, region: {face: x+}, displacement: {x: 0.1}}
loads:
  - {name: tip, region: {face: x+}, force: [0, 0, -1]}
YAML
  "$VOXELIZE" --box 6x3x3 --voxel-size 1 --problem pull.yaml -o "$LOG/pull.nc" >"$LOG/out" 2>&1 ||
    { fail "voxelize pull: $(cat "$LOG/out")"; finish; }
  cp "$LOG/pull.nc" .
  expect_usage_error "optimize: prescribed displacement" \
    "pull\.nc: constraint [0-9]+ prescribes 0\.1 mm at node x 6, y [0-9], z [0-9]: the optimizer takes supports held at 0 and forces" \
    "$OPTIMIZE" pull.nc -o design.nc
  # a model of passive voids only: no material voxel
  cp "$LOG/free.nc" empty.nc
  set_nc empty.nc 'd["label"][:] = 0'
  expect_usage_error "optimize: no material voxels" "empty\.nc: .*(no material|touches no element)" \
    "$OPTIMIZE" empty.nc -o design.nc
  rm -f free.nc pull.nc empty.nc
  ;;
*)
  fail "unknown case '$case_name'"
  ;;
esac
finish
