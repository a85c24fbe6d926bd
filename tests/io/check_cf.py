#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""io: a written model file carries the CF metadata docs/file-format.md
promises (conventions, units, long names, flags, chunking), indexes voxels x
fastest, reads unmasked in netCDF4-python, and passes through `ncdump -h`.

Usage: check_cf.py IO_WRITE_SAMPLE  (the program that writes the sample)"""
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import netCDF4
    import numpy as np
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"check failed: {what}", file=sys.stderr)


UNITS = {
    "x": "mm", "y": "mm", "z": "mm", "node_x": "mm", "node_y": "mm", "node_z": "mm",
    "density": "1", "displacement": "mm", "density_snapshot": "1", "snapshot_iteration": "1",
    "material_youngs_modulus": "MPa", "material_poisson_ratio": "1",
    "material_conductivity": "W mm-1 K-1", "constraint_value": "mm", "load_value": "N",
}
HISTORY_UNITS = {
    "objective": "N mm", "volume_fraction": "1", "change": "1", "non_discreteness": "percent",
    "penalty": "1", "q": "1", "seconds": "s",
}


def check_file(path, deflated):
    ds = netCDF4.Dataset(path)
    check(ds.data_model == "NETCDF4", "netCDF-4 data model")
    conventions = ds.getncattr("Conventions").split()
    check("CF-1.8" in conventions and "voxfe-1" in conventions, "Conventions names CF and voxfe")
    check(int(ds.voxfe_schema_version) == 1, "voxfe_schema_version")
    check(ds.stage == "design", "stage")
    check(ds.voxfe_version != "", "voxfe_version")
    check(ds.title == "io test model, ümlaut", "title")
    check(ds.history.count("\n") == 2 and "voxfe-optimize" in ds.history, "history")
    check(np.array_equal(ds.voxel_size, [0.1, 0.25, 1 / 3]), "voxel_size x,y,z")
    check(np.array_equal(ds.origin, [-1.7, 0, 2.2]), "origin")
    check(ds.voxel_size_units == "mm" and ds.origin_units == "mm", "units of the grid")

    dims = {name: len(d) for name, d in ds.dimensions.items()}
    check(dims == {"x": 5, "y": 4, "z": 3, "node_x": 6, "node_y": 5, "node_z": 4,
                   "component": 3, "material": 3, "constraint": 91, "load": 3, "load_case": 2,
                   "snapshot": 2},
          f"dimensions {dims}")

    for name, var in ds.variables.items():
        check("long_name" in var.ncattrs(), f"{name} has long_name")
        if name in UNITS:
            check(getattr(var, "units", None) == UNITS[name], f"{name} units")
    check(ds["label"].dimensions == ("z", "y", "x"), "label dimensions")
    check(ds["displacement"].dimensions == ("load_case", "node_z", "node_y", "node_x", "component"),
          "displacement dimensions")
    check(ds["x"].axis == "X" and ds["node_z"].axis == "Z", "axis attributes")
    check(np.isclose(ds["x"][0], -1.7 + 0.05) and np.isclose(ds["node_y"][-1], 1.0),
          "coordinates are cell centres and nodes")

    label = ds["label"]
    check(list(label.flag_values) == [0, 1, 2, 200], "label flag_values")
    check(label.flag_meanings.split() == ["empty", "design_domain", "steel__S235_", "keep-out"],
          f"label flag_meanings {label.flag_meanings!r}")
    values = label[:]
    check(not np.ma.is_masked(values), "label reads unmasked")
    # Sample labels cycle 1 1 0 2 1 200 1 over e = (k*ny + j)*nx + i.
    cycle = [1, 1, 0, 2, 1, 200, 1]
    expect = np.array([cycle[e % 7] for e in range(60)]).reshape(3, 4, 5)
    check(np.array_equal(values, expect), "label is indexed (z,y,x), x fastest")
    check(label.chunking() == [3, 4, 5] and label.filters()["zlib"], "label chunked, deflated")

    role = ds["material_role"]
    check(list(role.flag_values) == [0, 1, 2], "material_role flag_values")
    check(role.flag_meanings == "design passive_solid passive_void", "material_role flag_meanings")
    check(list(ds["material_name"][:]) == ["design domain", "steel (S235)", "keep-out"],
          "material names")
    check(list(ds["load_case_name"][:]) == ["bending", "torsion ±"], "load case names")
    check(list(ds["constraint_component"].flag_values) == [0, 1, 2] and
          ds["constraint_component"].flag_meanings == "x y z", "component flags")

    # the floating-point fields: as they are by default, shuffled and
    # deflated with --deflate-fields (the same values either way)
    for name in ("density", "displacement", "density_snapshot"):
        var = ds[name]
        filters = var.filters()
        if deflated:
            check(filters["zlib"] and filters["shuffle"] and 1 <= filters["complevel"] <= 4,
                  f"{name} shuffle + deflate 1-4")
        else:
            check(not filters["zlib"], f"{name} stored without deflate")
        check(not np.ma.is_masked(var[:]), f"{name} reads unmasked")
    if deflated:
        check(ds["displacement"].chunking() == [1, 4, 5, 6, 3], "displacement chunk per case")
    snap = ds["density_snapshot"]
    check(snap.dimensions == ("snapshot", "z", "y", "x"), "density_snapshot dimensions")
    if deflated:
        check(snap.chunking() == [1, 3, 4, 5], "snapshot chunk per snapshot")
    check(list(ds["snapshot_iteration"][:]) == [1, 2], "snapshot_iteration")
    check(np.allclose(snap[1, 2, 3, 4], (0.22 * 59) % 1.0), "density_snapshot is (z,y,x), x fastest")

    group = ds.groups["optimization"]
    check(len(group.dimensions["iteration"]) == 3, "iteration dimension")
    for name, var in group.variables.items():
        check("long_name" in var.ncattrs(), f"optimization/{name} has long_name")
    for name, units in HISTORY_UNITS.items():
        check(group[name].units == units, f"optimization/{name} units")
    check(list(group["iteration"][:]) == [1, 2, 3], "iteration values")
    ds.close()


def main():
    writer = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        plain, deflated = os.path.join(tmp, "sample.nc"), os.path.join(tmp, "deflated.nc")
        subprocess.run([writer, plain], check=True)
        subprocess.run([writer, deflated, "--deflate-fields"], check=True)
        check_file(plain, False)
        check_file(deflated, True)
        a, b = netCDF4.Dataset(plain), netCDF4.Dataset(deflated)
        for name in ("density", "displacement", "density_snapshot", "label"):
            check(np.array_equal(a[name][:], b[name][:]), f"{name}: the same values deflated")
        a.close(), b.close()
        path = plain
        ncdump = shutil.which("ncdump") or "/usr/bin/ncdump"
        header = subprocess.run([ncdump, "-h", path], capture_output=True, text=True)
        check(header.returncode == 0, f"ncdump -h runs: {header.stderr}")
        check('label:flag_meanings = "empty design_domain' in header.stdout,
              "ncdump shows label flags")
        check('Conventions = "CF-1.8 voxfe-1"' in header.stdout, "ncdump shows Conventions")
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
