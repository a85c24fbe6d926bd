#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the system packages voxfe needs to build and test (Debian 12 / Ubuntu 24.04).
# Used by the README and by .ci/run. Safe to rerun.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

packages=(
  # build; help2man makes the man pages from the programs' --help
  build-essential cmake pkg-config help2man
  # libraries of libvoxfe and the programs
  libnetcdf-dev libhdf5-dev libxml2-dev zlib1g-dev libfyaml-dev libsuitesparse-dev liblapack-dev libcairo2-dev
  # one model on many ranks (VOXFE_MPI): OpenMPI and its mpirun
  libopenmpi-dev openmpi-bin
  # surface meshes for voxfe-voxelize --mesh (STL, OBJ, PLY, OFF, 3MF, ...)
  libassimp-dev
  # image readers of voxfe-voxelize --image (GDCM for DICOM, with its codecs;
  # libtiff; nifticlib)
  g++ libgdcm-dev libtiff-dev libnifti2-dev
  # tests: independent references and file checks (admesh checks STL
  # surfaces, CalculiX solves the exported .inp decks, meshio reads the .vtu)
  netcdf-bin python3 python3-numpy python3-scipy python3-netcdf4 python3-vtk9 python3-meshio
  admesh calculix-ccx
  # image tests: writers of DICOM, TIFF and NIfTI files, sample files
  # (pydicom's and nibabel's test data, ITK's MetaImage examples), and
  # clang-14's libFuzzer for the readers' fuzz harnesses (tests/fuzz), and
  # its OpenMP runtime for the mesh path's (the fill is OpenMP code)
  python3-pydicom python3-tifffile python3-nibabel insighttoolkit5-examples clang-14
  libomp-14-dev
)

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}"
