#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""voxfe-analyze against CalculiX (ccx) on a small porous voxel model.

A random porous model of two materials (a few thousand elements) goes through
voxfe-analyze (each compression test along z: uniaxial, friction, confined;
tight --cg-tol); voxfe-export
writes the analysed model (with the test's supports and prescribed
displacements) as a CalculiX deck, which gets a node set of the top plate and
asks for its total reaction force and every node's displacement; ccx solves
it. The reaction force on the top plate and the displacements must agree to
1e-6 relative (to the largest displacement; ccx prints 7 digits).

usage: check_ccx.py VOXFE_ANALYZE VOXFE_EXPORT MAKE_MODEL DIR
Exits 77 (skipped) when ccx is not installed (Debian: calculix-ccx)."""
import os
import shutil
import subprocess
import sys

import netCDF4
import numpy as np

analyze, export, make_model, work = sys.argv[1:5]
if not shutil.which("ccx"):
    print("ccx not found (apt-get install calculix-ccx): skipped")
    sys.exit(77)
os.makedirs(work, exist_ok=True)
os.chdir(work)
env = dict(os.environ, OMP_NUM_THREADS="1", CCX_NPROC_EQUATION_SOLVER="1")


def run(*cmd):
    subprocess.run(cmd, check=True, env=env)


def check(test):
    """One compression test: voxfe-analyze, the deck, ccx, the comparison."""
    run(analyze, "model.nc", "-o", "result.nc", "--cg-tol", "1e-13", "--precision", "double",
        "--device", "cpu", "-q", "--test", test)
    run(export, "result.nc", "-o", "deck.inp")

    with netCDF4.Dataset("result.nc") as d:
        h = np.array(d.voxel_size)
        label = np.array(d["label"][:])
        nz, ny, nx = label.shape
        # the displacement on the bone nodes, 0 elsewhere: onto the node grid
        u_voxfe = np.zeros(((nz + 1) * (ny + 1) * (nx + 1), 3))
        u_voxfe[np.array(d["bone_node_index"][:])] = np.array(d["displacement"][0])
        u_voxfe = u_voxfe.reshape(nz + 1, ny + 1, nx + 1, 3)
        # the reaction of each constraint: the top plate's along z
        c_node = np.array(d["constraint_node"][:])
        c_top = np.array(d["constraint_component"][:]) == 2
        c_top &= c_node // ((ny + 1) * (nx + 1)) == nz
        force_voxfe = np.array(d["constraint_reaction"][:])[c_top].sum()
        force_summary = d["results"].reaction_force

    # The deck's nodes by grid index, from their coordinates; the top plate.
    lines = open("deck.inp").read().split("\n")
    start = lines.index("*NODE, NSET=NALL") + 1
    nodes = {}
    for line in lines[start:]:
        if line.startswith("*"):
            break
        f = line.split(",")
        ijk = tuple(int(round(float(x) / hh)) for x, hh in zip(f[1:4], h))
        nodes[int(f[0])] = ijk
    top = [n for n, ijk in nodes.items() if ijk[2] == nz]
    assert top, "no node on the top plate"
    step = lines.index("*STEP")
    lines[step:step] = ["*NSET, NSET=TOP"] + [f"{n}," for n in top]
    end = lines.index("*END STEP")
    lines[end:end] = ["*NODE PRINT, NSET=TOP, TOTALS=ONLY", "RF", "*NODE PRINT, NSET=NALL", "U"]
    open("check.inp", "w").write("\n".join(lines))
    for old in ("check.dat", "check.frd"):
        if os.path.exists(old):
            os.remove(old)
    with open("check.log", "w") as log:
        subprocess.run(["ccx", "-i", "check"], check=True, env=env, stdout=log, stderr=log)
    if "*ERROR" in open("check.log").read().upper():
        sys.exit("ccx failed: see " + os.path.join(work, "check.log"))

    # .dat: blocks "displacements ..." (node ux uy uz) and "total force ..." (fx fy fz)
    u_ccx, rf_ccx, block = {}, None, None
    for line in open("check.dat"):
        s = line.strip()
        if not s:
            continue
        if s.startswith("displacements"):
            block = "u"
        elif s.startswith("total force"):
            block = "rf"
        elif s.startswith(("forces", "stresses")):
            block = None
        elif block == "u":
            f = s.split()
            u_ccx[int(f[0])] = np.array([float(x) for x in f[1:4]])
        elif block == "rf":
            rf_ccx = np.array([float(x) for x in s.split()[:3]])
    assert rf_ccx is not None and len(u_ccx) == len(nodes), "ccx's .dat is incomplete"

    umax = np.abs(u_voxfe).max()
    worst = max(np.abs(u_voxfe[k, j, i] - u_ccx[n]).max() for n, (i, j, k) in nodes.items())
    assert c_top.sum() == len(top), (c_top.sum(), len(top))
    print(f"{test}: {len(label.nonzero()[0])} elements, {len(nodes)} nodes; displacement: worst "
          f"{worst:.3g} mm of max {umax:.3g} mm ({worst / umax:.2g}); top plate force voxfe "
          f"{force_voxfe:.9g} N (summary {force_summary:.9g}), ccx {rf_ccx[2]:.9g} N")
    good = worst <= 1e-6 * umax
    good &= abs(force_voxfe - rf_ccx[2]) <= 1e-6 * abs(rf_ccx[2])
    good &= abs(force_summary - force_voxfe) <= 1e-12 * abs(force_voxfe)
    return good


run("/usr/bin/python3", make_model, "porous", "model.nc", "16", "16", "14", "7")
ok = True
for test in ("uniaxial", "friction", "confined"):
    ok &= check(test)
sys.exit(0 if ok else 1)
