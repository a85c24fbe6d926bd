# SPDX-License-Identifier: BSD-3-Clause
"""voxfe-voxelize --image, end to end: images written here with pydicom,
tifffile, nibabel and by hand (MetaImage, raw, Scanco AIM from the format
description), and the sample files Debian's python3-pydicom and
python3-nibabel ship; each run's model file read back with netCDF4 and
checked against numpy: labels, voxel size, origin, intensities.

Usage: check_images.py VOXELIZE CASE   (exit 0 pass, 1 fail, 77 skipped)
"""

import gzip
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
    import netCDF4
except ImportError as e:  # the system packages are missing: skip
    print(f"skipped: {e}")
    sys.exit(77)

VOXELIZE = os.path.realpath(sys.argv[1])
CASE = sys.argv[2]
FIXTURES = os.path.realpath(sys.argv[3]) if len(sys.argv) > 3 else ""
PYDICOM_FILES = "/usr/lib/python3/dist-packages/pydicom/data/test_files"
NIBABEL_DATA = "/usr/lib/python3/dist-packages/nibabel/tests/data"

# Supports and loads on the nodes of label 1, which every segmentation here
# has: they fit any segmented shape (the tests check the geometry, not the
# mechanics).
PROBLEM = """voxfe-problem: 1
material: {E: 1000, nu: 0.3}
supports:
  - name: held
    region: {label: 1}
    fix: [x, y, z]
loads:
  - name: pushed
    region: {label: 1}
    force: [0, 0, -1]
"""

FAILURES = []


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def run(*args):
    p = subprocess.run([VOXELIZE, *map(str, args), "-p", "problem.yaml"], capture_output=True,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def voxelize(*args, out="model.nc"):
    """Runs voxelize and reads its model; fails the case when it does not run."""
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = run(*args, "-o", out)
    if rc != 0:
        check(False, f"{' '.join(map(str, args))}: exit {rc}: {se.strip()}")
        return None
    check(so == "" and se == "", f"printed something: {so!r} {se!r}")
    with netCDF4.Dataset(out) as ds:
        m = {
            "label": np.array(ds["label"][:]),  # (z, y, x)
            "voxel_size": np.array(ds.getncattr("voxel_size")),
            "origin": np.array(ds.getncattr("origin")),
        }
        if "intensity" in ds.variables:
            m["intensity"] = np.array(ds["intensity"][:])
            m["intensity_units"] = ds["intensity"].units
    return m


def expect_bad(args, words, out="bad.nc"):
    """A bad input: exit 2, one line naming the file and the cause, no output."""
    rc, so, se = run(*args, "-o", out)
    lines = se.strip().splitlines()
    check(rc == 2, f"{args}: exit {rc}, expected 2 ({se.strip()})")
    check(len(lines) == 1, f"{args}: {len(lines)} lines on stderr: {se!r}")
    for w in words:
        check(w in se, f"{args}: message lacks '{w}': {se.strip()}")
    check(not os.path.exists(out), f"{args}: wrote {out}")
    check(not [f for f in os.listdir(".") if f.startswith(".bad.nc") or f.startswith("bad.nc")],
          f"{args}: left a temporary file")


def close(a, b, tol=1e-6):
    return np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=0, atol=tol)


def check_grid(m, spacing, first_centre, what):
    """The model's grid: voxel size, and its origin (a corner) half a voxel
    before the first voxel's centre that the file gives."""
    check(close(m["voxel_size"], spacing), f"{what}: voxel size {m['voxel_size']} != {spacing}")
    corner = np.asarray(first_centre, float) - 0.5 * np.asarray(spacing, float)
    check(close(m["origin"], corner, 1e-4), f"{what}: origin {m['origin']} != {corner}")


def check_labels(m, expected, what):
    got = m["label"]
    if got.shape != expected.shape:
        check(False, f"{what}: label shape {got.shape} != {expected.shape}")
        return
    bad = int(np.count_nonzero(got != expected))
    check(bad == 0, f"{what}: {bad} of {got.size} labels differ")


def test_volume(shape_zyx, seed=1, lo=0, hi=1000):
    rng = np.random.default_rng(seed)
    return rng.integers(lo, hi, size=shape_zyx)


# --- DICOM ------------------------------------------------------------------------


def write_dicom_series(folder, vol, spacing_xyz, origin, slope=1.0, intercept=0.0, names=None,
                       skip=()):
    """One CT slice a file; file names shuffled so that their order is not
    the slices' order; positions along z."""
    import pydicom
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    os.makedirs(folder, exist_ok=True)
    series = generate_uid()
    nz = vol.shape[0]
    order = list(range(nz))
    random.Random(7).shuffle(order)
    for rank, k in enumerate(order):
        if k in skip:
            continue
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        name = names(k) if names else f"im{rank:03d}"
        ds = FileDataset(os.path.join(folder, name), {}, file_meta=meta, preamble=b"\0" * 128)
        ds.is_little_endian = True
        ds.is_implicit_VR = False
        ds.SOPClassUID = meta.MediaStorageSOPClassUID
        ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
        ds.Modality = "CT"
        ds.SeriesInstanceUID = series
        ds.InstanceNumber = rank + 1  # deliberately not the slice order
        ds.ImagePositionPatient = [origin[0], origin[1], origin[2] + k * spacing_xyz[2]]
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.PixelSpacing = [spacing_xyz[1], spacing_xyz[0]]  # rows (y), then columns (x)
        ds.SliceThickness = spacing_xyz[2]
        ds.RescaleSlope = slope
        ds.RescaleIntercept = intercept
        ds.Rows, ds.Columns = vol.shape[1], vol.shape[2]
        ds.SamplesPerPixel = 1
        ds.PhotometricInterpretation = "MONOCHROME2"
        ds.BitsAllocated = 16
        ds.BitsStored = 16
        ds.HighBit = 15
        ds.PixelRepresentation = 1
        ds.PixelData = vol[k].astype("<i2").tobytes()
        ds.save_as(os.path.join(folder, name), write_like_original=False)


