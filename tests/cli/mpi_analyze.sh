# SPDX-License-Identifier: BSD-3-Clause
# voxfe-analyze --mpi under mpirun: a porous bone phantom's compression test
# on 2 and 3 ranks (slabs of uneven sizes) gives one process's result in
# full storage, and in the bone's sparse storage: the same CG iterations,
# the displacements and the summary to 1e-10 of their size (in mixed
# precision, where the slabs change the float multigrid's rounding, to
# 1e-6, and the sparse storage's CG count within a tenth); only rank 0
# writes (the result and the summary); a model that cannot be read, or a
# solve that every rank refuses, ends every rank with exit status 2, one
# message and no file.
# Run as: bash mpi_analyze.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR ANALYZE MPIEXEC
. "$(dirname "$0")/lib.sh"
ANALYZE=$1 MPIEXEC=$2
mpi() { "$MPIEXEC" --oversubscribe --quiet -np "$@"; }

/usr/bin/python3 "$SOURCE_DIR/tests/analyze/make_model.py" porous bone.nc 16 14 11 7 ||
  { fail "make_model.py porous"; finish; }
"$ANALYZE" bone.nc -o one.nc --storage full --precision double --device cpu --threads 1 \
  >"$LOG/one" 2>&1 || { fail "one process: $(tail -n 3 "$LOG/one")"; finish; }
"$ANALYZE" bone.nc -o one_mixed.nc --storage full --precision mixed --device cpu --threads 1 \
  >"$LOG/one_mixed" 2>&1 || { fail "one process, mixed: $(tail -n 3 "$LOG/one_mixed")"; finish; }
cg() { sed -n 's/.*; \([0-9]*\) CG iterations.*/\1/p' "$1"; }

"$ANALYZE" bone.nc -o one_sparse.nc --storage sparse --precision double --device cpu --threads 1 \
  >"$LOG/one_sparse" 2>&1 || { fail "one process, sparse: $(tail -n 3 "$LOG/one_sparse")"; finish; }
"$ANALYZE" bone.nc -o one_sparse_mixed.nc --storage sparse --precision mixed --device cpu \
  --threads 1 >"$LOG/one_sparse_mixed" 2>&1 ||
  { fail "one process, sparse, mixed: $(tail -n 3 "$LOG/one_sparse_mixed")"; finish; }
"$ANALYZE" bone.nc -o one_sparse_rigid.nc --storage sparse --precision double --device cpu \
  --threads 1 --sparse-rigid-modes 1 >"$LOG/one_sparse_rigid" 2>&1 ||
  { fail "one process, sparse, rigid motions: $(tail -n 3 "$LOG/one_sparse_rigid")"; finish; }

