#!/usr/bin/env python3
"""Writes counts.csv: 100 rows of x1, x2 ~ N(0, 1), an exposure and a Poisson count with log rate
0.3 + 0.6·x1 − 0.4·x2 + log_exposure. Python's Mersenne Twister with a fixed seed makes the same
file everywhere:  python3 tests/data/make_counts.py > tests/data/counts.csv"""
import math
import random

rng = random.Random(20261123)
print("x1,x2,log_exposure,count")
for _ in range(100):
    x1, x2 = rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0)
    log_exposure = math.log(0.5 + 2.0 * rng.random())
    rate = math.exp(0.3 + 0.6 * x1 - 0.4 * x2 + log_exposure)
    count, p = 0, math.exp(-rate)
    cdf, u = p, rng.random()
    while u > cdf:  # inversion of the Poisson CDF
        count += 1
        p *= rate / count
        cdf += p
    print(f"{x1:.4f},{x2:.4f},{log_exposure:.4f},{count}")