def case_dicom_series():
    vol = test_volume((9, 7, 11), lo=-200, hi=600)  # stored values, z y x
    spacing = (0.3, 0.4, 0.7)
    origin = (10.0, -20.0, 5.5)
    write_dicom_series("series", vol, spacing, origin, slope=2.0, intercept=-1024.0)
    hu = vol * 2.0 - 1024.0
    m = voxelize("--image", "series", "--threshold", "-300", "--threshold-units", "hu",
                 "--keep-intensity")
    if m:
        check_grid(m, spacing, origin, "series")
        check_labels(m, (hu >= -300).astype(np.uint8), "series threshold in HU")
        check(close(m["intensity"], hu, 1e-3), "series: intensities are not the rescaled HU")
        check(m["intensity_units"] == "HU", f"series: intensity units {m['intensity_units']}")
    # slices in reverse order along the normal: the same volume
    write_dicom_series("reverse", vol[::-1], (0.3, 0.4, -0.7), (10.0, -20.0, 5.5 + 8 * 0.7),
                       slope=2.0, intercept=-1024.0)
    m = voxelize("--image", "reverse", "--threshold", "-300")
    if m:
        check_grid(m, spacing, origin, "reverse series")
        check_labels(m, (hu >= -300).astype(np.uint8), "reverse series")


def case_dicom_bits_stored():
    """12 of 16 bits stored, the other 4 holding junk (overlays): only the
    stored bits count, signed when PixelRepresentation is 1."""
    import pydicom

    rng = np.random.default_rng(9)
    for signed in (0, 1):
        value = rng.integers(-2048 if signed else 0, 2048 if signed else 4096, size=(6, 7))
        junk = rng.integers(0, 16, size=value.shape) << 12
        stored = (value & 0xFFF) | junk
        write_dicom_series(f"b{signed}", np.zeros((1, 6, 7), np.int16), (0.5, 0.5, 0.5), (0, 0, 0))
        name = os.path.join(f"b{signed}", os.listdir(f"b{signed}")[0])
        ds = pydicom.dcmread(name)
        ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 12, 11, signed
        ds.PixelData = stored.astype("<u2").tobytes()
        ds.save_as(name, write_like_original=False)
        m = voxelize("--image", name, "--threshold", "-5000", "--keep-intensity")
        if m:
            check(close(m["intensity"][0], value),
                  f"BitsStored 12, signed {signed}: values differ")


def case_dicom_gap():
    vol = test_volume((8, 5, 6))
    write_dicom_series("gap", vol, (0.5, 0.5, 1.0), (0, 0, 0), skip=(4,))
    expect_bad(["--image", "gap", "--threshold", "100"], ["gap", "irregular slice spacing"])
    # the sample series with an irregular gap that Debian ships
    ct2 = os.path.join(PYDICOM_FILES, "dicomdirtests/77654033/CT2")
    expect_bad(["--image", ct2, "--threshold", "0"], ["CT2", "irregular slice spacing"])


def case_dicom_mixed_spacing():
    """A series whose slices differ in pixel spacing has no one voxel size:
    refused, naming both spacings and slices; rounding of the decimal
    strings (0.5 against 0.50001) is not a difference."""
    import pydicom

    vol = test_volume((5, 4, 6))
    write_dicom_series("mixed", vol, (0.5, 0.5, 1.0), (0, 0, 0))
    names = sorted(os.listdir("mixed"))
    odd = pydicom.dcmread(os.path.join("mixed", names[2]))
    odd.PixelSpacing = [0.5, 0.7]
    odd.save_as(os.path.join("mixed", names[2]), write_like_original=False)
    expect_bad(["--image", "mixed", "--threshold", "100"],
               [names[2], "pixel spacing", "0.5 x 0.7 mm", "0.5 x 0.5 mm"])
    odd.PixelSpacing = [0.5, 0.50001]
    odd.save_as(os.path.join("mixed", names[2]), write_like_original=False)
    m = voxelize("--image", "mixed", "--threshold", "100")
    if m:
        check_grid(m, (0.5, 0.5, 1.0), (0, 0, 0), "spacing within rounding")


