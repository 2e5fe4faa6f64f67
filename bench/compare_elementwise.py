#!/usr/bin/env python3
"""torch's time for each operation of examples/elementwise_bench.rs, measured on the same GPU in
the same session, added to its records: `torch_us`, `torch_gbps` and `ours_vs_torch` (torch's time
over ours: above 1, ours is faster). Usage: compare_elementwise.py OURS.jsonl OUT.jsonl"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "e4m3": torch.float8_e4m3fn}


def operation(record):
    """The torch call that computes what `record["op"]` does (out of place, like ours)."""
    rows, cols = record["rows"], record["cols"]
    x_type, d_type = DTYPES[record["x"]], DTYPES[record["d"]]
    x = torch.rand(rows, cols, device="cuda", dtype=torch.float32).to(x_type)
    y = torch.rand(rows, cols, device="cuda", dtype=torch.float32).to(x_type)
    bias = torch.rand(cols, device="cuda", dtype=torch.float32).to(x_type)
    op = record["op"]
    calls = {
        "relu_f16": lambda: torch.relu(x),
        "gelu_f16": lambda: F.gelu(x),
        "silu_bf16": lambda: F.silu(x),
        "sigmoid_f32": lambda: torch.sigmoid(x),
        "add_f16": lambda: torch.add(x, y),
        "mul_bf16": lambda: torch.mul(x, y),
        "axpby_f32": lambda: torch.add(x, y, alpha=0.5),
        "add_row_f16": lambda: torch.add(x, bias),
        # Conversions: torch's `.to(dtype)`; ours also multiplies by the scale.
        "convert_f32_to_f16": lambda: x.to(d_type),
        "convert_f16_to_f32": lambda: x.to(d_type),
        "convert_bf16_to_f16": lambda: x.to(d_type),
        "convert_f32_to_e4m3": lambda: x.to(d_type),
        "convert_f16_to_e4m3": lambda: x.to(d_type),
    }
    return calls[op]


def median_us(call, iters=20, warmup=3):
    for _ in range(warmup):
        call()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    events[0].record()
    for e in events[1:]:
        call()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(iters))


def main():
    ours_path, out_path = sys.argv[1], sys.argv[2]
    with open(ours_path) as f, open(out_path, "w") as out:
        for line in f:
            record = json.loads(line)
            t = median_us(operation(record))
            record["torch_us"] = round(t, 2)
            record["torch_gbps"] = round(record["bytes_moved"] / (t * 1e3), 1)
            record["ours_vs_torch"] = round(t / record["ours_us"], 3)
            record["torch"] = torch.__version__
            out.write(json.dumps(record) + "\n")
            print(json.dumps({k: record[k] for k in ("op", "ours_gbps", "copy_gbps", "ours_vs_copy", "torch_gbps", "ours_vs_torch")}))
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
