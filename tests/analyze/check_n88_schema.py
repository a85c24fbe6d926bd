#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""voxfe-analyze on an n88model written here, with netCDF4, to the published
schema (as vtkbone's n88model writer and n88modelgenerator lay it out: float
coordinates and values, uint node numbers in VTK_VOXEL order, 1-based,
Sense 1..3, named constraint groups listed by the problem), with nodes and
elements numbered in a shuffled order. The model is a cube of 4x4x4 voxels,
E = 1000 MPa, nu = 0.3, compressed by 1 % along z with free lateral faces;
the result, written as an n88model and read back the way n88tools'
n88postfaim reads one, must give the analytic uniform state: reaction E A eps,
strain zz = eps, SED = E eps^2 / 2, von Mises E |eps|.

usage: check_n88_schema.py VOXFE_ANALYZE DIR"""
import json
import os
import subprocess
import sys

import netCDF4
import numpy as np

analyze, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
os.chdir(work)
n, h, E, nu, eps = 4, 0.5, 1000.0, 0.3, -0.01
L = n * h
rng = np.random.default_rng(3)

# grid nodes and elements, then a shuffled numbering of each
grid_nodes = [(i, j, k) for k in range(n + 1) for j in range(n + 1) for i in range(n + 1)]
node_perm = rng.permutation(len(grid_nodes))          # file position -> grid node
number_of = np.empty(len(grid_nodes), int)            # grid node -> 1-based number
number_of[node_perm] = np.arange(1, len(grid_nodes) + 1)
gid = {ijk: g for g, ijk in enumerate(grid_nodes)}
corner = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 1, 1)]
elems = [(i, j, k) for k in range(n) for j in range(n) for i in range(n)]
elems = [elems[p] for p in rng.permutation(len(elems))]

with netCDF4.Dataset("cube.n88model", "w", format="NETCDF4") as root:
    root.Conventions = "Numerics88/Finite_Element_Model-1.0"
    root.ActiveProblem = "Problem1"
    root.createDimension("Dimensionality", 3)
    mats = root.createGroup("MaterialDefinitions").createGroup("Bone")
    mats.Type = "LinearIsotropic"
    mats.E = E
    mats.nu = nu
    part = root.createGroup("Parts").createGroup("Part1")
    part.createDimension("NumberOfNodes", len(grid_nodes))
    xyz = part.createVariable("NodeCoordinates", "f4", ("NumberOfNodes", "Dimensionality"))
    xyz[:] = np.array([grid_nodes[g] for g in node_perm], float) * h
    hexa = part.createGroup("Elements").createGroup("Hexahedrons")
    hexa.createDimension("NumberOfElements", len(elems))
    hexa.createDimension("NumberOfNodesPerElement", 8)
    hexa.createVariable("ElementNumber", "u4", ("NumberOfElements",))[:] = np.arange(1, len(elems) + 1)
    conn = [[number_of[gid[(i + a, j + b, k + c)]] for a, b, c in corner] for i, j, k in elems]
    hexa.createVariable("NodeNumbers", "u4", ("NumberOfElements", "NumberOfNodesPerElement"))[:] = conn
    hexa.createVariable("MaterialID", "u4", ("NumberOfElements",))[:] = 1
    table = part.createGroup("MaterialTable")
    table.createDimension("Size", 1)
    table.createVariable("ID", "u4", ("Size",))[:] = [1]
    names = table.createVariable("MaterialName", str, ("Size",))
    names[0] = "Bone"

    def constraint(group, name, rows):
        g = group.createGroup(name)
        g.Part = "Part1"
        g.Type = "NodeAxisDisplacement"
        g.createDimension("NumberOfValues", len(rows))
        g.createVariable("NodeNumber", "u4", ("NumberOfValues",))[:] = [r[0] for r in rows]
        g.createVariable("Sense", "i1", ("NumberOfValues",))[:] = [r[1] for r in rows]
        g.createVariable("Value", "f4", ("NumberOfValues",))[:] = [r[2] for r in rows]

    cons = root.createGroup("Constraints")
    bottom = [number_of[gid[(i, j, 0)]] for j in range(n + 1) for i in range(n + 1)]
    top = [number_of[gid[(i, j, n)]] for j in range(n + 1) for i in range(n + 1)]
    pin = number_of[gid[(0, 0, 0)]]
    partner = number_of[gid[(n, 0, 0)]]
    constraint(cons, "bottom_fixed", [(b, 3, 0.0) for b in bottom])
    constraint(cons, "top_displacement", [(t, 3, eps * L) for t in top])
    constraint(cons, "pin", [(pin, 1, 0.0), (pin, 2, 0.0), (partner, 2, 0.0)])
    problem = root.createGroup("Problems").createGroup("Problem1")
    problem.Part = "Part1"
    problem.Constraints = "bottom_fixed,top_displacement,pin"
    problem.ConvergenceTolerance = 1e-6
    sets = root.createGroup("Sets").createGroup("NodeSets")
    for name, ids in (("face_z0", bottom), ("face_z1", top)):
        s = sets.createGroup(name)
        s.Part = "Part1"
        s.createDimension("NumberOfNodes", len(ids))
        s.createVariable("NodeNumber", "u4", ("NumberOfNodes",))[:] = ids

subprocess.run([analyze, "cube.n88model", "--test", "model", "-o", "result.n88model",
                "--cg-tol", "1e-10", "--precision", "double", "--device", "cpu", "-q",
                "--summary", "s.json"], check=True)

# read back as n88postfaim does
ok = True
with netCDF4.Dataset("result.n88model") as root:
    sol = root["Solutions"][root.ActiveSolution]
    problem = root["Problems"][sol.Problem]
    part = root["Parts"][problem.Part]
    xyz = np.array(part["NodeCoordinates"][:], float)
    disp = np.array(sol["NodeValues"]["Displacement"][:], float)
    rf = np.array(sol["NodeValues"]["ReactionForce"][:], float)
    ev = sol["ElementValues"]
    strain = np.array(ev["Strain"][:], float)
    sed = np.array(ev["StrainEnergyDensity"][:], float)
    vm = np.array(ev["VonMisesStress"][:], float)
    mat = root["MaterialDefinitions"][part["MaterialTable"]["MaterialName"][0]]
    at_top = np.abs(xyz[:, 2] - L) < 1e-9
    force = rf[at_top, 2].sum()
    checks = {
        "material": mat.Type == "LinearIsotropic" and mat.E == E,
        "nodes": len(xyz) == (n + 1) ** 3 and len(sed) == n ** 3,
        "reaction E A eps": abs(force / (E * L * L * eps) - 1) < 1e-6,
        "top displacement": np.abs(disp[at_top, 2] - eps * L).max() < 1e-9,
        "lateral strain": np.abs(strain[:, 0] + nu * eps).max() < 1e-6 * abs(eps),
        "axial strain": np.abs(strain[:, 2] - eps).max() < 1e-6 * abs(eps),
        "shear strain": np.abs(strain[:, 3:]).max() < 1e-8,
        "SED": np.abs(sed / (0.5 * E * eps * eps) - 1).max() < 1e-6,
        "von Mises": np.abs(vm / (E * abs(eps)) - 1).max() < 1e-6,
    }
s = json.load(open("s.json"))
checks["summary support reaction"] = abs(s["support_reaction_z"]) < 1e-6 * abs(force)
for name, good in checks.items():
    print(("ok: " if good else "FAIL: ") + name)
    ok &= bool(good)
print(f"reaction {force:.10g} N, expected {E * L * L * eps:.10g} N")
sys.exit(0 if ok else 1)
