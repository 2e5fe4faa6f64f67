//! Grouped-GEMM benchmark (issue 11): mixture-of-experts layers and equal-size group lists, every
//! grouped kernel of the binary in both launch forms, against `torch._grouped_mm`, a
//! `torch.matmul` loop and `torch.bmm` (`bench/compare_grouped.py` adds those).
//!
//!     cargo build --release --features grouped --example grouped_bench
//!     target/release/examples/grouped_bench --json grouped.jsonl
//!     python3 bench/compare_grouped.py --ours grouped.jsonl --out grouped_results.jsonl \
//!         --rerun-ours target/release/examples/grouped_bench
//!
//! A workload is a set of experts (groups) sharing N and K: A holds every token's row (tokens × K,
//! row-major, the experts' rows back to back), B one K × N column-major matrix per expert (the
//! memory of a row-major N × K weight, as nn.Linear stores it), D tokens × N row-major. Inputs come
//! from the profiler's pools (uniform in [-1, 1]). Two launch forms:
//! * `list`: the groups on the host, `grouped::launch_raw` over one `GroupOperands` per expert
//!   (the registry-driven path; the typed `kernels::NAME::run` builds the same and calls it);
//! * `moe`: the cumulative row offsets in device memory, `grouped::launch_moe_raw` (the setup
//!   kernel writes the groups' arguments on the device; kernels with a device schedule, row-major
//!   A/D; the typed `kernels::NAME::run_moe` builds the same and calls it).
//!
//! Each (kernel, form) runs once on a poisoned D; sampled elements of a few experts (the largest,
//! the smallest non-empty, the first and the last non-empty) are checked against an f64 host
//! reference, and the checked experts' rows of D are scanned for NaN (never written). Then it is
//! timed as the profiler times (CUDA events between launches enqueued back to back behind a spin
//! kernel; the median). Host overhead: the host time of one launch call (median, GPU not waited
//! for) through the untyped and the typed entry of each form, as `host_overhead` records. `--help`
//! lists the options.

mod common;

use std::ffi::c_void;
use std::fs::File;
use std::io::Write;
use std::marker::PhantomData;
use std::process::ExitCode;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::time::Instant;

use common::{Check, Failure, JsonRecord, Pools, Spinner, Timing};
use cudarc::driver::{result, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DriverError};
use cutlass_aot::grouped::{self, GroupOperands, GroupedOperands, MoeOperands};
use cutlass_aot::half::{bf16, f16};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{Api, DType, GroupSchedule, Layout, Operation, OperationKind};
use cutlass_aot::{
    device, verify, ColumnMajor, Element, GemmKernel, Group, GroupOf, GroupShape, GroupedGemm,
    GroupedProblem, KernelInfo, MatrixMut, MatrixRef, MatrixShape, MoeGemm, Operand, RowMajor,
};
use cutlass_aot::{Raster, Tuning};

const USAGE: &str = "\
usage: grouped_bench [options]

Workloads (A tokens x K row-major, B one K x N column-major matrix per expert, D tokens x N
row-major; inputs uniform in [-1, 1]):
  mixtral_up      8 experts,   8192 rows, N 28672, K 4096
  mixtral_down    8 experts,   8192 rows, N 4096,  K 14336
  deepseek_up     256 experts, 32768 rows, N 4096,  K 7168
  deepseek_down   256 experts, 32768 rows, N 7168,  K 2048
      each with skew `uniform` (total / experts rows each, the remainder one row each to the first
      experts) and `zipf` (weight 1/rank^S, ranks a seeded random permutation of the experts; rows
      = total * w / sum(w) rounded to the nearest integer, the rounding residue added to the rank-1
      expert; an expert may get 0 rows)
  equal_64x512    64 groups of 512x512x512
  equal_16x2048   16 groups of 2048x2048x2048

  --workload W[,W...]      built-in workloads, or `moe` (the four above), `equal`, `all` (default)
  --skew S[,S...]          uniform, zipf (default both; the equal workloads are uniform only)
  --groups G --m M --n N --k K
                           instead: one workload of G equal groups of MxNxK (`equal_GxMxNxK`)
  --rows R1,R2,... --n N --k K
                           instead: one workload with these rows per expert (`custom`, skew `custom`)
  --zipf-s S               zipf exponent (default 1.2)
  --seed N                 seed of the zipf permutation (default 2024)
  --dtype bf16|f16         operand type (default bf16)
  --kernels NAME[,NAME...] kernels (Rust or CUTLASS names). Default: every grouped kernel of the
                           type with A row-major, B column-major, D row-major and a plain epilogue
                           that supports the workload and runs on this device
  --forms F[,F...]         list (groups on the host, grouped::launch_raw), moe (row offsets on the
                           device, grouped::launch_moe_raw: device-schedule kernels only); default
                           both
  --raster R               tile order of the 3.x kernels: heuristic (default), along_m, along_n
  --swizzle S              tile swizzle of the 3.x kernels: 0 (default), 1, 2, 4, 8
  --iters N                timed launches (default 30)
  --warmup N               untimed launches first (default 5)
  --max-seconds S          cap on the timed launches of one kernel, form and workload: about S
                           seconds, at least 3 launches (default 1; 0 = no cap)
  --samples N              sampled elements of D checked (default 256, plus 4 corners per checked
                           expert)
  --host-calls N           host overhead: calls per batch (default 5)
  --host-batches N         host overhead: batches, the stream synchronised between them (default
                           10; 0 = no host-overhead records)
  --json PATH              also write JSON Lines records to PATH ('-': stdout, the table then goes
                           to stderr)
  --list                   list the grouped kernels of this binary (and which forms each takes)
  --help

D_g = A_g * B_g (alpha 1, beta 0, C not read). Verification: |D - ref| over the samples, norm-wise
(verify::relative_error), within the kernel's tolerance (1e-2 for bf16 output, 2e-3 for f16), and no
NaN left in the checked experts' rows of D (poisoned first). Time: median of per-launch CUDA-event
times; TFLOP/s = 2 * sum(m_g) * N * K / time. Host overhead: host time of one launch call (median
over batches of --host-calls calls; the GPU is not waited for inside a batch): list/raw
(launch_raw over prebuilt operands), list/typed (grouped::launch with typed views, building the
group list each call; separate D buffers), moe/raw (launch_moe_raw), moe/typed
(grouped::launch_moe); bare = cuLaunchKernel of an empty kernel in the same run.
Exit status: 0 every run verified (or no GPU: the plan is printed), 1 a kernel failed or did not
verify, 2 usage error or no device code.";

/// The mixture-of-experts workloads: name, experts, total rows, N, K.
const MOE_WORKLOADS: [(&str, usize, usize, usize, usize); 4] = [
    ("mixtral_up", 8, 8192, 28672, 4096),
    ("mixtral_down", 8, 8192, 4096, 14336),
    ("deepseek_up", 256, 32768, 4096, 7168),
    ("deepseek_down", 256, 32768, 7168, 2048),
];

/// The equal-size workloads: name, groups, M = N = K.
const EQUAL_WORKLOADS: [(&str, usize, usize); 2] = [("equal_64x512", 64, 512), ("equal_16x2048", 16, 2048)];

const DEFAULT_ZIPF_S: f64 = 1.2;
const DEFAULT_SEED: u64 = 2024;

// ---------------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skew {
    Uniform,
    Zipf,
    /// Rows given on the command line.
    Custom,
}

impl Skew {
    fn name(self) -> &'static str {
        match self {
            Skew::Uniform => "uniform",
            Skew::Zipf => "zipf",
            Skew::Custom => "custom",
        }
    }
}

/// One workload: the experts' rows, sharing N and K.
#[derive(Clone, Debug, PartialEq)]
struct Workload {
    name: String,
    skew: Skew,
    rows: Vec<usize>,
    n: usize,
    k: usize,
}

impl Workload {
    fn experts(&self) -> usize {
        self.rows.len()
    }

    fn total(&self) -> usize {
        self.rows.iter().sum()
    }

    /// First row of each expert.
    fn starts(&self) -> Vec<usize> {
        let mut at = 0;
        self.rows
            .iter()
            .map(|&m| {
                let start = at;
                at += m;
                start
            })
            .collect()
    }

    fn flops(&self) -> f64 {
        2.0 * self.total() as f64 * self.n as f64 * self.k as f64
    }

    /// Bytes moved at least once: A, the B of every expert with rows, D.
    fn bytes(&self, element: usize) -> f64 {
        let used = self.rows.iter().filter(|&&m| m > 0).count();
        let (t, n, k) = (self.total() as f64, self.n as f64, self.k as f64);
        element as f64 * (t * k + used as f64 * k * n + t * n)
    }

