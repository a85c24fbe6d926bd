# SPDX-License-Identifier: BSD-3-Clause
"""MMA's subproblems (voxfe/mma.h) against an independent solution: random
problems of n = 10..50 variables and m = 1..3 constraints, three outer
iterations each, go to `test_mma subproblem [METHOD]` (the subproblem's
method: primal-dual by default, or dual); for each iteration this script
makes the asymptotes by Svanberg's rules (2007 notes) from the iterates the
engine returned, builds the convex separable subproblem from them and solves
it with scipy's SLSQP (x, and the y of the constraints' relaxation; z is 0
where every a_i is 0) to tight tolerances, and compares asymptotes, the new x
and the objective of the subproblem."""
import subprocess
import sys

import numpy as np
from scipy.optimize import minimize

ASYINIT, ASYINCR, ASYDECR, MOVE, ALBEFA, RAA0 = 0.5, 1.2, 0.7, 0.5, 0.1, 1e-5
A0, C, D = 1.0, 1000.0, 1.0
# the interior point's last barrier parameter: tighter than the default
# 1e-7, so that its solution is within TOLERANCE of the subproblem's own
EPSILON_MIN, TOLERANCE = 1e-10, 1e-7


def asymptotes(k, x, xold1, xold2, low, upp, xmin, xmax):
    rng = xmax - xmin
    if k < 2:
        return x - ASYINIT * rng, x + ASYINIT * rng
    trend = (x - xold1) * (xold1 - xold2)
    f = np.where(trend > 0, ASYINCR, np.where(trend < 0, ASYDECR, 1.0))
    low = x - f * (xold1 - low)
    upp = x + f * (upp - xold1)
    xmami = np.maximum(rng, 1e-5)
    low = np.minimum(np.maximum(low, x - 10 * xmami), x - 0.01 * xmami)
    upp = np.maximum(np.minimum(upp, x + 10 * xmami), x + 0.01 * xmami)
    return low, upp


def approximation(g, x, low, upp, xmami):
    p, q = np.maximum(g, 0), np.maximum(-g, 0)
    pq = 0.001 * (p + q) + RAA0 / xmami
    return (p + pq) * (upp - x) ** 2, (q + pq) * (x - low) ** 2


def solve(x, low, upp, xmin, xmax, df0, fval, dfdx):
    n, m = len(x), len(fval)
    rng = xmax - xmin
    xmami = np.maximum(rng, 1e-5)
    alfa = np.maximum.reduce([low + ALBEFA * (x - low), x - MOVE * rng, xmin])
    beta = np.minimum.reduce([upp - ALBEFA * (upp - x), x + MOVE * rng, xmax])
    p0, q0 = approximation(df0, x, low, upp, xmami)
    PQ = [approximation(dfdx[i], x, low, upp, xmami) for i in range(m)]
    r = [(P / (upp - x) + Q / (x - low)).sum() - f for (P, Q), f in zip(PQ, fval)]

    # Svanberg's (1987) dual: for multipliers lam >= 0 the subproblem's
    # Lagrangian separates, x_j minimises p_j / (U - x) + q_j / (x - L) on
    # [alpha, beta] in closed form, y_i = max(0, (lam_i - c) / d), z = 0
    # (a0 > 0 = a_i); the dual function is concave and smooth, its gradient
    # the constraints' values at x(lam), y(lam).
    P = np.array([pq[0] for pq in PQ])
    Q = np.array([pq[1] for pq in PQ])
    b = np.array(r)

    def primal(lam):
        p, q = p0 + lam @ P, q0 + lam @ Q
        sp, sq = np.sqrt(p), np.sqrt(q)
        t = np.clip((sp * low + sq * upp) / (sp + sq), alfa, beta)
        y = np.maximum(0, (lam - C) / D)
        return t, y

    def negdual(lam):
        t, y = primal(lam)
        g = (P / (upp - t) + Q / (t - low)).sum(axis=1) - y - b
        w = ((p0 + lam @ P) / (upp - t) + (q0 + lam @ Q) / (t - low)).sum() - lam @ (y + b) \
            + C * y.sum() + 0.5 * D * (y * y).sum()
        return -w, -g

    best = None
    for start in (np.ones(m), np.full(m, 10.0), np.full(m, 0.1)):
        res = minimize(negdual, start, jac=True, bounds=[(0, None)] * m, method="L-BFGS-B",
                       options={"ftol": 1e-16, "gtol": 1e-13, "maxiter": 20000, "maxcor": 20})
        if best is None or res.fun < best.fun:
            best = res
    t, y = primal(best.x)
    return t, y, best.x


def main():
    engine = sys.argv[1]
    method = sys.argv[2:3]
    rs = np.random.default_rng(20251)
    problems, text = [], []
    for case in range(9):
        n, m, its = int(rs.integers(10, 51)), 1 + case % 3, 3
        xmin = np.full(n, 0.001) if case % 2 else rs.uniform(-1, 0, n)
        xmax = xmin + rs.uniform(0.5, 2, n)
        x0 = xmin + rs.uniform(0.1, 0.9, n) * (xmax - xmin)
        data = []
        for _ in range(its):
            df0 = rs.normal(0, 1, n) * rs.uniform(0.1, 10)
            fval = rs.uniform(-0.3, 0.3, m)
            dfdx = rs.normal(0, 1, (m, n)) / n + rs.uniform(-0.5, 1.5, (m, 1)) / n
            data.append((df0, fval, dfdx))
        problems.append((n, m, xmin, xmax, x0, data))
        text.append(f"{n} {m} {its} {EPSILON_MIN}")
        for v in (xmin, xmax, x0):
            text.append(" ".join(repr(float(t)) for t in v))
        for df0, fval, dfdx in data:
            for v in (df0, fval, dfdx.ravel()):
                text.append(" ".join(repr(float(t)) for t in v))
    out = subprocess.run([engine, "subproblem"] + method, input="\n".join(text) + "\n", text=True,
                         capture_output=True, check=True).stdout.split("\n")
    rows = iter(out)
    worst = 0.0
    failures = 0
    for case, (n, m, xmin, xmax, x0, data) in enumerate(problems):
        x, xold1, xold2 = x0, x0, x0
        low = upp = None
        for k, (df0, fval, dfdx) in enumerate(data):
            got = {}
            for _ in range(4):
                name, *vals = next(rows).split()
                got[name] = np.array([float(t) for t in vals])
            low, upp = asymptotes(k, x, xold1, xold2, low, upp, xmin, xmax)
            if not (np.allclose(got["low"], low, rtol=1e-12, atol=1e-12) and
                    np.allclose(got["upp"], upp, rtol=1e-12, atol=1e-12)):
                print(f"case {case} iteration {k + 1}: asymptotes differ")
                failures += 1
            xs, ys, lam = solve(x, low, upp, xmin, xmax, df0, fval, dfdx)
            err = np.abs(got["x"] - xs).max() / (xmax - xmin).max()
            worst = max(worst, err)
            print(f"case {case} (n {n}, m {m}) iteration {k + 1}: max |x - x_scipy| / range "
                  f"{err:.2e}, lambda {got['lambda'].round(6)} (scipy {lam.round(6)}), y {ys.round(6)}")
            if err > TOLERANCE:
                failures += 1
            xold2, xold1, x = xold1, x, got["x"]
    print(f"largest difference {worst:.2e}")
    sys.exit(1 if failures else 0)


main()
