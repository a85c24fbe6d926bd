#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""voxfe-export of an analysis result, read back by VTK's own readers.

A small porous two-material model goes through voxfe-analyze; voxfe-export
writes result.vti, result.vtu, result.json and result.csv. VTK's XML readers
(vtkXMLImageDataReader, vtkXMLUnstructuredGridReader) must find every element
field of result.nc (strain, stress as VTK symmetric tensors: XX, YY, ZZ, XY,
YZ, XZ with tensor shear strains; von Mises, strain-energy density,
effective strain; NaN off the bone in the .vti), the reactions of the
supports, the displacement, and each array's units in the field data
`units`. The summaries must give the largest displacement magnitude, von
Mises stress, strain-energy density and effective strain, and the result's
own summary (the group `results`).

usage: check_result_vtk.py VOXFE_ANALYZE VOXFE_EXPORT MAKE_MODEL DIR"""
import csv
import json
import os
import subprocess
import sys

import netCDF4
import numpy as np
import vtk
from vtk.util.numpy_support import vtk_to_numpy

analyze, export, make_model, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
os.chdir(work)
env = dict(os.environ, OMP_NUM_THREADS="2")


def run(*cmd):
    subprocess.run(cmd, check=True, env=env)


run("/usr/bin/python3", make_model, "porous", "model.nc", "6", "5", "7", "3")
run(analyze, "model.nc", "-o", "result.nc", "-q", "--device", "cpu", "--test", "uniaxial")
for out in ("result.vti", "result.vtu", "result.json", "result.csv"):
    if os.path.exists(out):
        os.remove(out)
    run(export, "result.nc", "-o", out)

with netCDF4.Dataset("result.nc") as d:
    label = np.array(d["label"][:])
    nz, ny, nx = label.shape
    elements = np.array(d["bone_element_index"][:])
    fields = {name: np.array(d[name][:], dtype=np.float64)
              for name in ("strain", "stress", "von_mises", "strain_energy_density",
                           "effective_strain")}
    units_nc = {name: d[name].units for name in fields}
    u = np.zeros(((nz + 1) * (ny + 1) * (nx + 1), 3))
    u[np.array(d["bone_node_index"][:])] = np.array(d["displacement"][0])
    c_node = np.array(d["constraint_node"][:])
    c_comp = np.array(d["constraint_component"][:])
    c_reaction = np.array(d["constraint_reaction"][:])
    results = {name: d["results"].getncattr(name) for name in d["results"].ncattrs()}
n_cells = nx * ny * nz
reaction = np.zeros_like(u)
np.add.at(reaction, (c_node, c_comp), c_reaction)

# VTK's symmetric tensor order from voxfe's Voigt order (xx yy zz yz zx xy),
# engineering shear strains halved.
vtk_order = [0, 1, 2, 5, 3, 4]
expected = {
    "strain": fields["strain"][:, vtk_order] * np.array([1, 1, 1, 0.5, 0.5, 0.5]),
    "stress": fields["stress"][:, vtk_order],
    "von_mises": fields["von_mises"],
    "strain_energy_density": fields["strain_energy_density"],
    "effective_strain": fields["effective_strain"],
}
units_expected = {"strain": "1", "stress": "MPa", "von_mises": "MPa",
                  "strain_energy_density": "MPa", "effective_strain": "1", "reaction": "N",
                  "displacement_compression": "mm"}
# the result file's own units agree with what the VTK files say
for name in fields:
    assert units_nc[name] == units_expected[name], (name, units_nc[name])


def read(reader_class, path):
    r = reader_class()
    r.SetFileName(path)
    r.Update()
    return r.GetOutput()


def units_of(data):
    a = data.GetFieldData().GetAbstractArray("units")
    assert a is not None, "no units field data"
    pairs = [a.GetValue(i).split(": ") for i in range(a.GetNumberOfValues())]
    return dict(pairs)


def close(got, want, what):
    # Float32 in the VTK file: 1e-6 relative to the field's largest value
    scale = np.nanmax(np.abs(want)) or 1.0
    bad = ~np.isclose(got, want, rtol=0, atol=1e-6 * scale, equal_nan=True)
    assert not bad.any(), f"{what}: {np.count_nonzero(bad)} values differ"


def check(data, cells, points, what):
    """cells: the grid element of each cell; points: the grid node of each point."""
    cd, pd = data.GetCellData(), data.GetPointData()
    units = units_of(data)
    for name, want_units in units_expected.items():
        assert units.get(name) == want_units, (what, name, units.get(name))
    where = np.searchsorted(elements, cells)
    where = np.minimum(where, len(elements) - 1)
    bone = elements[where] == cells
    for name, values in expected.items():
        a = cd.GetArray(name)
        assert a is not None, f"{what}: no cell array {name}"
        got = vtk_to_numpy(a).astype(np.float64)
        ncomp = 6 if name in ("strain", "stress") else 1
        assert a.GetNumberOfComponents() == ncomp, (what, name)
        got = got.reshape(len(cells), ncomp)
        want = np.full((len(cells), ncomp), np.nan)
        want[bone] = values[where[bone]].reshape(-1, ncomp)
        close(got, want, f"{what} {name}")
        if ncomp == 6:
            names = [a.GetComponentName(i) for i in range(6)]
            assert names == ["XX", "YY", "ZZ", "XY", "YZ", "XZ"], (what, name, names)
    assert cd.GetScalars().GetName() == "von_mises", what
    got = vtk_to_numpy(pd.GetArray("reaction")).astype(np.float64)
    close(got, reaction[points], f"{what} reaction")
    got = vtk_to_numpy(pd.GetArray("displacement_compression")).astype(np.float64)
    close(got, u[points], f"{what} displacement")
    return np.count_nonzero(bone)


vti = read(vtk.vtkXMLImageDataReader, "result.vti")
assert vti.GetNumberOfCells() == n_cells
n_bone = check(vti, np.arange(n_cells), np.arange(len(u)), "result.vti")
assert n_bone == len(elements) < n_cells, "the model should have empty voxels"

vtu = read(vtk.vtkXMLUnstructuredGridReader, "result.vtu")
# the grid element and node of each cell and point, from the geometry
h = 0.5
pts = vtk_to_numpy(vtu.GetPoints().GetData())
ijk = np.rint(pts / h).astype(np.int64)
points = (ijk[:, 2] * (ny + 1) + ijk[:, 1]) * (nx + 1) + ijk[:, 0]
conn = vtk_to_numpy(vtu.GetCells().GetConnectivityArray()).reshape(-1, 8)
lo = ijk[conn].min(axis=1)
cells = (lo[:, 2] * ny + lo[:, 1]) * nx + lo[:, 0]
assert vtu.GetNumberOfCells() == len(elements)
assert check(vtu, cells, points, "result.vtu") == len(elements)

# the summaries: the maxima, and the result's own numbers
mag = np.sqrt((u ** 2).sum(axis=1)).max()
maxima = {"displacement": mag, "von_mises": fields["von_mises"].max(),
          "strain_energy_density": fields["strain_energy_density"].max(),
          "effective_strain": fields["effective_strain"].max()}
summary = json.load(open("result.json"))
for name, value in maxima.items():
    got = summary["maxima"][name]
    assert abs(got - value) <= 1e-12 * value, (name, got, value)
assert summary["maxima"]["units"] == {"displacement": "mm", "von_mises": "MPa",
                                      "strain_energy_density": "MPa", "effective_strain": "1"}
for name, value in results.items():
    if name == "comment" or name.endswith("_units"):
        continue
    got = summary["results"][name]
    if isinstance(value, str):
        assert got == value, (name, got, value)
    elif np.isnan(value):
        assert got is None, (name, got)
    else:
        assert got == float(value), (name, got, value)
    if name + "_units" in results:
        assert summary["results"]["units"][name] == results[name + "_units"], name
row = list(csv.DictReader(open("result.csv")))[0]
for name, value in maxima.items():
    got = float(row["max_" + name])
    assert abs(got - value) <= 1e-12 * value, (name, got, value)
print(f"{len(elements)} bone elements of {n_cells}: fields, reactions, units and maxima "
      f"(von Mises {maxima['von_mises']:.6g} MPa, displacement {mag:.6g} mm) read back")
