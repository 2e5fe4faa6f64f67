#!/usr/bin/env python3
"""The cost constants of the direct fprop of few channels (src/conv/small.rs, the model
select::cost::direct_seconds computes) against timings of bench/conv_small/harness.cu: the RMS log
error with the committed constants, and (--refit) constants a random search finds from them.

    python3 bench/conv_small/fit.py TIMINGS.jsonl [--refit [trials=N] [seed=S]]

The committed constants fit bench/results/h100_2026-11-27_issue26_conv_small_fit.jsonl.
"""
import json
import math
import random
import sys

SMS = 132
THREADS = 256
# Blocks resident per SM by registers (ptxas: 40, 54 and 80 registers a thread), by output
# channels a thread; fewer where shared memory runs out.
BLOCKS_PER_SM = {8: 6, 16: 4, 32: 3}
# As src/conv/small.rs states them.
# (ps_per_mac_<cols>: each width's design has its own: the narrower ones read shared memory more
# often per multiply-add.)
CONSTANTS = {"ns_fixed": 1989, "ns_per_block": 3396, "ps_per_mac_8": 10259, "ps_per_mac_16": 6722,
             "ps_per_mac_32": 4075, "fs_per_output": 2854, "mb_per_second": 2000000}


def model(c, r):
    """Microseconds, as direct_seconds."""
    p = (r["h"] + 2 * r["pad"] - r["dilation"] * (r["r"] - 1) - 1) // r["stride"] + 1
    q = (r["w"] + 2 * r["pad"] - r["dilation"] * (r["s"] - 1) - 1) // r["stride"] + 1
    m, n, k, cols = r["n"] * p * q, r["k"], r["r"] * r["s"] * r["c"], r["kt"]
    blocks = math.ceil(m / THREADS) * math.ceil(n / cols)
    shared = max(k * cols, THREADS * (cols + 1)) * 4 + 1024
    resident = max(1, min(BLOCKS_PER_SM[cols], (227 * 1024) // shared))
    waves = math.ceil(blocks / (resident * SMS))
    t = (c["ns_fixed"] * 1e-9 + waves * (c["ns_per_block"] * 1e-9 + k * cols * c[f"ps_per_mac_{cols}"] * 1e-12)
         + m * n * c["fs_per_output"] * 1e-15)
    moved = (r["n"] * r["h"] * r["w"] * r["c"] + n * k + m * n) * 2
    return max(t, moved / (c["mb_per_second"] * 1e6)) * 1e6


def rms(c, rows):
    return math.sqrt(sum(math.log(model(c, r) / r["us"]) ** 2 for r in rows) / len(rows))


def main():
    rows = [json.loads(line) for line in open(sys.argv[1])]
    good = [r for r in rows if r["status"] == "no error" and r["rel"] < 1e-2]
    print(f"{len(good)} of {len(rows)} timings verified")
    c, best = dict(CONSTANTS), rms(CONSTANTS, good)
    print(f"RMS log error {best:.3f} with {c}")
    if "--refit" in sys.argv:
        options = dict(a.split("=", 1) for a in sys.argv[2:] if "=" in a)
        random.seed(int(options.get("seed", 1)))
        for _ in range(int(options.get("trials", 8000))):
            trial = dict(c)
            key = random.choice(list(trial))
            trial[key] = max(1, trial[key] * math.exp(random.gauss(0, 0.2)))
            error = rms(trial, good)
            if error < best:
                best, c = error, trial
        print(f"refit: {best:.3f} with { {k: round(v) for k, v in c.items()} }")


if __name__ == "__main__":
    main()
