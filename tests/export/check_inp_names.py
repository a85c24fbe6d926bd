#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The CalculiX deck keeps the names of the problem file.

A box with two load cases, two named supports, two named loads (one with a
name CalculiX cannot read as it is) and a passive solid part goes through
voxfe-voxelize (the names then live in the model file: support_name,
load_name and each constraint's and load's index into them) and voxfe-export
-o deck.inp. The deck must name its element sets and materials after the
materials (steel, passive_solid), hold a node set of each support and load
under its name (with the nodes the model file says it made), and still
solve in ccx, where the sets are usable by name: the clamp's total reaction
(NSET=clamped_end) balances the tip load of the first step.

usage: check_inp_names.py VOXFE_VOXELIZE VOXFE_EXPORT DIR
Exits 77 (skipped) when ccx is not installed (Debian: calculix-ccx)."""
import os
import re
import shutil
import subprocess
import sys

import netCDF4
import numpy as np

voxelize, export, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
os.chdir(work)
env = dict(os.environ, OMP_NUM_THREADS="1", CCX_NPROC_EQUATION_SOLVER="1")
failures = []

open("named.yaml", "w").write("""voxfe-problem: 1
title: named conditions
material: {name: steel, E: 210000, nu: 0.3}
load_cases: [bending, torsion]
supports:
  - name: clamped_end
    region: {face: x-}
    fix: [x, y, z]
  - name: roller
    region: {face: x+}
    fix: [z]
loads:
  - name: tip load
    region: {edge: [x+, y+]}
    force: [0, -50, 0]
    case: bending
  - name: 2nd-push
    region: {face: z+}
    force: [0, 10, 0]
    case: torsion
passive:
  - name: deck
    region: {box: {min: [-.inf, -.inf, 3], max: [.inf, .inf, .inf]}}
    type: solid
""")
subprocess.run([voxelize, "--box", "6x3x4", "--voxel-size", "1", "-p", "named.yaml", "-o",
                "named.nc"], check=True, env=env)
subprocess.run([export, "named.nc", "-o", "deck.inp"], check=True, env=env)

with netCDF4.Dataset("named.nc") as d:
    supports = list(d["support_name"][:])
    loads = list(d["load_name"][:])
    c_node = np.array(d["constraint_node"][:])
    c_name = np.array(d["constraint_name_index"][:])
    l_node = np.array(d["load_node"][:])
    l_name = np.array(d["load_name_index"][:])
if supports != ["clamped_end", "roller"] or loads != ["tip load", "2nd-push"]:
    failures.append(f"the model file's names: {supports} {loads}")

deck = open("deck.inp").read()
lines = deck.split("\n")


def node_set(name):
    """The node ids of *NSET, NSET=name (None when absent)."""
    try:
        start = lines.index(f"*NSET, NSET={name}") + 1
    except ValueError:
        return None
    ids = []
    for line in lines[start:]:
        if line.startswith("*"):
            break
        ids += [int(x) for x in line.split(",") if x.strip()]
    return ids


# the deck's node ids of grid nodes, from the coordinates (voxel size 1)
start = lines.index("*NODE, NSET=NALL") + 1
id_of_grid = {}
for line in lines[start:]:
    if line.startswith("*"):
        break
    f = line.split(",")
    i, j, k = (int(round(float(x))) for x in f[1:4])
    id_of_grid[(k * 4 + j) * 7 + i] = int(f[0])

for name in ("*MATERIAL, NAME=steel", "*MATERIAL, NAME=passive_solid",
             "*SOLID SECTION, ELSET=steel, MATERIAL=steel",
             "*SOLID SECTION, ELSET=passive_solid, MATERIAL=passive_solid",
             "** Support clamped_end", "** Support roller"):
    if name not in deck:
        failures.append(f"the deck has no line '{name}'")
for set_name, index, names, nodes in (("clamped_end", 1, c_name, c_node),
                                      ("roller", 2, c_name, c_node),
                                      ("tip_load", 1, l_name, l_node),
                                      ("L_2nd_push", 2, l_name, l_node)):
    got = node_set(set_name)
    want = sorted({id_of_grid[n] for n in nodes[names == index]})
    if got is None:
        failures.append(f"the deck has no node set {set_name}")
    elif got != want:
        failures.append(f"node set {set_name}: {got}, expected {want}")
    else:
        print(f"node set {set_name}: {len(got)} nodes, as the model file says")

if not shutil.which("ccx"):
    print("ccx not found (apt-get install calculix-ccx): the deck was not solved")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 77)
# ccx on the deck, asked for the total reaction of the named set
# clamped_end in each step: in the first (the tip load along y, at the
# roller's end, which holds z only) the clamp carries the whole load
lines_ccx = list(lines)
for k in [i for i, line in enumerate(lines_ccx) if line == "*END STEP"][::-1]:
    lines_ccx[k:k] = ["*NODE PRINT, NSET=clamped_end, TOTALS=ONLY", "RF"]
open("check.inp", "w").write("\n".join(lines_ccx))
for old in ("check.dat", "check.frd"):
    if os.path.exists(old):
        os.remove(old)
with open("ccx.log", "w") as log:
    subprocess.run(["ccx", "-i", "check"], check=True, env=env, stdout=log, stderr=log)
log = open("ccx.log").read()
if "*ERROR" in log.upper():
    failures.append("ccx failed: " + log[-2000:])
else:
    dat = open("check.dat").read()
    totals = re.findall(r"total force \(fx,fy,fz\) for set CLAMPED_END[^\n]*\n\s*\n?\s*"
                        r"([-0-9.E+]+)\s+([-0-9.E+]+)\s+([-0-9.E+]+)", dat)
    if len(totals) != 2:
        failures.append(f"ccx's .dat has {len(totals)} totals for set CLAMPED_END, expected 2")
    else:
        rf = np.array([float(x) for x in totals[0]])
        print(f"step 1: reaction of clamped_end {rf} N, the tip load (0, -50, 0) N")
        if np.abs(rf - [0, 50, 0]).max() > 1e-6 * 50:
            failures.append(f"step 1: the clamp's reaction {rf} does not balance the tip load")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
