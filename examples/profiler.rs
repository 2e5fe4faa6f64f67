//! The profiler: runs chosen kernels — or every kernel that supports a problem — on given shapes,
//! verifies each result against an f64 host reference on sampled elements, and prints a table (or
//! JSON Lines) of time, TFLOP/s and GB/s. It can also write the dispatch table the build embeds:
//! the fastest verified (kernel, split-K slices, raster order, swizzle) per shape and operand types.
//!
//!     cargo run --release --example profiler -- --sweep smoke
//!     cargo run --release --example profiler -- --dtype bf16,f16 --sweep issue3 --json \
//!         --dispatch-out dispatch.tsv > results.jsonl
//!     cargo run --release --example profiler -- --sweep issue12 --split-k 1,2,4 \
//!         --raster auto,m,n --swizzle 0,1,2,4,8 --tuning-top 2 --dispatch-out dispatch.tsv
//!
//! `--help` lists the options; `bench/README.md` describes the output formats.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use common::sweeps::{parse_layout, parse_shape, sweep};
use common::{Check, Extents, Failure, GemmData, Pools, Spinner, Timing, Types};
use cudarc::driver::{CudaContext, CudaStream};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::Api;
use cutlass_aot::model::{DType, Layout};
use cutlass_aot::{device, GemmProblem, KernelInfo, Raster, Tuning};

const USAGE: &str = "\
usage: profiler [options]

Kernels (default: every kernel of the --dtype/--c-dtype/--layout selection that supports a shape):
  --kernels NAME[,NAME...]   these kernels (Rust or CUTLASS names), each with its own types and
                             layouts; a named kernel that cannot run a shape gets a row saying why
  --all                      every selected kernel that supports the shape (the default)
  --dtype T[,T...]|all       A's type: f16 bf16 tf32 f32_3xtf32 f32_fastf16 f32_fastbf16 f32 f64
                             e4m3 e5m2 s8; for f32 operands the math: tf32 = one TF32 product on
                             tensor cores, f32_3xtf32 = 3xTF32 (f32 accuracy), f32_fastf16 /
                             f32_fastbf16 = operands rounded to f16 / bf16, f32 = SIMT; default bf16
  --c-dtype T[,T...]         only kernels whose C/D type is one of these (default: any)
  --layout L[,L...]|all      A and B layouts, t = row-major, n = column-major (tn, nn, nt, tt), or
                             with C's letter (tnt); default tn (C row-major)
Shapes (default: --sweep smoke):
  --shapes MxNxK[xBATCH][,...]
  --sweep NAME               issue3: squares 1024..8192 and M {16,128,1024,4096} x N, K {4096,
                             8192,14336,28672} (68, 67 distinct); smoke: a few small ones, one ragged;
                             issue3_small_m_transposed: issue3's M <= 128 shapes with M and N swapped
                             (for the transposed kernels, with --layout tnn); issue4_splitk: M = N
                             {512,768,1024} x K {16384,32768,65536} (9); issue4_squares: 4096^3, 8192^3;
                             issue12 (124): squares 1024..8192, M {1,16,64,128,512,2048} x the (N, K)
                             projections of LLaMA-2-7B, LLaMA-3-70B, Mixtral-8x7B and DeepSeek-V3,
                             K-heavy M = N {256,512,1024,1536} x K {8192..32768}, batched 64^3..512^3
                             x {16,64,256}, ragged sizes; issue12_small_m_transposed (62): its
                             M <= 128 shapes with M and N swapped (--layout tnn); issue12_quick (25):
                             a subset of issue12 across its categories
Measurement (each kernel x shape runs once per configuration: split-K count x raster x swizzle for
CUTLASS 3.x kernels, split-K count alone for 2.x kernels, which ignore the tuning):
  --split-k N[,N...]         split K into N slices (default 1): every kernel x shape runs once per
                             count its supports() allows (serial / parallel split-K of 2.x kernels,
                             3.x stream-K); others are skipped, or get a row saying why when named
                             with --kernels
  --raster R[,R...]          tile orders of 3.x persistent kernels: auto (CUTLASS's choice), m, n
                             (default auto)
  --swizzle S[,S...]         swizzle bands of 3.x kernels in tiles: 0 (automatic), 1, 2, 4, 8
                             (default 0)
  --tuning-top N|all         per shape and operand types, first run every kernel at its first
                             configuration (the first --split-k count it supports, the first --raster
                             and --swizzle), then only the N fastest of them (verified) at their
                             other configurations (default all: every configuration of every kernel)
  --beta B                   D = A·B + B·C (default 0: C is not read)
  --iters N                  timed launches per kernel and shape (default 20)
  --warmup N                 untimed launches first (default 5)
  --max-seconds-per-kernel S cap the timed launches of one kernel on one shape at about S seconds
                             (at least 3 launches; default 2)
  --max-seconds-total S      start no new shape after about S seconds (the rows so far are printed
                             and the dispatch table written; default: no limit)
  --samples N                elements of D verified against the f64 reference (default 256, plus
                             the corners)
  --no-verify                skip verification (rows say so; nothing enters the dispatch table)
Output:
  --json                     one JSON object per line (DESIGN §6 records) instead of the table
  --dispatch-out FILE        write the fastest verified row per shape and operand types, over every
                             split-K count, raster and swizzle (TSV: a b c layout m n k batch kernel
                             split_k raster swizzle us)
  --list                     list the kernels (rust_name, name, api, schedule, ...) and exit
  --help

Time is the median of per-launch CUDA-event times (launches enqueued back to back behind a spin
kernel, so they run back to back on the GPU whatever their host cost); TFLOP/s =
2·m·n·k·batch / time; GB/s = bytes of A, B, D (and C when beta != 0) / time. Parallel split-K times
include its reduction kernel, serial split-K and stream-K their workspace fills.
Exit status: 0 all rows ran and verified, 1 some kernel failed or did not verify, 2 usage error or
no GPU.";

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
struct Options {
    kernels: Option<Vec<String>>,
    /// `None` = every type.
    dtypes: Option<Vec<String>>,
    /// C/D types; `None` = any.
    c_dtypes: Option<Vec<DType>>,
    /// (A, B, C) layouts; C `None` = row-major. `None` = every layout.
    layouts: Option<Vec<(Layout, Layout, Option<Layout>)>>,
    /// --dtype, --c-dtype or --layout was given (they do not apply with --kernels).
    type_filters_given: bool,
    shapes: Vec<Extents>,
    /// Split-K slice counts to run each kernel and shape with (distinct, in order).
    split_k: Vec<usize>,
    beta: f64,
    /// Tile orders of 3.x kernels to run each kernel and shape with (distinct, in order; 2.x
    /// kernels ignore them).
    rasters: Vec<Raster>,
    /// Swizzle bands of 3.x kernels (distinct, in order).
    swizzles: Vec<u32>,
    /// Only the N fastest kernels at their first configuration run the others (`None`: all).
    tuning_top: Option<usize>,
    iters: usize,
    warmup: usize,
    max_seconds: Option<f64>,
    /// Start no new shape after this many seconds.
    max_seconds_total: Option<f64>,
    samples: usize,
    verify: bool,
    json: bool,
    dispatch_out: Option<String>,
    list: bool,
    help: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            kernels: None,
            dtypes: Some(vec!["bf16".into()]),
            c_dtypes: None,
            layouts: Some(vec![(Layout::Row, Layout::Column, None)]),
            type_filters_given: false,
            shapes: Vec::new(),
            split_k: vec![1],
            beta: 0.0,
            rasters: vec![Raster::Heuristic],
            swizzles: vec![0],
            tuning_top: None,
            iters: 20,
            warmup: 5,
            max_seconds: Some(2.0),
            max_seconds_total: None,
            samples: 256,
            verify: true,
            json: false,
            dispatch_out: None,
            list: false,
            help: false,
        }
    }
}

/// The swizzle bands CUTLASS 3.x's tile schedulers take (0: automatic).
const SWIZZLES: [u32; 5] = [0, 1, 2, 4, 8];

