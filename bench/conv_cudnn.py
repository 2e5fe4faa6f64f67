#!/usr/bin/env python3
"""cuDNN (through PyTorch) on the conv problems `conv_bench --list` prints, in the same run as
conv_bench: fprop is `torch.nn.functional.conv2d`, dgrad and wgrad are
`aten.convolution_backward` with only the input or the weight gradient asked for; channels_last
tensors, inputs uniform in [-1, 1], CUDA events over many back-to-back iterations after warm-up.

    conv_bench --list ... | python3 bench/conv_cudnn.py > cudnn.jsonl
"""
import json
import sys

import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def timed(fn, iters=20, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # Calibrate so that one measurement takes about 0.2 s.
    start.record()
    fn()
    end.record()
    end.synchronize()
    once = max(start.elapsed_time(end), 1e-3)
    iters = max(3, min(iters, int(200.0 / once)))
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / iters


def main():
    torch.backends.cudnn.benchmark = True
    device = torch.cuda.get_device_name(0)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        p = json.loads(line)
        dtype = DTYPES[p["dtype"]]
        n, h, w, c, k, r, s = (p[x] for x in ("n", "h", "w", "c", "k", "r", "s"))
        stride, pad, dil = p["stride"], p["pad"], p["dilation"]
        x = (torch.rand(n, c, h, w, device="cuda", dtype=dtype) * 2 - 1).to(memory_format=torch.channels_last)
        wt = (torch.rand(k, c, r, s, device="cuda", dtype=dtype) * 2 - 1).to(memory_format=torch.channels_last)
        y = torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad, dilation=dil)
        dy = (torch.rand_like(y) * 2 - 1).contiguous(memory_format=torch.channels_last)
        op = p["op"]
        if op == "conv2d_fprop":
            fn = lambda: torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad, dilation=dil)
        else:
            mask = [True, False, False] if op == "conv2d_dgrad" else [False, True, False]
            fn = lambda: torch.ops.aten.convolution_backward(
                dy, x, wt, None, [stride, stride], [pad, pad], [dil, dil], False, [0, 0], 1, mask)
        us = timed(fn)
        p_out, q_out = y.shape[2], y.shape[3]
        flops = 2.0 * n * p_out * q_out * k * r * s * c
        p.update({"device": device, "ref": "cudnn", "ref_us": round(us, 2),
                  "ref_tflops": round(flops / us / 1e6, 1), "p": p_out, "q": q_out,
                  "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()})
        print(json.dumps(p), flush=True)


if __name__ == "__main__":
    main()
