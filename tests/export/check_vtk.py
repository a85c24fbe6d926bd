#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reads back what test_export_vtk wrote, with VTK's own XML readers
(python3-vtk9), and checks it against expected.json (the models and the
sphere's surface as the C program built them): arrays, their values, the
field data (units, title), the .vtp's outward normals; also decodes the appended data by hand to check the
exact layout (UInt64 headers, 32768-byte zlib blocks, contiguous offsets).
With meshio installed, reads the files with it too.

usage: check_vtk.py OUTPUT_FOLDER    exit 0 pass, 1 fail, 77 skip (no vtk)
"""
import html
import json
import os
import re
import sys
import zlib

try:
    import numpy as np
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy
except ImportError as e:  # not every machine has python3-vtk9
    print(f"skipped: {e}")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def close(a, b, rtol, what):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=rtol * 1e-3)
    if not ok and a.shape == b.shape:
        what += f" (max difference {np.max(np.abs(a - b)):.3g})"
    elif not ok:
        what += f" (shape {a.shape} != {b.shape})"
    check(ok, what)


# VTK reports reader and parser errors through its output window: collect them.
messages = vtk.vtkStringOutputWindow()
vtk.vtkOutputWindow.SetInstance(messages)

HEX = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]])
TYPES = {"UInt8": np.uint8, "Int64": np.int64, "Float32": np.float32, "Float64": np.float64,
         "String": str}
VTK_TYPES = {np.uint8: vtk.VTK_UNSIGNED_CHAR, np.float32: vtk.VTK_FLOAT,
             np.float64: vtk.VTK_DOUBLE, np.int64: vtk.VTK_LONG_LONG}


def decode_appended(path, kind):
    """The file's arrays, decoded from the raw bytes: {name: (type, ncomp, values)},
    field data (<Array>) included; a String array's values are a list of str."""
    data = open(path, "rb").read()
    root = (f'<VTKFile type="{kind}" version="1.0" byte_order="LittleEndian" '
            'header_type="UInt64" compressor="vtkZLibDataCompressor">').encode()
    check(root in data[:300], f"{path}: root element")
    tag = b'<AppendedData encoding="raw">_'
    at = data.find(tag)
    check(at > 0, f"{path}: AppendedData")
    base = at + len(tag)
    arrays, end = {}, base
    for m in re.finditer(rb"<(?:DataArray|Array) ([^>]*)/>", data[:at]):
        pairs = re.findall(r'(\w+)="([^"]*)"', m.group(1).decode())
        attrs = {k: html.unescape(v) for k, v in pairs}
        check(attrs.get("format") == "appended", f"{path}: format of {attrs}")
        dtype = TYPES[attrs["type"]]
        pos = base + int(attrs["offset"])
        check(pos == end, f"{path}: {attrs['Name']} follows the previous array")
        nblocks, block, last = np.frombuffer(data, "<u8", 3, pos)
        sizes = np.frombuffer(data, "<u8", int(nblocks), pos + 24)
        check(block == 32768, f"{path}: block size {block}")
        pos += 24 + 8 * int(nblocks)
        raw = b""
        for i, size in enumerate(sizes):
            chunk = zlib.decompress(data[pos:pos + int(size)])
            want = int(last) if (i == nblocks - 1 and last) else 32768
            check(len(chunk) == want, f"{path}: {attrs['Name']} block {i} has {len(chunk)} bytes")
            raw += chunk
            pos += int(size)
        end = pos
        if dtype is str:  # NUL-terminated strings, one after another
            check(raw.endswith(b"\0"), f"{path}: {attrs['Name']} ends in a NUL")
            values = [v.decode() for v in raw.split(b"\0")[:-1]]
            check(len(values) == int(attrs["NumberOfTuples"]),
                  f"{path}: {attrs['Name']} NumberOfTuples")
            arrays[attrs["Name"]] = (str, 1, values)
            continue
        ncomp = int(attrs["NumberOfComponents"])
        values = np.frombuffer(raw, dtype)
        check(values.size % ncomp == 0, f"{path}: {attrs['Name']} size")
        arrays[attrs["Name"]] = (dtype, ncomp, values.reshape(-1, ncomp) if ncomp > 1 else values)
    check(re.match(rb"\s*</AppendedData>\s*</VTKFile>\s*$", data[end:]) is not None,
          f"{path}: the file ends after the last array")
    return arrays


def read(reader_class, path):
    reader = reader_class()
    reader.SetFileName(path)
    reader.Update()
    text = messages.GetOutput()  # everything VTK said so far: nothing
    check(reader.GetErrorCode() == 0 and not text.strip(), f"{path}: reader says {text!r}")
    return reader.GetOutput()


def check_array(path, data, name, dtype, expected, rtol, raw):
    array = data.GetArray(name)
    check(array is not None, f"{path}: array {name!r}")
    if array is None:
        return
    ncomp = 1 if expected.ndim == 1 else expected.shape[1]
    check(array.GetNumberOfComponents() == ncomp, f"{path}: {name} components")
    check(array.GetDataType() == VTK_TYPES[dtype], f"{path}: {name} type")
    close(vtk_to_numpy(array), expected, rtol, f"{path}: {name} values")
    check(name in raw and raw[name][0] is dtype, f"{path}: {name} in the appended data")
    if name in raw:
        close(raw[name][2], expected, rtol, f"{path}: {name} decoded by hand")


def strings(data, name):
    """The values of field data String array `name`, or None."""
    array = data.GetFieldData().GetAbstractArray(name)
    if array is None:
        return None
    return [array.GetValue(i) for i in range(array.GetNumberOfValues())]


def conditions(model):
    """Dense fixed masks and forces per node, from the sparse lists."""
    n = model["n"]
    nn = (n[0] + 1) * (n[1] + 1) * (n[2] + 1)
    fixed = np.zeros(nn, np.uint8)
    for node, comp in model["constraints"]:
        fixed[node] |= 1 << comp
    force = np.zeros((model["n_load_cases"], nn, 3))
    for node, comp, case, value in model["loads"]:
        force[case, node, comp] += value
    return fixed, force


def check_point_and_field_data(path, data, model, raw, used):
    """The point arrays (displacement, force, fixed) restricted to the nodes
    `used` (in point order), the active vectors, and the field data."""
    label, density, disp = model_arrays(model)
    fixed, force = conditions(model)
    pd = data.GetPointData()
    case_names = model["cases"] or [f"case{c + 1}" for c in range(model["n_load_cases"])]
    dnames = ["displacement_" + c for c in model["cases"]]
    fnames = ["force_" + c for c in case_names] if model["loads"] else []
    for c, name in enumerate(dnames):
        check_array(path, pd, name, np.float32, disp[c][used], 1e-6, raw)
    for c, name in enumerate(fnames):
        check_array(path, pd, name, np.float32, force[c][used], 1e-7, raw)
    if model["loads"]:
        check(np.count_nonzero(force[:, used]) > 0, f"{path}: some force is in the file")
    pnames = dnames + fnames
    if model["constraints"]:
        check_array(path, pd, "fixed", np.uint8, fixed[used], 0, raw)
        check(np.count_nonzero(fixed[used]) > 0, f"{path}: some node is fixed in the file")
        pnames.append("fixed")
    check([pd.GetArrayName(i) for i in range(pd.GetNumberOfArrays())] == pnames,
          f"{path}: point arrays {[pd.GetArrayName(i) for i in range(pd.GetNumberOfArrays())]}")
    vectors = (dnames + fnames)[:1]
    if vectors:
        check(pd.GetVectors() is not None and pd.GetVectors().GetName() == vectors[0],
              f"{path}: active vectors")
    else:
        check(pd.GetVectors() is None, f"{path}: no active vectors")

    units = {"density": "1", "label": "-", "fixed": "-"}
    units.update({name: "mm" for name in dnames})
    units.update({name: "N" for name in fnames})
    cnames = ["label"] + (["density"] if density is not None else [])
    want = ["coordinates: mm"] + [f"{name}: {units[name]}" for name in pnames + cnames]
    check(strings(data, "units") == want, f"{path}: units {strings(data, 'units')} != {want}")
    check(raw.get("units", (None, 0, None))[2] == want, f"{path}: units decoded by hand")
    title = strings(data, "title")
    check(title == ([model["title"]] if model["title"] else None), f"{path}: title {title!r}")
    names = sorted(data.GetFieldData().GetArrayName(i)
                   for i in range(data.GetFieldData().GetNumberOfArrays()))
    check(names == sorted(["units"] + (["title"] if model["title"] else [])),
          f"{path}: field data {names}")


def model_arrays(model):
    n = model["n"]
    ne, nn = n[0] * n[1] * n[2], (n[0] + 1) * (n[1] + 1) * (n[2] + 1)
    label = np.array(model["label"], dtype=np.uint8)
    density = None if model["density"] is None else np.array(model["density"])
    cases = model["cases"]
    disp = None
    if model["displacement"] is not None:
        disp = np.array(model["displacement"]).reshape(len(cases), nn, 3)
    check(label.size == ne, "expected.json: label size")
    return label, density, disp


def check_vti(model, folder):
    path = f"{folder}/{model['name']}.vti"
    raw = decode_appended(path, "ImageData")
    image = read(vtk.vtkXMLImageDataReader, path)
    nx, ny, nz = model["n"]
    check(image.GetExtent() == (0, nx, 0, ny, 0, nz), f"{path}: extent {image.GetExtent()}")
    check(image.GetSpacing() == tuple(model["h"]), f"{path}: spacing {image.GetSpacing()}")
    check(image.GetOrigin() == tuple(model["origin"]), f"{path}: origin {image.GetOrigin()}")
    label, density, disp = model_arrays(model)
    cd, pd = image.GetCellData(), image.GetPointData()
    check_array(path, cd, "label", np.uint8, label, 0, raw)
    names = ["label"]
    if density is not None:
        check_array(path, cd, "density", np.float32, density, 1e-7, raw)
        names.append("density")
        check(cd.GetScalars() is not None and cd.GetScalars().GetName() == "density",
              f"{path}: active scalars")
    check(sorted(cd.GetArrayName(i) for i in range(cd.GetNumberOfArrays())) == sorted(names),
          f"{path}: cell arrays")
    check_point_and_field_data(path, image, model, raw,
                               np.arange((nx + 1) * (ny + 1) * (nz + 1)))
    # VTK numbers an image's points x fastest, as the model does: one spot check.
    p = image.GetPoint(image.ComputePointId([nx, 1, nz]))
    close(p, np.array(model["origin"]) + np.array([nx, 1, nz]) * model["h"], 1e-12,
          f"{path}: point coordinates")


def check_vtu(model, folder):
    path = f"{folder}/{model['name']}.vtu"
    raw = decode_appended(path, "UnstructuredGrid")
    grid = read(vtk.vtkXMLUnstructuredGridReader, path)
    nx, ny, nz = model["n"]
    label, density, disp = model_arrays(model)
    keep = density >= model["threshold"] if density is not None else label != 0
    cells = np.flatnonzero(keep)
    ijk = np.stack([cells % nx, (cells // nx) % ny, cells // (nx * ny)], axis=1)
    corners = ijk[:, None, :] + HEX[None, :, :]                     # cell, corner, axis
    nodes = (corners[..., 2] * (ny + 1) + corners[..., 1]) * (nx + 1) + corners[..., 0]
    used = np.unique(nodes)                                         # ascending grid order
    check(grid.GetNumberOfCells() == cells.size, f"{path}: {grid.GetNumberOfCells()} cells")
    check(grid.GetNumberOfPoints() == used.size, f"{path}: {grid.GetNumberOfPoints()} points")
    if grid.GetNumberOfCells() != cells.size or grid.GetNumberOfPoints() != used.size:
        return
    types = vtk_to_numpy(grid.GetCellTypesArray())
    check(np.all(types == vtk.VTK_HEXAHEDRON), f"{path}: cell types")
    points = vtk_to_numpy(grid.GetPoints().GetData())
    check(grid.GetPoints().GetDataType() == vtk.VTK_DOUBLE, f"{path}: points are Float64")
    h, origin = np.array(model["h"]), np.array(model["origin"])
    uijk = np.stack([used % (nx + 1), (used // (nx + 1)) % (ny + 1),
                     used // ((nx + 1) * (ny + 1))], axis=1)
    close(points, origin + uijk * h, 1e-14, f"{path}: points in grid order")
    conn = vtk_to_numpy(grid.GetCells().GetConnectivityArray()).reshape(-1, 8)
    offsets = vtk_to_numpy(grid.GetCells().GetOffsetsArray())
    check(np.array_equal(offsets, 8 * np.arange(cells.size + 1)), f"{path}: offsets")
    # Every cell's corners, looked up through the connectivity, are the right
    # corners of its voxel in VTK_HEXAHEDRON order.
    close(points[conn], origin + corners * h, 1e-14, f"{path}: cell corners")
    check(np.array_equal(raw["connectivity"][2].reshape(-1, 8), np.searchsorted(used, nodes)),
          f"{path}: connectivity decoded by hand")
    check(raw["offsets"][0] is np.int64 and raw["types"][0] is np.uint8,
          f"{path}: cell array types")
    # VTK measures each hexahedron with positive volume: the node order is right.
    sizes = vtk.vtkCellSizeFilter()
    sizes.SetInputData(grid)
    sizes.Update()
    volume = vtk_to_numpy(sizes.GetOutput().GetCellData().GetArray("Volume"))
    close(volume, np.full(cells.size, h.prod()), 1e-12, f"{path}: cell volumes")

    cd, pd = grid.GetCellData(), grid.GetPointData()
    check_array(path, cd, "label", np.uint8, label[cells], 0, raw)
    if density is not None:
        check_array(path, cd, "density", np.float32, density[cells], 1e-7, raw)
    check_point_and_field_data(path, grid, model, raw, used)
    return cells.size, used.size


def check_vtp(sphere, folder):
    path = f"{folder}/sphere.vtp"
    raw = decode_appended(path, "PolyData")
    poly = read(vtk.vtkXMLPolyDataReader, path)
    nv, nt = sphere["vertices"], sphere["triangles"]
    check(poly.GetNumberOfPoints() == nv, f"{path}: {poly.GetNumberOfPoints()} points, not {nv}")
    check(poly.GetNumberOfPolys() == nt and poly.GetNumberOfCells() == nt,
          f"{path}: {poly.GetNumberOfPolys()} polys, not {nt}")
    if poly.GetNumberOfPoints() != nv or poly.GetNumberOfCells() != nt:
        return
    check(poly.GetPoints().GetDataType() == vtk.VTK_DOUBLE, f"{path}: points are Float64")
    vertex = np.array(sphere["vertex"]).reshape(-1, 3)
    triangle = np.array(sphere["triangle"]).reshape(-1, 3)
    points = vtk_to_numpy(poly.GetPoints().GetData())
    close(points, vertex, 0, f"{path}: points")
    polys = poly.GetPolys()
    check(np.array_equal(vtk_to_numpy(polys.GetOffsetsArray()), 3 * np.arange(nt + 1)),
          f"{path}: every poly a triangle")
    check(np.array_equal(vtk_to_numpy(polys.GetConnectivityArray()).reshape(-1, 3), triangle),
          f"{path}: triangles")
    types = {poly.GetCellType(i) for i in range(nt)}
    check(types == {vtk.VTK_TRIANGLE}, f"{path}: cell types {types}")

    pd = poly.GetPointData()
    check(pd.GetNormals() is not None and pd.GetNormals().GetName() == "normals",
          f"{path}: active normals")
    # Area-weighted vertex normals, computed here again.
    a, b, c = (vertex[triangle[:, k]] for k in range(3))
    face = np.cross(b - a, c - a)
    want = np.zeros_like(vertex)
    for k in range(3):
        np.add.at(want, triangle[:, k], face)
    want /= np.linalg.norm(want, axis=1)[:, None]
    check_array(path, pd, "normals", np.float32, want, 1e-5, raw)
    normals = vtk_to_numpy(pd.GetArray("normals")).astype(float)
    close(np.linalg.norm(normals, axis=1), np.ones(nv), 1e-6, f"{path}: unit normals")
    outward = np.einsum("ij,ij->i", normals, vertex - np.array(sphere["centre"]))
    check(np.all(outward > 0), f"{path}: {np.count_nonzero(outward <= 0)} normals point inwards")
    # and close to the radial direction of a sphere
    radial = vertex - np.array(sphere["centre"])
    radial /= np.linalg.norm(radial, axis=1)[:, None]
    cos = np.einsum("ij,ij->i", normals, radial)
    check(np.mean(cos) > 0.9, f"{path}: mean cosine to the radius {np.mean(cos):.3f}")
    check(strings(poly, "units") == ["coordinates: mm", "normals: -"],
          f"{path}: units {strings(poly, 'units')}")
    print(f"sphere.vtp: {nv} points, {nt} triangles, normals outward "
          f"(min cosine to the radius {np.min(cos):.3f})")


def check_meshio(model, folder, counts):
    try:
        import meshio
    except ImportError:
        return
    import tempfile
    path = f"{folder}/{model['name']}.vtu"
    # meshio 5 reads only <DataArray>s of numeric types, so it fails on the
    # string field data (units, title) that VTK itself writes as
    # <Array type="String">. It reads a copy without the field data: the
    # <FieldData> element and its blocks at the start of the appended data
    # cut out and the other offsets moved down; the geometry and the point
    # and cell data are the file's own bytes.
    with open(path, "rb") as f:
        raw = f.read()
    field = re.search(rb"<FieldData>.*?</FieldData>\s*", raw, re.S)
    check(field is not None, f"meshio: {path} has field data")
    offsets = [int(m) for m in re.findall(rb'<DataArray[^>]* offset="(\d+)"', raw)]
    field_offsets = [int(m) for m in re.findall(rb'<Array[^>]* offset="(\d+)"', raw)]
    cut = min(offsets)
    check(max(field_offsets) < cut, f"meshio: {path} field data first in the appended data")
    head = raw[:field.start()] + raw[field.end():]
    head = re.sub(rb'(<DataArray[^>]* offset=")(\d+)"',
                  lambda m: m.group(1) + str(int(m.group(2)) - cut).encode() + b'"', head)
    start = head.index(b"_", head.index(b"<AppendedData")) + 1
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "copy.vtu")
        with open(copy, "wb") as f:
            f.write(head[:start] + head[start + cut:])
        mesh = meshio.read(copy)
    check(mesh.points.shape == (counts[1], 3), f"meshio: {path} points")
    check([b.type for b in mesh.cells] == ["hexahedron"], f"meshio: {path} cell blocks")
    check(mesh.cells[0].data.shape == (counts[0], 8), f"meshio: {path} cells")
    check("label" in mesh.cell_data, f"meshio: {path} cell data {sorted(mesh.cell_data)}")


def main():
    folder = sys.argv[1]
    with open(f"{folder}/expected.json") as f:
        expected = json.load(f)
    models = expected["models"]
    for model in models:
        check_vti(model, folder)
        counts = check_vtu(model, folder)
        if counts:
            print(f"{model['name']}: {counts[0]} cells, {counts[1]} points")
            check_meshio(model, folder, counts)
    check_vtp(expected["sphere"], folder)
    print(f"{len(failures)} failure(s)" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
