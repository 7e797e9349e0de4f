#!/usr/bin/env python3
"""Fits the rational erf that placeflow's float Erf kernel runs (ops/simd/vec_math-inl.h).

erf(x) ~= x * P(x^2) / Q(x^2) on [0, 4], P and Q of degree 5, P(0) = 2 / sqrt(pi), Q(0) = 1
(rational_fit.py). Beyond 3.92, erf rounds to +-1 in float. Prints the float32 coefficients,
lowest degree first.

Needs numpy (a venv outside the repo; never a dependency of placeflow):
  python3 tools/math/fit_erf.py
"""
import math

from rational_fit import fit, print_fit

if __name__ == "__main__":
    print_fit(*fit(lambda v: math.erf(v) / v, 4.0, 5, 5, 2.0 / math.sqrt(math.pi)))
