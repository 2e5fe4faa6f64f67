#!/usr/bin/env python3
"""Joins conv_bench's records with conv_cudnn.py's (same problem, op, dtype) into results records
(DESIGN.md §6: ours_us, ref_us, ratio = ours ÷ reference throughput) and prints the geometric
means per op and dtype (dispatched: `ratio`; a problem the dispatch table has not seen:
`unseen_ratio`; with the build's committed tables: `committed_ratio`; the fastest single conv
kernel: `best_kernel_ratio`), every layer under 0.8x, and how close the unseen and committed
choices come to the fastest way the run timed.

    python3 bench/compare_conv.py ours.jsonl cudnn.jsonl results.jsonl

A problem timed by several cuDNN passes (separate processes appending to one file: cuDNN's
autotuner picks its algorithm per process, and one pass's time of a layer can be 0.55-1.6x
another's) is compared with its fastest pass (`ref_passes` says how many there were).
"""
import json
import math
import sys
from collections import defaultdict


def key(r):
    return (r["op"], r["dtype"], r["n"], r["h"], r["w"], r["c"], r["k"], r["r"], r["s"], r["pad"], r["stride"])


def main(ours_path, ref_path, out_path):
    refs, passes = {}, defaultdict(int)
    for line in open(ref_path):
        if line.strip():
            r = json.loads(line)
            passes[key(r)] += 1
            if key(r) not in refs or r["ref_us"] < refs[key(r)]["ref_us"]:
                refs[key(r)] = r
    groups = defaultdict(list)
    with open(out_path, "w") as out:
        for line in open(ours_path):
            if not line.strip():
                continue
            r = json.loads(line)
            ref = refs.get(key(r))
            if ref is None:
                continue
            r.update({"ref": "cudnn", "ref_passes": passes[key(r)], "ref_us": ref["ref_us"], "ref_tflops": ref["ref_tflops"],
                      "ratio": round(ref["ref_us"] / r["ours_us"], 3), "torch": ref["torch"], "cudnn": ref["cudnn"]})
            for field in ("unseen", "committed", "best_kernel"):
                if f"{field}_us" in r:
                    r[f"{field}_ratio"] = round(ref["ref_us"] / r[f"{field}_us"], 3)
            out.write(json.dumps(r) + "\n")
            groups[(r["set"], r["op"], r["dtype"])].append(r)
    for (set_, op, dtype), rs in sorted(groups.items()):
        def geo(field):
            vals = [r[field] for r in rs if field in r]
            return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")
        low = [r for r in rs if r["ratio"] < 0.8]
        print(f"{set_:9} {op:13} {dtype:5} geomean {geo('ratio'):.3f}x over {len(rs)} layers, {len(low)} under 0.8x"
              f" (unseen {geo('unseen_ratio'):.3f}x, committed tables {geo('committed_ratio'):.3f}x,"
              f" best single kernel {geo('best_kernel_ratio'):.3f}x)")
        for r in low:
            print(f"    {r['h']}x{r['w']} {r['c']}->{r['k']} {r['r']}x{r['s']} s{r['stride']}: {r['ratio']:.2f}x "
                  f"({r['ours_tflops']} vs {r['ref_tflops']} TFLOP/s, {r['rust_name']})")
        print(f"    min {min(r['ratio'] for r in rs):.2f}x, max {max(r['ratio'] for r in rs):.2f}x")
        for field in ("unseen", "committed"):
            # Selection on the GPU: the dispatched way against the fastest way timed in this run.
            shares = [min(1.0, r["best_kernel_us"] / r[f"{field}_us"]) for r in rs if f"{field}_us" in r]
            if shares:
                gm = math.exp(sum(math.log(v) for v in shares) / len(shares))
                within = sum(v >= 1 / 1.05 for v in shares) / len(shares)
                print(f"    {field} choice: {gm:.3f} of the fastest way timed, {within:.0%} within 5 %")


if __name__ == "__main__":
    main(*sys.argv[1:4])
