#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes voxfe model files for the analysis tests, with netCDF4 straight
from docs/file-format.md (not through libvoxfe, so the reader is tested too).

usage: make_model.py KIND OUT [options]
  cube       NX NY NZ: every voxel bone (label 1)
  porous     NX NY NZ SEED: random bone (about 60 %) with a solid layer at the
             bottom and top plate, two materials (labels 1 and 2)
  empty      NX NY NZ: no bone
  split      NX NY NZ: two slabs that do not touch (bottom half and top half
             separated by an empty layer)
  no_top     NX NY NZ: bone everywhere except the top layer
  islands    NX NY NZ: a full column plus a lone voxel not touching it
  parallel   NX NY NZ: every voxel bone, with an intensity of 800 mg HA/ccm
             for x < NX/2 and 400 above (layers side by side along z)
  series     NX NY NZ: the same with the layers stacked along z (800 below
             NZ/2)
  series_hu  NX NY NZ: series with the intensity in HU (no calibration)
  heat       NX NY NZ: cube as a heat-conduction model (physics = "heat")
  design     NX NY NZ: cube as a design file (stage = "design")
  void       NX NY NZ: cube whose last x layer is label 2, a passive void
  lump       NX NY NZ: a one-voxel column from plate to plate, apart from a
             larger block on the bottom plate that does not reach the top
"""
import sys

import netCDF4
import numpy as np


def write(path, label, h=0.5, materials=((1, "bone", 1000.0, 0.3),), intensity=None,
          units="mg HA/ccm", stage="model", physics=None, roles=None):
    nz, ny, nx = label.shape
    with netCDF4.Dataset(path, "w", format="NETCDF4") as d:
        d.Conventions = "CF-1.8 voxfe-1"
        d.voxfe_schema_version = np.int32(2 if physics == "heat" else 1)
        d.stage = stage
        if physics:
            d.physics = physics
        d.voxel_size = np.array([h, h, h])
        d.origin = np.zeros(3)
        d.createDimension("z", nz)
        d.createDimension("y", ny)
        d.createDimension("x", nx)
        v = d.createVariable("label", "u1", ("z", "y", "x"))
        v.long_name = "material label"
        v[:] = label
        if intensity is not None:
            v = d.createVariable("intensity", "f4", ("z", "y", "x"))
            v.long_name = "image intensity"
            v.units = units
            v[:] = intensity
        d.createDimension("material", len(materials))
        cols = [("material_label", "u1"), ("material_name", str),
                ("material_role", "u1"), ("material_youngs_modulus", "f8"),
                ("material_poisson_ratio", "f8"), ("material_conductivity", "f8")]
        vars_ = {}
        for name, t in cols:
            vars_[name] = d.createVariable(name, t, ("material",))
            vars_[name].long_name = name
        for i, (lab, name, e, nu) in enumerate(materials):
            vars_["material_label"][i] = lab
            vars_["material_name"][i] = name
            vars_["material_role"][i] = roles[i] if roles else 1
            vars_["material_youngs_modulus"][i] = e
            vars_["material_poisson_ratio"][i] = nu
            vars_["material_conductivity"][i] = 1.0


def main():
    kind, out = sys.argv[1], sys.argv[2]
    nx, ny, nz = (int(a) for a in sys.argv[3:6])
    label = np.zeros((nz, ny, nx), np.uint8)
    mats = ((1, "bone", 1000.0, 0.3),)
    extra = {}
    if kind == "cube":
        label[:] = 1
    elif kind == "porous":
        rng = np.random.default_rng(int(sys.argv[6]))
        label[:] = (rng.random(label.shape) < 0.6) * rng.integers(1, 3, label.shape)
        label[0] = 1
        label[-1] = 1
        mats = ((1, "cortical", 1000.0, 0.3), (2, "trabecular", 600.0, 0.3))
    elif kind == "empty":
        pass
    elif kind == "split":
        label[: nz // 2 - 1] = 1
        label[nz // 2 + 1:] = 1
    elif kind == "no_top":
        label[:-1] = 1
    elif kind == "islands":
        label[:, :2, :2] = 1
        label[nz // 2, -1, -1] = 1
    elif kind in ("parallel", "series", "series_hu"):
        label[:] = 1
        rho = np.full(label.shape, 400.0, np.float32)
        if kind == "parallel":
            rho[:, :, : nx // 2] = 800
        else:
            rho[: nz // 2] = 800
        extra = {"intensity": rho, "units": "HU" if kind == "series_hu" else "mg HA/ccm"}
    elif kind in ("heat", "design"):
        label[:] = 1
        extra = {"physics": "heat"} if kind == "heat" else {"stage": "design"}
    elif kind == "lump":
        label[:, 0, 0] = 1
        label[: nz - 1, 2:, 2:] = 1
    elif kind == "void":
        label[:] = 1
        label[:, :, -1] = 2
        mats = ((1, "bone", 1000.0, 0.3), (2, "hole", 1000.0, 0.3))
        extra = {"roles": (1, 2)}
    else:
        sys.exit("unknown kind " + kind)
    write(out, label, materials=mats, **extra)


main()