def case_dicom_samples():
    import pydicom

    # five slices stored in reverse order
    folder = os.path.join(PYDICOM_FILES, "dicomdirtests/98892001/CT5N")
    slices = [pydicom.dcmread(os.path.join(folder, f)) for f in os.listdir(folder)]
    slices.sort(key=lambda d: float(d.ImagePositionPatient[2]))
    hu = np.stack([d.pixel_array * float(d.RescaleSlope) + float(d.RescaleIntercept)
                   for d in slices])
    m = voxelize("--image", folder, "--threshold", "-500", "--keep-intensity")
    if m:
        d = slices[0]
        dz = float(slices[1].ImagePositionPatient[2]) - float(d.ImagePositionPatient[2])
        check_grid(m, (float(d.PixelSpacing[1]), float(d.PixelSpacing[0]), dz),
                   [float(v) for v in d.ImagePositionPatient], "CT5N")
        check(close(m["intensity"], hu, 1e-3), "CT5N: intensities differ from pydicom's")
        check_labels(m, (hu >= -500).astype(np.uint8), "CT5N")
    # compressed transfer syntaxes: lossless ones give MR_small's pixels
    ref = pydicom.dcmread(os.path.join(PYDICOM_FILES, "MR_small.dcm")).pixel_array.astype(float)
    for name in ["MR_small_RLE.dcm", "MR_small_jpeg_ls_lossless.dcm", "MR_small_jp2klossless.dcm",
                 "MR_small_bigendian.dcm", "MR_small_implicit.dcm", "MR_small_expb.dcm"]:
        m = voxelize("--image", os.path.join(PYDICOM_FILES, name), "--threshold", "500",
                     "--keep-intensity")
        if m:
            check(close(m["intensity"][0], ref), f"{name}: pixels differ from MR_small.dcm")
    # a JPEG 2000 (lossy) CT, 512 x 512: read and in the range of CT numbers
    m = voxelize("--image", os.path.join(PYDICOM_FILES, "693_J2KI.dcm"), "--threshold", "200",
                 "--threshold-units", "hu", "--keep-intensity")
    if m:
        check(m["label"].shape == (1, 512, 512), f"693_J2KI: shape {m['label'].shape}")
        lo, hi = float(m["intensity"].min()), float(m["intensity"].max())
        # (lossy: the padding outside the scan field overshoots a little)
        check(-4100 < lo < -900 and 500 < hi < 4000, f"693_J2KI: HU range {lo}..{hi}")
    m = voxelize("--image", os.path.join(PYDICOM_FILES, "CT_small.dcm"), "--threshold", "0",
                 "--keep-intensity")
    if m:
        d = pydicom.dcmread(os.path.join(PYDICOM_FILES, "CT_small.dcm"))
        hu = d.pixel_array * float(d.RescaleSlope) + float(d.RescaleIntercept)
        check(close(m["intensity"][0], hu, 1e-3), "CT_small: pixels differ from pydicom's")


def case_dicom_bad():
    import pydicom
    from pydicom.encaps import encapsulate

    expect_bad(["--image", os.path.join(PYDICOM_FILES, "MR_truncated.dcm"), "--threshold", "0"],
               ["MR_truncated.dcm", "truncated"])
    # a series with one file cut short
    vol = test_volume((4, 6, 6))
    write_dicom_series("cut", vol, (1, 1, 1), (0, 0, 0))
    victim = os.path.join("cut", sorted(os.listdir("cut"))[1])
    data = open(victim, "rb").read()
    open(victim, "wb").write(data[: len(data) - 20])
    expect_bad(["--image", "cut", "--threshold", "0"], [victim.split("/")[-1], "truncated"])
    # a transfer syntax no codec decodes (MPEG-2)
    ds = pydicom.dcmread(os.path.join(PYDICOM_FILES, "CT_small.dcm"))
    ds.file_meta.TransferSyntaxUID = "1.2.840.10008.1.2.4.100"
    ds.PixelData = encapsulate([b"\x00\x00\x01\xb3" + bytes(200)])
    ds["PixelData"].is_undefined_length = True
    ds.save_as("mpeg2.dcm", write_like_original=False)
    expect_bad(["--image", "mpeg2.dcm", "--threshold", "0"], ["mpeg2.dcm", "decode"])
    # a transfer syntax GDCM has never heard of
    ds = pydicom.dcmread(os.path.join(PYDICOM_FILES, "CT_small.dcm"))
    ds.file_meta.TransferSyntaxUID = "1.2.3.4.5"
    ds.save_as("unknown.dcm", write_like_original=False)
    expect_bad(["--image", "unknown.dcm", "--threshold", "0"],
               ["unknown.dcm", "unknown transfer syntax 1.2.3.4.5"])
    # not DICOM at all
    open("junk.dcm", "wb").write(b"\0" * 128 + b"DICM" + bytes(range(256)) * 4)
    expect_bad(["--image", "junk.dcm", "--threshold", "0"], ["junk.dcm"])


# --- TIFF -------------------------------------------------------------------------