/// `auto`, `m`, `n` (the dispatch table's spelling).
fn parse_raster(s: &str) -> Option<Raster> {
    match s {
        "auto" => Some(Raster::Heuristic),
        "m" => Some(Raster::AlongM),
        "n" => Some(Raster::AlongN),
        _ => None,
    }
}

/// The spelling of [`parse_raster`].
fn raster_name(r: Raster) -> &'static str {
    match r {
        Raster::Heuristic => "auto",
        Raster::AlongM => "m",
        Raster::AlongN => "n",
    }
}

/// A/B type names --dtype accepts (the `dtype` of result records).
fn dtype_allowed(label: &str) -> bool {
    common::F32_MATH_LABELS.contains(&label) || DType::from_manifest_name(label).is_some()
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut shapes = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let flag = flag.as_str();
        let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
        let count = |v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{flag}: {v:?} is not a non-negative integer"))
        };
        let list = |v: String| -> Vec<String> {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        match flag {
            "--kernels" | "--kernel" => {
                let names = list(value()?);
                if names.is_empty() {
                    return Err(format!("{flag} needs at least one kernel name"));
                }
                o.kernels.get_or_insert_with(Vec::new).extend(names);
            }
            "--all" => o.kernels = None,
            "--dtype" => {
                o.type_filters_given = true;
                let v = value()?;
                if v == "all" {
                    o.dtypes = None;
                } else {
                    let names = list(v);
                    if let Some(bad) = names.iter().find(|n| !dtype_allowed(n)) {
                        return Err(format!(
                            "--dtype: unknown type {bad:?}; allowed: {}, {}, all",
                            common::F32_MATH_LABELS.join(", "),
                            DType::allowed()
                        ));
                    }
                    if names.is_empty() {
                        return Err("--dtype needs a type".into());
                    }
                    o.dtypes = Some(names);
                }
            }
            "--c-dtype" => {
                o.type_filters_given = true;
                let names = list(value()?);
                if names.is_empty() {
                    return Err("--c-dtype needs a type".into());
                }
                let parsed = names
                    .iter()
                    .map(|v| {
                        DType::from_manifest_name(v).ok_or(format!(
                            "--c-dtype: unknown type {v:?}; allowed: {}",
                            DType::allowed()
                        ))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                o.c_dtypes = Some(parsed);
            }
            "--layout" => {
                o.type_filters_given = true;
                let v = value()?;
                o.layouts = if v == "all" {
                    None
                } else {
                    let parsed = list(v)
                        .iter()
                        .map(|s| parse_layout(s))
                        .collect::<Result<Vec<_>, _>>()?;
                    if parsed.is_empty() {
                        return Err("--layout needs a layout".into());
                    }
                    Some(parsed)
                };
            }
            "--shapes" | "--shape" => {
                for s in list(value()?) {
                    shapes.push(parse_shape(&s)?);
                }
            }
            "--sweep" => shapes.extend(sweep(&value()?)?),
            "--split-k" => {
                let mut counts = Vec::new();
                for v in list(value()?) {
                    match v.parse::<usize>() {
                        Ok(n) if n >= 1 => {
                            if !counts.contains(&n) {
                                counts.push(n)
                            }
                        }
                        _ => return Err(format!("--split-k: {v:?} is not a slice count (1, 2, ...)")),
                    }
                }
                if counts.is_empty() {
                    return Err("--split-k needs a slice count".into());
                }
                o.split_k = counts;
            }
            "--beta" => {
                let v = value()?;
                o.beta = v
                    .parse::<f64>()
                    .ok()
                    .filter(|b| b.is_finite())
                    .ok_or(format!("--beta: {v:?} is not a number"))?;
            }
            "--raster" => {
                let mut rasters = Vec::new();
                for v in list(value()?) {
                    let raster = parse_raster(&v).ok_or(format!("--raster: {v:?}; allowed: auto, m, n"))?;
                    if !rasters.contains(&raster) {
                        rasters.push(raster);
                    }
                }
                if rasters.is_empty() {
                    return Err("--raster needs a tile order (auto, m, n)".into());
                }
                o.rasters = rasters;
            }
            "--swizzle" => {
                let mut swizzles = Vec::new();
                for v in list(value()?) {
                    match v.parse::<u32>() {
                        Ok(s) if SWIZZLES.contains(&s) => {
                            if !swizzles.contains(&s) {
                                swizzles.push(s);
                            }
                        }
                        _ => return Err(format!("--swizzle: {v:?}; allowed: 0 (default), 1, 2, 4, 8")),
                    }
                }
                if swizzles.is_empty() {
                    return Err("--swizzle needs a band (0, 1, 2, 4, 8)".into());
                }
                o.swizzles = swizzles;
            }
            "--tuning-top" => {
                let v = value()?;
                o.tuning_top = match v.as_str() {
                    "all" => None,
                    _ => match v.parse::<usize>() {
                        Ok(n) if n >= 1 => Some(n),
                        _ => {
                            return Err(format!(
                                "--tuning-top: {v:?} is not a kernel count (1, 2, ...) or all"
                            ))
                        }
                    },
                };
            }
            "--iters" => o.iters = count(value()?)?.max(1),
            "--warmup" => o.warmup = count(value()?)?,
            "--max-seconds-per-kernel" => {
                let v = value()?;
                let s = v.parse::<f64>().ok().filter(|s| *s >= 0.0).ok_or(format!(
                    "--max-seconds-per-kernel: {v:?} is not a number of seconds"
                ))?;
                o.max_seconds = (s > 0.0).then_some(s);
            }
            "--max-seconds-total" => {
                let v = value()?;
                let s = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0 && s.is_finite())
                    .ok_or(format!(
                        "--max-seconds-total: {v:?} is not a positive number of seconds"
                    ))?;
                o.max_seconds_total = Some(s);
            }
            "--samples" => o.samples = count(value()?)?,
            "--no-verify" => o.verify = false,
            "--json" => o.json = true,
            "--dispatch-out" => o.dispatch_out = Some(value()?),
            "--list" => o.list = true,
            "--help" | "-h" => o.help = true,
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    if shapes.is_empty() {
        shapes = sweep("smoke")?;
    }
    // Keep the first occurrence of each shape, in order.
    let mut seen = std::collections::HashSet::new();
    o.shapes = shapes.into_iter().filter(|s| seen.insert(*s)).collect();
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// Kernel selection
// ---------------------------------------------------------------------------------------------

/// Whether `info` is in the --dtype / --c-dtype / --layout selection.
fn in_selection(o: &Options, info: &KernelInfo) -> bool {
    let dtype = o.dtypes.as_ref().map_or(true, |names| {
        names.iter().any(|n| *n == common::dtype_label(info))
    });
    let c = o
        .c_dtypes
        .as_ref()
        .map_or(true, |cs| cs.contains(&info.gemm().c.element));
    let layout = o.layouts.as_ref().map_or(true, |ls| {
        ls.iter().any(|&(a, b, c)| {
            a == info.gemm().a.layout
                && b == info.gemm().b.layout
                && c.unwrap_or(Layout::Row) == info.gemm().c.layout
        })
    });
    dtype && c && layout
}

/// The kernels to consider: the named ones, or the selection.
fn candidates(o: &Options) -> Result<Vec<&'static KernelInfo>, String> {
    match &o.kernels {
        Some(names) => names
            .iter()
            .map(|n| {
                REGISTRY.by_name(n).ok_or_else(|| {
                    format!(
                        "no kernel named {n:?} in this binary (--list shows the {} kernels)",
                        REGISTRY.all().len()
                    )
                })
            })
            .collect(),
        None => {
            let chosen: Vec<_> = REGISTRY.filter(|k| in_selection(o, k)).collect();
            if chosen.is_empty() {
                Err(format!(
                    "no kernel in this binary matches --dtype {} --c-dtype {} --layout {} (--list shows the {} kernels)",
                    o.dtypes.as_ref().map_or("all".into(), |d| d.join(",")),
                    o.c_dtypes.as_ref().map_or("any".into(), |cs| cs
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(",")),
                    o.layouts.as_ref().map_or("all".into(), |ls| ls
                        .iter()
                        .map(|(a, b, c)| format!(
                            "{}{}{}",
                            a.letter(),
                            b.letter(),
                            c.unwrap_or(Layout::Row).letter()
                        ))
                        .collect::<Vec<_>>()
                        .join(",")),
                    REGISTRY.all().len()
                ))
            } else {
                Ok(chosen)
            }
        }
    }
}

/// The problem `info` would be asked to run (its own types and layouts), K split into `slices`.
fn problem(info: &KernelInfo, e: Extents, slices: usize, cc: Option<u32>) -> GemmProblem {
    let mut p = GemmProblem::new(
        (e.m, e.n, e.k),
        (
            info.gemm().a.element,
            info.gemm().b.element,
            info.gemm().c.element,
        ),
        (info.gemm().a.layout, info.gemm().b.layout, info.gemm().c.layout),
    )
    .batched(e.batch)
    .split_k(slices);
    p.compute_capability = cc;
    p
}

/// `supports`, ignoring only a missing device code (for describing what a full build would run).
fn would_support(info: &KernelInfo, e: Extents, slices: usize) -> bool {
    match info.supports(&problem(info, e, slices, None)) {
        Ok(()) => true,
        Err(u) => !info.has_device_code() && u.reasons.len() == 1,
    }
}

fn list_kernels(out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "# rust_name\tname\tapi\tschedule\tepilogue_schedule\ttile_scheduler\tdtype\ta\tb\tc\tlayout\ttile\tcluster\tmath\tsplit_k"
    )?;
    for k in REGISTRY.all() {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            k.rust_name,
            k.name,
            k.api(),
            common::schedule(k),
            common::epilogue_schedule(k),
            common::tile_scheduler(k),
            common::dtype_label(k),
            k.gemm().a.element,
            k.gemm().b.element,
            k.gemm().c.element,
            common::layout_abc(k),
            k.tile(),
            k.design.cluster(),
            k.gemm().math,
            k.design.split_k()
        )?;
    }
    Ok(())
}

