#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The DICOM series benchmark of docs/benchmarks.md: writes a CT series of
# SLICES slices of 512 x 512 int16 (a bone-like cylinder in soft tissue,
# pydicom, explicit VR little endian, file names in no particular order),
# then times voxfe reading it (bench_dicom: against fread and GDCM alone) and
# the whole voxfe-voxelize run.
#   bench/dicom-series.sh [BUILD_DIR] [SLICES] [THREADS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
slices=${2:-1000}
threads=${3:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

/usr/bin/python3 - "$tmp/series" "$slices" <<'PY'
import os, sys, random
import numpy as np
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid
folder, n = sys.argv[1], int(sys.argv[2])
os.makedirs(folder)
y, x = np.mgrid[0:512, 0:512]
r = np.hypot(x - 256, y - 256)
series = generate_uid()
order = list(range(n))
random.Random(1).shuffle(order)
rng = np.random.default_rng(1)
for rank, k in enumerate(order):
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(f"{folder}/{rank:05d}.dcm", {}, file_meta=meta, preamble=b"\0" * 128)
    ds.is_little_endian, ds.is_implicit_VR = True, False
    ds.SOPClassUID, ds.SOPInstanceUID = meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.SeriesInstanceUID = "CT", series
    ds.ImagePositionPatient = [-128.0, -128.0, 0.5 * k]
    ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
    ds.PixelSpacing, ds.SliceThickness = [0.5, 0.5], 0.5
    ds.RescaleSlope, ds.RescaleIntercept = 1, -1024
    ds.Rows = ds.Columns = 512
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
    ring = (r < 100 + 20 * np.sin(k / 50)) & (r > 70)  # a bone-like tube
    hu = np.where(ring, 1200, 40) + rng.normal(0, 30, r.shape)
    ds.PixelData = (hu + 1024).astype("<i2").tobytes()
    ds.save_as(f"{folder}/{rank:05d}.dcm", write_like_original=False)
PY
cat > "$tmp/problem.yaml" <<'YAML'
voxfe-problem: 1
material: {E: 17000, nu: 0.3}
supports:
  - {name: bottom, region: {face: z-}, fix: [x, y, z]}
loads:
  - {name: top, region: {face: z+}, force: [0, 0, -1000]}
YAML
echo "threads: $threads (OMP_NUM_THREADS)"
export OMP_NUM_THREADS=$threads
"$build/bench/bench_dicom" "$tmp/series" 400 "$tmp/bench.nc"
rm -f "$tmp/bench.nc"
start=$(date +%s.%N)
"$build/cli/voxfe-voxelize" --image "$tmp/series" --threshold 400 --threshold-units hu \
  -p "$tmp/problem.yaml" -o "$tmp/model.nc"
end=$(date +%s.%N)
printf "voxfe-voxelize --image (all of it): %.3f s, model file %s bytes\n" \
  "$(echo "$end - $start" | bc)" "$(stat -c %s "$tmp/model.nc")"
