"""Rows naming random skinny problems whose X and Y walk K in aligned 16-byte vectors (A row-major,
B column-major, K a multiple of 8: the vector dot form's; D either way), and the decode steps of LLM projections,
for `select_sweep --retime skinny_dot --with skinny_dotv --rows FILE`: it times the dot form and
every split of the vector dot form on each. Usage: aligned_problems.py SEED > rows.tsv"""
import math
import random
import sys

seed = int(sys.argv[1])
rng = random.Random(seed)
KERNEL = {"f16": "cutlass_aot_skinny_dot_f16", "bf16": "cutlass_aot_skinny_dot_bf16",
          "f32": "cutlass_aot_skinny_dot_f32", "f64": "cutlass_aot_skinny_dot_f64"}
BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}
COLS = [1, 2, 3, 4, 5, 8, 12, 16, 24, 32, 48, 64]

def log_uniform(lo, hi):
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))

def row(dtype, m, n, k, batch, c_layout):
    return f"gemm\t{dtype}\t{dtype}\t{dtype}\ttn{c_layout}\t{m},{n},{k},{batch}\t{KERNEL[dtype]}\t1\tauto\t0\t0"

print("# cutlass-aot selection table\n# device: any\n# date: -\n"
      "# columns: op a b c layout dims kernel split_k raster swizzle us")
for dtype, count in (("f16", 80), ("bf16", 80), ("f32", 50), ("f64", 50)):
    drawn = 0
    while drawn < count:
        m, n = log_uniform(64, 65536), rng.choice(COLS)
        k = -(-log_uniform(64, 32768) // 8) * 8
        batch = rng.choice([1, 1, 1, 1, 2, 3, 8])
        if m * k * batch * BYTES[dtype] > 1 << 30:
            continue
        print(row(dtype, m, n, k, batch, rng.choice("tn")))
        drawn += 1
# Decode steps: W (N x K, row-major) times M <= 16 token vectors, as dispatch runs them (W·xᵀ,
# D transposed: column-major).
for dtype in ("f16", "bf16"):
    for rows, depth in ((4096, 4096), (8192, 8192), (28672, 4096), (4096, 14336), (14336, 4096),
                        (1024, 4096), (3072, 8192), (8192, 28672), (2048, 2048), (6144, 4096)):
        for cols in (1, 4, 16):
            print(row(dtype, rows, cols, depth, 1, "n"))
