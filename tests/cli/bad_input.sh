# SPDX-License-Identifier: BSD-3-Clause
# Bad input, one kind per CASE: each attempt must exit 2 with exactly one
# line on stderr that names the problem, and leave no output file.
# Usage: bash bad_input.sh VOXELIZE OPTIMIZE EXPORT SOURCE_DIR CASE
. "$(dirname "$0")/lib.sh"

case_name=$1

# A netCDF file that is not a voxfe file: valid netCDF-4, foreign content.
make_foreign_netcdf() {
  cat >"$LOG/foreign.cdl" <<'CDL'
netcdf foreign {
dimensions:
  time = 3 ;
variables:
  float temperature(time) ;
    temperature:units = "K" ;
data:
  temperature = 280, 281, 282 ;
}
CDL
  ncgen -k nc4 -o "$1" "$LOG/foreign.cdl" || fail "ncgen failed"
}

case $case_name in
missing_input)
  expect_usage_error "optimize: missing model file" "missing\.nc" \
    "$OPTIMIZE" missing.nc -o design.nc
  expect_usage_error "export: missing model file" "missing\.nc" \
    "$EXPORT" missing.nc -o out.vti
  expect_usage_error "voxelize: missing problem file" "missing\.yaml" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem missing.yaml -o model.nc
  ;;
text_input)
  printf 'this is not a netCDF file\n' >text.nc
  expect_usage_error "optimize: text file as model" "text\.nc" \
    "$OPTIMIZE" text.nc -o design.nc
  expect_usage_error "export: text file as model" "text\.nc" \
    "$EXPORT" text.nc -o out.vtu
  ;;
truncated_input)
  make_model "$LOG/good.nc" || finish
  size=$(stat -c %s "$LOG/good.nc")
  head -c $((size / 2)) "$LOG/good.nc" >half.nc
  expect_usage_error "optimize: truncated model" "half\.nc" \
    "$OPTIMIZE" half.nc -o design.nc
  expect_usage_error "export: truncated model" "half\.nc" \
    "$EXPORT" half.nc -o out.vti
  ;;
not_voxfe)
  make_foreign_netcdf foreign.nc
  expect_usage_error "optimize: netCDF file that is not a voxfe file" "foreign\.nc" \
    "$OPTIMIZE" foreign.nc -o design.nc
  expect_usage_error "export: netCDF file that is not a voxfe file" "foreign\.nc" \
    "$EXPORT" foreign.nc -o out.vti
  ;;