/// What would run, for the no-GPU message.
fn describe_plan(o: &Options, kernels: &[&'static KernelInfo], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{} kernel(s) selected of the {} in this binary, {} shape(s), split-K {}, raster {}, swizzle {}{}:",
        kernels.len(),
        REGISTRY.all().len(),
        o.shapes.len(),
        split_list(&o.split_k),
        o.rasters
            .iter()
            .map(|r| raster_name(*r))
            .collect::<Vec<_>>()
            .join(","),
        split_list(&o.swizzles),
        match o.tuning_top {
            Some(n) => format!(
                " (only the {n} fastest kernel(s) of each shape at their first configuration run the others)"
            ),
            None => String::new(),
        }
    )?;
    let width = kernels.iter().map(|k| k.rust_name.len()).max().unwrap_or(0);
    // Every supported configuration, and the kernel x shape pairs (one first configuration each).
    let (mut total, mut firsts) = (0, 0);
    for info in kernels {
        let configs = configs(o, info);
        let runs = o.shapes.len() * configs.len();
        let n = o
            .shapes
            .iter()
            .flat_map(|&e| configs.iter().map(move |c| (e, c.slices)))
            .filter(|&(e, s)| would_support(info, e, s))
            .count();
        total += n;
        firsts += o
            .shapes
            .iter()
            .filter(|&&e| o.split_k.iter().any(|&s| would_support(info, e, s)))
            .count();
        writeln!(
            out,
            "  {:<width$}  {}  ({} {} {}, {}, split-K {}; supports {n} of {runs} shape x configuration runs)",
            info.rust_name,
            info.name,
            info.api(),
            common::schedule(info),
            common::tile_scheduler(info),
            common::dtype_label(info),
            info.design.split_k(),
        )?;
    }
    match o.tuning_top {
        Some(n) => writeln!(
            out,
            "runs: {firsts} at each kernel's first configuration, then the other configurations of the {n} \
             fastest per shape and operand types (of {total} in all)"
        )?,
        None => writeln!(out, "runs: {total}")?,
    }
    let shapes: Vec<String> = o.shapes.iter().take(12).map(|s| s.to_string()).collect();
    writeln!(
        out,
        "shapes: {}{}",
        shapes.join(", "),
        if o.shapes.len() > 12 { ", ..." } else { "" }
    )?;
    if kernels.iter().any(|k| !k.has_device_code()) {
        writeln!(
            out,
            "note: this binary was built without device code (CUTLASS_AOT_NO_NVCC or DOCS_RS); \
             even with a GPU its kernels could not run"
        )?;
    }
    Ok(())
}

/// `1,2,4`.
fn split_list<T: ToString>(counts: &[T]) -> String {
    counts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// How one kernel is launched on a shape: K split into `slices`, with a run-time tuning.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Config {
    slices: usize,
    tuning: Tuning,
}

/// Whether `info` takes a run-time tuning (CUTLASS 3.x kernels; 2.x kernels have theirs compiled
/// in).
fn tunable(info: &KernelInfo) -> bool {
    info.api() == Api::Cutlass3x
}

/// The configurations to run `info` with, in order: every --split-k count x --raster x --swizzle
/// for a 3.x kernel, every --split-k count with the default tuning for a 2.x kernel. The first is
/// its baseline for --tuning-top.
fn configs(o: &Options, info: &KernelInfo) -> Vec<Config> {
    let tunings: Vec<Tuning> = if tunable(info) {
        o.rasters
            .iter()
            .flat_map(|&raster| {
                o.swizzles
                    .iter()
                    .map(move |&max_swizzle| Tuning { raster, max_swizzle })
            })
            .collect()
    } else {
        vec![Tuning::default()]
    };
    o.split_k
        .iter()
        .flat_map(|&slices| tunings.iter().map(move |&tuning| Config { slices, tuning }))
        .collect()
}

/// `auto/0`: a tuning for the table and the progress lines.
fn tuning_label(t: Tuning) -> String {
    format!("{}/{}", raster_name(t.raster), t.max_swizzle)
}

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

struct Measured {
    timing: Timing,
    check: Option<Check>,
    tflops: f64,
    gbps: f64,
}

enum Outcome {
    Ran(Measured),
    /// A named kernel that cannot run the shape (not a failure).
    Unsupported(String),
    Failed(String),
}

struct Row {
    info: &'static KernelInfo,
    extents: Extents,
    /// Split-K slices (1: no split).
    split_k: usize,
    /// The run-time tuning passed (the default for 2.x kernels, which ignore it).
    tuning: Tuning,
    outcome: Outcome,
}

impl Row {
    fn verified(&self) -> bool {
        matches!(&self.outcome, Outcome::Ran(m) if m.check.is_some_and(|c| c.passed()))
    }

    /// The median time of a row that ran and did not fail its verification (verified, or with
    /// verification off).
    fn good_time(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Ran(m) if m.check.map_or(true, |c| c.passed()) => Some(m.timing.median_us),
            _ => None,
        }
    }

    /// A failure for the exit status: an error, or a verification that did not pass.
    fn is_failure(&self) -> bool {
        match &self.outcome {
            Outcome::Ran(m) => m.check.is_some_and(|c| !c.passed()),
            Outcome::Unsupported(_) => false,
            Outcome::Failed(_) => true,
        }
    }
}

/// What every record of one run shares.
struct RunInfo {
    device: String,
    date: String,
    alpha: f64,
    beta: f64,
    warmup: usize,
}

fn table_header(kernel_width: usize) -> String {
    format!(
        "{:<kw$} {:>6} {:>6} {:>6} {:>5} {:>5} {:>6} {:>11} {:>8} {:>8}  verified (rel. error)",
        "kernel",
        "m",
        "n",
        "k",
        "batch",
        "split",
        "tuning",
        "us",
        "TFLOP/s",
        "GB/s",
        kw = kernel_width
    )
}

