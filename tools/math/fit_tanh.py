#!/ usr / bin / env python3
"""Fits the rational tanh that placeflow's float Tanh kernel runs (ops/nn/fast_tanh.h).

tanh(x) ~= x * P(x^2) / Q(x^2) on [0, 9], P and Q of degree 4 with P(0) = Q(0) = 1, fitted to
minimise the largest relative error (iteratively reweighted linear least squares: Lawson's
algorithm on the linearised problem P(s) - r(s) Q(s) = 0). Beyond 9, tanh rounds to +-1 in
float. Prints the float32 coefficients, lowest degree first.

Needs numpy and mpmath (a venv outside the repo; never a dependency of placeflow):
  python3 tools/math/fit_tanh.py
"""
import mpmath
import numpy as np

X_MAX = 9.0
DEGREE = 4


def fit(samples=6000, iterations=60):
    t = np.cos(np.linspace(np.pi, 0, samples)) * 0.5 + 0.5  # dense near both ends
    x = np.maximum(t * X_MAX, 1e-4)
    s = x * x
    r = np.array([float(mpmath.tanh(mpmath.mpf(v)) / v) for v in x])  # tanh(x)/x
    vs = np.vander(s, DEGREE + 1, increasing=True)
    a = np.hstack([vs[:, 1:], -(r[:, None]) * vs[:, 1:]])
    b = r - 1.0  # P(0) = Q(0) = 1 moved to the right-hand side
    weights = np.ones_like(s)
    q = np.ones_like(s)
    for _ in range(iterations):
        w = np.sqrt(weights) / (r * np.abs(q))
        c, *_ = np.linalg.lstsq(a * w[:, None], b * w, rcond=None)
        p_coef = np.concatenate([[1.0], c[:DEGREE]])
        q_coef = np.concatenate([[1.0], c[DEGREE:]])
        q = vs @ q_coef
        err = np.abs((vs @ p_coef) / q - r) / r
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