bad_options)
  # An existing input, so that only the option can be the problem; the
  # messages must name the option.
  printf 'not used\n' >model.nc
  expect_usage_error "--volume-fraction abc" "--volume-fraction: expected a number in \(0, 1], got 'abc'" \
    "$OPTIMIZE" model.nc -o design.nc --volume-fraction abc
  expect_usage_error "--volume-fraction 2" "--volume-fraction: .*'2'" \
    "$OPTIMIZE" model.nc -o design.nc --volume-fraction 2
  expect_usage_error "--volume-fraction with no value" "volume-fraction" \
    "$OPTIMIZE" model.nc -o design.nc --volume-fraction
  expect_usage_error "--max-iterations 2.5" "--max-iterations: .*integer.*'2\.5'" \
    "$OPTIMIZE" model.nc -o design.nc --max-iterations 2.5
  expect_usage_error "--filter nonsense" "--filter: .*'nonsense'" \
    "$OPTIMIZE" model.nc -o design.nc --filter nonsense
  expect_usage_error "--device nonsense" "--device: .*'nonsense'" \
    "$OPTIMIZE" model.nc -o design.nc --device nonsense
  expect_usage_error "--start-history 3" "--start-history: .*\[0, 2\].*'3'" \
    "$OPTIMIZE" model.nc -o design.nc --start-history 3
  expect_usage_error "--mg-bound-refresh 0" "--mg-bound-refresh: .*'0'" \
    "$OPTIMIZE" model.nc -o design.nc --mg-bound-refresh 0
  expect_usage_error "optimize: unknown option" "--no-such-option" \
    "$OPTIMIZE" model.nc -o design.nc --no-such-option
  expect_usage_error "optimize: missing -o" "-o" "$OPTIMIZE" model.nc
  expect_usage_error "optimize: no input" "input" "$OPTIMIZE" -o design.nc
  expect_usage_error "optimize: two inputs" "model2\.nc" \
    "$OPTIMIZE" model.nc model2.nc -o design.nc
  expect_usage_error "optimize: output folder missing" "no/such/folder" \
    "$OPTIMIZE" model.nc -o no/such/folder/design.nc

  expect_usage_error "--box 0x1x1" "--box: .*'0x1x1'" \
    "$VOXELIZE" --box 0x1x1 --voxel-size 1 --problem "$CANTILEVER" -o out.nc
  expect_usage_error "--box 4x4" "--box: .*'4x4'" \
    "$VOXELIZE" --box 4x4 --voxel-size 1 --problem "$CANTILEVER" -o out.nc
  expect_usage_error "--voxel-size -1" "--voxel-size: .*'-1'" \
    "$VOXELIZE" --box 4x2x2 --voxel-size -1 --problem "$CANTILEVER" -o out.nc
  expect_usage_error "--origin 1,2" "--origin: .*'1,2'" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --origin 1,2 --problem "$CANTILEVER" -o out.nc
  expect_usage_error "voxelize: no geometry" "--box" \
    "$VOXELIZE" --voxel-size 1 --problem "$CANTILEVER" -o out.nc
  expect_usage_error "voxelize: unknown option" "--no-such-option" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem "$CANTILEVER" -o out.nc --no-such-option
  expect_usage_error "voxelize: missing -o" "-o" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem "$CANTILEVER"
  expect_usage_error "voxelize: missing --problem" "problem" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 -o out.nc

  expect_usage_error "--threshold 1.5" "--threshold: .*'1\.5'" \
    "$EXPORT" model.nc -o out.vtu --threshold 1.5
  expect_usage_error "export: unknown option" "--no-such-option" \
    "$EXPORT" model.nc -o out.vti --no-such-option
  expect_usage_error "export: missing -o" "-o" "$EXPORT" model.nc
  ;;
bad_problem)
  printf 'material: {E: 1000, nu: 0.3\nsupports: [\n' >syntax.yaml
  expect_usage_error "problem file with a YAML syntax error" "syntax\.yaml" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem syntax.yaml -o model.nc
  printf 'nonsense: 1\n' >unknown.yaml
  expect_usage_error "problem file with an unknown key" "unknown\.yaml" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem unknown.yaml -o model.nc
  printf 'just a sentence\n' >scalar.yaml
  expect_usage_error "problem file that is not a mapping" "scalar\.yaml" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem scalar.yaml -o model.nc
  : >empty.yaml
  expect_usage_error "empty problem file" "empty\.yaml" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem empty.yaml -o model.nc
  ;;
bad_extension)
  make_model model.nc || finish
  for out in out.xyz out out.vt out.nc; do
    expect_usage_error "export to '$out'" "extension" "$EXPORT" model.nc -o "$out"
  done
  ;;
output_is_input)
  make_model model.nc || finish
  cp "$CANTILEVER" problem.yaml
  ln -s model.nc link.nc
  sum_model=$(sha256sum <model.nc)
  sum_problem=$(sha256sum <problem.yaml)
  expect_usage_error "optimize -o = input" "input" "$OPTIMIZE" model.nc -o model.nc
  expect_usage_error "optimize -o = input by another path" "input" \
    "$OPTIMIZE" model.nc -o "$RUN/./model.nc"
  expect_usage_error "optimize -o = a link to the input" "input" \
    "$OPTIMIZE" model.nc -o link.nc
  expect_usage_error "voxelize -o = problem file" "input" \
    "$VOXELIZE" --box 4x2x2 --voxel-size 1 --problem problem.yaml -o problem.yaml
  [ "$(sha256sum <model.nc)" = "$sum_model" ] || fail "model.nc was modified"
  [ "$(sha256sum <problem.yaml)" = "$sum_problem" ] || fail "problem.yaml was modified"
  ;;
*)
  fail "unknown case '$case_name'"
  ;;
esac
finish
