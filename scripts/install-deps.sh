#!/usr/bin/env bash
# Installs the system packages voxfe needs to build and test (Debian 12 / Ubuntu 24.04).
# Used by the README and by .ci/run. Safe to rerun.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

packages=(
  # build
  build-essential cmake pkg-config
  # libraries of libvoxfe and the programs
  libnetcdf-dev libxml2-dev zlib1g-dev libfyaml-dev libsuitesparse-dev libcairo2-dev
  # surface meshes for voxfe-voxelize --mesh (STL, OBJ, PLY, OFF, 3MF, ...)
  libassimp-dev
  # tests: independent references and file checks (admesh checks STL
  # surfaces, CalculiX solves the exported .inp decks)
  netcdf-bin python3 python3-numpy python3-scipy python3-netcdf4 python3-vtk9 admesh calculix-ccx
)

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}"
