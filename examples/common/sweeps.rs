//! The named shape lists of the profiler and dispatch_bench, and the `MxNxK[xBATCH]` and layout
//! letter (`tn`, `tnt`) syntax.

use cutlass_aot::model::{DType, Layout};

use super::Extents;

/// `MxNxK` or `MxNxKxBATCH`, every extent at least 1.
pub fn parse_shape(s: &str) -> Result<Extents, String> {
    let parts: Vec<&str> = s.trim().split(['x', 'X']).collect();
    if !(3..=4).contains(&parts.len()) {
        return Err(format!("shape {s:?}: expected MxNxK or MxNxKxBATCH"));
    }
    let mut v = [1usize; 4];
    for (slot, part) in v.iter_mut().zip(&parts) {
        *slot = match part.parse::<usize>() {
            Ok(x) if x >= 1 => x,
            _ => return Err(format!("shape {s:?}: {part:?} is not a positive integer")),
        };
    }
    Ok(Extents {
        m: v[0],
        n: v[1],
        k: v[2],
        batch: v[3],
    })
}

/// Issue 12's M extents against the model projections: decode (1, 16), small and large batches of
/// tokens (64, 128, 512), prefill (2048).
pub const ISSUE12_M: [usize; 6] = [1, 16, 64, 128, 512, 2048];

/// Issue 12's (N, K) of the linear layers of LLMs (D = X·W^T with X M x K, W N x K).
pub const ISSUE12_PROJECTIONS: [(usize, usize); 14] = [
    // LLaMA-2-7B: attention output (and each of Q, K, V), MLP gate/up, MLP down, fused QKV.
    (4096, 4096),
    (11008, 4096),
    (4096, 11008),
    (12288, 4096),
    // LLaMA-3-70B: attention output, MLP gate/up, MLP down, fused QKV (GQA: 8192 + 2 x 1024).
    (8192, 8192),
    (28672, 8192),
    (8192, 28672),
    (10240, 8192),
    // Mixtral-8x7B: one expert's gate/up and down.
    (14336, 4096),
    (4096, 14336),
    // DeepSeek-V3: one routed expert's gate/up and down (hidden 7168, expert width 2048), the
    // dense layers' MLP up and down (18432).
    (7168, 2048),
    (2048, 7168),
    (18432, 7168),
    (7168, 18432),
];

/// The named shape lists.
pub fn sweep(name: &str) -> Result<Vec<Extents>, String> {
    let e = |m, n, k, batch| Extents { m, n, k, batch };
    match name {
        "issue3" => {
            let mut shapes: Vec<Extents> = [1024, 2048, 4096, 8192].iter().map(|&s| e(s, s, s, 1)).collect();
            let big = [4096, 8192, 14336, 28672];
            for m in [16, 128, 1024, 4096] {
                for n in big {
                    for k in big {
                        shapes.push(e(m, n, k, 1));
                    }
                }
            }
            Ok(shapes)
        }
        // The small-M shapes of issue3 with M and N swapped: the problems the transposed ("tnn")
        // kernels run for them (dispatch runs D^T = B^T A^T), profiled with --layout tnn.
        "issue3_small_m_transposed" => Ok(sweep("issue3")?
            .into_iter()
            .filter(|s| s.m <= 128)
            .map(|s| e(s.n, s.m, s.k, s.batch))
            .collect()),
        // Issue 4: split-K territory (few output tiles, deep K) and large squares.
        "issue4_splitk" => {
            let mut shapes = Vec::new();
            for mn in [512, 768, 1024] {
                for k in [16384, 32768, 65536] {
                    shapes.push(e(mn, mn, k, 1));
                }
            }
            Ok(shapes)
        }
        "issue4_squares" => Ok(vec![e(4096, 4096, 4096, 1), e(8192, 8192, 8192, 1)]),
        // Issue 12: the shapes the per-device dispatch tables are measured on.
        "issue12" => {
            let mut shapes: Vec<Extents> = [1024, 2048, 3072, 4096, 6144, 8192]
                .iter()
                .map(|&s| e(s, s, s, 1))
                .collect();
            for m in ISSUE12_M {
                for (n, k) in ISSUE12_PROJECTIONS {
                    shapes.push(e(m, n, k, 1));
                }
            }
            // K-heavy: few output tiles, deep K (split-K and stream-K territory).
            for mn in [256, 512, 1024, 1536] {
                for k in [8192, 12288, 16384, 32768] {
                    shapes.push(e(mn, mn, k, 1));
                }
            }
            // Many small problems in one batched launch.
            for s in [64, 128, 256, 512] {
                for batch in [16, 64, 256] {
                    shapes.push(e(s, s, s, batch));
                }
            }
            // Ragged: no extent a multiple of the tiles (N and K stay multiples of 8, as the
            // kernels' 16-byte alignment needs for row-major A and C and column-major B; M is free).
            shapes.extend([
                e(1000, 1000, 1000, 1),
                e(1536, 2304, 768, 1),
                e(3000, 5000, 2048, 1),
                e(5120, 1000, 4000, 1),
                e(777, 1024, 1536, 1),
                e(4000, 4000, 4000, 1),
            ]);
            Ok(shapes)
        }
        // Issue 12's M <= 128 shapes with M and N swapped, for the transposed kernels (--layout
        // tnn), as issue3_small_m_transposed.
        "issue12_small_m_transposed" => Ok(sweep("issue12")?
            .into_iter()
            .filter(|s| s.m <= 128)
            .map(|s| e(s.n, s.m, s.k, s.batch))
            .collect()),
        // A quick subset of issue12, every category (for a second device, or a short session).
        "issue12_quick" => Ok(vec![
            e(1024, 1024, 1024, 1),
            e(4096, 4096, 4096, 1),
            e(8192, 8192, 8192, 1),
            e(1, 4096, 4096, 1),
            e(1, 14336, 4096, 1),
            e(16, 4096, 4096, 1),
            e(16, 11008, 4096, 1),
            e(16, 8192, 28672, 1),
            e(16, 7168, 2048, 1),
            e(128, 12288, 4096, 1),
            e(128, 28672, 8192, 1),
            e(128, 2048, 7168, 1),
            e(512, 4096, 11008, 1),
            e(2048, 4096, 4096, 1),
            e(2048, 18432, 7168, 1),
            e(2048, 8192, 8192, 1),
            e(256, 256, 16384, 1),
            e(512, 512, 32768, 1),
            e(1024, 1024, 8192, 1),
            e(64, 64, 64, 256),
            e(128, 128, 128, 64),
            e(256, 256, 256, 16),
            e(1000, 1000, 1000, 1),
            e(777, 1024, 1536, 1),
            e(3000, 5000, 2048, 1),
        ]),
        // Problems torch accepts that no default kernel reads as they lie (a contiguous extent or
        // leading dimension not a multiple of 8, odd everything): dispatch stages them.
        "issue12_unaligned" => Ok(vec![
            e(4096, 4096, 700, 1),
            e(2048, 4096, 4095, 1),
            e(1000, 1001, 1003, 1),
            e(4097, 4097, 4097, 1),
            e(16, 11008, 4100, 1),
            e(1, 4097, 4096, 1),
            e(8191, 8192, 8192, 1),
            e(2048, 14336, 4095, 1),
            e(333, 555, 777, 4),
            e(64, 64, 60, 256),
        ]),
        "smoke" => Ok(vec![
            e(1003, 1000, 1000, 1),
            e(16, 4096, 4096, 1),
            e(128, 128, 64, 1),
            e(256, 512, 128, 1),
            e(512, 512, 512, 4),
            e(4096, 4096, 4096, 1),
        ]),
        other => Err(format!(
            "unknown sweep {other:?}; known: issue3, issue3_small_m_transposed, issue4_splitk, issue4_squares, \
             issue12, issue12_small_m_transposed, issue12_quick, issue12_unaligned, smoke"
        )),
    }
}

