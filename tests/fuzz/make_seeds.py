# SPDX-License-Identifier: BSD-3-Clause
"""Seed inputs for the readers' fuzzers: small valid files of each format
(written here as the image tests write them), so that fuzzing starts deep in
each reader.  Usage: make_seeds.py KIND FOLDER"""

import os
import shutil
import struct
import sys
import zlib

import numpy as np

kind, folder = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "image"))
rng = np.random.default_rng(5)
vol = rng.integers(0, 300, size=(3, 4, 5))


def out(name):
    return os.path.join(folder, name)


if kind in ("problem", "model", "n88model"):
    # kept files: problem files, and small model, design and checkpoint
    # files made by the programs (n88model: those of tests/analyze too)
    corpus = os.path.join(os.path.dirname(os.path.realpath(__file__)), "corpus", kind)
    for name in sorted(os.listdir(corpus)):
        shutil.copy(os.path.join(corpus, name), out(name))
    sys.exit(0)

if kind == "aim":
    # check_images.py holds the writers of the AIM format description
    sys.argv = ["", "", ""]
    import check_images as ci
    mask = vol > 150
    log = "Mu_Scaling  8192\nHU: mu water  0.24\nDensity: slope  1600\nDensity: intercept  -390\n"
    ci.write_aim(out("short.aim"), (5, 4, 3), 0x00020002, vol.astype("<i2").tobytes(),
                 (0.1, 0.1, 0.1), log=log)
    ci.write_aim(out("v030.aim"), (5, 4, 3), 0x00160001, vol.astype("u1").tobytes(),
                 (0.1, 0.1, 0.1), v030=True)
    ci.write_aim(out("rle.aim"), (5, 4, 3), 0x00150001, ci.binary_rle(mask), (0.1, 0.1, 0.1))
    ci.write_aim(out("packed.aim"), (5, 4, 3), 0x00060001, ci.bit_packed(mask), (0.1, 0.1, 0.1))
    ci.write_aim(out("crle.aim"), (5, 4, 3), 0x00080002, ci.char_rle(vol.astype(np.int8)),
                 (0.1, 0.1, 0.1))
elif kind == "metaimage":
    head = ("ObjectType = Image\nNDims = 3\nDimSize = 5 4 3\nElementSpacing = 0.1 0.2 0.3\n"
            "Offset = 1 2 3\nElementType = MET_SHORT\n")
    open(out("plain.mha"), "wb").write((head + "ElementDataFile = LOCAL\n").encode() +
                                       vol.astype("<i2").tobytes())
    open(out("zlib.mha"), "wb").write((head + "CompressedData = True\nElementDataFile = LOCAL\n")
                                      .encode() + zlib.compress(vol.astype("<i2").tobytes()))
elif kind == "tiff":
    import tifffile
    tifffile.imwrite(out("u8.tif"), vol.astype("u1"), imagej=True, resolution=(4.0, 4.0),
                     metadata={"spacing": 0.5, "unit": "mm"})
    tifffile.imwrite(out("u16.tif"), vol.astype("u2"), compression="zlib", tile=(16, 16))
    tifffile.imwrite(out("f32.tif"), vol.astype("f4"), resolution=(100, 100),
                     resolutionunit="CENTIMETER")
elif kind == "nifti":
    import nibabel as nib
    img = nib.Nifti1Image(vol.astype(np.int16), np.diag([0.5, 0.6, 0.7, 1.0]))
    img.header.set_slope_inter(2.0, 1.0)
    nib.save(img, out("one.nii"))
    nib.save(nib.Nifti2Image(vol.astype(np.float32), np.eye(4)), out("two.nii"))
elif kind == "dicom_scan":
    data = "/usr/lib/python3/dist-packages/pydicom/data/test_files"
    for name in ["CT_small.dcm", "MR_small_RLE.dcm", "MR_small_bigendian.dcm",
                 "JPEG2000.dcm", "nested_priv_SQ.dcm", "no_meta.dcm"]:
        if os.path.exists(os.path.join(data, name)):
            shutil.copy(os.path.join(data, name), out(name))
elif kind == "mesh":
    # a tetrahedron and an open pyramid in each format; the first byte picks
    # the file type in fuzz_mesh.c (0 STL, 1 OBJ, 2 PLY, 3 OFF)
    V = [(0, 0, 0), (2, 0, 0), (0, 2, 0), (0, 0, 2), (1, 1, 1.5)]
    tet = [(0, 2, 1), (0, 1, 3), (1, 2, 3), (0, 3, 2)]
    pyramid = [(0, 1, 4), (1, 2, 4), (2, 0, 4)]
    for name, faces in (("tet", tet), ("pyramid", pyramid)):
        used = sorted({i for f in faces for i in f})
        index = {v: k for k, v in enumerate(used)}
        verts = [V[i] for i in used]
        faces = [tuple(index[i] for i in f) for f in faces]
        ascii_stl = "solid s\n" + "".join(
            "facet normal 0 0 0\nouter loop\n" +
            "".join("vertex %g %g %g\n" % verts[i] for i in f) + "endloop\nendfacet\n"
            for f in faces) + "endsolid s\n"
        open(out(name + "_ascii.stl"), "wb").write(b"\0" + ascii_stl.encode())
        binary = b"solid but binary".ljust(80, b" ") + struct.pack("<I", len(faces))
        for f in faces:
            binary += struct.pack("<3f", 0, 0, 0)
            for i in f:
                binary += struct.pack("<3f", *verts[i])
            binary += b"\0\0"
        open(out(name + "_binary.stl"), "wb").write(b"\0" + binary)
        obj = "".join("v %g %g %g\n" % v for v in verts) + "".join(
            "f %d %d %d\n" % tuple(i + 1 for i in f) for f in faces)
        open(out(name + ".obj"), "wb").write(b"\1" + obj.encode())
        ply = ("ply\nformat ascii 1.0\nelement vertex %d\nproperty float x\nproperty float y\n"
               "property float z\nelement face %d\nproperty list uchar int vertex_indices\n"
               "end_header\n" % (len(verts), len(faces)))
        ply += "".join("%g %g %g\n" % v for v in verts) + "".join(
            "3 %d %d %d\n" % f for f in faces)
        open(out(name + "_ascii.ply"), "wb").write(b"\2" + ply.encode())
        plyb = ("ply\nformat binary_little_endian 1.0\nelement vertex %d\nproperty float x\n"
                "property float y\nproperty float z\nelement face %d\n"
                "property list uchar int vertex_indices\nend_header\n"
                % (len(verts), len(faces))).encode()
        for v in verts:
            plyb += struct.pack("<3f", *v)
        for f in faces:
            plyb += struct.pack("<B3i", 3, *f)
        open(out(name + "_binary.ply"), "wb").write(b"\2" + plyb)
        off = "OFF\n%d %d 0\n" % (len(verts), len(faces)) + "".join(
            "%g %g %g\n" % v for v in verts) + "".join("3 %d %d %d\n" % f for f in faces)
        open(out(name + ".off"), "wb").write(b"\3" + off.encode())
    # found by this fuzzer: a control character in an OFF line made assimp
    # assert (import/mesh_read.c now has it validate the scene first)
    open(out("ctrl.off"), "wb").write(
        b"\3OFF\n4 4 0\n0 0 0\x1a2 0 0\n0 2 0\n0 0 2\n3 0 2 1\n3 0 1 3\n3 1 2 3\n3 0 3 2\n")
else:
    sys.exit(f"unknown kind {kind}")