    fn empty_experts(&self) -> usize {
        self.rows.iter().filter(|&&m| m == 0).count()
    }

    /// Smallest and largest rows of an expert.
    fn extremes(&self) -> (usize, usize) {
        let min = self.rows.iter().copied().min().unwrap_or(0);
        let max = self.rows.iter().copied().max().unwrap_or(0);
        (min, max)
    }

    fn label(&self) -> String {
        format!("{} {}", self.name, self.skew.name())
    }

    fn describe(&self) -> String {
        let (min, max) = self.extremes();
        format!(
            "{} experts, {} rows (min {min}, max {max}, {} empty), N {}, K {}: {:.1} GFLOP",
            self.experts(),
            self.total(),
            self.empty_experts(),
            self.n,
            self.k,
            self.flops() / 1e9
        )
    }
}

/// `total` rows over `experts` equally, the remainder one row each to the first experts.
fn uniform_rows(total: usize, experts: usize) -> Vec<usize> {
    let (base, extra) = (total / experts, total % experts);
    (0..experts).map(|e| base + usize::from(e < extra)).collect()
}

/// SplitMix64: a fixed, documented generator (the permutation must not change with a dependency).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A random permutation of `0..n` (Fisher-Yates over SplitMix64 from `seed`).
fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

/// Zipf-skewed rows: expert `perm[r]` has rank r + 1 and weight 1/(r + 1)^s; rows = total·w/Σw
/// rounded to the nearest integer; what rounding left over (or took too much) goes to the rank-1
/// expert (then, should it run out, to the next ranks).
fn zipf_rows(total: usize, experts: usize, s: f64, seed: u64) -> Vec<usize> {
    let perm = permutation(experts, seed);
    let weight = |rank: usize| 1.0 / ((rank + 1) as f64).powf(s);
    let sum: f64 = (0..experts).map(weight).sum();
    let mut rows = vec![0usize; experts];
    for (rank, &e) in perm.iter().enumerate() {
        rows[e] = (total as f64 * weight(rank) / sum).round() as usize;
    }
    let mut assigned: usize = rows.iter().sum();
    for &e in &perm {
        if assigned < total {
            rows[e] += total - assigned;
            assigned = total;
        } else if assigned > total {
            let take = (assigned - total).min(rows[e]);
            rows[e] -= take;
            assigned -= take;
        }
    }
    rows
}

fn moe_workload(name: &str, skew: Skew, o: &Options) -> Option<Workload> {
    let &(name, experts, total, n, k) = MOE_WORKLOADS.iter().find(|w| w.0 == name)?;
    let rows = match skew {
        Skew::Zipf => zipf_rows(total, experts, o.zipf_s, o.seed),
        _ => uniform_rows(total, experts),
    };
    Some(Workload {
        name: name.to_string(),
        skew,
        rows,
        n,
        k,
    })
}

fn equal_workload(name: String, groups: usize, m: usize, n: usize, k: usize) -> Workload {
    Workload {
        name,
        skew: Skew::Uniform,
        rows: vec![m; groups],
        n,
        k,
    }
}

/// The workloads the options select, in order.
fn workloads(o: &Options) -> Vec<Workload> {
    if let Some(c) = &o.custom {
        return vec![c.clone()];
    }
    let mut list = Vec::new();
    for name in &o.workloads {
        if MOE_WORKLOADS.iter().any(|w| w.0 == name) {
            for &skew in &o.skews {
                list.extend(moe_workload(name, skew, o));
            }
        } else if let Some(&(name, groups, size)) = EQUAL_WORKLOADS.iter().find(|w| w.0 == name) {
            list.push(equal_workload(name.to_string(), groups, size, size, size));
        }
    }
    list
}

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    List,
    Moe,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::List => "list",
            Form::Moe => "moe",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Options {
    /// Tile order of the 3.x kernels (`--raster`, `--swizzle`).
    tuning: Tuning,
    workloads: Vec<String>,
    skews: Vec<Skew>,
    /// A workload given by --groups/--m/--n/--k or --rows/--n/--k.
    custom: Option<Workload>,
    zipf_s: f64,
    seed: u64,
    dtype: DType,
    kernels: Option<Vec<String>>,
    forms: Vec<Form>,
    iters: usize,
    warmup: usize,
    max_seconds: f64,
    samples: usize,
    host_calls: usize,
    host_batches: usize,
    json: Option<String>,
    list: bool,
    help: bool,
}

fn all_workload_names() -> Vec<String> {
    MOE_WORKLOADS
        .iter()
        .map(|w| w.0)
        .chain(EQUAL_WORKLOADS.iter().map(|w| w.0))
        .map(String::from)
        .collect()
}

