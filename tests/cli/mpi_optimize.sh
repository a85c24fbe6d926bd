# SPDX-License-Identifier: BSD-3-Clause
# voxfe-optimize --mpi under mpirun: the cantilever (elasticity) and the heat
# sink (heat conduction) on 2 and 3 ranks (slabs of uneven sizes) give the
# design, history and CG iterations of one process (to 1e-12 in double
# precision; in mixed precision, where the slabs change the float
# multigrid's rounding, to 1e-6 and CG iterations within 2); a model that
# rank 0 cannot read and a grid with fewer layers than ranks end every rank
# with exit status 2, one message and no output file; a rank that runs out
# of memory alone ends them all with exit status 1.
# Run as: bash mpi_optimize.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR MPIEXEC
. "$(dirname "$0")/lib.sh"
MPIEXEC=$1
# --quiet: mpirun adds no banner of its own to a rank's failure
mpi() { "$MPIEXEC" --oversubscribe --quiet -np "$@"; }

HEATSINK="$SOURCE_DIR/workflows/heatsink/heatsink.yaml"
make_model cantilever.nc 16x8x5 || finish
"$VOXELIZE" --box 8x4x16 --voxel-size 16 --problem "$HEATSINK" -o heat.nc >"$LOG/out" 2>&1 ||
  { fail "voxelize heat: $(tail -n 3 "$LOG/out")"; finish; }

compare() { # ONE MANY [TOLERANCE CG_SLACK]: the same history rows, CG counts and density
  /usr/bin/python3 - "$1" "$2" "${3:-1e-12}" "${4:-0}" >"$LOG/py" 2>&1 <<'PY' || fail "$2 against $1: $(cat "$LOG/py")"
import sys
import netCDF4
import numpy as np
one, many = (netCDF4.Dataset(f) for f in sys.argv[1:3])
tol, slack = float(sys.argv[3]), int(sys.argv[4])
a, b = one["optimization"], many["optimization"]
cg_a, cg_b = np.asarray(a["cg_iterations"][:]), np.asarray(b["cg_iterations"][:])
assert cg_a.shape == cg_b.shape and np.all(np.abs(cg_a - cg_b) <= slack), (cg_a, cg_b)
for name in ("objective", "volume_fraction", "change"):
    x, y = np.asarray(a[name][:]), np.asarray(b[name][:])
    assert np.all(np.abs(x - y) <= tol * np.abs(x).max()), (name, x, y)
assert abs(a.final_objective - b.final_objective) <= tol * abs(a.final_objective)
assert abs(a.final_cg_iterations - b.final_cg_iterations) <= slack
d = np.abs(np.asarray(one["density"][:]) - np.asarray(many["density"][:])).max()
assert d <= tol, d
print("rows", len(a["objective"][:]), "objective", b.final_objective, "density diff", d)
PY
  echo "ok: $2 is $1: $(cat "$LOG/py")"
}

for model in cantilever heat; do
  # the heat sink's settings of heat_run.sh; the cantilever's filter reaches
  # a layer to either side (the slabs' windows are not the whole grid)
  options=(--precision double)
  [ $model = heat ] && options+=(--emin-ratio 1e-3 --filter-radius 20)
  "$OPTIMIZE" $model.nc -o $model-1.nc --max-iterations 4 --device cpu --threads 1 \
    "${options[@]}" -q >"$LOG/out" 2>&1 ||
    { fail "optimize $model: $(tail -n 3 "$LOG/out")"; continue; }
  for ranks in 2 3; do
    mpi $ranks "$OPTIMIZE" --mpi $model.nc -o $model-$ranks.nc --max-iterations 4 --threads 1 \
      "${options[@]}" >"$LOG/out" 2>"$LOG/err" ||
      { fail "optimize --mpi $model on $ranks ranks: $(tail -n 3 "$LOG/err")"; continue; }
    grep -q "sent to $ranks ranks" "$LOG/err" || fail "no read and send times: $(head -n 2 "$LOG/err")"
    [ "$(grep -c 'final design' "$LOG/out")" -eq 1 ] || fail "not one summary: $(cat "$LOG/out")"
    ncdump -h $model-$ranks.nc | grep -q -- "--mpi" || fail "$model-$ranks.nc: no --mpi in its history"
    compare $model-1.nc $model-$ranks.nc
  done
done

# every coarse level of this small grid gathered onto every rank (the
# default on CPU cores keeps them split as long as the slabs nest): the
# same again
if mpi 2 "$OPTIMIZE" --mpi cantilever.nc -o gathered-2.nc --max-iterations 4 --threads 1 \
  --precision double --mpi-gather-nodes 4096 >"$LOG/out" 2>"$LOG/err"; then
  ncdump -h gathered-2.nc | grep -q -- "--mpi-gather-nodes=4096" ||
    fail "gathered-2.nc: no --mpi-gather-nodes=4096 in its history"
  compare cantilever-1.nc gathered-2.nc
else
  fail "optimize --mpi --mpi-gather-nodes 4096: $(tail -n 3 "$LOG/err")"