# full storage on 2 and 3 ranks, and on 2 in mixed precision; sparse on 2
# and 3 (11 layers: 4, 4, 3), on 3 in mixed precision, and on 3 with every
# rank building the hierarchy (rank 0 builds it and sends it by default),
# and on 3 with the weak rigid motions balanced
for run in 2 3 mixed2 sparse2 sparse3 sparsemixed3 sparseevery3 sparserigid3; do
  ranks=${run#sparse} one=one storage=full precision=double tolerance=1e-10 hierarchy=root
  rigid=0
  case $run in
  sparserigid*) ranks=${run#sparserigid} one=one_sparse_rigid storage=sparse rigid=1 ;;
  sparseevery*) ranks=${run#sparseevery} one=one_sparse storage=sparse hierarchy=every ;;
  mixed*) ranks=${run#mixed} one=one_mixed precision=mixed tolerance=1e-6 ;;
  sparsemixed*)
    ranks=${run#sparsemixed} one=one_sparse_mixed storage=sparse precision=mixed tolerance=1e-6
    ;;
  sparse*) one=one_sparse storage=sparse ;;
  esac
  before=$(listing)
  mpi $ranks "$ANALYZE" --mpi bone.nc -o r$run.nc --summary r$run.json --threads 1 \
    --storage $storage --precision $precision --mpi-hierarchy $hierarchy \
    --sparse-rigid-modes $rigid >"$LOG/out" 2>"$LOG/err" || { fail "$run: $(tail -n 3 "$LOG/err")"; continue; }
  grep -q "\"solver_storage\": \"$storage\"" r$run.json || fail "$run: not in $storage storage"
  grep -q "$ranks ranks on CPU cores" "$LOG/err" || fail "$ranks ranks: $(head -n 3 "$LOG/err")"
  [ "$(wc -l <"$LOG/out")" -eq 1 ] || fail "$ranks ranks: not one summary line: $(cat "$LOG/out")"
  # the float V-cycle of the sparse storage is as sensitive to the slabs'
  # rounding as its CG count to the float rounding: within a tenth
  spread=0
  [ $run = sparsemixed$ranks ] && spread=$(($(cg "$LOG/$one") / 10 + 1))
  difference=$(($(cg "$LOG/out") - $(cg "$LOG/$one")))
  [ ${difference#-} -le $spread ] ||
    fail "$run: $(cg "$LOG/out") CG iterations against $(cg "$LOG/$one")"
  [ "$(comm -13 <(echo "$before") <(listing) | tr '\n' ' ')" = "r$run.json r$run.nc " ] ||
    fail "$ranks ranks: new files $(comm -13 <(echo "$before") <(listing) | tr '\n' ' ')"
  /usr/bin/python3 - $one.nc r$run.nc $tolerance $hierarchy >"$LOG/py" 2>&1 <<'PY' ||
import sys
import netCDF4
import numpy as np
one, many = (netCDF4.Dataset(f) for f in sys.argv[1:3])
tolerance = float(sys.argv[3])
assert "--mpi" in many.history, many.history
assert "--mpi-hierarchy=" + sys.argv[4] in many.history, many.history
for name in ("displacement", "strain", "stress", "constraint_reaction"):
    x, y = np.asarray(one[name][:]), np.asarray(many[name][:])
    d = np.abs(x - y).max() / np.abs(x).max()
    assert d <= tolerance, (name, d)
print("displacements within", np.abs(np.asarray(one["displacement"][:]) -
      np.asarray(many["displacement"][:])).max())
PY
    fail "r$run.nc: $(cat "$LOG/py")"
  echo "ok: $ranks ranks, $storage storage, $precision, $(cg "$LOG/out") CG iterations: $(cat "$LOG/py")"
done

before=$(listing)
mpi 3 "$ANALYZE" --mpi missing.nc -o out.nc --threads 1 -q >"$LOG/out" 2>"$LOG/err"
status=$?
[ "$status" -eq 2 ] || fail "missing: exit status $status, expected 2"
[ "$(wc -l <"$LOG/err")" -eq 1 ] || fail "missing: not one line on stderr: $(cat "$LOG/err")"
grep -qE "^voxfe-analyze: missing.nc: " "$LOG/err" || fail "missing: $(cat "$LOG/err")"
[ "$before" = "$(listing)" ] || fail "missing: the folder changed"
echo "ok: missing: $(cat "$LOG/err")"
# a solve that every rank refuses (no smoothed-aggregation levels over
# ranks): rank 0's one message, exit status 2, no file
before=$(listing)
mpi 2 "$ANALYZE" --mpi bone.nc -o out.nc --storage sparse --precision double --sparse-coarse sa \
  --threads 1 -q >"$LOG/out" 2>"$LOG/err"
status=$?
[ "$status" -eq 2 ] || fail "sa: exit status $status, expected 2"
[ "$(wc -l <"$LOG/err")" -eq 1 ] || fail "sa: not one line on stderr: $(cat "$LOG/err")"
grep -q "smoothed-aggregation" "$LOG/err" || fail "sa: $(cat "$LOG/err")"
[ "$before" = "$(listing)" ] || fail "sa: the folder changed"
echo "ok: sa: $(cat "$LOG/err")"
finish