def case_tiff():
    import tifffile

    for dtype in ["uint8", "uint16", "float32"]:
        vol = test_volume((6, 5, 7), lo=0, hi=250).astype(dtype)
        # ImageJ hyperstack: pixel size 0.25 mm, slices 0.5 mm apart
        tifffile.imwrite(f"stack_{dtype}.tif", vol, imagej=True, resolution=(4.0, 4.0),
                         metadata={"spacing": 0.5, "unit": "mm"})
        m = voxelize("--image", f"stack_{dtype}.tif", "--threshold", "100")
        if m:
            check_grid(m, (0.25, 0.25, 0.5), (0.125, 0.125, 0.25), f"ImageJ TIFF {dtype}")
            check_labels(m, (vol >= 100).astype(np.uint8), f"TIFF {dtype}")
    for dtype in ["int32", "uint32", "int16"]:
        vol = test_volume((3, 4, 5), lo=-1000, hi=70000 if dtype != "int16" else 30000)
        vol = vol.astype(dtype) if dtype != "uint32" else np.abs(vol).astype(dtype)
        # resolution in pixels per centimetre: 0.1 mm pixels, slices as wide
        tifffile.imwrite(f"plain_{dtype}.tif", vol, resolution=(100, 100),
                         resolutionunit="CENTIMETER", photometric="minisblack")
        m = voxelize("--image", f"plain_{dtype}.tif", "--threshold", "500")
        if m:
            check_grid(m, (0.1, 0.1, 0.1), (0.05, 0.05, 0.05), f"TIFF {dtype}")
            check_labels(m, (vol >= 500).astype(np.uint8), f"TIFF {dtype}")
    # a folder of slices in natural order (slice2 before slice10), tiled pages
    vol = test_volume((11, 6, 40), lo=0, hi=1000).astype("uint16")
    os.makedirs("slices")
    for k in range(vol.shape[0]):
        tifffile.imwrite(f"slices/slice{k + 1}.tif", vol[k], resolution=(200, 200),
                         resolutionunit="CENTIMETER", tile=(16, 16))
    m = voxelize("--image", "slices", "--threshold", "300")
    if m:
        check_grid(m, (0.05, 0.05, 0.05), (0.025, 0.025, 0.025), "TIFF folder")
        check_labels(m, (vol >= 300).astype(np.uint8), "TIFF folder")
    # a SkyScan reconstruction log beside the slices gives the pixel size
    open("slices/scan_rec.log", "w").write("[Reconstruction]\nPixel Size (um)=12.5\n")
    m = voxelize("--image", "slices", "--threshold", "300")
    if m:
        check_grid(m, (0.0125,) * 3, (0.00625,) * 3, "TIFF folder with a SkyScan log")
        check_labels(m, (vol >= 300).astype(np.uint8), "TIFF folder with a SkyScan log")
    # no pixel size in the file: --voxel-size is needed
    tifffile.imwrite("nosize.tif", vol)
    expect_bad(["--image", "nosize.tif", "--threshold", "300"], ["nosize.tif", "--voxel-size"])
    m = voxelize("--image", "nosize.tif", "--threshold", "300", "--voxel-size", "0.2,0.3,0.4")
    if m:
        check_grid(m, (0.2, 0.3, 0.4), (0.1, 0.15, 0.2), "TIFF with --voxel-size")
    data = open("slices/slice3.tif", "rb").read()
    open("slices/slice3.tif", "wb").write(data[: len(data) // 2])
    expect_bad(["--image", "slices", "--threshold", "300"], ["slice3.tif"])


# --- NIfTI ------------------------------------------------------------------------


def case_nifti():
    import nibabel as nib

    vol = test_volume((5, 6, 7), lo=-100, hi=900).astype(np.int16)
    data_xyz = np.ascontiguousarray(vol.transpose(2, 1, 0))  # nibabel indexes x, y, z
    affine = np.diag([0.5, 0.6, 0.7, 1.0])
    affine[:3, 3] = [-3.0, 4.0, 12.5]
    for cls, name in [(nib.Nifti1Image, "one.nii.gz"), (nib.Nifti2Image, "two.nii")]:
        img = cls(data_xyz, affine)
        img.header.set_xyzt_units("mm")
        img.header.set_slope_inter(2.0, 10.0)
        nib.save(img, name)
        m = voxelize("--image", name, "--threshold", "500", "--keep-intensity")
        if m:
            check_grid(m, (0.5, 0.6, 0.7), (-3.0, 4.0, 12.5), name)
            check(close(m["intensity"], vol * 2.0 + 10.0, 1e-3), f"{name}: scaling not applied")
            check_labels(m, (vol * 2.0 + 10.0 >= 500).astype(np.uint8), name)
    # a NIfTI-2 extension that runs to a voxel offset far past the file's end
    # (found by the fuzzer): one line, not a gigabyte asked of nifticlib
    raw = bytearray(open("two.nii", "rb").read())
    raw[168:176] = struct.pack("<q", 1 << 30)  # vox_offset
    raw[540] = 1  # extensions follow
    raw[544:552] = struct.pack("<ii", (1 << 30) - 1024, 0)
    open("ext.nii", "wb").write(raw)
    expect_bad(["--image", "ext.nii", "--threshold", "500"], ["ext.nii", "extension"])
    # micrometre units
    img = nib.Nifti1Image(data_xyz, np.diag([50.0, 50.0, 50.0, 1.0]))
    img.header.set_xyzt_units("micron")
    nib.save(img, "micron.nii")
    m = voxelize("--image", "micron.nii", "--threshold", "500")
    if m:
        check_grid(m, (0.05, 0.05, 0.05), (0, 0, 0), "micron NIfTI")
    # Debian's big-endian sample
    sample = os.path.join(NIBABEL_DATA, "anatomical.nii")
    ref = nib.load(sample)
    values = np.asarray(ref.get_fdata()).transpose(2, 1, 0)
    m = voxelize("--image", sample, "--threshold", "100", "--keep-intensity")
    if m:
        check(close(m["intensity"], values, 1e-3), "anatomical.nii: values differ from nibabel's")
        check(close(m["voxel_size"], ref.header.get_zooms()[:3]), "anatomical.nii: voxel size")
    data = open("two.nii", "rb").read()
    open("cut.nii", "wb").write(data[: len(data) - 50])
    expect_bad(["--image", "cut.nii", "--threshold", "0"], ["cut.nii", "truncated"])
    open("junk.nii", "wb").write(bytes(400))
    expect_bad(["--image", "junk.nii", "--threshold", "0"], ["junk.nii"])


# --- MetaImage and raw ---------------------------------------------------------------


def case_metaimage():
    vol = test_volume((4, 5, 6), lo=-500, hi=1500).astype("<i2")
    vol.tofile("vol.raw")
    with open("vol.mhd", "w") as f:
        f.write("ObjectType = Image\nNDims = 3\nDimSize = 6 5 4\n"
                "ElementSpacing = 0.1 0.2 0.3\nOffset = 1 2 3\n"
                "ElementType = MET_SHORT\nElementByteOrderMSB = False\nElementDataFile = vol.raw\n")
    m = voxelize("--image", "vol.mhd", "--threshold", "700", "--keep-intensity")
    if m:
        check_grid(m, (0.1, 0.2, 0.3), (1, 2, 3), "mhd")
        check_labels(m, (vol >= 700).astype(np.uint8), "mhd")
    # one file, zlib-compressed big-endian floats
    fvol = (test_volume((3, 4, 5), lo=0, hi=100) / 7).astype(">f4")
    header = ("ObjectType = Image\nNDims = 3\nDimSize = 5 4 3\nElementSpacing = 1 1 2\n"
              "ElementType = MET_FLOAT\nBinaryDataByteOrderMSB = True\nCompressedData = True\n"
              "ElementDataFile = LOCAL\n")
    with open("vol.mha", "wb") as f:
        f.write(header.encode() + zlib.compress(fvol.tobytes()))
    m = voxelize("--image", "vol.mha", "--threshold", "7", "--keep-intensity")
    if m:
        check_grid(m, (1, 1, 2), (0, 0, 0), "mha")
        check(close(m["intensity"], fvol.astype(float), 1e-5), "mha: values differ")
    # samples of insighttoolkit5-examples: a 3D image with an external .raw,
    # and a compressed .zraw (CompressedDataSize) against its plain twin
    itk = "/usr/share/doc/insighttoolkit5-examples/examples/Data"
    if os.path.isdir(itk):
        raw = np.fromfile(os.path.join(itk, "BrainProtonDensity3Slices.raw"), np.uint8)
        m = voxelize("--image", os.path.join(itk, "BrainProtonDensity3Slices.mha"),
                     "--threshold", "100", "--keep-intensity")
        if m:
            check(close(m["intensity"].ravel(), raw), "ITK BrainProtonDensity3Slices: values")
            check(m["label"].shape == (3, 217, 181), "ITK BrainProtonDensity3Slices: shape")
        plain = np.fromfile(os.path.join(itk, "BrainProtonDensitySliceBorder20.raw"), np.uint8)
        m = voxelize("--image", os.path.join(itk, "BrainProtonDensitySliceBorder20DirectionPlus30"
                                                  ".mhd"), "--threshold", "100", "--keep-intensity")
        if m:
            check(close(m["intensity"].ravel(), plain), "ITK .zraw: values differ from the .raw")
    os.truncate("vol.raw", vol.nbytes - 10)
    expect_bad(["--image", "vol.mhd", "--threshold", "0"], ["vol.raw", "truncated"])
    with open("bad.mhd", "w") as f:
        f.write("NDims = 3\nDimSize = 6 5\nElementType = MET_SHORT\nElementDataFile = vol.raw\n")
    expect_bad(["--image", "bad.mhd", "--threshold", "0"], ["bad.mhd", "DimSize"])


def case_bad_geometry():
    """Voxel sizes and origins that make no grid (Inf, NaN, 1e308, 1e-320),
    from a MetaImage header or the command line: exit 2, one line naming the
    file (or the option) and the value, no model."""
    vol = test_volume((2, 3, 4), lo=0, hi=1000).astype("<i2")
    vol.tofile("g.raw")

    def mhd(name, spacing="1 1 1", offset="0 0 0"):
        with open(name, "w") as f:
            f.write(f"NDims = 3\nDimSize = 4 3 2\nElementSpacing = {spacing}\n"
                    f"Offset = {offset}\nElementType = MET_SHORT\nElementDataFile = g.raw\n")

    for i, spacing in enumerate(("1e999 1 1", "nan 1 1", "1 1e308 1", "1 1 1e-320", "0 1 1")):
        mhd(f"s{i}.mhd", spacing=spacing)
        expect_bad(["--image", f"s{i}.mhd", "--threshold", "500"], [f"s{i}.mhd", "ElementSpacing"])
    for i, offset in enumerate(("nan 0 0", "0 inf 0", "0 0 -1e300")):
        mhd(f"o{i}.mhd", offset=offset)
        expect_bad(["--image", f"o{i}.mhd", "--threshold", "500"], [f"o{i}.mhd", "Offset"])
    mhd("good.mhd")
    for size in ("1e308", "1e-320", "inf", "nan", "1,1,1e7"):
        expect_bad(["--image", "good.mhd", "--threshold", "500", "--voxel-size", size],
                   ["--voxel-size", size])
    for origin in ("nan,0,0", "0,inf,0", "0,0,1e300"):
        expect_bad(["--image", "good.mhd", "--threshold", "500", "--origin", origin],
                   ["--origin", origin])
    # downsampling multiplies the file's voxel size past the bound
    mhd("big.mhd", spacing="6e5 6e5 6e5")
    expect_bad(["--image", "big.mhd", "--threshold", "500", "--downsample", "2"],
               ["big.mhd", "--downsample 2", "1.2e+06 mm"])


def case_raw():
    vol = test_volume((4, 3, 5), lo=0, hi=60000).astype(">u2")
    open("vol.bin", "wb").write(b"HEADER" + vol.tobytes())
    m = voxelize("--image", "vol.bin", "--raw-size", "5x3x4", "--raw-type", "uint16",
                 "--raw-big-endian", "--raw-header", "6", "--voxel-size", "0.5",
                 "--threshold", "30000", "--origin", "1,2,3")
    if m:
        check(close(m["voxel_size"], (0.5, 0.5, 0.5)), "raw: voxel size")
        check(close(m["origin"], (1, 2, 3)), "raw: --origin is the grid's corner")
        check_labels(m, (vol >= 30000).astype(np.uint8), "raw")
    expect_bad(["--image", "vol.bin", "--raw-size", "5x3x5", "--raw-type", "uint16",
                "--voxel-size", "1", "--threshold", "0"], ["vol.bin", "bytes"])
    expect_bad(["--image", "vol.bin", "--raw-size", "5x3x4", "--raw-header", "6",
                "--threshold", "0"], ["vol.bin", "--voxel-size"])
    # usage: no threshold, two geometries, bad option values
    expect_bad(["--image", "vol.bin", "--raw-size", "5x3x4", "--voxel-size", "1"], ["--threshold"])
    expect_bad(["--image", "vol.bin", "--box", "2x2x2", "--voxel-size", "1", "--threshold", "1"],
               ["--box", "--image"])
    expect_bad(["--image", "vol.bin", "--threshold", "5,2"], ["increase"])
    expect_bad(["--image", "vol.bin", "--threshold", "1", "--roi", "3:1,0:2,0:2"], ["--roi"])
    expect_bad(["--image", "missing.nii", "--threshold", "1"], ["missing.nii"])


# --- Scanco AIM ---------------------------------------------------------------------


def vax_float(x):
    """The 4 bytes of a VAX F-float: IEEE bits of 4x, 16-bit halves swapped
    (the inverse of FORMATS.md's decoding)."""
    w = struct.unpack("<I", struct.pack("<f", 4.0 * x))[0]
    b0, b1, b2, b3 = (w >> 16) & 0xFF, (w >> 24) & 0xFF, w & 0xFF, (w >> 8) & 0xFF
    return bytes([b0, b1, b2, b3])


def write_aim(path, dims, type_code, data, element_mm, position=(0, 0, 0), log="", v030=False):
    log_bytes = log.encode()
    if not v030:
        st = struct.pack("<6i", 0x00010000, 0, 0, 0, 0, type_code)
        for triplet in [position, dims, (0, 0, 0), (0, 0, 0), (0, 0, 0), dims, (0, 0, 0)]:
            st += struct.pack("<3i", *triplet)
        st += b"".join(vax_float(e) for e in element_mm) + bytes(20)
        assert len(st) == 140
        pre = struct.pack("<5i", 20, 140, len(log_bytes), len(data), 0)
        out = pre + st + log_bytes + data
    else:
        st = struct.pack("<4i", 0x00030000, 0, 0, type_code)
        for triplet in [position, dims, (0, 0, 0), (0, 0, 0), (0, 0, 0), dims, (0, 0, 0)]:
            st += struct.pack("<3q", *triplet)
        st += struct.pack("<3q", *[round(e * 1e6) for e in element_mm]) + bytes(16)
        pre = struct.pack("<5q", 40, len(st), len(log_bytes), len(data), 0)
        out = b"AIMDATA_V030   \0" + pre + st + log_bytes + data
    open(path, "wb").write(out)


def binary_rle(mask, values=(0, 127), word=4):
    """Runs of alternating values (a byte each, 255 = 254 without a switch)."""
    flat = mask.ravel()
    out = bytearray(bytes(word) + bytes(values))
    i, current = 0, 0
    while i < flat.size:
        j = i
        while j < flat.size and flat[j] == current:
            j += 1
        run = j - i
        while run > 254:
            out.append(255)
            run -= 254
        out.append(run)
        current ^= 1
        i = j
    return bytes(out)


def char_rle(vol, word=4):
    out = bytearray(bytes(word))
    flat = vol.ravel()
    i = 0
    while i < flat.size:
        j = i
        while j < flat.size and j - i < 255 and flat[j] == flat[i]:
            j += 1
        out += bytes([j - i, int(flat[i]) & 0xFF])
        i = j
    return bytes(out)


def bit_packed(mask, value=127):
    nz, ny, nx = mask.shape
    bx, by, bz = (nx + 1) // 2, (ny + 1) // 2, (nz + 1) // 2
    out = bytearray(bx * by * bz + 1)
    for k, j, i in zip(*np.nonzero(mask)):
        out[((k // 2) * by + j // 2) * bx + i // 2] |= 1 << ((i & 1) | (j & 1) << 1 | (k & 1) << 2)
    out[-1] = value
    return bytes(out)


def case_aim():
    vol = test_volume((5, 6, 7), lo=-1000, hi=8000).astype("<i2")
    log = ("! a processing log\nMu_Scaling                    8192\n"
           "HU: mu water                  0.24090\n"
           "Density: unit                 mg HA/ccm\n"
           "Density: slope                1603.51904\n"
           "Density: intercept            -391.209015\n")
    write_aim("short.aim", (7, 6, 5), 0x00020002, vol.tobytes(), (0.082, 0.082, 0.082),
              position=(10, 20, 30), log=log)
    density = vol * (1603.51904 / 8192) - 391.209015
    m = voxelize("--image", "short.aim", "--threshold", "450", "--threshold-units", "density",
                 "--keep-intensity")
    if m:
        # position x element size is the first voxel's corner (n88modelgenerator's)
        check_grid(m, (0.082,) * 3, (0.861, 1.681, 2.501), "AIM v020")
        check_labels(m, (density >= 450).astype(np.uint8), "AIM v020 density")
        check(close(m["intensity"], density, 0.05), "AIM v020: density values")
    hu = 1000 * (vol / 8192 - 0.24090) / 0.24090
    m = voxelize("--image", "short.aim", "--threshold", "3000", "--threshold-units", "hu")
    if m:
        check_labels(m, (hu >= 3000).astype(np.uint8), "AIM v020 HU")
    # v030: int64 fields, the element size an int64 times 1e-6 mm
    write_aim("v030.aim", (7, 6, 5), 0x00020002, vol.tobytes(), (0.0607, 0.0607, 0.0607),
              position=(1, 2, 3), v030=True)
    m = voxelize("--image", "v030.aim", "--threshold", "2000")
    if m:
        check_grid(m, (0.0607,) * 3, (0.09105, 0.15175, 0.21245), "AIM v030")
        check_labels(m, (vol >= 2000).astype(np.uint8), "AIM v030")
    # the compressed binary types of segmented AIMs
    mask = test_volume((5, 9, 300), lo=0, hi=2).astype(bool)
    mask[:, :, 100:] = True  # long runs (> 254) to exercise the 255 code
    for name, code, data in [("rle.aim", 0x00150001, binary_rle(mask)),
                             ("packed.aim", 0x00060001, bit_packed(mask))]:
        write_aim(name, (300, 9, 5), code, data, (0.1, 0.1, 0.1))
        m = voxelize("--image", name, "--threshold", "1")
        if m:
            check_labels(m, mask.astype(np.uint8), name)
    cvol = (mask * 100 - 50).astype(np.int8)
    write_aim("crle.aim", (300, 9, 5), 0x00080002, char_rle(cvol), (0.1, 0.1, 0.1))
    m = voxelize("--image", "crle.aim", "--threshold", "0", "--keep-intensity")
    if m:
        check(close(m["intensity"], cvol.astype(float)), "char run-length AIM: values")
    data = open("short.aim", "rb").read()
    open("cut.aim", "wb").write(data[:-100])
    expect_bad(["--image", "cut.aim", "--threshold", "0"], ["cut.aim", "truncated"])
    write_aim("badrle.aim", (300, 9, 5), 0x00150001, binary_rle(mask)[:-30], (0.1, 0.1, 0.1))
    expect_bad(["--image", "badrle.aim", "--threshold", "1"], ["badrle.aim", "run lengths"])
    write_aim("nocal.aim", (7, 6, 5), 0x00020002, vol.tobytes(), (0.1, 0.1, 0.1))
    expect_bad(["--image", "nocal.aim", "--threshold", "0", "--threshold-units", "density"],
               ["nocal.aim", "calibration"])
    # two axes whose product wraps 64 bits to 0 (found by the fuzzer): refused,
    # not an empty allocation that the voxels then overrun
    write_aim("wrap.aim", (1 << 32, 1 << 32, 1), 0x00020002, bytes(64), (0.1, 0.1, 0.1),
              v030=True)
    expect_bad(["--image", "wrap.aim", "--threshold", "0"], ["wrap.aim", "too large"])


def case_aim_nifti_fixture():
    """The fixtures' HR-pQCT scan (Scanco AIM): its grid's corner where
    n88modelgenerator put it (the smallest node coordinate of the model it
    made from the same file), and the same scan as a NIfTI written by nibabel
    (voxel centres at that corner plus half a voxel, the NIfTI convention)
    gives the same grid and labels."""
    import nibabel

    aim = os.path.join(FIXTURES, "n88", "test25a.aim")
    n88 = os.path.join(FIXTURES, "n88", "test25a_uniaxial.n88model")
    if not (os.path.isfile(aim) and os.path.isfile(n88)):
        print(f"no fixtures in {FIXTURES}/n88: skipped")
        sys.exit(77)
    with netCDF4.Dataset(n88) as root:
        xyz = np.array(root["Parts/Part1/NodeCoordinates"][:], float)
    corner = xyz.min(0)
    m = voxelize("--image", aim, "--threshold", "1", out="aim.nc")
    if not m:
        return
    check(close(m["voxel_size"], (0.034,) * 3), f"AIM voxel size {m['voxel_size']}")
    check(close(m["origin"], corner, 2e-6), f"AIM corner {m['origin']}, n88modelgenerator's {corner}")
    check(int(np.count_nonzero(m["label"])) == 7087, "AIM: 7087 bone voxels")
    h = 0.034
    affine = np.diag([h, h, h, 1.0])
    affine[:3, 3] = corner + 0.5 * h
    labels_xyz = np.ascontiguousarray(m["label"].transpose(2, 1, 0)).astype(np.uint8)
    nibabel.save(nibabel.Nifti1Image(labels_xyz, affine), "scan.nii")
    n = voxelize("--image", "scan.nii", "--threshold", "1", out="nifti.nc")
    if n:
        check(close(n["origin"], m["origin"], 2e-6) and close(n["voxel_size"], m["voxel_size"]),
              f"NIfTI grid {n['origin']} {n['voxel_size']}, AIM's {m['origin']} {m['voxel_size']}")
        check_labels(n, m["label"], "NIfTI of the AIM's scan")


# --- segmentation -------------------------------------------------------------------


def write_mhd(name, vol, spacing=(1, 1, 1), offset=(0, 0, 0)):
    vol.astype("<f4").tofile(name + ".raw")
    nz, ny, nx = vol.shape
    with open(name + ".mhd", "w") as f:
        f.write(f"NDims = 3\nDimSize = {nx} {ny} {nz}\nElementSpacing = {spacing[0]} {spacing[1]} "
                f"{spacing[2]}\nOffset = {offset[0]} {offset[1]} {offset[2]}\n"
                f"ElementType = MET_FLOAT\nElementDataFile = {name}.raw\n")
    return name + ".mhd"


def otsu_reference(values, bins=256):
    """Otsu over numpy's histogram: the bin edge that maximises the
    between-class variance (bin centres as the classes' values)."""
    counts, edges = np.histogram(values, bins=bins, range=(values.min(), values.max()))
    centres = np.arange(bins) + 0.5
    best, best_t = -1, 1
    for t in range(1, bins):
        w0, w1 = counts[:t].sum(), counts[t:].sum()
        if w0 == 0 or w1 == 0:
            continue
        m0 = (counts[:t] * centres[:t]).sum() / w0
        m1 = (counts[t:] * centres[t:]).sum() / w1
        var = w0 * w1 * (m0 - m1) ** 2
        if var > best:
            best, best_t = var, t
    return edges[best_t]


def case_segmentation():
    rng = np.random.default_rng(3)
    # two phases: a blob of bone-like values in soft tissue, plus noise
    z, y, x = np.mgrid[0:20, 0:22, 0:24]
    inside = (x - 12) ** 2 + (y - 11) ** 2 + (z - 10) ** 2 < 36
    vol = np.where(inside, 900.0, 100.0) + rng.normal(0, 60, inside.shape)
    vol[0, 0, 0] = 1500  # an isolated bright voxel: a second component
    path = write_mhd("blob", vol, spacing=(0.5, 0.5, 0.5), offset=(1, 1, 1))
    t = otsu_reference(vol.astype(np.float32).astype(float))
    m = voxelize("--image", path, "--threshold", "otsu")
    if m:
        expected = (vol.astype(np.float32) >= np.float32(t)).astype(np.uint8)
        check_labels(m, expected, "Otsu against numpy's")
    # the largest component drops the lone voxel; crop to it with a margin
    m = voxelize("--image", path, "--threshold", "500", "--largest-component", "--crop", "2")
    if m:
        kept = (vol >= 500) & ~((x == 0) & (y == 0) & (z == 0))
        zz, yy, xx = np.nonzero(kept)
        lo = [max(a.min() - 2, 0) for a in (zz, yy, xx)]
        hi = [min(a.max() + 3, n) for a, n in zip((zz, yy, xx), vol.shape)]
        box = kept[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]].astype(np.uint8)
        check_labels(m, box, "largest component + crop")
        first = np.array([1 + 0.5 * lo[2], 1 + 0.5 * lo[1], 1 + 0.5 * lo[0]])
        check_grid(m, (0.5,) * 3, first, "crop")
    # face connectivity: a voxel touching the blob along an edge only is a
    # piece of its own (it would hinge in the finite-element model)
    solid = np.zeros((6, 6, 6), np.float32)
    solid[1:3, 1:3, 1:3] = 1000
    solid[3, 3, 2] = 1000  # shares an edge with voxel (2, 2, 2), no face
    solid[4, 4, 4] = 1000  # shares a corner only
    m = voxelize("--image", write_mhd("edges", solid), "--threshold", "500",
                 "--largest-component")
    if m:
        expected = np.zeros(solid.shape, np.uint8)
        expected[1:3, 1:3, 1:3] = 1
        check_labels(m, expected, "largest face-connected component")
    # several thresholds: classes to labels 1, 4 (default) or as given
    m = voxelize("--image", path, "--threshold", "300,800")
    if m:
        expected = np.where(vol >= 800, 4, np.where(vol >= 300, 1, 0)).astype(np.uint8)
        check_labels(m, expected, "two thresholds, default labels")
    m = voxelize("--image", path, "--threshold", "300,800", "--labels", "1,2")
    if m:
        expected = np.where(vol >= 800, 2, np.where(vol >= 300, 1, 0)).astype(np.uint8)
        check_labels(m, expected, "two thresholds, labels 1,2")
    # region of interest (indices, end excluded): the origin moves with it
    m = voxelize("--image", path, "--threshold", "500", "--roi", "3:20,2:15,4:18")
    if m:
        check_labels(m, (vol[4:18, 2:15, 3:20] >= 500).astype(np.uint8), "roi")
        check_grid(m, (0.5,) * 3, (1 + 1.5, 1 + 1.0, 1 + 2.0), "roi")
    # downsampling by 3 (24 x 22 x 20: partial blocks at the far faces)
    f = 3
    nb = [(n + f - 1) // f for n in vol.shape]

    def blocks(a, reduce):
        out = np.zeros(nb)
        for k in range(nb[0]):
            for j in range(nb[1]):
                for i in range(nb[2]):
                    out[k, j, i] = reduce(a[k * f:(k + 1) * f, j * f:(j + 1) * f,
                                            i * f:(i + 1) * f])
        return out

    m = voxelize("--image", path, "--threshold", "500", "--downsample", "3",
                 "--downsample-mode", "mean")
    if m:
        mean = blocks(vol.astype(np.float32).astype(float), np.mean)
        check_labels(m, (mean >= 500).astype(np.uint8), "downsample mean")
        check_grid(m, (1.5,) * 3, (1 + 0.5, 1 + 0.5, 1 + 0.5), "downsample")
    m = voxelize("--image", path, "--threshold", "500", "--downsample", "3")
    if m:
        # majority of the block's voxels; a tie goes to material
        vote = blocks((vol >= 500).astype(float), lambda b: 2 * b.sum() >= b.size)
        check_labels(m, vote.astype(np.uint8), "downsample majority")
    expect_bad(["--image", path, "--threshold", "5000"], [path, "leaves no voxel"])
    expect_bad(["--image", path, "--threshold", "0", "--threshold-units", "hu"],
               [path, "Hounsfield"])
    m = voxelize("--image", path, "--threshold", "1000", "--threshold-units", "density",
                 "--calibration", "2,-800", "--keep-intensity")
    if m:
        check_labels(m, (2 * vol.astype(np.float32) - 800 >= 1000).astype(np.uint8),
                     "calibrated density")
        check(m["intensity_units"] == "mg HA/ccm", f"density units {m['intensity_units']}")


CASES = {name[5:]: f for name, f in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if CASE not in CASES:
        print(f"unknown case {CASE}; cases: {' '.join(CASES)}", file=sys.stderr)
        sys.exit(2)
    top = tempfile.mkdtemp(prefix="voxfe-image-test.")
    try:
        os.chdir(top)
        open("problem.yaml", "w").write(PROBLEM)
        CASES[CASE]()
    finally:
        os.chdir("/")
        shutil.rmtree(top, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print(f"{CASE}: all checks passed")
