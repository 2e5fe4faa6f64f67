"""torch.matmul on the problems of bench/floor/gemv.cu (X row-major: the dot form; X column-major,
rows contiguous: the axpy form), one output column, timed as that harness times kernels (30
launches behind torch.cuda._sleep, an event between launches, median)."""
import json
import torch

def time_us(fn, iters=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    torch.cuda._sleep(2_000_000)
    ev[0].record()
    for i in range(iters):
        fn()
        ev[i + 1].record()
    ev[iters].synchronize()
    t = sorted(ev[i].elapsed_time(ev[i + 1]) * 1e3 for i in range(iters))
    return t[iters // 2]

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
PROBLEMS = [("bf16", 12117, 657, 1), ("f16", 8387, 3336, 18), ("f32", 166, 19882, 1), ("bf16", 93, 2080, 107),
            ("f16", 4206, 357, 67), ("bf16", 8192, 8192, 1), ("f16", 4096, 14336, 1), ("f32", 1000, 3000, 5),
            ("bf16", 28672, 4096, 1), ("f16", 777, 5003, 3)]
DOT = [("bf16", 8192, 8192, 1), ("f16", 28672, 4096, 1), ("bf16", 4096, 14336, 1), ("f16", 8916, 3318, 1),
       ("bf16", 2048, 2048, 1), ("f16", 1000, 777, 16), ("f32", 518, 3579, 1), ("bf16", 27, 20609, 1),
       ("f32", 4096, 4096, 1), ("bf16", 12117, 657, 1), ("bf16", 4096, 4096, 1), ("f16", 1024, 4096, 1),
       ("bf16", 3072, 8192, 1), ("f16", 14336, 4096, 1), ("bf16", 8192, 28672, 1), ("f16", 2048, 2048, 1)]
for dtype, rows, depth, batch in DOT:  # X row-major (the dot form)
    t = DTYPES[dtype]
    x = torch.randn(batch, rows, depth, device="cuda", dtype=t)
    y = torch.randn(batch, depth, 1, device="cuda", dtype=t)
    us = time_us(lambda: torch.matmul(x, y))
    mb = rows * depth * batch * x.element_size() / 1e6
    print(json.dumps({"problem": f"{dtype} {rows}x1x{depth} b{batch}", "form": "dot", "variant": "torch.matmul",
                      "us": round(us, 2), "gbps": round(mb * 1e3 / us)}))
for dtype, rows, depth, batch in PROBLEMS:  # X column-major (the axpy form)
    t = DTYPES[dtype]
    x = torch.randn(batch, depth, rows, device="cuda", dtype=t).transpose(1, 2)  # rows contiguous
    y = torch.randn(batch, depth, 1, device="cuda", dtype=t)
    us = time_us(lambda: torch.matmul(x, y))
    mb = rows * depth * batch * x.element_size() / 1e6
    print(json.dumps({"problem": f"{dtype} {rows}x1x{depth} b{batch}", "form": "axpy", "variant": "torch.matmul",
                      "us": round(us, 2),
                      "gbps": round(mb * 1e3 / us)}))
