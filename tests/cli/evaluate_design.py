#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""voxfe-optimize --max-iterations 0: the given design evaluated, not changed.

C^H of laminate cells (layers of density 1 and 0.4 normal to x, and normal
to z, aligned with the voxels) against the exact stiffness of a layered
medium (Backus 1962: the strains in the layers' plane and the stresses on
it are the same in every layer; the moduli in the plane average as Voigt's,
those across as Reuss's, the mixed ones in between). A laminate aligned
with the grid is represented exactly by trilinear elements, so C^H must
match to the solver's tolerance. The layers' moduli are SIMP's at the
final penalty, E (Emin/E + (1 - Emin/E) rho^p). The design in the file must
be the given one, untouched (no filter, no update), with no history row.

Then the compliance of a given cantilever design: the density kept, the
state in the file, and f.u of that state is the compliance printed.

usage: evaluate_design.py VOXFE_VOXELIZE VOXFE_OPTIMIZE DIR"""
import os
import re
import subprocess
import sys

import netCDF4
import numpy as np

voxelize, optimize, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
os.chdir(work)
env = dict(os.environ, OMP_NUM_THREADS="2")
E, NU, P, EMIN = 1.0, 0.3, 3.0, 1e-9
DENSE, SPARSE = 1.0, 0.4
failures = []


def run(*cmd):
    return subprocess.run(cmd, check=True, env=env, stdout=subprocess.PIPE, text=True).stdout


def isotropic(e, nu):
    """6x6 stiffness, Voigt order xx yy zz xy yz zx, engineering shear strains."""
    lam, mu = e * nu / ((1 + nu) * (1 - 2 * nu)), e / (2 * (1 + nu))
    c = np.zeros((6, 6))
    c[:3, :3] = lam
    c[range(3), range(3)] = lam + 2 * mu
    c[range(3, 6), range(3, 6)] = mu
    return c


def laminate(layers, axis):
    """The exact C^H of layers [(fraction, C)] normal to `axis` (Backus 1962)."""
    # the strains across the layers (the normal one and the two shears with
    # the axis), in the file's Voigt order xx yy zz xy yz zx
    n = {0: [0, 3, 5], 1: [1, 3, 4], 2: [2, 4, 5]}[axis]
    i = [k for k in range(6) if k not in n]
    a = sum(f * np.linalg.inv(c[np.ix_(n, n)]) for f, c in layers)
    b = sum(f * np.linalg.inv(c[np.ix_(n, n)]) @ c[np.ix_(n, i)] for f, c in layers)
    d = sum(f * c[np.ix_(i, n)] @ np.linalg.inv(c[np.ix_(n, n)]) for f, c in layers)
    ii = sum(f * (c[np.ix_(i, i)] - c[np.ix_(i, n)] @ np.linalg.inv(c[np.ix_(n, n)])
                  @ c[np.ix_(n, i)]) for f, c in layers)
    ainv = np.linalg.inv(a)
    ch = np.zeros((6, 6))
    ch[np.ix_(n, n)] = ainv
    ch[np.ix_(n, i)] = ainv @ b
    ch[np.ix_(i, n)] = d @ ainv
    ch[np.ix_(i, i)] = ii + d @ ainv @ b
    return ch


def simp(rho):
    return E * (EMIN + (1 - EMIN) * rho ** P)


open("cell.yaml", "w").write(
    "voxfe-problem: 1\ntitle: a laminate cell\nmaterial: {name: solid, E: 1.0, nu: 0.3}\n"
    "cell: true\n")
for axis, box in ((2, "4x4x8"), (0, "8x4x4")):
    model = f"cell_{axis}.nc"
    run(voxelize, "--box", box, "--voxel-size", "0.25", "-p", "cell.yaml", "-o", model)
    # the design: 3 of 8 layers dense, 5 sparse, along the axis
    with netCDF4.Dataset(model, "a") as d:
        shape = d["label"].shape  # (z, y, x)
        layer = np.indices(shape)[2 - axis]
        rho = np.where(layer < 3, DENSE, SPARSE)
        v = d.createVariable("density", "f8", ("z", "y", "x"))
        v.long_name = "physical density"
        v.units = "1"
        v[:] = rho
    out = f"evaluated_{axis}.nc"
    text = run(optimize, model, "-o", out, "--objective", "bulk", "--max-iterations", "0",
               "--penalty", str(P), "--cg-tol", "1e-10", "--precision", "double",
               "--cell-solver", "off", "--device", "cpu")
    if "evaluated the given design" not in text:
        failures.append(f"axis {axis}: the summary does not say the design was evaluated:\n{text}")
    with netCDF4.Dataset(out) as d:
        got = np.array(d.homogenized_stiffness).reshape(6, 6)
        kept = np.array(d["density"][:])
        group = d["optimization"] if "optimization" in d.groups else None
        rows = group.dimensions["iteration"].size if group and "iteration" in group.dimensions else 0
        reason = group.getncattr("stop_reason") if group and "stop_reason" in group.ncattrs() else None
    if reason != "evaluated":
        failures.append(f"axis {axis}: the file's stop_reason is {reason!r}, not 'evaluated'")
    want = laminate([(3 / 8, isotropic(simp(DENSE), NU)), (5 / 8, isotropic(simp(SPARSE), NU))],
                    axis)
    err = np.abs(got - want).max() / np.abs(want).max()
    print(f"laminate normal to {'xyz'[axis]}: C^H against Backus: largest error {err:.2e} of "
          f"the largest modulus")
    print("  C^H:\n" + "\n".join("  " + " ".join(f"{x:11.6f}" for x in r) for r in got))
    if not err < 1e-7:
        failures.append(f"axis {axis}: C^H differs from the laminate's by {err:.3g}:\n"
                        f"{got}\nexpected\n{want}")
    # the three moduli in closed form, as a check of the formula above
    ei = [simp(DENSE), simp(SPARSE)]
    mu = [e / (2 * (1 + NU)) for e in ei]
    reuss_shear = 1 / (3 / 8 / mu[0] + 5 / 8 / mu[1])
    voigt_shear = 3 / 8 * mu[0] + 5 / 8 * mu[1]
    across = {2: (4, 5, 3), 0: (3, 5, 4)}[axis]  # two shears across the layers, one in plane
    for k, value in ((across[0], reuss_shear), (across[1], reuss_shear), (across[2], voigt_shear)):
        if abs(want[k, k] - value) > 1e-12:
            failures.append(f"axis {axis}: Backus C{k + 1}{k + 1} {want[k, k]} is not {value}")
    if not np.array_equal(kept, rho):
        failures.append(f"axis {axis}: the design in the file is not the given one")
    if rows != 0:
        failures.append(f"axis {axis}: an evaluation wrote {rows} history rows")

# The compliance of a given design: a cantilever, its density a random field.
open("beam.yaml", "w").write(
    "voxfe-problem: 1\ntitle: a cantilever\nmaterial: {name: steel, E: 1.0, nu: 0.3}\n"
    "supports:\n  - {region: {face: x-}, fix: [x, y, z]}\n"
    "loads:\n  - {region: {edge: [x+, z-]}, force: [0, 0, -1]}\n")
run(voxelize, "--box", "8x4x4", "--voxel-size", "1", "-p", "beam.yaml", "-o", "beam.nc")
rng = np.random.default_rng(4)
with netCDF4.Dataset("beam.nc", "a") as d:
    rho = rng.uniform(0.2, 1.0, d["label"].shape)
    v = d.createVariable("density", "f8", ("z", "y", "x"))
    v.units = "1"
    v[:] = rho
text = run(optimize, "beam.nc", "-o", "beam_evaluated.nc", "--max-iterations", "0",
           "--cg-tol", "1e-10", "--precision", "double", "--device", "cpu")
m = re.search(r"compliance ([0-9.eE+-]+)", text)
with netCDF4.Dataset("beam_evaluated.nc") as d:
    kept = np.array(d["density"][:])
    u = np.array(d["displacement"][0]).reshape(-1, 3)
    node = np.array(d["load_node"][:])
    comp = np.array(d["load_component"][:])
    value = np.array(d["load_value"][:])
work_done = float((u[node, comp] * value).sum())
print(f"cantilever: compliance printed {m.group(1) if m else None}, f.u in the file {work_done:.9g}")
if not m or abs(float(m.group(1)) - work_done) > 1e-5 * abs(work_done):
    failures.append(f"the compliance printed is not f.u of the state in the file:\n{text}")
if not np.array_equal(kept, rho):
    failures.append("the cantilever's design in the file is not the given one")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
