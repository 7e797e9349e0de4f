#!/usr/bin/env python3
"""Fits the rational tanh that placeflow's float Tanh kernel runs (ops/simd/vec_math-inl.h).

tanh(x) ~= x * P(x^2) / Q(x^2) on [0, 9], P and Q of degree 4 with P(0) = Q(0) = 1
(rational_fit.py). Beyond 9, tanh rounds to +-1 in float. Prints the float32 coefficients,
lowest degree first.

Needs numpy and mpmath (a venv outside the repo; never a dependency of placeflow):
  python3 tools/math/fit_tanh.py
"""
import mpmath

from rational_fit import fit, print_fit

if __name__ == "__main__":
    tanh_over_x = lambda v: float(mpmath.tanh(mpmath.mpf(v)) / v)
    print_fit(*fit(tanh_over_x, 9.0, 4, 4, 1.0, samples=6000, iterations=60))