fn table_row(row: &Row, kernel_width: usize) -> String {
    let e = row.extents;
    let tuning = if tunable(row.info) {
        tuning_label(row.tuning)
    } else {
        "-".to_string()
    };
    let head = format!(
        "{:<kw$} {:>6} {:>6} {:>6} {:>5} {:>5} {:>6}",
        row.info.rust_name,
        e.m,
        e.n,
        e.k,
        e.batch,
        row.split_k,
        tuning,
        kw = kernel_width
    );
    match &row.outcome {
        Outcome::Ran(m) => {
            let verdict = match m.check {
                None => "not verified".to_string(),
                Some(c) if c.unwritten.unwrap_or(0) > 0 => {
                    format!("NO: {} outputs unwritten", c.unwritten.unwrap_or(0))
                }
                Some(c) if c.passed() => format!("yes ({:.1e})", c.rel_error),
                Some(c) => format!("NO ({:.1e} > tolerance {:.0e})", c.rel_error, c.tolerance),
            };
            format!(
                "{head} {:>11.2} {:>8.1} {:>8.1}  {verdict}",
                m.timing.median_us, m.tflops, m.gbps
            )
        }
        Outcome::Unsupported(why) => format!("{head} {:>11} {:>8} {:>8}  unsupported: {why}", "-", "-", "-"),
        Outcome::Failed(why) => format!("{head} {:>11} {:>8} {:>8}  ERROR: {why}", "-", "-", "-"),
    }
}

fn json_row(row: &Row, run: &RunInfo) -> String {
    let info = row.info;
    let e = row.extents;
    let mut r = common::gemm_record_split(&run.device, &run.date, info, e, row.split_k, run.alpha, run.beta)
        .str("raster", raster_name(row.tuning.raster))
        .int("swizzle", row.tuning.max_swizzle as usize)
        .int("warmup", run.warmup);
    match &row.outcome {
        Outcome::Ran(m) => r = common::measurement_fields(r, &m.timing, m.tflops, m.gbps, m.check.as_ref()),
        Outcome::Unsupported(why) => r = r.bool("verified", false).str("unsupported", why),
        Outcome::Failed(why) => r = r.bool("verified", false).str("error", why),
    }
    r.finish()
}

/// The selection table (`cutlass_aot::select`): every verified way timed (kernel, split-K,
/// raster and swizzle) on every shape, the fastest time of each; sorted by line.
fn dispatch_tsv(run: &RunInfo, rows: &[Row]) -> String {
    let mut best: BTreeMap<String, f64> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.verified()) {
        let Outcome::Ran(m) = &row.outcome else { continue };
        let t = Types::of(row.info);
        let e = row.extents;
        let key = cutlass_aot::select::Key::new(
            "gemm",
            [t.a, t.b, t.c],
            Some([t.layout_a, t.layout_b, t.layout_c]),
            &[e.m, e.n, e.k, e.batch],
        );
        // The line without its time identifies the way.
        let line = cutlass_aot::select::Row::new(key, row.info, row.split_k, row.tuning, 0.0).tsv_line();
        let way = line
            .rsplit_once('\t')
            .map_or(line.clone(), |(way, _)| way.to_string());
        let us = m.timing.median_us.max(0.01);
        let slot = best.entry(way).or_insert(us);
        *slot = slot.min(us);
    }
    let mut out = cutlass_aot::select::table::tsv_header(&run.device, &run.date);
    for (way, us) in best {
        out.push_str(&format!("{way}\t{us:.2}\n"));
    }
    out
}

/// The kernels of the `n` fastest rows of `rows` (ran, not failing verification), fastest first;
/// a kernel counts once.
fn fastest_kernels(rows: &[Row], n: usize) -> Vec<&'static KernelInfo> {
    let mut timed: Vec<(f64, &'static KernelInfo)> = rows
        .iter()
        .filter_map(|r| Some((r.good_time()?, r.info)))
        .collect();
    timed.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut kernels: Vec<&'static KernelInfo> = Vec::new();
    for (_, info) in timed {
        if kernels.len() == n {
            break;
        }
        if !kernels.iter().any(|k| std::ptr::eq(*k, info)) {
            kernels.push(info);
        }
    }
    kernels
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// Sampled positions of D and their reference values (shared by the kernels of one group).
struct Reference {
    positions: Vec<(usize, usize, usize)>,
    values: Vec<f64>,
}

/// Verification run, then timing, of one kernel in one configuration on prepared data.
#[allow(clippy::too_many_arguments)]
fn measure(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    o: &Options,
    info: &'static KernelInfo,
    config: Config,
    data: &GemmData,
    reference: Option<&Reference>,
    spinner: Option<&Spinner>,
) -> Result<Measured, Failure> {
    let slices = config.slices;
    let operands = data.operands_split(1.0, o.beta, slices);
    // SAFETY: the buffers of `data` hold exactly the element types and lengths of `operands`,
    // live until the stream is synchronised below, and D does not overlap A, B or C.
    let launch = || unsafe { cutlass_aot::gemm::launch_raw_tuned(info, stream, &operands, config.tuning) };
    let kernel = |e: cutlass_aot::Error| Failure::Kernel(e.to_string());
    let check = match reference {
        Some(Reference { positions, values }) => {
            data.poison_d().map_err(common::device_failure)?;
            launch().map_err(kernel)?;
            stream.synchronize().map_err(common::device_failure)?;
            Some(common::check_split(data, info, slices, positions, values).map_err(common::device_failure)?)
        }
        None => None,
    };
    let timing = common::time_launches(ctx, stream, o.warmup, o.iters, o.max_seconds, spinner, launch)?;
    let seconds = timing.median_us * 1e-6;
    Ok(Measured {
        timing,
        check,
        tflops: data.extents.flops() / seconds / 1e12,
        gbps: common::gemm_bytes(data.extents, data.types, o.beta != 0.0) / seconds / 1e9,
    })
}

/// Prints rows as they come (table or JSON Lines).
struct Printer {
    json: bool,
    kernel_width: usize,
    run: RunInfo,
}

impl Printer {
    fn print(&self, row: &Row) {
        let line = if self.json {
            json_row(row, &self.run)
        } else {
            table_row(row, self.kernel_width)
        };
        common::out(line);
    }
}

/// The kernels of one shape and operand types, each with the configurations it supports.
type Members = Vec<(&'static KernelInfo, Vec<Config>)>;

/// What the runs of one shape and operand types share.
struct Job<'a> {
    ctx: &'a Arc<CudaContext>,
    stream: &'a Arc<CudaStream>,
    o: &'a Options,
    data: &'a GemmData,
    reference: Option<&'a Reference>,
    spinner: Option<&'a Spinner>,
    printer: &'a Printer,
}

impl Job<'_> {
    /// Measures `info` in `config`, prints and records its row. Returns why the device can no
    /// longer be used, after a fault.
    fn run(&self, info: &'static KernelInfo, config: Config, rows: &mut Vec<Row>) -> Option<String> {
        let measured = measure(
            self.ctx,
            self.stream,
            self.o,
            info,
            config,
            self.data,
            self.reference,
            self.spinner,
        );
        let mut fatal = None;
        let outcome = match measured {
            Ok(m) => Outcome::Ran(m),
            Err(Failure::Kernel(why)) => {
                // A refused launch leaves the device usable; a fault in the kernel does not.
                if let Err(err) = self.stream.synchronize() {
                    fatal = Some(format!("{why}; then the device failed: {err}"));
                }
                Outcome::Failed(why)
            }
            Err(Failure::Device(why)) => {
                fatal = Some(why.clone());
                Outcome::Failed(format!("device failure: {why}"))
            }
        };
        let row = Row {
            info,
            extents: self.data.extents,
            split_k: config.slices,
            tuning: config.tuning,
            outcome,
        };
        self.printer.print(&row);
        rows.push(row);
        fatal
    }
}