/// `tn` (C row-major) or `tnt`.
pub fn parse_layout(s: &str) -> Result<(Layout, Layout, Option<Layout>), String> {
    let letters: Vec<Option<Layout>> = s.chars().map(super::letter_layout).collect();
    match letters.as_slice() {
        [Some(a), Some(b)] => Ok((*a, *b, None)),
        [Some(a), Some(b), Some(c)] => Ok((*a, *b, Some(*c))),
        _ => Err(format!(
            "layout {s:?}: expected two letters for A and B (tn, nn, nt, tt) or three with C (tnt); \
             t = row-major, n = column-major"
        )),
    }
}

/// The float types dispatch takes for A, B and D alike (`--dtype` of `gemm` and `dispatch_bench`).
pub fn parse_float_dtype(s: &str) -> Result<DType, String> {
    DType::from_manifest_name(s)
        .filter(|d| matches!(d, DType::F16 | DType::Bf16 | DType::F32 | DType::F64))
        .ok_or_else(|| format!("--dtype {s:?}: allowed f16, bf16, f32, f64"))
}

/// A GEMM problem drawn at random: type, layouts of A, B and C, extents.
pub type RandomProblem = (DType, [Layout; 3], Extents);

/// `count` problems drawn with `seed`, none of any named list: a type of `dtypes`, A and B each
/// row- or column-major (C row-major, as torch writes), M, N and K log-uniform in [1, 65536],
/// a batch of 1 three times in four, else log-uniform in [2, 128]; redrawn while the product has
/// more than 2^37 multiply-adds (2^33 for f32 and f64) or an operand over 1 GiB.
pub fn random_problems(count: usize, seed: u64, dtypes: &[DType]) -> Vec<RandomProblem> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let log_uniform = |rng: &mut rand::rngs::StdRng, low: f64, high: f64| {
        (rng.random_range(low.ln()..high.ln())).exp().round().max(low) as usize
    };
    let layouts = [Layout::Row, Layout::Column];
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let dtype = dtypes[rng.random_range(0..dtypes.len())];
        let (la, lb) = (layouts[rng.random_range(0..2)], layouts[rng.random_range(0..2)]);
        let m = log_uniform(&mut rng, 1.0, 65536.0);
        let n = log_uniform(&mut rng, 1.0, 65536.0);
        let k = log_uniform(&mut rng, 1.0, 65536.0);
        let batch = if rng.random_range(0..4) == 0 {
            log_uniform(&mut rng, 2.0, 128.0)
        } else {
            1
        };
        let macs = m as f64 * n as f64 * k as f64 * batch as f64;
        let limit = if matches!(dtype, DType::F32 | DType::F64) {
            2f64.powi(33)
        } else {
            2f64.powi(37)
        };
        let bytes = (dtype.bits() / 8) as f64 * batch as f64;
        let largest = (m * k).max(k * n).max(m * n) as f64 * bytes;
        if macs > limit || largest > (1u64 << 30) as f64 {
            continue;
        }
        out.push((dtype, [la, lb, Layout::Row], Extents { m, n, k, batch }));
    }
    out
}