fi
ncdump -h cantilever-2.nc | grep -q -- "--mpi-gather-nodes=auto" ||
  fail "cantilever-2.nc: no --mpi-gather-nodes=auto in its history"
expect_usage_error "--mpi-gather-nodes -3" "expected auto or a number of nodes" \
  "$OPTIMIZE" --mpi cantilever.nc -o out.nc --mpi-gather-nodes -3

# the exchanges beside the slabs' steps, which auto leaves off on CPU
# cores: the same again, and recorded
if mpi 2 "$OPTIMIZE" --mpi cantilever.nc -o overlap-2.nc --max-iterations 4 --threads 1 \
  --precision double --mpi-overlap on >"$LOG/out" 2>"$LOG/err"; then
  ncdump -h overlap-2.nc | grep -q -- "--mpi-overlap=on" ||
    fail "overlap-2.nc: no --mpi-overlap=on in its history"
  compare cantilever-1.nc overlap-2.nc
else
  fail "optimize --mpi --mpi-overlap on: $(tail -n 3 "$LOG/err")"
fi
expect_usage_error "--mpi-overlap sometimes" "expected auto, on or off" \
  "$OPTIMIZE" --mpi cantilever.nc -o out.nc --mpi-overlap sometimes

# mixed precision (the default): the float multigrid's rounding differs
# with the slabs, so the runs agree to well within CG's tolerance
if "$OPTIMIZE" cantilever.nc -o mixed-1.nc --max-iterations 4 --device cpu --threads 1 -q \
  >"$LOG/out" 2>&1; then
  if mpi 2 "$OPTIMIZE" --mpi cantilever.nc -o mixed-2.nc --max-iterations 4 --threads 1 \
    >"$LOG/out" 2>"$LOG/err"; then
    compare mixed-1.nc mixed-2.nc 1e-6 2
  else
    fail "optimize --mpi in mixed precision: $(tail -n 3 "$LOG/err")"
  fi
else
  fail "optimize in mixed precision: $(tail -n 3 "$LOG/out")"
fi

# failures: every rank ends, with one message (rank 0's) and no file
make_model thin.nc 16x8x2 || finish
for case in missing thin; do
  before=$(listing)
  mpi 3 "$OPTIMIZE" --mpi $case.nc -o out.nc --threads 1 -q >"$LOG/out" 2>"$LOG/err"
  status=$?
  [ "$status" -eq 2 ] || fail "$case: exit status $status, expected 2"
  [ "$(wc -l <"$LOG/err")" -eq 1 ] || fail "$case: not one line on stderr: $(cat "$LOG/err")"
  grep -qE "^voxfe-optimize: $case.nc: " "$LOG/err" || fail "$case: $(cat "$LOG/err")"
  [ "$before" = "$(listing)" ] || fail "$case: the folder changed"
  echo "ok: $case: $(cat "$LOG/err")"
done
grep -q "fewer than the 3 MPI ranks" "$LOG/err" || fail "thin: $(cat "$LOG/err")"
expect_usage_error "--mpi with --resume" "--resume is not split" \
  "$OPTIMIZE" --mpi cantilever.nc -o out.nc --resume cantilever-1.nc

# a rank that fails alone (rank 1 under `ulimit -v`, out of memory for its
# slab's vectors) ends every rank: exit status 1, its one message, no file.
# Not under AddressSanitizer, whose shadow memory no such limit admits.
if ldd "$OPTIMIZE" | grep -q libasan; then
  echo "skipped: one rank out of memory (AddressSanitizer)"
else
  make_model big.nc 192x96x96 || finish
  # the limit: what the program needs to start (its libraries: about 0.2 GB,
  # 1.5 GB with CUDA's), found in steps of 50 MB, and 350 MB more, far
  # below the 1.3 GB of this model's vectors
  start=50000
  while [ $start -lt 8000000 ] &&
    ! bash -c "ulimit -v $start && exec \"$OPTIMIZE\" --version" >/dev/null 2>&1; do
    start=$((start + 50000))
  done
  limit=$((start + 350000))
  before=$(listing)
  "$MPIEXEC" --oversubscribe --quiet -np 1 "$OPTIMIZE" --mpi big.nc -o out.nc --threads 1 \
    --device cpu -q : -np 1 bash -c "ulimit -v $limit && exec \"$OPTIMIZE\" --mpi big.nc \
    -o out.nc --threads 1 --device cpu -q" >"$LOG/out" 2>"$LOG/err"
  status=$?
  [ "$status" -eq 1 ] || fail "one rank out of memory: exit status $status, expected 1"
  [ "$(wc -l <"$LOG/err")" -eq 1 ] || fail "one rank out of memory: $(cat "$LOG/err")"
  grep -q "^voxfe-optimize: .*out of memory" "$LOG/err" || fail "one rank: $(cat "$LOG/err")"
  [ "$before" = "$(listing)" ] || fail "one rank out of memory: the folder changed"
  echo "ok: one rank out of memory (limit $limit KB): $(cat "$LOG/err")"
  rm -f big.nc
fi
finish