fn run(ctx: &Arc<CudaContext>, o: &Options, kernels: &[&'static KernelInfo]) -> Result<ExitCode, String> {
    let stream = ctx.new_stream().map_err(|e| format!("creating a stream: {e}"))?;
    let cc = device::props(ctx).map_err(|e| e.to_string())?.compute_capability;
    let printer = Printer {
        json: o.json,
        kernel_width: kernels
            .iter()
            .map(|k| k.rust_name.len())
            .max()
            .unwrap_or(6)
            .max(6),
        run: RunInfo {
            device: common::device_name(ctx),
            date: common::utc_date(),
            alpha: 1.0,
            beta: o.beta,
            warmup: o.warmup,
        },
    };
    if !o.json {
        common::out(format!(
            "device: {} (compute capability {}.{}), {}; {} kernel(s), {} shape(s), split-K {}, raster {}, \
             swizzle {}{}; time = median of up to {} launches after {} warm-up",
            printer.run.device,
            cc / 10,
            cc % 10,
            printer.run.date,
            kernels.len(),
            o.shapes.len(),
            split_list(&o.split_k),
            o.rasters
                .iter()
                .map(|r| raster_name(*r))
                .collect::<Vec<_>>()
                .join(","),
            split_list(&o.swizzles),
            o.tuning_top.map_or(String::new(), |n| format!(
                " (other configurations: the {n} fastest only)"
            )),
            o.iters,
            o.warmup
        ));
        common::out(table_header(printer.kernel_width));
    }
    let spinner = match Spinner::new(ctx) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!(
                "profiler: warning: the spin kernel did not load ({e}); kernels shorter than a launch's host \
                 cost will be timed at the host's launch rate"
            );
            None
        }
    };
    let mut pools = Pools::new(stream.clone());
    let mut rows: Vec<Row> = Vec::new();
    let mut fatal = None;
    let mut not_run = 0;
    let started = std::time::Instant::now();
    // With --tuning-top, a kernel first runs its first configuration only.
    let first_phase = |configs: &[Config]| -> usize {
        if o.tuning_top.is_some() {
            1
        } else {
            configs.len()
        }
    };
    'shapes: for (index, &e) in o.shapes.iter().enumerate() {
        if let Some(limit) = o.max_seconds_total {
            if started.elapsed().as_secs_f64() >= limit {
                not_run = o.shapes.len() - index;
                eprintln!(
                    "profiler: --max-seconds-total {limit}: stopped after {:.0} s; {not_run} shape(s) not run, \
                     from {e} on",
                    started.elapsed().as_secs_f64()
                );
                break;
            }
        }
        // The kernels that can run this shape, each with its configurations, grouped by operand
        // types: one set of buffers each.
        let mut groups: Vec<(Types, Members)> = Vec::new();
        for &info in kernels {
            let mut supported = Vec::new();
            for &slices in &o.split_k {
                match info.supports(&problem(info, e, slices, Some(cc))) {
                    Ok(()) => supported.push(slices),
                    Err(why) if o.kernels.is_some() => {
                        let row = Row {
                            info,
                            extents: e,
                            split_k: slices,
                            tuning: Tuning::default(),
                            outcome: Outcome::Unsupported(why.reasons.join("; ")),
                        };
                        printer.print(&row);
                        rows.push(row);
                    }
                    Err(_) => {}
                }
            }
            let runnable: Vec<Config> = configs(o, info)
                .into_iter()
                .filter(|c| supported.contains(&c.slices))
                .collect();
            if runnable.is_empty() {
                continue;
            }
            match groups.iter_mut().find(|(t, _)| *t == Types::of(info)) {
                Some((_, members)) => members.push((info, runnable)),
                None => groups.push((Types::of(info), vec![(info, runnable)])),
            }
        }
        let runnable: usize = groups
            .iter()
            .flat_map(|(_, members)| members.iter().map(|(_, c)| first_phase(c)))
            .sum();
        if o.json || runnable == 0 {
            eprintln!(
                "[{}/{}] {e}: {runnable} run(s){}{}",
                index + 1,
                o.shapes.len(),
                match o.tuning_top {
                    Some(n) if runnable > 0 => format!(", then the other configurations of the {n} fastest"),
                    _ => String::new(),
                },
                if runnable == 0 && o.kernels.is_none() {
                    " (no selected kernel supports this shape)"
                } else {
                    ""
                }
            );
        }
        for (types, members) in groups {
            let data = match GemmData::new(&stream, &mut pools, e, types, o.beta != 0.0) {
                Ok(data) => data,
                Err(err) => {
                    // Out of memory is the likely cause; the device itself is fine if it syncs.
                    let failure = format!("allocating and filling the operands: {err}");
                    let sticky = stream.synchronize().is_err();
                    for (info, configs) in &members {
                        for config in &configs[..first_phase(configs)] {
                            let row = Row {
                                info,
                                extents: e,
                                split_k: config.slices,
                                tuning: config.tuning,
                                outcome: Outcome::Failed(failure.clone()),
                            };
                            printer.print(&row);
                            rows.push(row);
                        }
                    }
                    if sticky {
                        fatal = Some(failure);
                        break 'shapes;
                    }
                    continue;
                }
            };
            let reference = o.verify.then(|| {
                let positions = common::sample_positions(e, o.samples);
                let values = data.reference(&positions, 1.0, o.beta);
                Reference { positions, values }
            });
            let job = Job {
                ctx,
                stream: &stream,
                o,
                data: &data,
                reference: reference.as_ref(),
                spinner: spinner.as_ref(),
                printer: &printer,
            };
            let group_start = rows.len();
            for (info, configs) in &members {
                for &config in &configs[..first_phase(configs)] {
                    if let Some(why) = job.run(info, config, &mut rows) {
                        fatal = Some(why);
                        break 'shapes;
                    }
                }
            }
            let Some(n) = o.tuning_top else { continue };
            let top = fastest_kernels(&rows[group_start..], n);
            let mut reruns = 0;
            for info in &top {
                let Some((_, configs)) = members.iter().find(|(k, _)| std::ptr::eq(*k, *info)) else {
                    continue;
                };
                for &config in &configs[1..] {
                    reruns += 1;
                    if let Some(why) = job.run(info, config, &mut rows) {
                        fatal = Some(why);
                        break 'shapes;
                    }
                }
            }
            if o.json {
                let names: Vec<&str> = top.iter().map(|k| k.rust_name).collect();
                eprintln!(
                    "    {e} {}: {reruns} more run(s) of the fastest {}",
                    types.layout_letters(),
                    names.join(", ")
                );
            }
        }
    }
    let failures = rows.iter().filter(|r| r.is_failure()).count();
    let ran = rows
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Ran(_)))
        .count();
    let verified = rows.iter().filter(|r| r.verified()).count();
    eprintln!(
        "profiler: {} row(s): {ran} ran, {verified} verified, {failures} failed{}{} in {:.0} s",
        rows.len(),
        if o.verify { "" } else { " (verification off)" },
        if not_run > 0 {
            format!("; {not_run} shape(s) not run (--max-seconds-total)")
        } else {
            String::new()
        },
        started.elapsed().as_secs_f64()
    );
    if let Some(why) = &fatal {
        eprintln!("profiler: stopped after a device failure, which leaves the CUDA context unusable: {why}");
        if o.dispatch_out.is_some() {
            eprintln!("profiler: no dispatch table written (the run is incomplete)");
        }
        return Ok(ExitCode::from(1));
    }
    if let Some(path) = &o.dispatch_out {
        let tsv = dispatch_tsv(&printer.run, &rows);
        std::fs::write(path, &tsv).map_err(|e| format!("writing the dispatch table {path}: {e}"))?;
        let entries = tsv.lines().filter(|l| !l.starts_with('#')).count();
        eprintln!("profiler: dispatch table with {entries} row(s) written to {path}");
        if !o.verify {
            eprintln!("profiler: --no-verify: nothing was verified, so the dispatch table is empty");
        }
    }
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("profiler: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if o.help {
        common::out(USAGE);
        return ExitCode::SUCCESS;
    }
    // The 3xTF32 split of big problems needs more scratch than the workspace cache keeps by
    // default; keep it between launches so that timing measures kernels, not allocations.
    cutlass_aot::workspace::set_cache_limit(usize::MAX);
    if o.list {
        return match list_kernels(&mut std::io::stdout().lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::from(1),
        };
    }
    let kernels = match candidates(&o) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("profiler: {e}");
            return ExitCode::from(2);
        }
    };
    if o.kernels.is_some() && o.type_filters_given {
        eprintln!("profiler: note: --kernels runs each kernel with its own types; --dtype, --c-dtype and --layout are ignored");
    }
    let ctx = match device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            // Keep stdout clean for JSON Lines consumers.
            let _ = if o.json {
                describe_plan(&o, &kernels, &mut std::io::stderr().lock())
            } else {
                describe_plan(&o, &kernels, &mut std::io::stdout().lock())
            };
            eprintln!("\nprofiler: no GPU, nothing was run: {e}");
            return ExitCode::from(2);
        }
    };
    if !kernels.iter().any(|k| k.has_device_code()) {
        let _ = describe_plan(&o, &kernels, &mut std::io::stderr().lock());
        eprintln!("profiler: nothing can run: the selected kernels have no device code in this binary");
        return ExitCode::from(2);
    }
    match run(&ctx, &o, &kernels) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("profiler: {e}");
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

    fn e(m: usize, n: usize, k: usize, batch: usize) -> Extents {
        Extents { m, n, k, batch }
    }

    #[test]
    fn shapes_parse() {
        assert_eq!(parse_shape("1024x2048x512"), Ok(e(1024, 2048, 512, 1)));
        assert_eq!(parse_shape("16x4096x4096x8"), Ok(e(16, 4096, 4096, 8)));
        assert!(parse_shape("16x4096").is_err());
        assert!(parse_shape("0x1x1").is_err());
        assert!(parse_shape("1x1x1x1x1").is_err());
        assert!(parse_shape("axbxc").is_err());
    }

    #[test]
    fn sweeps() {
        let issue3 = sweep("issue3").unwrap();
        assert_eq!(issue3.len(), 68);
        assert_eq!(issue3[0], e(1024, 1024, 1024, 1));
        assert_eq!(issue3[3], e(8192, 8192, 8192, 1));
        assert!(issue3.contains(&e(16, 28672, 4096, 1)));
        assert!(issue3.contains(&e(4096, 14336, 28672, 1)));
        // 4096³ is both a square and a combination: 67 distinct shapes.
        let distinct: std::collections::HashSet<_> = issue3.iter().collect();
        assert_eq!(distinct.len(), 67);
        let smoke = sweep("smoke").unwrap();
        assert!(smoke.contains(&e(1003, 1000, 1000, 1)) && smoke.contains(&e(16, 4096, 4096, 1)));
        assert!(sweep("nope").is_err());
        let splitk = sweep("issue4_splitk").unwrap();
        assert_eq!(splitk.len(), 9);
        assert_eq!(splitk[0], e(512, 512, 16384, 1));
        assert_eq!(splitk[8], e(1024, 1024, 65536, 1));
        assert!(splitk.contains(&e(768, 768, 32768, 1)));
        assert_eq!(
            sweep("issue4_squares").unwrap(),
            vec![e(4096, 4096, 4096, 1), e(8192, 8192, 8192, 1)]
        );
    }

    #[test]
    fn issue12_sweeps() {
        let all = sweep("issue12").unwrap();
        // 6 squares, 6 M x 14 projections, 4 x 4 K-heavy, 4 x 3 batched, 6 ragged; all distinct.
        assert_eq!(all.len(), 6 + 6 * 14 + 16 + 12 + 6);
        let distinct: std::collections::HashSet<_> = all.iter().collect();
        assert_eq!(distinct.len(), all.len());
        for square in [1024, 2048, 3072, 4096, 6144, 8192] {
            assert!(all.contains(&e(square, square, square, 1)), "{square}");
        }
        // Each model's projections, at every M.
        for (n, k) in [
            (11008, 4096),
            (28672, 8192),
            (4096, 14336),
            (7168, 18432),
            (2048, 7168),
        ] {
            for m in [1, 16, 64, 128, 512, 2048] {
                assert!(all.contains(&e(m, n, k, 1)), "{m}x{n}x{k}");
            }
        }
        assert!(all.contains(&e(256, 256, 32768, 1)) && all.contains(&e(1536, 1536, 8192, 1)));
        assert!(all.contains(&e(64, 64, 64, 256)) && all.contains(&e(512, 512, 512, 16)));
        assert!(all.contains(&e(777, 1024, 1536, 1)) && all.contains(&e(3000, 5000, 2048, 1)));
        // N and K multiples of 8 (16-byte alignment of the default kernels' row-major A and C and
        // column-major B); M is free.
        for s in &all {
            assert!(s.n % 8 == 0 && s.k % 8 == 0, "{s}");
        }
        assert!(all.iter().any(|s| s.m % 8 != 0), "a ragged M");

        let transposed = sweep("issue12_small_m_transposed").unwrap();
        assert_eq!(transposed.len(), 4 * 14 + 6);
        assert!(transposed.contains(&e(4096, 1, 4096, 1)));
        assert!(transposed.contains(&e(28672, 16, 8192, 1)));
        assert!(transposed.contains(&e(7168, 128, 18432, 1)));
        assert!(transposed.contains(&e(128, 128, 128, 64)));
        for s in &transposed {
            assert!(s.n <= 128, "{s}");
            assert!(all.contains(&e(s.n, s.m, s.k, s.batch)), "{s}");
        }

        let quick = sweep("issue12_quick").unwrap();
        assert_eq!(quick.len(), 25);
        let distinct: std::collections::HashSet<_> = quick.iter().collect();
        assert_eq!(distinct.len(), 25);
        for s in &quick {
            assert!(all.contains(s), "{s} is an issue12 shape");
        }
        // Every category: squares, M = 1 and 2048 projections, K-heavy, batched, ragged.
        assert!(quick.contains(&e(8192, 8192, 8192, 1)));
        assert!(quick.iter().any(|s| s.m == 1) && quick.iter().any(|s| s.m == 2048));
        assert!(quick.iter().any(|s| s.k >= 16 * s.m.max(s.n) && s.batch == 1));
        assert!(quick.iter().any(|s| s.batch > 1));
        assert!(quick.iter().any(|s| s.m % 8 != 0));
    }

    #[test]
    fn options() {
        let o = parse_args(&[]).unwrap();
        assert_eq!(o.dtypes, Some(vec!["bf16".to_string()]));
        assert_eq!(o.layouts, Some(vec![(Layout::Row, Layout::Column, None)]));
        assert_eq!(
            (o.iters, o.warmup, o.beta, o.verify, o.json),
            (20, 5, 0.0, true, false)
        );
        assert_eq!(o.shapes, sweep("smoke").unwrap());
        assert_eq!((o.split_k, o.c_dtypes), (vec![1], None));
        assert_eq!(
            (o.rasters, o.swizzles, o.tuning_top),
            (vec![Raster::Heuristic], vec![0], None)
        );
        assert_eq!(o.max_seconds_total, None);

        let o = parse_args(&args(
            "--dtype f32_3xtf32,tf32,f32_fastf16,f32_fastbf16,s8 --c-dtype s8,s32,f32 --split-k 1,2,4,2,16",
        ))
        .unwrap();
        assert_eq!(o.split_k, vec![1, 2, 4, 16], "repeats are dropped");
        assert_eq!(o.c_dtypes, Some(vec![DType::S8, DType::S32, DType::F32]));
        assert_eq!(o.dtypes.as_ref().map(Vec::len), Some(5));

        let o = parse_args(&args(
            "--dtype bf16,f16 --layout tn,nnt --shapes 1x2x3,4x5x6x7,1x2x3 --sweep issue3 --iters 10 \
             --warmup 3 --beta 0.5 --json --dispatch-out d.tsv --no-verify --max-seconds-per-kernel 0",
        ))
        .unwrap();
        assert_eq!(o.dtypes, Some(vec!["bf16".to_string(), "f16".to_string()]));
        assert_eq!(
            o.layouts,
            Some(vec![
                (Layout::Row, Layout::Column, None),
                (Layout::Column, Layout::Column, Some(Layout::Row))
            ])
        );
        assert_eq!(o.shapes.len(), 2 + 67, "duplicates are dropped");
        assert_eq!(o.shapes[1], e(4, 5, 6, 7));
        assert_eq!((o.iters, o.warmup, o.beta), (10, 3, 0.5));
        assert!(o.json && !o.verify && o.max_seconds.is_none());
        assert_eq!(o.dispatch_out.as_deref(), Some("d.tsv"));
        assert!(o.type_filters_given);

        let o = parse_args(&args(
            "--kernels gemm_f16_tn,gemm_bf16_tn --dtype all --layout all",
        ))
        .unwrap();
        assert_eq!(o.kernels, Some(vec!["gemm_f16_tn".into(), "gemm_bf16_tn".into()]));
        assert_eq!((o.dtypes, o.layouts), (None, None));

        for bad in [
            "--dtype f17",
            "--layout tx",
            "--layout t",
            "--iters",
            "--iters x",
            "--beta nan",
            "--sweep big",
            "--frobnicate",
            "--c-dtype tf32",
            "--c-dtype f16,x",
            "--dtype f32_4xtf32",
            "--split-k 0",
            "--split-k 2,x",
            "--split-k ,",
            "--raster x",
            "--raster auto,M",
            "--raster ,",
            "--raster",
            "--swizzle 3",
            "--swizzle 0,16",
            "--swizzle -1",
            "--swizzle ,",
            "--tuning-top 0",
            "--tuning-top two",
            "--tuning-top",
            "--max-seconds-total 0",
            "--max-seconds-total x",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad}");
        }
        assert_eq!(parse_args(&args("--iters 0")).unwrap().iters, 1);
    }

    #[test]
    fn tuning_options() {
        let o = parse_args(&args(
            "--raster n,auto,m,n --swizzle 8,0,2,8 --tuning-top 3 --max-seconds-total 420",
        ))
        .unwrap();
        assert_eq!(
            o.rasters,
            vec![Raster::AlongN, Raster::Heuristic, Raster::AlongM],
            "in order, repeats dropped"
        );
        assert_eq!(o.swizzles, vec![8, 0, 2]);
        assert_eq!((o.tuning_top, o.max_seconds_total), (Some(3), Some(420.0)));
        let o = parse_args(&args("--tuning-top 2 --tuning-top all")).unwrap();
        assert_eq!(o.tuning_top, None);
        for (name, raster) in [
            ("auto", Raster::Heuristic),
            ("m", Raster::AlongM),
            ("n", Raster::AlongN),
        ] {
            assert_eq!(parse_raster(name), Some(raster));
            assert_eq!(raster_name(raster), name);
        }
    }

    #[test]
    fn configurations() {
        let three = REGISTRY.all().iter().copied().find(|k| tunable(k));
        let two = REGISTRY.all().iter().copied().find(|k| !tunable(k));
        let o = parse_args(&args("--split-k 1,4 --raster auto,n --swizzle 0,8")).unwrap();
        if let Some(k) = three {
            let c = configs(&o, k);
            // 2 split-K counts x 2 rasters x 2 swizzles, the first of each list first.
            assert_eq!(c.len(), 8);
            assert_eq!(
                c[0],
                Config {
                    slices: 1,
                    tuning: Tuning::default()
                }
            );
            assert_eq!(
                c[1].tuning,
                Tuning {
                    raster: Raster::Heuristic,
                    max_swizzle: 8
                }
            );
            assert_eq!(
                c[7],
                Config {
                    slices: 4,
                    tuning: Tuning {
                        raster: Raster::AlongN,
                        max_swizzle: 8
                    }
                }
            );
            assert_eq!(configs(&parse_args(&[]).unwrap(), k).len(), 1);
        }
        if let Some(k) = two {
            // 2.x kernels ignore the tuning: once per split-K count, with the default.
            let c = configs(&o, k);
            assert_eq!(c.iter().map(|c| c.slices).collect::<Vec<_>>(), [1, 4]);
            assert!(c.iter().all(|c| c.tuning == Tuning::default()));
        }
    }

    #[test]
    fn fastest_kernels_rank_good_rows_once_per_kernel() {
        let all = REGISTRY.all();
        let (a, b, c) = (all[0], all[1], all[2]);
        let shape = e(1024, 1024, 1024, 1);
        let rows = vec![
            ran(a, shape, 30.0, 1e-4),
            ran(b, shape, 10.0, 1e-4),
            ran(c, shape, 5.0, 1.0), // failed verification: not ranked
            ran_tuned(
                b,
                shape,
                1,
                Tuning {
                    raster: Raster::AlongM,
                    max_swizzle: 2,
                },
                9.0,
                1e-4,
            ),
            Row {
                info: c,
                extents: shape,
                split_k: 1,
                tuning: Tuning::default(),
                outcome: Outcome::Failed("boom".into()),
            },
        ];
        let names = |ks: Vec<&'static KernelInfo>| ks.iter().map(|k| k.rust_name).collect::<Vec<_>>();
        assert_eq!(names(fastest_kernels(&rows, 1)), [b.rust_name]);
        assert_eq!(names(fastest_kernels(&rows, 2)), [b.rust_name, a.rust_name]);
        assert_eq!(names(fastest_kernels(&rows, 5)), [b.rust_name, a.rust_name]);
        assert!(fastest_kernels(&[], 3).is_empty());
        // Without verification a row that ran counts.
        let mut unverified = ran(c, shape, 1.0, 1e-4);
        if let Outcome::Ran(m) = &mut unverified.outcome {
            m.check = None;
        }
        assert_eq!(names(fastest_kernels(&[unverified], 1)), [c.rust_name]);
    }

    #[test]
    fn selection() {
        let tf32 = REGISTRY.all().iter().find(|k| common::dtype_label(k) == "tf32");
        let simt = REGISTRY.all().iter().find(|k| {
            k.gemm().a.element == DType::F32 && k.design.opclass() == cutlass_aot::model::OpClass::Simt
        });
        let all = parse_args(&args("--dtype all --layout all")).unwrap();
        assert_eq!(candidates(&all).unwrap().len(), REGISTRY.all().len());
        let o = parse_args(&args("--dtype tf32 --layout all")).unwrap();
        if let Some(t) = tf32 {
            assert!(in_selection(&o, t));
        }
        if let Some(s) = simt {
            assert!(!in_selection(&o, s), "tf32 selects tensor-core f32 only");
        }
        // The f32 maths are told apart: tf32 selects neither 3xTF32 nor the fast f16/bf16 kernels.
        for label in common::F32_MATH_LABELS {
            let o = parse_args(&args(&format!("--dtype {label} --layout all"))).unwrap();
            for k in candidates(&o).unwrap_or_default() {
                assert_eq!(common::dtype_label(k), label, "{}", k.rust_name);
            }
        }
        let o = parse_args(&args("--dtype s8 --c-dtype s8,s32,f32 --layout tn")).unwrap();
        for k in candidates(&o).unwrap_or_default() {
            assert_eq!(k.gemm().a.element, DType::S8);
            assert!([DType::S8, DType::S32, DType::F32].contains(&k.gemm().c.element));
        }
        let o = parse_args(&args("--dtype bf16 --layout tn")).unwrap();
        for k in candidates(&o).unwrap_or_default() {
            assert_eq!(k.gemm().a.element, DType::Bf16);
            assert_eq!(
                (k.gemm().a.layout, k.gemm().b.layout, k.gemm().c.layout),
                (Layout::Row, Layout::Column, Layout::Row)
            );
        }
        let o = parse_args(&args("--kernels no_such_kernel")).unwrap();
        assert!(candidates(&o).is_err());
        let mut listing = Vec::new();
        list_kernels(&mut listing).unwrap();
        let listing = String::from_utf8(listing).unwrap();
        assert_eq!(listing.lines().count(), REGISTRY.all().len() + 1);
        for line in listing.lines().skip(1) {
            assert_eq!(line.split('\t').count(), 15, "{line}");
        }
    }

    fn ran(info: &'static KernelInfo, extents: Extents, us: f64, rel_error: f64) -> Row {
        ran_split(info, extents, 1, us, rel_error)
    }

    fn ran_split(
        info: &'static KernelInfo,
        extents: Extents,
        split_k: usize,
        us: f64,
        rel_error: f64,
    ) -> Row {
        ran_tuned(info, extents, split_k, Tuning::default(), us, rel_error)
    }

    fn ran_tuned(
        info: &'static KernelInfo,
        extents: Extents,
        split_k: usize,
        tuning: Tuning,
        us: f64,
        rel_error: f64,
    ) -> Row {
        let check = Check {
            samples: 260,
            rel_error,
            max_abs_error: rel_error * 10.0,
            tolerance: 1e-2,
            unwritten: Some(0),
        };
        Row {
            info,
            extents,
            split_k,
            tuning,
            outcome: Outcome::Ran(Measured {
                timing: Timing {
                    median_us: us,
                    mean_us: us * 1.01,
                    iters: 20,
                },
                check: Some(check),
                tflops: extents.flops() / (us * 1e-6) / 1e12,
                gbps: 1.0,
            }),
        }
    }

    fn run_info() -> RunInfo {
        RunInfo {
            device: "NVIDIA H100 80GB HBM3".into(),
            date: "2026-11-22".into(),
            alpha: 1.0,
            beta: 0.0,
            warmup: 5,
        }
    }

    #[test]
    fn dispatch_table_format() {
        let k0 = REGISTRY.all()[0];
        let big = e(4096, 4096, 4096, 1);
        let deep = e(64, 64, 8192, 1);
        let tuned = Tuning {
            raster: Raster::AlongN,
            max_swizzle: 4,
        };
        let rows = vec![
            ran(k0, big, 300.0, 1e-4),
            ran(k0, e(128, 128, 64, 2), 5.0, 1.0), // failed verification: not written
            ran_tuned(k0, big, 1, tuned, 280.0, 1e-4),
            ran_tuned(k0, big, 1, tuned, 285.0, 1e-4), // the same way again: its fastest time
            ran_split(k0, deep, 8, 9.0, 1e-4),
            Row {
                info: k0,
                extents: e(1, 1, 1, 1),
                split_k: 1,
                tuning: Tuning::default(),
                outcome: Outcome::Failed("boom".into()),
            },
        ];
        let tsv = dispatch_tsv(&run_info(), &rows);
        let lines: Vec<&str> = tsv.lines().collect();
        assert_eq!(lines[0], "# cutlass-aot selection table");
        assert_eq!(lines[1], "# device: NVIDIA H100 80GB HBM3");
        assert_eq!(lines[2], "# date: 2026-11-22");
        assert_eq!(
            lines[3],
            "# columns: op a b c layout dims kernel split_k raster swizzle us"
        );
        assert_eq!(lines.len(), 7, "{tsv}");
        let t = Types::of(k0);
        let head = format!("gemm\t{}\t{}\t{}\t{}", t.a, t.b, t.c, t.layout_letters());
        let body = &lines[4..];
        assert!(body.contains(&format!("{head}\t4096,4096,4096,1\t{}\t1\tauto\t0\t300.00", k0.name).as_str()));
        assert!(body.contains(&format!("{head}\t4096,4096,4096,1\t{}\t1\tn\t4\t280.00", k0.name).as_str()));
        assert!(body.contains(&format!("{head}\t64,64,8192,1\t{}\t8\tauto\t0\t9.00", k0.name).as_str()));
        // Nothing verified: only the header.
        assert_eq!(dispatch_tsv(&run_info(), &rows[1..2]).lines().count(), 4);
    }

    #[test]
    fn records() {
        let k0 = REGISTRY.all()[0];
        let run = run_info();
        let row = ran(k0, e(4096, 4096, 4096, 1), 200.0, 1.5e-4);
        let json = json_row(&row, &run);
        assert!(json.starts_with(
            "{\"device\": \"NVIDIA H100 80GB HBM3\", \"date\": \"2026-11-22\", \"op\": \"gemm\""
        ));
        for field in [
            format!("\"kernel\": \"{}\"", k0.name),
            format!("\"rust_name\": \"{}\"", k0.rust_name),
            format!("\"dtype\": \"{}\"", common::dtype_label(k0)),
            format!("\"layout\": \"{}\"", common::layout_ab(k0)),
            "\"epilogue\": \"linear_combination\"".to_string(),
            "\"m\": 4096, \"n\": 4096, \"k\": 4096, \"batch\": 1, \"split_k\": 1".to_string(),
            "\"raster\": \"auto\", \"swizzle\": 0, \"warmup\": 5".to_string(),
            format!("\"split_k_mode\": \"{}\"", k0.design.split_k()),
            format!("\"math\": \"{}\"", k0.gemm().math),
            "\"ours_us\": 200.00".to_string(),
            "\"ours_tflops\": 687.2".to_string(),
            "\"verified\": true, \"rel_error\": 1.500e-4, \"max_abs_error\": 1.500e-3".to_string(),
        ] {
            assert!(json.contains(&field), "{field} missing from {json}");
        }
        assert!(!json.contains("\"ref"), "compare.py adds the ref fields");
        let split = json_row(&ran_split(k0, e(512, 512, 65536, 1), 16, 50.0, 1e-3), &run);
        assert!(
            split.contains("\"op\": \"gemm_split_k\"") && split.contains("\"split_k\": 16"),
            "{split}"
        );
        assert!(json.contains("\"op\": \"gemm\""));
        let failed = Row {
            info: k0,
            extents: e(16, 16, 16, 1),
            split_k: 1,
            tuning: Tuning::default(),
            outcome: Outcome::Failed("CUTLASS said \"no\"\n".into()),
        };
        let json = json_row(&failed, &run);
        assert!(
            json.ends_with("\"verified\": false, \"error\": \"CUTLASS said \\\"no\\\"\\n\"}"),
            "{json}"
        );
        assert!(!json.contains("ours_us"));

        let tuned = Tuning {
            raster: Raster::AlongM,
            max_swizzle: 8,
        };
        let json = json_row(
            &ran_tuned(k0, e(8192, 8192, 8192, 1), 1, tuned, 1500.0, 1e-4),
            &run,
        );
        assert!(json.contains("\"raster\": \"m\", \"swizzle\": 8"), "{json}");

        let width = 20;
        assert!(table_header(width).contains(" split tuning "));
        let line = table_row(&row, width);
        assert!(line.contains(" 4096     1 "), "{line}");
        assert!(
            line.contains("200.00") && line.contains("687.2") && line.contains("yes (1.5e-4)"),
            "{line}"
        );
        // 3.x kernels show their tuning, 2.x kernels a dash (they ignore it).
        for info in REGISTRY.all().iter().copied().take(40) {
            let line = table_row(&ran_tuned(info, e(64, 64, 64, 1), 1, tuned, 1.0, 1e-4), width);
            let expected = if tunable(info) { " m/8 " } else { "     - " };
            assert!(line.contains(expected), "{line}");
        }
        let line = table_row(&failed, width);
        assert!(line.contains("ERROR: CUTLASS said"), "{line}");
        let bad = ran(k0, e(8, 8, 8, 1), 3.0, 0.5);
        assert!(table_row(&bad, width).contains("NO (5.0e-1 > tolerance 1e-2)"));
        assert!(bad.is_failure() && !bad.verified());
    }
}
