"""torch.matmul (cuBLAS DGEMM) on the f64 harness's problems (stdin: "layout m n k"), timed as the
harness times (compare.py's event_times_us); one JSON line each."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import torch  # noqa: E402
from compare import event_times_us, operand  # noqa: E402

for line in sys.stdin:
    if not line.strip() or line.startswith("#"):
        continue
    layout, m, n, k = line.split()
    m, n, k = int(m), int(n), int(k)
    a = operand(torch, m, k, layout[0] == "n", 1, torch.float64)
    b = operand(torch, k, n, layout[1] == "n", 1, torch.float64)
    us = event_times_us(torch, lambda: torch.matmul(a, b), 3, 20)
    print(json.dumps({"config": "torch", "layout": layout, "m": m, "n": n, "k": k, "us": round(us, 2),
                      "tflops": round(2 * m * n * k / us / 1e6, 2)}), flush=True)
