#!/usr/bin/env python3
"""Ours vs cuBLAS (torch.matmul), side by side in one run on one GPU.

Runs the `gemm` example (which verifies its result) for each kernel and shape, then torch.matmul on
the same shape, dtype and layouts, and writes JSON Lines records (DESIGN.md §6) plus a table.

    python3 bench/compare.py --gemm .gpu/gemm --out bench/results/h100_2026-11-21.jsonl
"""
import argparse, datetime, json, subprocess, sys

import torch

CASES = [  # (kernel, torch dtype, m, n, k)
    ("gemm_f16_tn", "f16", 4096, 4096, 4096),
    ("gemm_f16_tn", "f16", 8192, 8192, 8192),
    ("gemm_bf16_tn", "bf16", 4096, 4096, 4096),
    ("gemm_bf16_tn", "bf16", 8192, 8192, 8192),
    ("gemm_f16_nn", "f16", 4096, 4096, 4096),
    ("gemm_tf32_tn", "tf32", 4096, 4096, 4096),
    ("gemm_f64_tt", "f64", 2048, 2048, 2048),
    ("gemm_f32_simt_tt", "f32", 2048, 2048, 2048),
]
TORCH_DTYPE = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32, "f64": torch.float64}


def torch_us(dtype, layout, m, n, k, iters=50):
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    t = TORCH_DTYPE[dtype]
    # Same storage layouts as our kernel: 't' row-major, 'n' column-major (a transposed view).
    a = (torch.rand(m, k, device="cuda", dtype=t) * 2 - 1) if layout[0] == "t" else (torch.rand(k, m, device="cuda", dtype=t) * 2 - 1).t()
    b = (torch.rand(k, n, device="cuda", dtype=t) * 2 - 1) if layout[1] == "t" else (torch.rand(n, k, device="cuda", dtype=t) * 2 - 1).t()
    for _ in range(5):
        torch.matmul(a, b)
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); torch.matmul(a, b); e.record(); e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gemm", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    date = datetime.date.today().isoformat()
    rows = []
    with open(args.out, "w") as out:
        for kernel, dtype, m, n, k in CASES:
            run = subprocess.run([args.gemm, "--kernel", kernel, "--m", str(m), "--n", str(n), "--k", str(k), "--json"],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{kernel} {m}x{n}x{k}: FAILED\n{run.stdout}{run.stderr}", file=sys.stderr)
                continue
            rec = json.loads(run.stdout.strip().splitlines()[-1])
            ref = torch_us(dtype, rec["layout"], m, n, k)
            rec.update(date=date, dtype=dtype, ref="torch.matmul", ref_us=round(ref, 2),
                       ref_tflops=round(2 * m * n * k / (ref * 1e-6) / 1e12, 1))
            rec["ratio"] = round(rec["ours_tflops"] / rec["ref_tflops"], 3)
            out.write(json.dumps(rec) + "\n")
            rows.append(rec)
    print(f"{'kernel':<18} {'dtype':<5} {'shape':<16} {'ours TF/s':>10} {'torch TF/s':>11} {'ratio':>6} verified")
    for r in rows:
        print(f"{r['kernel'][:18]:<18} {r['dtype']:<5} {r['m']}x{r['n']}x{r['k']:<6} {r['ours_tflops']:>10} {r['ref_tflops']:>11} {r['ratio']:>6} {r['verified']}")


if __name__ == "__main__":
    main()
