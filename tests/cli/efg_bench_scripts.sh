# SPDX-License-Identifier: BSD-3-Clause
# The element-free Galerkin bench scripts (bench/efg-table1.sh,
# efg-dof-sweep.sh, efg-vs-fe.sh) end to end on the CPU at their small
# scale and one design iteration: each prints its table with a row per run,
# the nodes and DoF of the grids it names, and the numbers voxfe-optimize
# printed (checked against a run of the same model made here); without
# arguments they print their use and exit 2. bench/efg_design.py counts
# the field nodes and compares designs, with netCDF4 and, where python has
# it, with h5py alone. bench/efg-kernels.sh prints its use, and refuses
# without Nsight Compute; bench/ncu_kernels.py reads a log Nsight Compute
# wrote (2025.3, the EFG cantilever's first design iteration on an H200):
# its design iteration's launches and microseconds against awk's count.
. "$(dirname "$0")/lib.sh"

BIN=$(dirname "$OPTIMIZE")
PY=/usr/bin/python3
export DEVICE=cpu SCALE=small PYTHON=$PY

# the number in column N (1-based, as markdown splits it) of the row that
# begins with "| NAME |"
column() { grep -m1 "^| $2 |" "$1" | awk -F'|' -v n="$3" '{ gsub(/^ +| +$/, "", $(n + 1)); print $(n + 1) }'; }

for script in efg-table1 efg-dof-sweep efg-vs-fe efg-kernels; do
  bash "$SOURCE_DIR/bench/$script.sh" >"$LOG/usage" 2>&1
  status=$?
  [ $status -eq 2 ] || fail "$script.sh without arguments: exit $status, not 2"
  grep -q "BIN" "$LOG/usage" || fail "$script.sh without arguments: no use printed"
done

NCU=/nonexistent/ncu bash "$SOURCE_DIR/bench/efg-kernels.sh" "$BIN" >"$LOG/kernels" 2>&1
status=$?
[ $status -eq 2 ] && grep -q "no Nsight Compute" "$LOG/kernels" ||
  fail "efg-kernels.sh without ncu: exit $status: $(cat "$LOG/kernels")"
xz -dc "$SOURCE_DIR/tests/cli/data/ncu_efg_cantilever.csv.xz" >ncu.csv || fail "the ncu log"
$PY "$SOURCE_DIR/bench/ncu_kernels.py" ncu.csv assemble_kernel >"$LOG/kernels" ||
  fail "ncu_kernels.py: exit $?"
