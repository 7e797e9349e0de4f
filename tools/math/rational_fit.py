"""The fit behind fit_tanh.py and fit_erf.py: f(x) ~= x * P(x^2) / Q(x^2) on [0, x_max].

P(0) = p0 and Q(0) = 1 are fixed; the other coefficients minimise the largest relative error by
Lawson's iteratively reweighted least squares on the linearised problem P(s) - r(s) Q(s) = 0,
r(s) = f(x) / x. Returns the float32 coefficients (lowest degree first) and the largest relative
error in double before rounding them. Needs numpy (a venv outside the repo).
"""
import numpy as np


def fit(f_over_x, x_max, p_degree, q_degree, p0, samples=8000, iterations=80):
    t = np.cos(np.linspace(np.pi, 0, samples)) * 0.5 + 0.5  # dense near both ends
    x = np.maximum(t * x_max, 1e-4)
    s = x * x
    r = np.array([f_over_x(v) for v in x])
    vp = np.vander(s, p_degree + 1, increasing=True)
    vq = np.vander(s, q_degree + 1, increasing=True)
    a = np.hstack([vp[:, 1:], -(r[:, None]) * vq[:, 1:]])
    b = r - p0  # P(0) = p0 and Q(0) = 1 moved to the right-hand side
    weights = np.ones_like(s)
    q = np.ones_like(s)
    for _ in range(iterations):
        w = np.sqrt(weights) / (r * np.abs(q))
        c, *_ = np.linalg.lstsq(a * w[:, None], b * w, rcond=None)
        p_coef = np.concatenate([[p0], c[:p_degree]])
        q_coef = np.concatenate([[1.0], c[p_degree:]])
        q = vq @ q_coef
        err = np.abs((vp @ p_coef) / q - r) / r
        weights *= err / err.max() + 1e-3
        weights /= weights.sum()
    return p_coef.astype(np.float32), q_coef.astype(np.float32), err.max()


def print_fit(p, q, err):
    print(f"largest relative error in double, before rounding to float: {err:.3g}")
    print("P:", ", ".join(f"{v:.9g}f" for v in p))
    print("Q:", ", ".join(f"{v:.9g}f" for v in q))
