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
else:
    sys.exit(f"unknown kind {kind}")
