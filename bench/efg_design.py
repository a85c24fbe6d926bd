#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reads voxfe design files for the element-free Galerkin bench scripts
(bench/efg-table1.sh, efg-dof-sweep.sh, efg-vs-fe.sh).

    efg_design.py nodes DESIGN.nc
        the field nodes of an EFG design: the grid nodes whose nodal density
        is set (every field node's is at least --density-min, the others 0)
    efg_design.py compare A.nc B.nc
        how far the voxel densities of two designs of one grid lie apart: the
        largest and the mean |difference|, and the share of voxels that one
        design has solid (density >= 0.5) and the other void

The files are netCDF-4, that is HDF5: read with the netCDF4 module where
python has it, else with h5py (the GPU machine's python has numpy and h5py
but not netCDF4). Without either, or without numpy, it prints one line
saying so on stderr and exits 3, and the scripts leave the numbers out.
"""
import sys


def reader():
    """A function (path, variable) -> numpy array of float, or None."""
    try:
        import numpy as np
    except ImportError:
        return None
    try:
        import netCDF4

        def read(path, name):
            with netCDF4.Dataset(path) as d:
                return np.asarray(d[name][:], dtype=float)

        return read
    except ImportError:
        pass
    try:
        import h5py

        def read(path, name):
            with h5py.File(path, "r") as f:
                return np.asarray(f[name][()], dtype=float)

        return read
    except ImportError:
        return None


def main(argv):
    if len(argv) < 3 or argv[1] not in ("nodes", "compare") or \
            (argv[1] == "compare" and len(argv) != 4) or (argv[1] == "nodes" and len(argv) != 3):
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    read = reader()
    if read is None:
        sys.stderr.write("efg_design.py: python has no numpy with netCDF4 or h5py: "
                         "the numbers of the design files are left out\n")
        return 3
    if argv[1] == "nodes":
        print(int((read(argv[2], "nodal_density") > 0).sum()))
        return 0
    a, b = (read(path, "density") for path in argv[2:4])
    if a.shape != b.shape:
        sys.stderr.write("efg_design.py: %s and %s: grids of %s and %s voxels\n"
                         % (argv[2], argv[3], a.shape, b.shape))
        return 2
    d = abs(a - b)
    print("%.3g %.3g %.4f" % (d.max(), d.mean(), ((a >= 0.5) != (b >= 0.5)).mean()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
