#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Scans straight to the table: voxfe-voxelize --image without a problem
file, and workflows/bone/Makefile on a folder of images.

First a NIfTI scan of a porous bone cube between two solid plates
(generated here with nibabel) through voxfe-voxelize without -p: the model
has the scan's material (bone, E 6829 MPa, nu 0.3 unless --youngs-modulus
and --poisson-ratio say otherwise), no supports and no loads, and
voxfe-analyze's standard test runs on it. -p stays required for --box, and
the material options are refused next to a problem file.

Then workflows/bone/Makefile on a folder holding a NIfTI file (.nii.gz),
another (.nii), a DICOM series (a subfolder, written with pydicom), the
Scanco AIM fixture (../shared/fixtures/n88/test25a.aim, when present), a
file that is no image, and a scan whose bone does not reach the top plate: make segments each image (VOXELIZE_OPTIONS, default
--threshold otsu) and analyses it, writes one row per good scan into
summary.csv, reports the bad ones as FAILED with voxfe-voxelize's or
voxfe-analyze's reason, and fails.

usage: workflow_bone_images.py VOXFE_VOXELIZE VOXFE_ANALYZE SOURCE_DIR DIR"""
import csv
import os
import random
import shutil
import subprocess
import sys

import netCDF4
import nibabel as nib
import numpy as np

voxelize, analyze, source, work = (os.path.abspath(a) for a in sys.argv[1:5])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
failures = []
AIM = os.path.join(source, "..", "shared", "fixtures", "n88", "test25a.aim")
if not os.path.exists(AIM):
    AIM = "/work/shared/fixtures/n88/test25a.aim"


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(*cmd):
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


def bone_volume(shape_zyx, seed):
    """Porous bone (1000) in marrow (0) between two solid plates."""
    rng = np.random.default_rng(seed)
    vol = np.where(rng.random(shape_zyx) < 0.7, 1000, 0).astype(np.int16)
    vol[0] = vol[-1] = 1000
    vol[:, :, 0] = 1000  # a solid wall: the plates stay connected
    return vol


def write_nifti(path, vol, spacing=0.05):
    img = nib.Nifti1Image(np.ascontiguousarray(vol.transpose(2, 1, 0)),
                          np.diag([spacing, spacing, spacing, 1.0]))
    img.header.set_xyzt_units("mm")
    nib.save(img, path)


def write_dicom_series(folder, vol, spacing=0.05):
    import pydicom
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    os.makedirs(folder, exist_ok=True)
    series = generate_uid()
    order = list(range(vol.shape[0]))
    random.Random(3).shuffle(order)
    for rank, k in enumerate(order):
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        name = os.path.join(folder, f"slice{rank:03d}.dcm")
        ds = FileDataset(name, {}, file_meta=meta, preamble=b"\0" * 128)
        ds.is_little_endian = True
        ds.is_implicit_VR = False
        ds.SOPClassUID = meta.MediaStorageSOPClassUID
        ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
        ds.Modality = "CT"
        ds.SeriesInstanceUID = series
        ds.InstanceNumber = rank + 1
        ds.ImagePositionPatient = [0.0, 0.0, k * spacing]
        ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
        ds.PixelSpacing = [spacing, spacing]
        ds.SliceThickness = spacing
        ds.RescaleSlope = 1.0
        ds.RescaleIntercept = 0.0
        ds.Rows, ds.Columns = vol.shape[1], vol.shape[2]
        ds.SamplesPerPixel = 1
        ds.PhotometricInterpretation = "MONOCHROME2"
        ds.BitsAllocated = 16
        ds.BitsStored = 16
        ds.HighBit = 15
        ds.PixelRepresentation = 1
        ds.PixelData = vol[k].astype("<i2").tobytes()
        ds.save_as(name, write_like_original=False)


# --- voxfe-voxelize --image without a problem file ---------------------------------
write_nifti("cube.nii.gz", bone_volume((6, 7, 8), 1))
r = run(voxelize, "--image", "cube.nii.gz", "--threshold", "500", "-o", "cube.nc")
check(r.returncode == 0, f"voxelize --image without -p: {r.stdout}")
if r.returncode == 0:
    with netCDF4.Dataset("cube.nc") as d:
        names = list(d["material_name"][:])
        e = list(d["material_youngs_modulus"][:])
        nu = list(d["material_poisson_ratio"][:])
        conditions = [v for v in ("constraint_node", "load_node") if v in d.variables]
    check(names == ["bone"] and e == [6829.0] and nu == [0.3],
          f"the scan's material: {names} {e} {nu}")
    check(conditions == [], f"a model without a problem file has {conditions}")
    r = run(analyze, "cube.nc", "-o", "cube_result.nc", "--test", "uniaxial", "--device", "cpu",
            "-q", "--summary", "cube.csv")
    check(r.returncode == 0, f"voxfe-analyze on it: {r.stdout}")
    if r.returncode == 0:
        row = list(csv.DictReader(open("cube.csv")))[0]
        print(f"cube: analysed, apparent modulus {row.get('apparent_modulus')} MPa")
r = run(voxelize, "--image", "cube.nii.gz", "--threshold", "500", "--youngs-modulus", "8748",
        "--poisson-ratio", "0.25", "--material", "tissue", "-o", "tissue.nc")
check(r.returncode == 0, f"voxelize --youngs-modulus: {r.stdout}")
if r.returncode == 0:
    with netCDF4.Dataset("tissue.nc") as d:
        got = (list(d["material_name"][:]), list(d["material_youngs_modulus"][:]),
               list(d["material_poisson_ratio"][:]))
    check(got == (["tissue"], [8748.0], [0.25]), f"--material, --youngs-modulus: {got}")
r = run(voxelize, "--box", "4x4x4", "--voxel-size", "1", "-o", "box.nc")
check(r.returncode == 2 and "needs a problem file" in r.stdout and not os.path.exists("box.nc"),
      f"--box without -p: {r.returncode} {r.stdout}")
open("p.yaml", "w").write("voxfe-problem: 1\nmaterial: {E: 1, nu: 0.3}\n"
                          "supports:\n  - {region: {face: z-}, fix: [x, y, z]}\n")
r = run(voxelize, "--image", "cube.nii.gz", "--threshold", "500", "-p", "p.yaml",
        "--youngs-modulus", "5000", "-o", "both.nc")
check(r.returncode == 2 and "problem file gives the material" in r.stdout and
      not os.path.exists("both.nc"), f"-p with --youngs-modulus: {r.returncode} {r.stdout}")

# --- workflows/bone on a folder of images ----------------------------------------
os.makedirs("scans")
write_nifti("scans/alpha.nii.gz", bone_volume((6, 6, 6), 2))
write_nifti("scans/beta.nii", bone_volume((7, 6, 5), 3))
write_dicom_series("scans/gamma", bone_volume((6, 5, 6), 4))
# two bad scans: one that is not an image, one whose bone does not reach the top
open("scans/broken.nii", "wb").write(b"not a NIfTI file" * 40)
split = bone_volume((6, 6, 6), 5)
split[3:] = 0
split[-1] = 1000
split[:, :, 0] = np.where(np.arange(6)[:, None] < 3, 1000, 0)
write_nifti("scans/split.nii.gz", split)
good = ["alpha", "beta", "gamma"]
if os.path.exists(AIM):
    shutil.copy(AIM, "scans/test25a.aim")
    good.append("test25a")
else:
    print(f"{AIM} not found: no AIM scan in the folder")
shutil.copy(os.path.join(source, "workflows", "bone", "Makefile"), "Makefile")
r = run("make", "-j2", f"VOXFE_BIN={os.path.dirname(voxelize)}",
        f"ANALYZE=" + analyze, "ANALYZE_OPTIONS=--device cpu --threads 1")
print(r.stdout)
check(r.returncode != 0, "make succeeded with a scan of no bone")
for name in good:
    check(f"ok: {name}" in r.stdout, f"{name} is not reported ok")
    check(os.path.exists(f"results/models/{name}.nc"), f"no model of {name}")
check("FAILED: broken: voxfe-voxelize: scans/broken.nii" in r.stdout,
      "the broken scan is not reported FAILED with voxfe-voxelize's reason")
check("FAILED: split: voxfe-analyze:" in r.stdout,
      "the scan of unconnected bone is not reported FAILED with voxfe-analyze's reason")
rows = list(csv.DictReader(open("results/summary.csv"))) if os.path.exists(
    "results/summary.csv") else []
check(sorted(row["sample"] for row in rows) == sorted(good),
      f"summary.csv rows: {[row.get('sample') for row in rows]}")
check(not os.path.exists("results/models/broken.nc"), "a model of the broken scan was left")
check(not os.path.exists("results/samples/split.nc"), "a result of the unconnected scan was left")
failed = open("results/failed.txt").read() if os.path.exists("results/failed.txt") else ""
check("FAILED: broken" in failed and "FAILED: split" in failed, f"failed.txt: {failed}")
sys.exit(1 if failures else 0)
