#!/usr/bin/env python3
"""The cost of a padded convolution's copies (conv::padded, select::cost::PADDING_*): each layer of a
conv_bench run whose fastest way was a padded one is timed whole (`best_kernel_us`), and the table
that run wrote has its kernel alone on the padded problem; the difference is the copies. Fits
bytes / bandwidth + launches x a launch's time to them (RMS log error) over a grid.

    python3 bench/padding/fit.py [RESULTS.jsonl TABLE.tsv]

Defaults: the seed-34 run (bench/results/h100_2026-11-27_issue26_conv_random34_compare.jsonl and
bench/dispatch/nvidia_h100_conv_random34.tsv).
"""
import json
import math
import re
import sys

RESULTS = "bench/results/h100_2026-11-27_issue26_conv_random34_compare.jsonl"
TABLE = "bench/dispatch/nvidia_h100_conv_random34.tsv"


def samples(results, table):
    """(copies µs, bytes the copies move, launches) of each layer run padded."""
    rows = {}
    for line in open(table):
        f = line.rstrip("\n").split("\t")
        if line.startswith("#") or len(f) < 10:
            continue
        rows[(f[0], f[5], f[6], f[7])] = float(f[-1])
    out = []
    for line in open(results):
        r = json.loads(line)
        m = re.search(r"channels padded to C = (\d+), K = (\d+)", r["route"])
        if not r.get("best_kernel_padded") or not m or r["rust_name"] != r["best_kernel"]:
            continue
        c2, k2 = int(m.group(1)), int(m.group(2))
        dims = [r["n"], r["h"], r["w"], c2, k2, r["r"], r["s"], r["pad"], r["pad"], r["stride"], r["stride"],
                r["dilation"], r["dilation"]]
        alone = rows.get((r["op"], ",".join(map(str, dims)), r["kernel"], str(r["best_kernel_split_k"])))
        if alone is None:
            continue
        n, h, w, c, k, rr, s, p, q = (r[x] for x in ("n", "h", "w", "c", "k", "r", "s", "p", "q"))
        act, out_, fil = (lambda cc: n * h * w * cc), (lambda kk: n * p * q * kk), (lambda kk, cc: kk * rr * s * cc)
        # The A, B and C/D roles of each kind, as given and padded.
        tensors = {
            "conv2d_fprop": [(act(c), act(c2)), (fil(k, c), fil(k2, c2)), (out_(k), out_(k2))],
            "conv2d_dgrad": [(out_(k), out_(k2)), (fil(k, c), fil(k2, c2)), (act(c), act(c2))],
            "conv2d_wgrad": [(out_(k), out_(k2)), (act(c), act(c2)), (fil(k, c), fil(k2, c2))],
        }[r["op"]]
        staged = [i for i in range(3) if tensors[i][0] != tensors[i][1]]
        moved = sum(2 * (tensors[i][0] + tensors[i][1]) for i in staged)  # f16
        out.append((r["best_kernel_us"] - alone, moved, 1 + (2 in staged)))
    return out


def rms(data, launch, bandwidth):
    return math.sqrt(sum(math.log(max(1e-3, (b / bandwidth + n * launch) * 1e6) / max(a, 1e-3)) ** 2
                         for a, b, n in data) / len(data))


def main():
    data = samples(*(sys.argv[1:3] if len(sys.argv) > 2 else (RESULTS, TABLE)))
    print(f"{len(data)} padded layers; RMS log error {rms(data, 8e-6, 1.4e12):.3f} at 8 µs a launch, 1.4e12 B/s")
    grid = [(l * 0.5e-6, b * 0.1e12) for l in range(2, 30) for b in range(4, 40)]
    launch, bandwidth = min(grid, key=lambda g: rms(data, *g))
    print(f"best: {launch * 1e6:.1f} µs a launch, {bandwidth:.1e} B/s, RMS log error {rms(data, launch, bandwidth):.3f}")


if __name__ == "__main__":
    main()
