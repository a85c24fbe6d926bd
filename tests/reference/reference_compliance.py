#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Independent reference for the first design iteration's compliance.

Runs voxfe-voxelize and voxfe-optimize (one iteration, tight CG tolerance) on
a small cantilever, then recomputes the compliance from the model file alone
with an assembled sparse stiffness matrix (numpy/scipy, element matrix by its
own quadrature on [-1,1]^3) and compares to 1e-8 relative.

usage: reference_compliance.py VOXELIZE OPTIMIZE PROBLEM.yaml
"""
import itertools
import subprocess
import sys
import tempfile

import netCDF4
import numpy as np
import scipy.sparse
import scipy.sparse.linalg

VOLUME_FRACTION = 0.3
EMIN = 1e-9


def hex8_stiffness(E, nu, h):
    """24x24 stiffness of a box element, 3x3x3 Gauss on [-1,1]^3 (exact)."""
    lam = E * nu / ((1 + nu) * (1 - 2 * nu))
    mu = E / (2 * (1 + nu))
    D = np.zeros((6, 6))
    D[:3, :3] = lam
    D[np.arange(3), np.arange(3)] += 2 * mu
    D[np.arange(3, 6), np.arange(3, 6)] = mu
    # VTK hexahedron corner order, in reference coordinates -1/+1
    corners = np.array([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0),
                        (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]) * 2 - 1
    pts, wts = np.polynomial.legendre.leggauss(3)
    K = np.zeros((24, 24))
    jac = np.array(h) / 2  # d x / d xi per axis
    for (a, wa), (b, wb), (c, wc) in itertools.product(zip(pts, wts), repeat=3):
        xi = np.array([a, b, c])
        dN = np.zeros((8, 3))
        for n, s in enumerate(corners):
            f = (1 + s * xi) / 2
            for d in range(3):
                g = f.copy()
                g[d] = s[d] / 2
                dN[n, d] = np.prod(g) / jac[d]
        B = np.zeros((6, 24))
        for n in range(8):
            gx, gy, gz = dN[n]
            B[0, 3 * n] = gx
            B[1, 3 * n + 1] = gy
            B[2, 3 * n + 2] = gz
            B[3, 3 * n + 1], B[3, 3 * n + 2] = gz, gy
            B[4, 3 * n], B[4, 3 * n + 2] = gz, gx
            B[5, 3 * n], B[5, 3 * n + 1] = gy, gx
        K += B.T @ D @ B * wa * wb * wc * np.prod(jac)
    return K


def reference_compliance(path, penalty):
    with netCDF4.Dataset(path) as nc:
        label = np.asarray(nc["label"][:])
        h = [float(v) for v in nc.voxel_size]
        mat_label = np.asarray(nc["material_label"][:])
        E = np.asarray(nc["material_youngs_modulus"][:])
        nu = np.asarray(nc["material_poisson_ratio"][:])
        role = np.asarray(nc["material_role"][:])
        c_node = np.asarray(nc["constraint_node"][:], dtype=np.int64)
        c_comp = np.asarray(nc["constraint_component"][:], dtype=np.int64)
        l_node = np.asarray(nc["load_node"][:], dtype=np.int64)
        l_comp = np.asarray(nc["load_component"][:], dtype=np.int64)
        l_case = np.asarray(nc["load_case_index"][:], dtype=np.int64)
        l_value = np.asarray(nc["load_value"][:])
        n_cases = len(nc.dimensions["load_case"])
    nz, ny, nx = label.shape
    assert len(set(nu)) == 1
    Ke = hex8_stiffness(1.0, float(nu[0]), h)
    modulus = np.zeros(256)
    density = np.zeros(256)
    for l, e, r in zip(mat_label, E, role):
        modulus[l] = e
        density[l] = {0: VOLUME_FRACTION, 1: 1.0, 2: 0.0}[int(r)]
    lab = label.ravel()
    Ee = modulus[lab] * (EMIN + (1 - EMIN) * density[lab] ** penalty)

    k, j, i = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    base = ((k * (ny + 1) + j) * (nx + 1) + i).ravel()
    offsets = [dk * (ny + 1) * (nx + 1) + dj * (nx + 1) + di for di, dj, dk in
               [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]]
    nodes = base[:, None] + np.array(offsets)[None, :]
    dofs = (3 * nodes[:, :, None] + np.arange(3)[None, None, :]).reshape(-1, 24)
    keep = Ee > 0
    rows = np.repeat(dofs[keep], 24, axis=1).ravel()
    cols = np.tile(dofs[keep], (1, 24)).ravel()
    vals = (Ee[keep, None, None] * Ke[None]).ravel()
    n = 3 * (nx + 1) * (ny + 1) * (nz + 1)
    K = scipy.sparse.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()

    fixed = np.zeros(n, bool)
    fixed[3 * c_node + c_comp] = True
    fixed |= K.diagonal() == 0  # nodes that touch no material
    free = np.flatnonzero(~fixed)
    Kff = K[free][:, free].tocsc()
    total = 0.0
    for case in range(n_cases):
        f = np.zeros(n)
        sel = l_case == case
        np.add.at(f, 3 * l_node[sel] + l_comp[sel], l_value[sel])
        u = scipy.sparse.linalg.spsolve(Kff, f[free])
        total += f[free] @ u
    return total


def main():
    voxelize, optimize, problem = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        model, design = f"{tmp}/model.nc", f"{tmp}/design.nc"
        subprocess.run([voxelize, "--box", "10x5x5", "--voxel-size", "0.5", "--problem", problem,
                        "-o", model], check=True)
        failures = 0
        for penalty, extra in [(1.0, []), (3.0, ["--no-continuation"])]:
            subprocess.run([optimize, model, "-o", design, "--max-iterations", "1", "--cg-tol",
                            "1e-13", "--volume-fraction", str(VOLUME_FRACTION), "--quiet"] + extra,
                           check=True)
            with netCDF4.Dataset(design) as nc:
                voxfe = float(nc["optimization"]["objective"][0])
            ref = reference_compliance(model, penalty)
            rel = abs(voxfe - ref) / abs(ref)
            print(f"p={penalty}: voxfe {voxfe:.15g}, reference {ref:.15g}, relative {rel:.2e}")
            failures += rel > 1e-8
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
