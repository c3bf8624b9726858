#!/usr/bin/env python3
"""Writes data/matmul_expected.csv: exact products of matmul's generated inputs, computed
independently of the C++ code (the splitmix64 input generator re-implemented with Python integers,
the dot products summed exactly with fractions, then rounded once to double).

    python3 data/matmul_expected_gen.py > data/matmul_expected.csv
"""
import struct
import sys
from fractions import Fraction

MASK = (1 << 64) - 1


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def input_value(seed, which, i, precision):
    r = mix64((mix64(seed ^ ((which + 1) << 56)) + i) & MASK)
    v = (r >> 11) * 2.0 ** -52 - 1.0  # exact in double
    if precision == "float":
        v = struct.unpack("f", struct.pack("f", v))[0]  # round to nearest float
    return v


CASES = [  # precision, m, n, k, seed
    ("double", 3, 4, 1000, 20260101),
    ("float", 5, 3, 4099, 7),
    ("double", 2, 2, 65536, 1),
    ("float", 1, 6, 300, 123456789),
]

out = sys.stdout
out.write("# exact C = A B of matmul's generated inputs (A: seed stream 0, B: stream 1), rounded once to double\n")
out.write("precision,m,n,k,seed,i,j,c_hex\n")
for precision, m, n, k, seed in CASES:
    a = [Fraction(input_value(seed, 0, t, precision)) for t in range(m * k)]
    b = [Fraction(input_value(seed, 1, t, precision)) for t in range(k * n)]
    for i in range(m):
        for j in range(n):
            c = sum(a[i * k + q] * b[q * n + j] for q in range(k))
            out.write(f"{precision},{m},{n},{k},{seed},{i},{j},{float(c).hex()}\n")
