#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes a quarter annulus as a closed ASCII STL surface (the design domain
of efg_annulus.yaml): the ring between two radii about the z axis, in the
quadrant x >= 0, y >= 0, extruded from z = 0 to the thickness. The arcs are
polygons of --segments sides whose vertices lie on the circles.

    quarter_annulus.py --inner 60 --outer 100 --thickness 20 --segments 180 -o part.stl
"""
import argparse
import math
import sys


def facet(out, a, b, c):
    """One triangle a, b, c (counter-clockwise seen from outside)."""
    u = [b[i] - a[i] for i in range(3)]
    v = [c[i] - a[i] for i in range(3)]
    n = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
    length = math.sqrt(sum(x * x for x in n)) or 1.0
    out.write("facet normal %.9g %.9g %.9g\n outer loop\n" % tuple(x / length for x in n))
    for p in (a, b, c):
        out.write("  vertex %.9g %.9g %.9g\n" % tuple(p))
    out.write(" endloop\nendfacet\n")


def quad(out, a, b, c, d):
    facet(out, a, b, c)
    facet(out, a, c, d)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inner", type=float, required=True, help="inner radius, mm")
    parser.add_argument("--outer", type=float, required=True, help="outer radius, mm")
    parser.add_argument("--thickness", type=float, required=True, help="along z, mm")
    parser.add_argument("--segments", type=int, default=180, help="sides of each arc")
    parser.add_argument("-o", "--output", required=True, help="the STL file to write")
    a = parser.parse_args()
    if not (0 < a.inner < a.outer and a.thickness > 0 and a.segments >= 2):
        sys.exit("quarter_annulus.py: need 0 < inner < outer, thickness > 0, segments >= 2")
    angles = [0.5 * math.pi * k / a.segments for k in range(a.segments + 1)]
    # exact end points on the axes (cos 90 degrees is not 0 in doubles)
    ring = [(math.cos(t), math.sin(t)) for t in angles]
    ring[0], ring[-1] = (1.0, 0.0), (0.0, 1.0)

    def p(radius, k, z):
        return (radius * ring[k][0], radius * ring[k][1], z)

    ri, ro, h = a.inner, a.outer, a.thickness
    with open(a.output, "w") as out:
        out.write("solid quarter_annulus\n")
        for k in range(a.segments):
            quad(out, p(ro, k, 0), p(ro, k + 1, 0), p(ro, k + 1, h), p(ro, k, h))  # outer arc
            quad(out, p(ri, k + 1, 0), p(ri, k, 0), p(ri, k, h), p(ri, k + 1, h))  # inner arc
            quad(out, p(ri, k, h), p(ro, k, h), p(ro, k + 1, h), p(ri, k + 1, h))  # top
            quad(out, p(ri, k, 0), p(ri, k + 1, 0), p(ro, k + 1, 0), p(ro, k, 0))  # bottom
        n = a.segments
        quad(out, p(ri, 0, 0), p(ro, 0, 0), p(ro, 0, h), p(ri, 0, h))  # end on y = 0
        quad(out, p(ro, n, 0), p(ri, n, 0), p(ri, n, h), p(ro, n, h))  # end on x = 0
        out.write("endsolid quarter_annulus\n")


if __name__ == "__main__":
    main()