# the launches from the first assembly to the second and their sum in us
# (the log's durations are in ns)
expected=$(awk -F'","' '/^"[0-9]/ { n++; if (index($5, "assemble_kernel") == 1) {
  if (a) { if (!b) b = n } else a = n } v[n] = $15 }
  END { for (i = a; i < b; i++) { gsub(/[",]/, "", v[i]); s += v[i] }
        printf "%d %.1f", b - a, s / 1000 }' ncu.csv)
got="$(column "$LOG/kernels" all 4) $(column "$LOG/kernels" all 5)"
[ "$got" = "$expected" ] || fail "ncu_kernels.py: launches and us $got, not $expected"
[ "$(column "$LOG/kernels" assemble_kernel 4)" = 1 ] || fail "ncu_kernels.py: the assembly"

# the table 1 script against a run of its cantilever made here
bash "$SOURCE_DIR/bench/efg-table1.sh" "$BIN" 1 --threads 2 >"$LOG/table1" 2>"$LOG/table1.err" ||
  fail "efg-table1.sh: exit $?: $(tail -n 3 "$LOG/table1.err")"
"$VOXELIZE" --box 40x20x2 --voxel-size 2.5,2.5,2 \
  -p "$SOURCE_DIR/workflows/efg_cantilever/efg_cantilever.yaml" -o model.nc -q ||
  fail "voxelize the cantilever"
"$OPTIMIZE" model.nc --discretization efg --efg-preconditioner jacobi --volume-fraction 0.4 \
  --penalty 3 --no-continuation --cg-tol 1e-5 --cg-max-iterations 1000000 --max-iterations 1 \
  --device cpu --threads 2 -o design.nc >"$LOG/direct" 2>/dev/null || fail "optimize the cantilever"
direct_compliance=$(sed -n 's/.*final design compliance \([^,]*\),.*/\1/p' "$LOG/direct")
direct_cg=$(sed -n 's/.* s, \([0-9]*\) CG iterations.*/\1/p' "$LOG/direct")
[ "$(column "$LOG/table1" "I cantilever" 2)" = 2583 ] || fail "table 1: cantilever nodes: $(cat "$LOG/table1")"
[ "$(column "$LOG/table1" "I cantilever" 3)" = 7749 ] || fail "table 1: cantilever DoF"
[ "$(column "$LOG/table1" "I cantilever" 4)" = "1 (limit)" ] || fail "table 1: cantilever design iterations"
[ "$(column "$LOG/table1" "I cantilever" 13)" = "$direct_cg" ] || fail "table 1: CG iterations, not $direct_cg"
[ "$(column "$LOG/table1" "I cantilever" 15)" = "$direct_compliance" ] ||
  fail "table 1: compliance, not $direct_compliance"
# the four stages add up to their column
awk -F'|' '/^\| I cantilever \|/ { d = $7 - ($9 + $10 + $11 + $12); exit !(d < 2e-3 && d > -2e-3) }' \
  "$LOG/table1" || fail "table 1: the stages do not add up: $(grep '^| I cantilever' "$LOG/table1")"
[ "$(column "$LOG/table1" "II quarter annulus" 2)" = 1225 ] || fail "table 1: annulus nodes"
[ "$(column "$LOG/table1" "III cube" 2)" = 343 ] || fail "table 1: cube nodes"
grep -qE '^\| I cantilever \(their 16,605 nodes\) \| 191 / [0-9.]+ = [0-9.]+x\* \|' "$LOG/table1" ||
  fail "table 1: no comparison with the paper's cantilever"
grep -q "failed" "$LOG/table1" && fail "table 1: a run failed: $(cat "$LOG/table1")"

# the DoF sweep: the small grids, their nodes and DoF, numbers in every column
bash "$SOURCE_DIR/bench/efg-dof-sweep.sh" "$BIN" 1 1 --threads 2 >"$LOG/sweep" 2>"$LOG/sweep.err" ||
  fail "efg-dof-sweep.sh: exit $?: $(tail -n 3 "$LOG/sweep.err")"
[ "$(column "$LOG/sweep" "19,488" 3)" = 462 ] || fail "sweep: nodes of 20x10x1: $(cat "$LOG/sweep")"
[ "$(column "$LOG/sweep" "49,815" 4)" = 4185 ] || fail "sweep: DoF of 30x14x2"
[ "$(column "$LOG/sweep" "1,108,800 (10 x 110,880)" 12)" = "$direct_compliance" ] ||
  fail "sweep: the last grid's compliance, not $direct_compliance"
[ "$(grep -c '^| [0-9]' "$LOG/sweep")" -eq 3 ] || fail "sweep: not three rows"
grep -qE '^\| 1,108,800 .*\| target (met|missed)\* \|$' "$LOG/sweep" ||
  fail "sweep: the 1.1 M row not against the target"
grep -qE '\| (- )?\|' "$LOG/sweep" && fail "sweep: an empty column: $(cat "$LOG/sweep")"

# EFG against FE: FE's own compliance and FE's evaluation of its design agree
# (the direct run's block Jacobi; the default multigrid below)
EFG_PRECONDITIONER=jacobi bash "$SOURCE_DIR/bench/efg-vs-fe.sh" "$BIN" 1 --threads 2 \
  >"$LOG/vsfe" 2>"$LOG/vsfe.err" || fail "efg-vs-fe.sh: exit $?: $(tail -n 3 "$LOG/vsfe.err")"
[ "$(column "$LOG/vsfe" "EFG (PCG with --efg-preconditioner jacobi, no filter)" 8)" = \
  "$direct_compliance" ] || fail "vs FE: the EFG compliance, not $direct_compliance: $(cat "$LOG/vsfe")"
fe_own=$(column "$LOG/vsfe" "FE (multigrid PCG, sensitivity filter)" 8)
fe_under_fe=$(column "$LOG/vsfe" "FE (multigrid PCG, sensitivity filter)" 9)
awk -v a="$fe_own" -v b="$fe_under_fe" 'BEGIN { exit !(a > 0 && (a - b) / a < 1e-4 && (b - a) / a < 1e-4) }' ||
  fail "vs FE: FE's compliance $fe_own against its evaluation $fe_under_fe"
grep -qE "^The designs' voxel densities differ by at most [0-9.e-]+, by [0-9.e-]+ on average; [0-9.]+ % of the voxels" \
  "$LOG/vsfe" || fail "vs FE: no design difference: $(cat "$LOG/vsfe")"
# the default multigrid: the compliance of block Jacobi's run (the same solve to 1e-5),
# and FE's evaluation of its design within the two discretizations' difference
bash "$SOURCE_DIR/bench/efg-vs-fe.sh" "$BIN" 1 --threads 2 >"$LOG/vsfe_mg" 2>"$LOG/vsfe_mg.err" ||
  fail "efg-vs-fe.sh with mg: exit $?: $(tail -n 3 "$LOG/vsfe_mg.err")"
mg_own=$(column "$LOG/vsfe_mg" "EFG (PCG with --efg-preconditioner mg, no filter)" 8)
mg_under_fe=$(column "$LOG/vsfe_mg" "EFG (PCG with --efg-preconditioner mg, no filter)" 9)
awk -v a="$mg_own" -v b="$mg_under_fe" -v j="$direct_compliance" \
  'BEGIN { exit !(a > 0 && b > 0 && (a - j) / j < 1e-4 && (j - a) / j < 1e-4 &&
                  (a - b) / a < 0.05 && (b - a) / a < 0.05) }' ||
  fail "vs FE with mg: EFG's compliance $mg_own (block Jacobi's $direct_compliance)," \
    "FE's evaluation $mg_under_fe"

# efg_design.py: the nodes with netCDF4, and with h5py alone where python has it
[ "$($PY "$SOURCE_DIR/bench/efg_design.py" nodes design.nc)" = 2583 ] || fail "efg_design.py nodes"
[ "$($PY "$SOURCE_DIR/bench/efg_design.py" compare design.nc design.nc)" = "0 0 0.0000" ] ||
  fail "efg_design.py compare: a design against itself"
if $PY -c "import h5py" 2>/dev/null; then
  mkdir "$TOP/no_netcdf4" && echo 'raise ImportError("hidden by the test")' >"$TOP/no_netcdf4/netCDF4.py"
  [ "$(PYTHONPATH=$TOP/no_netcdf4 $PY "$SOURCE_DIR/bench/efg_design.py" nodes design.nc)" = 2583 ] ||
    fail "efg_design.py nodes through h5py"
fi
finish
