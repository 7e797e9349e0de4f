#!/usr/bin/env python3
"""Fits the rational erf that placeflow's float Erf kernel runs (ops/simd/vec_math-inl.h).

erf(x) ~= x * P(x^2) / Q(x^2) on [0, 4], P and Q of degree 5 with Q(0) = 1 and
P(0) = 2 / sqrt(pi), fitted to minimise the largest relative error (Lawson's iteratively
reweighted least squares on the linearised problem P(s) - r(s) Q(s) = 0, as fit_tanh.py does).
Beyond 3.92, erf rounds to +-1 in float. Prints the float32 coefficients, lowest degree first.

Needs numpy (a venv outside the repo; never a dependency of placeflow):
  python3 tools/math/fit_erf.py
"""
import math

import numpy as np

X_MAX = 4.0
P_DEGREE = 5
Q_DEGREE = 5
P0 = 2.0 / math.sqrt(math.pi)


def fit(samples=8000, iterations=80):
    t = np.cos(np.linspace(np.pi, 0, samples)) * 0.5 + 0.5  # dense near both ends
    x = np.maximum(t * X_MAX, 1e-4)
    s = x * x
    r = np.array([math.erf(v) / v for v in x])  # erf(x)/x
    vp = np.vander(s, P_DEGREE + 1, increasing=True)
    vq = np.vander(s, Q_DEGREE + 1, increasing=True)
    a = np.hstack([vp[:, 1:], -(r[:, None]) * vq[:, 1:]])
    b = r - P0  # P(0) = P0 and Q(0) = 1 moved to the right-hand side
    weights = np.ones_like(s)
    q = np.ones_like(s)
    for _ in range(iterations):
        w = np.sqrt(weights) / (r * np.abs(q))
        c, *_ = np.linalg.lstsq(a * w[:, None], b * w, rcond=None)
        p_coef = np.concatenate([[P0], c[:P_DEGREE]])
        q_coef = np.concatenate([[1.0], c[P_DEGREE:]])
        q = vq @ q_coef
        err = np.abs((vp @ p_coef) / q - r) / r
        weights *= err / err.max() + 1e-3
        weights /= weights.sum()
    return p_coef.astype(np.float32), q_coef.astype(np.float32), err.max()


def main():
    p, q, err = fit()
    print(f"largest relative error in double, before rounding to float: {err:.3g}")
    print("P:", ", ".join(f"{v:.9g}f" for v in p))
    print("Q:", ", ".join(f"{v:.9g}f" for v in q))


if __name__ == "__main__":
    main()