fn list_of(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The tile order every launch of this run uses (`--raster`, `--swizzle`), set once after parsing.
static TUNING: std::sync::OnceLock<Tuning> = std::sync::OnceLock::new();

fn tuning() -> Tuning {
    TUNING.get().copied().unwrap_or_default()
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        tuning: Tuning::default(),
        workloads: all_workload_names(),
        skews: vec![Skew::Uniform, Skew::Zipf],
        custom: None,
        zipf_s: DEFAULT_ZIPF_S,
        seed: DEFAULT_SEED,
        dtype: DType::Bf16,
        kernels: None,
        forms: vec![Form::List, Form::Moe],
        iters: 30,
        warmup: 5,
        max_seconds: 1.0,
        samples: 256,
        host_calls: 5,
        host_batches: 10,
        json: None,
        list: false,
        help: false,
    };
    let (mut groups, mut m, mut n, mut k, mut rows) = (None, None, None, None, None::<Vec<usize>>);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        let count = |name: &str, v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{name}: {v:?} is not a non-negative integer"))
        };
        let positive = |name: &str, v: String| match v.parse::<usize>() {
            Ok(x) if x >= 1 => Ok(x),
            _ => Err(format!("{name}: {v:?} is not a positive integer")),
        };
        match arg.as_str() {
            "--workload" | "--workloads" => {
                let mut names = Vec::new();
                for w in list_of(&value("--workload")?) {
                    let expanded: Vec<String> = match w.as_str() {
                        "all" => all_workload_names(),
                        "moe" => MOE_WORKLOADS.iter().map(|w| w.0.to_string()).collect(),
                        "equal" => EQUAL_WORKLOADS.iter().map(|w| w.0.to_string()).collect(),
                        other if all_workload_names().iter().any(|n| n == other) => vec![other.to_string()],
                        other => {
                            return Err(format!(
                                "--workload: unknown workload {other:?} (known: {}, moe, equal, all)",
                                all_workload_names().join(", ")
                            ))
                        }
                    };
                    for name in expanded {
                        if !names.contains(&name) {
                            names.push(name);
                        }
                    }
                }
                if names.is_empty() {
                    return Err("--workload: no workload given".into());
                }
                o.workloads = names;
            }
            "--skew" => {
                let mut skews = Vec::new();
                for s in list_of(&value("--skew")?) {
                    let skew = match s.as_str() {
                        "uniform" => Skew::Uniform,
                        "zipf" => Skew::Zipf,
                        other => return Err(format!("--skew: {other:?} is not uniform or zipf")),
                    };
                    if !skews.contains(&skew) {
                        skews.push(skew);
                    }
                }
                if skews.is_empty() {
                    return Err("--skew: no skew given".into());
                }
                o.skews = skews;
            }
            "--groups" => groups = Some(positive("--groups", value("--groups")?)?),
            "--m" => m = Some(positive("--m", value("--m")?)?),
            "--n" => n = Some(positive("--n", value("--n")?)?),
            "--k" => k = Some(positive("--k", value("--k")?)?),
            "--rows" => {
                let list = list_of(&value("--rows")?)
                    .into_iter()
                    .map(|r| count("--rows", r))
                    .collect::<Result<Vec<_>, _>>()?;
                if list.is_empty() || list.iter().all(|&r| r == 0) {
                    return Err("--rows: give at least one expert with rows".into());
                }
                rows = Some(list);
            }
            "--zipf-s" => {
                let v = value("--zipf-s")?;
                o.zipf_s = match v.parse::<f64>() {
                    Ok(s) if s.is_finite() && s >= 0.0 => s,
                    _ => return Err(format!("--zipf-s: {v:?} is not a non-negative number")),
                };
            }
            "--seed" => {
                let v = value("--seed")?;
                o.seed = v
                    .parse::<u64>()
                    .map_err(|_| format!("--seed: {v:?} is not a non-negative integer"))?;
            }
            "--dtype" => {
                o.dtype = match value("--dtype")?.as_str() {
                    "bf16" => DType::Bf16,
                    "f16" => DType::F16,
                    other => return Err(format!("--dtype: {other:?} is not bf16 or f16")),
                };
            }
            "--kernels" => {
                let names = list_of(&value("--kernels")?);
                if names.is_empty() {
                    return Err("--kernels: no kernel given".into());
                }
                o.kernels = Some(names);
            }
            "--forms" | "--form" => {
                let mut forms = Vec::new();
                for f in list_of(&value("--forms")?) {
                    let form = match f.as_str() {
                        "list" => Form::List,
                        "moe" => Form::Moe,
                        other => return Err(format!("--forms: {other:?} is not list or moe")),
                    };
                    if !forms.contains(&form) {
                        forms.push(form);
                    }
                }
                if forms.is_empty() {
                    return Err("--forms: no form given".into());
                }
                o.forms = forms;
            }
            "--iters" => o.iters = count("--iters", value("--iters")?)?.max(1),
            "--raster" => {
                let v = value("--raster")?;
                let raster = match v.as_str() {
                    "heuristic" => Raster::Heuristic,
                    "along_m" => Raster::AlongM,
                    "along_n" => Raster::AlongN,
                    _ => return Err(format!("--raster: {v:?}; allowed: heuristic, along_m, along_n")),
                };
                o.tuning.raster = raster;
            }
            "--swizzle" => {
                let v = value("--swizzle")?;
                o.tuning.max_swizzle = match v.parse::<u32>() {
                    Ok(s) if [0, 1, 2, 4, 8].contains(&s) => s,
                    _ => return Err(format!("--swizzle: {v:?}; allowed: 0 (default), 1, 2, 4, 8")),
                };
            }
            "--warmup" => o.warmup = count("--warmup", value("--warmup")?)?,
            "--max-seconds" | "--max-seconds-per-kernel" => {
                let v = value("--max-seconds")?;
                o.max_seconds = match v.parse::<f64>() {
                    Ok(s) if s.is_finite() && s >= 0.0 => s,
                    _ => return Err(format!("--max-seconds: {v:?} is not a non-negative number")),
                };
            }
            "--samples" => o.samples = count("--samples", value("--samples")?)?,
            "--host-calls" => o.host_calls = count("--host-calls", value("--host-calls")?)?.max(1),
            "--host-batches" => o.host_batches = count("--host-batches", value("--host-batches")?)?,
            "--json" => o.json = Some(value("--json")?),
            "--list" => o.list = true,
            "--help" | "-h" => o.help = true,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    match (groups, m, rows) {
        (Some(_), _, Some(_)) => return Err("give either --groups/--m or --rows, not both".into()),
        (Some(g), Some(m), None) => {
            let (Some(n), Some(k)) = (n, k) else {
                return Err("--groups needs --m, --n and --k".into());
            };
            o.custom = Some(equal_workload(format!("equal_{g}x{m}x{n}x{k}"), g, m, n, k));
        }
        (None, None, Some(rows)) => {
            let (Some(n), Some(k)) = (n, k) else {
                return Err("--rows needs --n and --k".into());
            };
            o.custom = Some(Workload {
                name: "custom".into(),
                skew: Skew::Custom,
                rows,
                n,
                k,
            });
        }
        (None, None, None) if n.is_none() && k.is_none() => {}
        _ => return Err("--m, --n and --k go with --groups (equal groups) or --rows (n and k only)".into()),
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

/// Operand types and layouts of every workload here: A row-major, B column-major, D row-major.
fn types(dtype: DType) -> ((DType, DType, DType), (Layout, Layout, Layout)) {
    ((dtype, dtype, dtype), (Layout::Row, Layout::Column, Layout::Row))
}

fn group_schedule(info: &KernelInfo) -> Option<GroupSchedule> {
    match info.operation {
        Operation::GemmGrouped(g) => Some(g.schedule),
        _ => None,
    }
}

/// Why this benchmark cannot run `info` on `dtype` operands, if it cannot.
fn out_of_scope(info: &KernelInfo, dtype: DType) -> Option<String> {
    let op = info.gemm();
    if info.operation.kind() != OperationKind::GemmGrouped {
        return Some(format!(
            "it is a {} kernel, not a grouped GEMM",
            info.operation.kind()
        ));
    }
    let (have, want) = (
        (
            op.a.element,
            op.b.element,
            op.c.element,
            op.a.layout,
            op.b.layout,
            op.c.layout,
        ),
        types(dtype),
    );
    if have != (want.0 .0, want.0 .1, want.0 .2, want.1 .0, want.1 .1, want.1 .2) {
        return Some(format!(
            "it takes {}/{}/{} {}{}{}; this run takes {dtype} with A row-major, B column-major, D row-major \
             (--dtype)",
            op.a.element,
            op.b.element,
            op.c.element,
            op.a.layout.letter(),
            op.b.layout.letter(),
            op.c.layout.letter()
        ));
    }
    if !info.is_plain() {
        return Some(format!(
            "its epilogue fuses {}; this benchmark runs plain grouped GEMMs",
            info.epilogue.fusion.label()
        ));
    }
    if info.epilogue.compute != DType::F32 {
        return Some(format!(
            "its epilogue computes in {} (the typed MoE path here passes f32 alpha)",
            info.epilogue.compute
        ));
    }
    None
}

/// The list problem of a workload (extents and leading dimensions known on the host).
fn list_problem(w: &Workload, dtype: DType) -> GroupedProblem {
    let (t, l) = types(dtype);
    let shapes = w
        .rows
        .iter()
        .map(|&m| GroupShape {
            ld: Some([w.k, w.k, w.n]),
            ..GroupShape::new(m, w.n, w.k)
        })
        .collect();
    GroupedProblem::new(t, l, shapes)
}

/// The device-resident (MoE) problem of a workload: only the expert count is known on the host.
fn moe_problem(w: &Workload, dtype: DType) -> GroupedProblem {
    let (t, l) = types(dtype);
    GroupedProblem::device_resident(t, l, w.experts())
}

/// Whether `info` takes `w` in `form`: Ok, or why not.
fn form_support(info: &KernelInfo, w: &Workload, dtype: DType, form: Form) -> Result<(), String> {
    let problem = match form {
        Form::List => list_problem(w, dtype),
        Form::Moe => moe_problem(w, dtype),
    };
    info.supports(&problem).map_err(|u| u.reasons.join("; "))
}

/// The kernels the options name, or every grouped kernel in scope (registry order).
fn select(o: &Options) -> Result<Vec<&'static KernelInfo>, String> {
    let Some(names) = &o.kernels else {
        let chosen: Vec<_> = REGISTRY
            .filter(|k| {
                k.operation.kind() == OperationKind::GemmGrouped && out_of_scope(k, o.dtype).is_none()
            })
            .collect();
        return if chosen.is_empty() {
            Err(format!(
                "no plain {} grouped kernel with A row-major, B column-major and D row-major in this binary \
                 (built with `--features grouped`?)",
                o.dtype
            ))
        } else {
            Ok(chosen)
        };
    };
    let mut chosen: Vec<&'static KernelInfo> = Vec::new();
    for name in names {
        let info = REGISTRY.by_name(name).ok_or_else(|| {
            format!(
                "no kernel named {name:?} in this binary (`grouped_bench --list` lists the grouped kernels)"
            )
        })?;
        if let Some(why) = out_of_scope(info, o.dtype) {
            return Err(format!(
                "kernel {} cannot be benchmarked here: {why}",
                info.rust_name
            ));
        }
        if !chosen.iter().any(|k| std::ptr::eq(*k, info)) {
            chosen.push(info);
        }
    }
    Ok(chosen)
}

fn schedule_text(info: &KernelInfo) -> String {
    match info.api() {
        Api::Cutlass3x => common::schedule(info).to_string(),
        _ => format!(
            "{}_schedule",
            group_schedule(info).map_or("?".to_string(), |s| s.to_string())
        ),
    }
}

fn list_line(info: &KernelInfo) -> String {
    let op = info.gemm();
    let (t, l) = (
        (op.a.element, op.b.element, op.c.element),
        (op.a.layout, op.b.layout, op.c.layout),
    );
    // The forms a kernel takes in principle: a one-group problem, and a device-resident one.
    let list_ok = info
        .supports(&GroupedProblem::new(t, l, vec![GroupShape::new(128, 128, 128)]))
        .is_ok();
    let moe_ok = info.supports(&GroupedProblem::device_resident(t, l, 8)).is_ok()
        && op.a.layout == Layout::Row
        && op.c.layout == Layout::Row;
    let forms: Vec<&str> = [(list_ok, "list"), (moe_ok, "moe")]
        .iter()
        .filter(|f| f.0)
        .map(|f| f.1)
        .collect();
    format!(
        "{:<48} {:<5} {}{}{} {} {:<18} tile {:<10} cluster {:<6} forms {:<8} sm_{}{}",
        info.rust_name,
        common::dtype_label(info),
        op.a.layout.letter(),
        op.b.layout.letter(),
        op.c.layout.letter(),
        info.api(),
        schedule_text(info),
        info.tile().to_string(),
        info.design.cluster().to_string(),
        forms.join(","),
        info.min_compute_capability,
        if info.has_device_code() {
            ""
        } else {
            "  (no device code in this binary)"
        }
    )
}

// ---------------------------------------------------------------------------------------------
// The typed launch paths over registry kernels
// ---------------------------------------------------------------------------------------------

/// The element types of the workloads (bf16, f16).
trait Value: Element + Default {
    fn value(self) -> f64;
    fn nan(self) -> bool;
}

impl Value for bf16 {
    fn value(self) -> f64 {
        self.to_f64()
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl Value for f16 {
    fn value(self) -> f64 {
        self.to_f64()
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// The kernel [`Dyn`] stands for (set by [`Dyn::select`]).
static CURRENT: AtomicPtr<KernelInfo> = AtomicPtr::new(std::ptr::null_mut());

/// A typed kernel whose `KernelInfo` is chosen at run time: `grouped::launch_moe` (and the typed
/// `grouped::launch`) take a `GemmKernel` type and have no untyped form, so the registry-driven
/// benchmark reaches them through this one type. Only kernels whose operand types, layouts and
/// scalar are exactly `T`, row / column / row and f32 are selected ([`out_of_scope`]), so the
/// static types match the kernel's. Single-threaded use only.
struct Dyn<T>(PhantomData<T>);

impl<T: Value> Dyn<T> {
    fn select(info: &'static KernelInfo) {
        assert!(
            out_of_scope(info, T::DTYPE).is_none(),
            "{} is not a {} tnt kernel",
            info.rust_name,
            T::DTYPE
        );
        CURRENT.store(info as *const KernelInfo as *mut KernelInfo, Ordering::Release);
    }
}

impl<T: Value> GemmKernel for Dyn<T> {
    type A = T;
    type B = T;
    type C = T;
    type LayoutA = RowMajor;
    type LayoutB = ColumnMajor;
    type LayoutC = RowMajor;
    type Scalar = f32;

    fn info() -> &'static KernelInfo {
        let info = CURRENT.load(Ordering::Acquire);
        assert!(!info.is_null(), "Dyn::select was not called");
        // SAFETY: only `&'static KernelInfo`s are stored.
        unsafe { &*info }
    }
}

// ---------------------------------------------------------------------------------------------
// One workload's operands on the device, and the sampled f64 reference
// ---------------------------------------------------------------------------------------------

/// A buffer of `elements` elements whose element `i` is `pool[i % POOL_LEN]` (as
/// `common::filled_buffer`, typed).
fn filled<T: Value>(
    stream: &Arc<CudaStream>,
    pool: &common::Pool,
    elements: usize,
) -> Result<CudaSlice<T>, DriverError> {
    let bytes = elements * std::mem::size_of::<T>();
    // SAFETY: every byte is written by the fill below before anything reads it.
    let buffer = unsafe { stream.alloc::<T>(elements.max(1)) }?;
    let dst = address(&buffer, stream);
    let src = common::address(&pool.device, stream);
    stream.context().bind_to_thread()?;
    for copy in common::fill_plan(pool.device.len(), bytes) {
        let from = if copy.from_pool { src } else { dst } + copy.src as u64;
        // SAFETY: both ranges lie inside live buffers and do not overlap; stream-ordered.
        unsafe { result::memcpy_dtod_async(dst + copy.dst as u64, from, copy.bytes, stream.cu_stream()) }?;
    }
    Ok(buffer)
}

fn address<T>(buffer: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (ptr, _record) = buffer.device_ptr(stream);
    ptr
}

/// Sampled positions of D and their reference values.
struct Samples {
    /// The experts checked (largest, smallest non-empty, first and last non-empty).
    experts: Vec<usize>,
    /// (expert, row within the expert, column).
    positions: Vec<(usize, usize, usize)>,
    /// Element offsets of the positions in D.
    offsets: Vec<usize>,
    /// alpha·A·B in f64, rounded to D's type.
    reference: Vec<f64>,
}

/// The experts to check: the largest, the smallest non-empty, the first and the last non-empty.
fn checked_experts(rows: &[usize]) -> Vec<usize> {
    let nonempty: Vec<usize> = (0..rows.len()).filter(|&e| rows[e] > 0).collect();
    let mut chosen = Vec::new();
    let largest = nonempty
        .iter()
        .copied()
        .max_by_key(|&e| (rows[e], std::cmp::Reverse(e)));
    let smallest = nonempty.iter().copied().min_by_key(|&e| (rows[e], e));
    for e in [
        largest,
        smallest,
        nonempty.first().copied(),
        nonempty.last().copied(),
    ]
    .into_iter()
    .flatten()
    {
        if !chosen.contains(&e) {
            chosen.push(e);
        }
    }
    chosen
}

fn samples(w: &Workload, count: usize, host_a: &[f64], host_b: &[f64], dtype: DType) -> Samples {
    let experts = checked_experts(&w.rows);
    let starts = w.starts();
    let per_expert = count.div_ceil(experts.len().max(1));
    let pick = |u: f64, extent: usize| (((u + 1.0) / 2.0 * extent as f64) as usize).min(extent - 1);
    let mut positions = Vec::new();
    for &e in &experts {
        let (m, n) = (w.rows[e], w.n);
        for p in [(0, 0), (m - 1, n - 1), (m - 1, 0), (0, n - 1)] {
            if !positions.contains(&(e, p.0, p.1)) {
                positions.push((e, p.0, p.1));
            }
        }
        let random = verify::random_values(DType::F64, 2 * per_expert, 0x5eed + e as u64);
        for r in random.chunks_exact(2) {
            positions.push((e, pick(r[0], m), pick(r[1], n)));
        }
    }
    let (n, k) = (w.n, w.k);
    let at = |host: &[f64], i: usize| host[i % host.len()];
    let reference = positions
        .iter()
        .map(|&(e, row, col)| {
            let a = (starts[e] + row) * k;
            let b = e * k * n + col * k;
            let dot: f64 = (0..k).map(|p| at(host_a, a + p) * at(host_b, b + p)).sum();
            verify::round_to(dtype, dot)
        })
        .collect();
    let offsets = positions
        .iter()
        .map(|&(e, row, col)| (starts[e] + row) * n + col)
        .collect();
    Samples {
        experts,
        positions,
        offsets,
        reference,
    }
}

/// The device operands of one workload.
struct Data<T: Value> {
    /// total × k, row-major.
    a: CudaSlice<T>,
    /// experts × (k × n column-major, ld k), back to back.
    b: CudaSlice<T>,
    /// total × n, row-major.
    d: CudaSlice<T>,
    /// Cumulative row ends per expert (int32), as `torch._grouped_mm` takes them.
    offsets: CudaSlice<i32>,
    /// One D per group (the typed list path's outputs), made on first use.
    typed_d: Option<Vec<CudaSlice<T>>>,
    d_address: u64,
    samples: Samples,
}

impl<T: Value> Data<T> {
    fn new(
        stream: &Arc<CudaStream>,
        pools: &mut Pools,
        w: &Workload,
        sample_count: usize,
    ) -> Result<Self, DriverError> {
        let (total, n, k, e) = (w.total(), w.n, w.k, w.experts());
        let pool = pools.get(T::DTYPE, common::SEED_A)?;
        let (a, host_a) = (filled::<T>(stream, pool, total * k)?, pool.host.clone());
        let pool = pools.get(T::DTYPE, common::SEED_B)?;
        let (b, host_b) = (filled::<T>(stream, pool, e * k * n)?, pool.host.clone());
        // SAFETY: D is poisoned or written by a kernel before it is read.
        let d = unsafe { stream.alloc::<T>((total * n).max(1)) }?;
        let mut ends = Vec::with_capacity(e);
        let mut at = 0i32;
        for &m in &w.rows {
            at += m as i32;
            ends.push(at);
        }
        let offsets = stream.clone_htod(&ends)?;
        let d_address = address(&d, stream);
        Ok(Data {
            a,
            b,
            d,
            offsets,
            typed_d: None,
            d_address,
            samples: samples(w, sample_count, &host_a, &host_b, T::DTYPE),
        })
    }

    /// The list form's operands: one group per expert (empty ones included), into the shared D.
    fn list_operands(&self, w: &Workload, stream: &CudaStream) -> Vec<GroupOperands> {
        let size = std::mem::size_of::<T>() as u64;
        let (a0, b0) = (address(&self.a, stream), address(&self.b, stream));
        let (n, k) = (w.n, w.k);
        w.rows
            .iter()
            .zip(w.starts())
            .enumerate()
            .map(|(e, (&m, start))| {
                let operand = |rows, cols, layout, at: u64| Operand {
                    shape: MatrixShape::packed(rows, cols, layout),
                    len: rows * cols,
                    address: at,
                };
                GroupOperands {
                    a: operand(m, k, Layout::Row, a0 + (start * k) as u64 * size),
                    b: operand(k, n, Layout::Column, b0 + (e * k * n) as u64 * size),
                    c: None,
                    d: operand(m, n, Layout::Row, self.d_address + (start * n) as u64 * size),
                }
            })
            .collect()
    }

    /// Sets every byte of D to 0xFF (NaN).
    fn poison_d(&self, stream: &CudaStream) -> Result<(), DriverError> {
        stream.context().bind_to_thread()?;
        let bytes = self.d.len() * std::mem::size_of::<T>();
        // SAFETY: D is a live buffer of exactly this many bytes.
        unsafe { result::memset_d8_async(self.d_address, 0xFF, bytes, stream.cu_stream()) }
    }

    /// D's values at the sampled positions.
    fn read_samples(&self, stream: &CudaStream) -> Result<Vec<f64>, DriverError> {
        let size = std::mem::size_of::<T>() as u64;
        let mut values = vec![T::default(); self.samples.offsets.len()];
        stream.context().bind_to_thread()?;
        for (slot, &at) in values.iter_mut().zip(&self.samples.offsets) {
            // SAFETY: the offset lies inside D.
            unsafe {
                result::memcpy_dtoh_async(
                    std::slice::from_mut(slot),
                    self.d_address + at as u64 * size,
                    stream.cu_stream(),
                )
            }?;
        }
        stream.synchronize()?;
        Ok(values.into_iter().map(Value::value).collect())
    }

    /// NaNs in the checked experts' rows of D, scanning at most `max_bytes` (None: none scanned).
    fn count_nan(
        &self,
        w: &Workload,
        stream: &CudaStream,
        max_bytes: usize,
    ) -> Result<Option<usize>, DriverError> {
        let size = std::mem::size_of::<T>();
        let starts = w.starts();
        let (mut scanned, mut budget, mut nan) = (false, max_bytes, 0);
        for &e in &self.samples.experts {
            let elements = w.rows[e] * w.n;
            if elements * size > budget {
                continue;
            }
            budget -= elements * size;
            let mut host = vec![T::default(); elements];
            stream.context().bind_to_thread()?;
            // SAFETY: the expert's rows lie inside D.
            unsafe {
                result::memcpy_dtoh_async(
                    &mut host,
                    self.d_address + (starts[e] * w.n * size) as u64,
                    stream.cu_stream(),
                )
            }?;
            stream.synchronize()?;
            nan += host.iter().filter(|v| v.nan()).count();
            scanned = true;
        }
        Ok(scanned.then_some(nan))
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------

struct Measured {
    timing: Timing,
    check: Check,
    tflops: f64,
    gbps: f64,
    /// The sample farthest from its reference: (expert, row, column).
    worst: Option<(usize, usize, usize)>,
}

/// Host time of one launch call.
#[derive(Clone, Copy, Debug)]
struct HostTime {
    /// Median over every timed call.
    median_us: f64,
    /// Median over the first call of each batch (the GPU idle, nothing queued).
    idle_us: f64,
    max_us: f64,
    calls: usize,
}

/// Host time of `launch`: one untimed batch, then `batches` batches of `calls` calls, each call
/// timed alone, the stream synchronised (untimed) between batches.
fn host_time(
    stream: &CudaStream,
    calls: usize,
    batches: usize,
    mut launch: impl FnMut() -> Result<(), String>,
) -> Result<HostTime, Failure> {
    for _ in 0..calls {
        launch().map_err(Failure::Kernel)?;
    }
    let mut all = Vec::with_capacity(calls * batches);
    let mut first = Vec::with_capacity(batches);
    for _ in 0..batches {
        stream.synchronize().map_err(common::device_failure)?;
        for i in 0..calls {
            let start = Instant::now();
            launch().map_err(Failure::Kernel)?;
            let us = start.elapsed().as_secs_f64() * 1e6;
            all.push(us);
            if i == 0 {
                first.push(us);
            }
        }
    }
    stream.synchronize().map_err(common::device_failure)?;
    Ok(HostTime {
        median_us: common::median(&all),
        idle_us: common::median(&first),
        max_us: all.iter().copied().fold(0.0, f64::max),
        calls: all.len(),
    })
}

/// The largest share of D (bytes) whose NaNs are counted after a verification run.
const NAN_SCAN_BYTES: usize = common::FULL_NAN_SCAN_BYTES;

struct Ctx<'a> {
    ctx: &'a Arc<CudaContext>,
    stream: &'a Arc<CudaStream>,
    o: &'a Options,
    spinner: Option<&'a Spinner>,
}

/// The untyped operands of a workload's device-resident (MoE) launch.
fn moe_operands<T: Value>(data: &Data<T>, w: &Workload, stream: &CudaStream) -> MoeOperands {
    let (total, n, k) = (w.total(), w.n, w.k);
    MoeOperands {
        a: (address(&data.a, stream), total * k),
        offsets: (address(&data.offsets, stream), w.experts()),
        b: (address(&data.b, stream), w.experts() * k * n),
        c: None,
        d: (data.d_address, total * n),
        experts: w.experts(),
        total_rows: total,
        n,
        k,
        lda: k,
        ldb: k,
        ldc: n,
        ldd: n,
        b_stride: k * n,
        alpha: 1.0,
        beta: 0.0,
        activation_arg: 0.0,
        tuning: tuning(),
    }
}

/// The launch of `info` in `form` through the untyped entries: `grouped::launch_raw` over one
/// group per expert (list), `grouped::launch_moe_raw` over A, the offsets, B and D (moe).
fn launcher<'s>(
    stream: &'s CudaStream,
    info: &'static KernelInfo,
    form: Form,
    list: &'s GroupedOperands<'s>,
    moe: &'s MoeOperands,
) -> impl FnMut() -> Result<(), cutlass_aot::Error> + 's {
    // SAFETY: every address lies inside the live A, offsets, B and D of the workload, of the
    // lengths stated and of T, the kernel's element type (`out_of_scope`); no D overlaps A or B;
    // all work is on `stream`, which is synchronised before the buffers are dropped.
    move || match form {
        Form::List => unsafe { grouped::launch_raw(info, stream, list) },
        Form::Moe => unsafe { grouped::launch_moe_raw(info, stream, moe) },
    }
}

/// Verification run, then timing, of `info` in `form` on a workload's operands.
fn measure<T: Value>(
    c: &Ctx<'_>,
    info: &'static KernelInfo,
    form: Form,
    w: &Workload,
    data: &mut Data<T>,
) -> Result<Measured, Failure> {
    let stream = c.stream;
    let groups = data.list_operands(w, stream);
    let list = GroupedOperands {
        groups: &groups,
        alpha: 1.0,
        beta: 0.0,
        activation_arg: 0.0,
        tuning: tuning(),
    };
    let moe = moe_operands(data, w, stream);
    data.poison_d(stream).map_err(common::device_failure)?;
    launcher(stream, info, form, &list, &moe)().map_err(|e| Failure::Kernel(e.to_string()))?;
    stream.synchronize().map_err(common::device_failure)?;
    let got = data.read_samples(stream).map_err(common::device_failure)?;
    let unwritten = data
        .count_nan(w, stream, NAN_SCAN_BYTES)
        .map_err(common::device_failure)?;
    let reference = &data.samples.reference;
    let worst = got
        .iter()
        .zip(reference)
        .map(|(g, r)| {
            if g.is_finite() {
                (g - r).abs()
            } else {
                f64::INFINITY
            }
        })
        .enumerate()
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(i, _)| data.samples.positions[i]);
    let check = Check {
        samples: got.len(),
        rel_error: verify::relative_error(&got, reference),
        max_abs_error: common::max_abs_error(&got, reference),
        tolerance: common::tolerance(info, w.k, 1),
        unwritten,
    };
    let launch = launcher(stream, info, form, &list, &moe);
    let max_seconds = (c.o.max_seconds > 0.0).then_some(c.o.max_seconds);
    let timing = common::time_launches(
        c.ctx,
        stream,
        c.o.warmup,
        c.o.iters,
        max_seconds,
        c.spinner,
        launch,
    )?;
    let seconds = timing.median_us * 1e-6;
    Ok(Measured {
        tflops: w.flops() / seconds / 1e12,
        gbps: w.bytes(std::mem::size_of::<T>()) / seconds / 1e9,
        timing,
        check,
        worst,
    })
}

/// The host-overhead paths of a form.
fn paths(form: Form) -> &'static [&'static str] {
    match form {
        Form::List | Form::Moe => &["raw", "typed"],
    }
}

/// Host time per launch call of `info` in `form` through `path`.
fn measure_host<T: Value>(
    c: &Ctx<'_>,
    info: &'static KernelInfo,
    form: Form,
    path: &str,
    w: &Workload,
    data: &mut Data<T>,
) -> Result<HostTime, Failure> {
    let stream = c.stream;
    let (calls, batches) = (c.o.host_calls, c.o.host_batches);
    let (experts, total, n, k) = (w.experts(), w.total(), w.n, w.k);
    let err = |e: cutlass_aot::Error| e.to_string();
    match (form, path) {
        (Form::List, "raw") => {
            let groups = data.list_operands(w, stream);
            let ops = GroupedOperands {
                groups: &groups,
                alpha: 1.0,
                beta: 0.0,
                activation_arg: 0.0,
                tuning: tuning(),
            };
            // SAFETY: as in `measure`.
            host_time(stream, calls, batches, || {
                unsafe { grouped::launch_raw(info, stream, &ops) }.map_err(err)
            })
        }
        (Form::List, _) => {
            if data.typed_d.is_none() {
                let outputs = w
                    .rows
                    .iter()
                    // SAFETY: written by the kernel only, never read.
                    .map(|&m| unsafe { stream.alloc::<T>((m * n).max(1)) })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(common::device_failure)?;
                data.typed_d = Some(outputs);
            }
            let Data { a, b, typed_d, .. } = data;
            let outputs = typed_d.as_mut().expect("made above");
            let starts = w.starts();
            let rows = &w.rows;
            Dyn::<T>::select(info);
            host_time(stream, calls, batches, || {
                // What a caller with one A of all tokens and one B per expert writes: views of
                // each expert's rows and weight, a group per expert.
                let a_views: Vec<_> = rows
                    .iter()
                    .zip(&starts)
                    .map(|(&m, &s)| a.slice(s * k..(s + m) * k))
                    .collect();
                let b_views: Vec<_> = (0..experts)
                    .map(|e| b.slice(e * k * n..(e + 1) * k * n))
                    .collect();
                let groups: Vec<Group<'_, Dyn<T>>> = a_views
                    .iter()
                    .zip(&b_views)
                    .zip(outputs.iter_mut())
                    .zip(rows)
                    .map(|(((av, bv), dv), &m)| {
                        GroupOf::new(
                            MatrixRef::new(av, m, k),
                            MatrixRef::new(bv, k, n),
                            MatrixMut::new(dv, m, n),
                        )
                    })
                    .collect();
                grouped::launch::<Dyn<T>>(stream, GroupedGemm::new(groups, 1.0)).map_err(err)
            })
        }
        (Form::Moe, "raw") => {
            let moe = moe_operands(data, w, stream);
            // SAFETY: as in `launcher`.
            host_time(stream, calls, batches, || {
                unsafe { grouped::launch_moe_raw(info, stream, &moe) }.map_err(err)
            })
        }
        (Form::Moe, _) => {
            let Data { a, b, d, offsets, .. } = data;
            Dyn::<T>::select(info);
            host_time(stream, calls, batches, || {
                grouped::launch_moe::<Dyn<T>>(
                    stream,
                    MoeGemm::new(a, offsets, b, d, (experts, total, n, k), 1.0),
                )
                .map_err(err)
            })
        }
    }
}

/// An empty kernel, as PTX the driver JIT-compiles: the bare launch cost of the same run.
const EMPTY_PTX: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry cutlass_aot_empty()
{
\tret;
}
";

/// Host time of a bare `cuLaunchKernel` (median per call of 20 batches of 100), or None.
fn bare_launch_us(ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>) -> Option<f64> {
    let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(EMPTY_PTX)).ok()?;
    let function: CudaFunction = module.load_function("cutlass_aot_empty").ok()?;
    ctx.bind_to_thread().ok()?;
    let launch = || {
        let mut params: [*mut c_void; 0] = [];
        // SAFETY: the kernel takes no parameters; the stream is live.
        unsafe {
            result::launch_kernel(
                function.cu_function(),
                (1, 1, 1),
                (32, 1, 1),
                0,
                stream.cu_stream(),
                &mut params,
            )
        }
        .map_err(|e| e.to_string())
    };
    host_time(stream, 100, 20, launch).ok().map(|t| t.median_us)
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

struct Run {
    device: String,
    date: String,
    bare_us: Option<f64>,
}

/// `record` with array fields appended (JsonRecord holds flat values only).
fn with_arrays(record: &JsonRecord, arrays: &[(&str, &[usize])]) -> String {
    let mut text = record.finish();
    text.pop(); // the closing brace
    for (key, values) in arrays {
        let list: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        text.push_str(&format!(", {}: [{}]", common::json_string(key), list.join(", ")));
    }
    text.push('}');
    text
}

/// The fields every record of a kernel on a workload carries.
fn identity(run: &Run, op: &str, info: &KernelInfo, form: Form, w: &Workload, o: &Options) -> JsonRecord {
    let (min, max) = w.extremes();
    let r = JsonRecord::new()
        .str("device", &run.device)
        .str("date", &run.date)
        .str("op", op)
        .str("kernel", info.name)
        .str("rust_name", info.rust_name)
        .str("api", &info.api().to_string())
        .str("schedule", &common::schedule(info).to_string())
        .str(
            "group_schedule",
            &group_schedule(info).map_or("device".to_string(), |s| s.to_string()),
        )
        .str("tile", &info.tile().to_string())
        .str("cluster", &info.design.cluster().to_string())
        .str("dtype", &common::dtype_label(info))
        .str("layout", &common::layout_ab(info))
        .str("layout_c", info.gemm().c.layout.letter())
        .str("epilogue", &info.epilogue.fusion.label())
        .str("form", form.name())
        .str("workload", &w.name)
        .str("skew", w.skew.name())
        .int("groups", w.experts())
        .int("groups_empty", w.empty_experts())
        .int("total_m", w.total())
        .int("m_min", min)
        .int("m_max", max)
        .int("n", w.n)
        .int("k", w.k);
    if w.skew == Skew::Zipf {
        r.num("zipf_s", o.zipf_s, 3).int("seed", o.seed as usize)
    } else {
        r
    }
}

fn record(
    run: &Run,
    info: &KernelInfo,
    form: Form,
    w: &Workload,
    o: &Options,
    result: &Result<Measured, Failure>,
    checked: &[usize],
) -> String {
    let r = identity(run, "gemm_grouped", info, form, w, o)
        .str("path", "raw")
        .num("flops", w.flops(), 0)
        .num("alpha", 1.0, 3)
        .num("beta", 0.0, 3)
        .int("warmup", o.warmup);
    let r = match result {
        Ok(m) => common::measurement_fields(r, &m.timing, m.tflops, m.gbps, Some(&m.check)),
        Err(f) => r.bool("verified", false).str("error", &f.to_string()),
    };
    with_arrays(&r, &[("rows", &w.rows), ("checked_experts", checked)])
}

fn unsupported_record(
    run: &Run,
    info: &KernelInfo,
    form: Form,
    w: &Workload,
    o: &Options,
    why: &str,
) -> String {
    let r = identity(run, "gemm_grouped", info, form, w, o)
        .null("verified")
        .str("unsupported", why);
    with_arrays(&r, &[("rows", &w.rows)])
}

fn host_record(
    run: &Run,
    info: &KernelInfo,
    form: Form,
    path: &str,
    w: &Workload,
    o: &Options,
    result: &Result<HostTime, Failure>,
) -> String {
    let r = identity(run, "host_overhead", info, form, w, o)
        .str("path", path)
        .int("calls_per_batch", o.host_calls)
        .int("batches", o.host_batches);
    let r = match result {
        Ok(t) => {
            let r = r
                .int("calls", t.calls)
                .num("ours_us", t.median_us, 2)
                .num("idle_us", t.idle_us, 2)
                .num("max_us", t.max_us, 2);
            match run.bare_us {
                Some(bare) => r
                    .num("bare_launch_us", bare, 2)
                    .num("overhead_us", t.median_us - bare, 2),
                None => r.null("bare_launch_us"),
            }
        }
        Err(f) => r.str("error", &f.to_string()),
    };
    with_arrays(&r, &[("rows", &w.rows)])
}

fn table_header(width: usize) -> String {
    format!(
        "  {:<width$} {:<5} {:>10} {:>8} {:>7}  verified (rel error / tolerance)",
        "kernel", "form", "us", "TFLOP/s", "GB/s"
    )
}

fn table_row(info: &KernelInfo, form: Form, result: &Result<Measured, Failure>, width: usize) -> String {
    let head = format!("  {:<width$} {:<5}", info.rust_name, form.name());
    match result {
        Ok(m) => {
            let c = &m.check;
            let verdict = if c.passed() {
                format!("yes ({:.1e} / {:.0e})", c.rel_error, c.tolerance)
            } else if c.unwritten.unwrap_or(0) > 0 {
                format!("NO ({} elements unwritten)", c.unwritten.unwrap_or(0))
            } else {
                let at = m.worst.map_or(String::new(), |(e, row, col)| {
                    format!("; worst sample: expert {e}, row {row}, column {col}")
                });
                format!("NO (rel error {:.1e} > {:.0e}{at})", c.rel_error, c.tolerance)
            };
            format!(
                "{head} {:>10.2} {:>8.1} {:>7.0}  {verdict}",
                m.timing.median_us, m.tflops, m.gbps
            )
        }
        Err(f) => format!("{head}  ERROR: {f}"),
    }
}

/// Where the table and the records go.
struct Output {
    file: Option<(String, File)>,
    json_stdout: bool,
}

impl Output {
    fn table(&self, line: impl std::fmt::Display) {
        if self.json_stdout {
            eprintln!("{line}");
        } else {
            common::out(line);
        }
    }

    fn record(&mut self, line: &str) -> Result<(), String> {
        if self.json_stdout {
            common::out(line);
        }
        if let Some((path, file)) = &mut self.file {
            writeln!(file, "{line}")
                .and_then(|()| file.flush())
                .map_err(|e| format!("writing {path}: {e}"))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// What to run on a workload: each kernel with its forms, and the named kernels' refusals.
struct Plan {
    runs: Vec<(&'static KernelInfo, Form)>,
    /// (kernel, form, why) of named kernels that cannot run the workload in a form.
    refused: Vec<(&'static KernelInfo, Form, String)>,
}

fn plan(o: &Options, kernels: &[&'static KernelInfo], w: &Workload, cc: Option<u32>) -> Plan {
    let named = o.kernels.is_some();
    let mut plan = Plan {
        runs: Vec::new(),
        refused: Vec::new(),
    };
    for &info in kernels {
        if let Some(Err(why)) = cc.map(|cc| info.runs_on(cc)) {
            if named {
                for &form in &o.forms {
                    plan.refused.push((info, form, why.clone()));
                }
            }
            continue;
        }
        for &form in &o.forms {
            match form_support(info, w, o.dtype, form) {
                Ok(()) => plan.runs.push((info, form)),
                Err(why) if named => plan.refused.push((info, form, why)),
                Err(_) => {}
            }
        }
    }
    plan
}

/// Why a workload stopped: a device fault ends the run.
enum Stop {
    Device(String),
    Output(String),
}

fn run_workload<T: Value>(
    c: &Ctx<'_>,
    run: &Run,
    w: &Workload,
    plan: &Plan,
    pools: &mut Pools,
    out: &mut Output,
    failures: &mut usize,
) -> Result<(), Stop> {
    let o = c.o;
    let width = plan
        .runs
        .iter()
        .map(|(k, _)| k.rust_name.len())
        .chain(plan.refused.iter().map(|(k, _, _)| k.rust_name.len()))
        .max()
        .unwrap_or(6)
        .max(6);
    out.table(format!("{}: {}", w.label(), w.describe()));
    if w.skew != Skew::Uniform || w.experts() <= 16 {
        out.table(format!("  rows per expert: {:?}", w.rows));
    }
    let emit = |out: &mut Output, line: &str| out.record(line).map_err(Stop::Output);
    for (info, form, why) in &plan.refused {
        out.table(format!(
            "  {:<width$} {:<5}  unsupported: {why}",
            info.rust_name,
            form.name()
        ));
        emit(out, &unsupported_record(run, info, *form, w, o, why))?;
    }
    if plan.runs.is_empty() {
        out.table("  (no selected kernel takes this workload)");
        return Ok(());
    }
    let mut data = match Data::<T>::new(c.stream, pools, w, o.samples) {
        Ok(d) => d,
        Err(e) => {
            // Most likely out of memory; the context is still usable.
            let why = format!("allocating the operands: {e}");
            for &(info, form) in &plan.runs {
                let result = Err(Failure::Kernel(why.clone()));
                out.table(table_row(info, form, &result, width));
                emit(out, &record(run, info, form, w, o, &result, &[]))?;
                *failures += 1;
            }
            return Ok(());
        }
    };
    let checked = data.samples.experts.clone();
    out.table(table_header(width));
    let mut best: Vec<(Form, &KernelInfo, f64)> = Vec::new();
    for &(info, form) in &plan.runs {
        let result = measure(c, info, form, w, &mut data);
        out.table(table_row(info, form, &result, width));
        emit(out, &record(run, info, form, w, o, &result, &checked))?;
        match &result {
            Ok(m) if m.check.passed() => match best.iter_mut().find(|b| b.0 == form) {
                Some(b) if b.2 <= m.timing.median_us => {}
                Some(b) => *b = (form, info, m.timing.median_us),
                None => best.push((form, info, m.timing.median_us)),
            },
            Ok(_) | Err(Failure::Kernel(_)) => *failures += 1,
            Err(Failure::Device(why)) => return Err(Stop::Device(why.clone())),
        }
        if o.host_batches == 0 || result.is_err() {
            continue;
        }
        for &path in paths(form) {
            let host = measure_host(c, info, form, path, w, &mut data);
            if let Err(Failure::Device(why)) = &host {
                return Err(Stop::Device(why.clone()));
            }
            emit(out, &host_record(run, info, form, path, w, o, &host))?;
            match &host {
                Ok(t) => out.table(format!(
                    "  {:<width$} {:<5}  host {path}: {:.1} us per call (idle GPU {:.1} us{})",
                    "",
                    form.name(),
                    t.median_us,
                    t.idle_us,
                    run.bare_us
                        .map_or(String::new(), |b| format!("; bare launch {b:.1} us"))
                )),
                Err(f) => {
                    out.table(format!(
                        "  {:<width$} {:<5}  host {path}: ERROR {f}",
                        "",
                        form.name()
                    ));
                    *failures += 1;
                }
            }
        }
    }
    let flops = w.flops();
    for (form, info, us) in &best {
        out.table(format!(
            "  best {}: {} {us:.2} us, {:.1} TFLOP/s",
            form.name(),
            info.rust_name,
            flops / (us * 1e-6) / 1e12
        ));
    }
    drop(data);
    c.stream
        .synchronize()
        .map_err(|e| Stop::Device(format!("synchronising: {e}")))?;
    Ok(())
}

fn run(
    ctx: &Arc<CudaContext>,
    o: &Options,
    kernels: &[&'static KernelInfo],
    out: &mut Output,
) -> Result<ExitCode, String> {
    let stream = ctx.default_stream();
    let cc = device::props(ctx).map_err(|e| e.to_string())?.compute_capability;
    let spinner = match Spinner::new(ctx) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!(
                "grouped_bench: warning: the spin kernel did not load ({e}); timings may include host gaps"
            );
            None
        }
    };
    let run = Run {
        device: common::device_name(ctx),
        date: common::utc_date(),
        bare_us: if o.host_batches > 0 {
            bare_launch_us(ctx, &stream)
        } else {
            None
        },
    };
    let list = workloads(o);
    out.table(format!(
        "device: {} (compute capability {}.{}), {}; {} {} kernel(s), {} workload(s); time = median of {} launches \
         after {} warm-up{}",
        run.device,
        cc / 10,
        cc % 10,
        run.date,
        kernels.len(),
        o.dtype,
        list.len(),
        o.iters,
        o.warmup,
        if o.max_seconds > 0.0 {
            format!(", at most about {} s per kernel", o.max_seconds)
        } else {
            String::new()
        }
    ));
    let skipped: Vec<String> = kernels
        .iter()
        .filter_map(|k| k.runs_on(cc).err().map(|why| format!("{} ({why})", k.rust_name)))
        .collect();
    if !skipped.is_empty() && o.kernels.is_none() {
        out.table(format!("not on this device: {}", skipped.join("; ")));
    }
    let c = Ctx {
        ctx,
        stream: &stream,
        o,
        spinner: spinner.as_ref(),
    };
    let mut pools = Pools::new(stream.clone());
    let mut failures = 0;
    for w in &list {
        let p = plan(o, kernels, w, Some(cc));
        let result = match o.dtype {
            DType::F16 => run_workload::<f16>(&c, &run, w, &p, &mut pools, out, &mut failures),
            _ => run_workload::<bf16>(&c, &run, w, &p, &mut pools, out, &mut failures),
        };
        match result {
            Ok(()) => {}
            Err(Stop::Output(why)) => return Err(why),
            Err(Stop::Device(why)) => {
                eprintln!(
                    "grouped_bench: stopped after a device failure, which leaves the CUDA context unusable: {why}"
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    if let Some((path, _)) = &out.file {
        eprintln!("grouped_bench: records written to {path}");
    }
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("grouped_bench: {failures} run(s) failed or did not verify");
        ExitCode::from(1)
    })
}

/// What would run, for a machine without a GPU (or without device code).
fn describe(o: &Options, kernels: &[&'static KernelInfo]) {
    let list = workloads(o);
    eprintln!(
        "grouped_bench would run {} {} kernel(s) in form(s) {} on {} workload(s) ({} timed launches after {} \
         warm-up each{}):",
        kernels.len(),
        o.dtype,
        o.forms.iter().map(|f| f.name()).collect::<Vec<_>>().join(","),
        list.len(),
        o.iters,
        o.warmup,
        if o.host_batches > 0 {
            format!(", host overhead over {} batches of {} calls", o.host_batches, o.host_calls)
        } else {
            String::new()
        }
    );
    for k in kernels {
        eprintln!("  {}", list_line(k));
    }
    for w in &list {
        let p = plan(o, kernels, w, None);
        // One entry per kernel with its forms: `name (list, moe)`.
        let mut runs: Vec<(&str, Vec<&str>)> = Vec::new();
        for (k, f) in &p.runs {
            match runs.iter_mut().find(|r| r.0 == k.rust_name) {
                Some(r) => r.1.push(f.name()),
                None => runs.push((k.rust_name, vec![f.name()])),
            }
        }
        let runs: Vec<String> = runs
            .iter()
            .map(|(k, forms)| format!("{k} ({})", forms.join(", ")))
            .collect();
        eprintln!("{}: {}", w.label(), w.describe());
        if w.skew != Skew::Uniform || w.experts() <= 16 {
            eprintln!("  rows per expert: {:?}", w.rows);
        }
        eprintln!(
            "  runs: {}",
            if runs.is_empty() {
                "none".to_string()
            } else {
                runs.join(", ")
            }
        );
        for (k, f, why) in &p.refused {
            eprintln!("  {} {}: unsupported: {why}", k.rust_name, f.name());
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("grouped_bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let _ = TUNING.set(o.tuning);
    if o.help {
        common::out(USAGE);
        return ExitCode::SUCCESS;
    }
    if o.list {
        let grouped: Vec<_> = REGISTRY
            .filter(|k| k.operation.kind() == OperationKind::GemmGrouped)
            .collect();
        if grouped.is_empty() {
            eprintln!(
                "grouped_bench: no grouped kernel in this binary (built without `--features grouped`?)"
            );
        }
        for k in grouped {
            let scope =
                out_of_scope(k, o.dtype).map_or(String::new(), |why| format!("  [not benchmarked: {why}]"));
            common::out(format!("{}{scope}", list_line(k)));
        }
        return ExitCode::SUCCESS;
    }
    let kernels = match select(&o) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("grouped_bench: {e}");
            return ExitCode::from(2);
        }
    };
    let ctx = match device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            describe(&o, &kernels);
            eprintln!("\ngrouped_bench: no GPU, nothing was run: {e}");
            return ExitCode::SUCCESS;
        }
    };
    if !kernels.iter().any(|k| k.has_device_code()) {
        describe(&o, &kernels);
        eprintln!(
            "\ngrouped_bench: nothing can run: the selected kernels have no device code in this binary (built \
             with CUTLASS_AOT_NO_NVCC?)"
        );
        return ExitCode::from(2);
    }
    let file = match &o.json {
        Some(path) if path != "-" => match File::create(path) {
            Ok(f) => Some((path.clone(), f)),
            Err(e) => {
                eprintln!("grouped_bench: cannot create {path}: {e}");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    let mut out = Output {
        file,
        json_stdout: o.json.as_deref() == Some("-"),
    };
    match run(&ctx, &o, &kernels, &mut out) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("grouped_bench: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options() {
        let o = parse_args(&[]).unwrap();
        assert_eq!(o.workloads.len(), 6);
        assert_eq!(workloads(&o).len(), 10);
        let o = parse_args(&args(
            "--workload moe,mixtral_up --skew zipf --forms moe --iters 0",
        ))
        .unwrap();
        assert_eq!(o.workloads.len(), 4);
        assert_eq!(o.skews, vec![Skew::Zipf]);
        assert_eq!(o.forms, vec![Form::Moe]);
        assert_eq!(o.iters, 1);
        let o = parse_args(&args("--groups 4 --m 128 --n 256 --k 64")).unwrap();
        let w = &workloads(&o)[0];
        assert_eq!((w.rows.clone(), w.n, w.k), (vec![128; 4], 256, 64));
        assert_eq!(w.name, "equal_4x128x256x64");
        let o = parse_args(&args("--rows 0,5,17 --n 8 --k 16")).unwrap();
        assert_eq!(workloads(&o)[0].rows, vec![0, 5, 17]);
        assert_eq!(workloads(&o)[0].skew, Skew::Custom);
        for bad in [
            "--workload nope",
            "--skew flat",
            "--groups 4 --m 8",
            "--rows 0,0 --n 8 --k 8",
            "--rows 1 --n 8",
            "--m 8",
            "--forms tree",
            "--dtype f32",
            "--iters",
            "--frob",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn rows_sum_to_the_total() {
        assert_eq!(uniform_rows(10, 4), vec![3, 3, 2, 2]);
        for &(_, experts, total, _, _) in &MOE_WORKLOADS {
            for seed in [DEFAULT_SEED, 1, 7] {
                let rows = zipf_rows(total, experts, DEFAULT_ZIPF_S, seed);
                assert_eq!(rows.len(), experts);
                assert_eq!(rows.iter().sum::<usize>(), total);
                // The rank-1 expert gets the most rows.
                let top = permutation(experts, seed)[0];
                assert_eq!(rows.iter().max(), Some(&rows[top]));
            }
        }
        // Deterministic, and a permutation.
        assert_eq!(zipf_rows(8192, 8, 1.2, 5), zipf_rows(8192, 8, 1.2, 5));
        let mut p = permutation(256, 3);
        p.sort();
        assert_eq!(p, (0..256).collect::<Vec<_>>());
        // A few tokens over many experts: some experts get none.
        let rows = zipf_rows(20, 64, 1.2, 9);
        assert_eq!(rows.iter().sum::<usize>(), 20);
        assert!(rows.contains(&0));
    }

    #[test]
    fn checked_experts_cover_the_extremes() {
        assert_eq!(checked_experts(&[0, 5, 9, 1, 0]), vec![2, 3, 1]);
        assert_eq!(checked_experts(&[4]), vec![0]);
        let w = Workload {
            name: "t".into(),
            skew: Skew::Custom,
            rows: vec![0, 3, 2],
            n: 8,
            k: 4,
        };
        let s = samples(&w, 8, &[1.0, -0.5, 0.25], &[0.5, 1.0], DType::Bf16);
        assert_eq!(s.experts, vec![1, 2]);
        for (&(e, row, col), &at) in s.positions.iter().zip(&s.offsets) {
            assert!(row < w.rows[e] && col < w.n);
            assert_eq!(at, (w.starts()[e] + row) * w.n + col);
        }
        // A row of expert 1 (rows 0..3 of A) against column 0 of expert 1's B.
        let (e, row, col) = s.positions[0];
        assert_eq!((e, row, col), (1, 0, 0));
        let want: f64 = (0..4)
            .map(|p| [1.0, -0.5, 0.25][p % 3] * [0.5, 1.0][(32 + p) % 2])
            .sum();
        assert_eq!(s.reference[0], want);
    }

    #[test]
    fn records_carry_arrays() {
        let r = JsonRecord::new().str("op", "gemm_grouped").int("groups", 2);
        assert_eq!(
            with_arrays(&r, &[("rows", &[3, 0])]),
            "{\"op\": \"gemm_grouped\", \"groups\": 2, \"rows\": [3, 0]}"
        );
    }

    #[test]
    fn default_selection_is_in_scope() {
        let o = parse_args(&[]).unwrap();
        if let Ok(kernels) = select(&o) {
            for k in kernels {
                assert!(out_of_scope(k, DType::Bf16).is_none(), "{}", k.rust_name);
            }
        }
    }
}
