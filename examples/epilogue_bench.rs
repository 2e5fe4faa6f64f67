//! Fused-epilogue benchmark (issue 5): bf16 GEMM + per-column bias + GELU, `D = gelu(A·B + bias)`,
//! against the plain bf16 GEMMs of the same tile, on LLM-sized shapes. `bench/compare_epilogue.py`
//! times PyTorch (unfused matmul + add + gelu, cuBLASLt's fused GELU_BIAS epilogue, plain matmul)
//! on the same shapes and adds the reference fields.
//!
//!     cargo run --release --example epilogue_bench -- --json epilogue.jsonl
//!     python3 bench/compare_epilogue.py --ours epilogue.jsonl --out epilogue_results.jsonl
//!
//! Operands: A bf16 row-major (m×k), B bf16 column-major (k×n: the memory of a row-major n×k
//! weight, as nn.Linear stores it), D bf16 row-major, bias n bf16 values; all uniform in [-1, 1].
//! Each kernel runs once on a poisoned D and sampled elements are checked against an f64 host
//! reference of the kernel's formula; then it is timed as the profiler times (CUDA events between
//! launches enqueued back to back behind a spin kernel; the median). `--help` lists the options.

mod common;

use std::fs::File;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use common::{Extents, Failure, GemmData, Pools, Spinner, Timing, Types};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{Activation, Api, AuxOutput, Broadcast, DType, Epilogue, Layout, Residual};
use cutlass_aot::{device, verify, FusionOperands, KernelInfo, MatrixShape, VectorOperand};

const USAGE: &str = "\
usage: epilogue_bench [options]

  --shapes MxNxK[,...]     shapes (default 4096x4096x4096,8192x8192x8192,4096x14336x4096)
  --kernels NAME[,NAME...] kernels (Rust or CUTLASS names): bf16, A row-major, B column-major, D
                           row-major, plain or with a per-column bias and/or an activation. Default:
                           every such kernel with a per-column bias and gelu or gelu_taylor, and the
                           plain CUTLASS 3.x bf16 kernels of tile 128x256x64 (the unfused baseline)
  --iters N                timed launches per kernel and shape (default 50)
  --warmup N               untimed launches first (default 10)
  --samples N              elements of D checked against the f64 reference (default 256, plus the
                           4 corners)
  --json PATH              also write one JSON object per (kernel, shape) to PATH ('-': stdout,
                           the table then goes to stderr)
  --list                   list the selected kernels and exit
  --help

D = act(A·B + bias[col]) (plain kernels: A·B), alpha 1, beta 0 (C not read). A sample passes when
|D - ref| <= 2e-2 * max(1, |ref|), ref the f64 value rounded to bf16; D is poisoned (NaN) first and,
when at most 64 MiB, scanned whole for elements left unwritten. Time is the median of per-launch
CUDA-event times; TFLOP/s = 2·m·n·k / time.
Exit status: 0 every kernel ran and verified, 1 a kernel failed or did not verify, 2 usage error,
no GPU or no device code.";

/// The target shapes of issue 5: squares, and an LLM MLP up-projection (4096 → 14336).
const DEFAULT_SHAPES: [(usize, usize, usize); 3] =
    [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14336, 4096)];

/// Seed of the bias pool (A, B and C use `common::SEED_A..SEED_C`).
const SEED_BIAS: u64 = 4;

/// leaky_relu's slope, for a named leaky_relu kernel.
const LEAKY_SLOPE: f64 = 0.01;

/// Allowed error of one sampled element: `TOLERANCE · max(1, |reference|)`.
const TOLERANCE: f64 = 2e-2;

/// The operand types and layouts every kernel here takes (`tnt`, bf16).
const TYPES: Types = Types {
    a: DType::Bf16,
    b: DType::Bf16,
    c: DType::Bf16,
    layout_a: Layout::Row,
    layout_b: Layout::Column,
    layout_c: Layout::Row,
};

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
struct Options {
    shapes: Vec<Extents>,
    kernels: Option<Vec<String>>,
    iters: usize,
    warmup: usize,
    samples: usize,
    json: Option<String>,
    list: bool,
    help: bool,
}

fn parse_shape(s: &str) -> Result<Extents, String> {
    let parts: Vec<&str> = s.trim().split(['x', 'X']).collect();
    if parts.len() != 3 {
        return Err(format!("shape {s:?}: expected MxNxK"));
    }
    let mut v = [0usize; 3];
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
        batch: 1,
    })
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        shapes: DEFAULT_SHAPES
            .iter()
            .map(|&(m, n, k)| Extents { m, n, k, batch: 1 })
            .collect(),
        kernels: None,
        iters: 50,
        warmup: 10,
        samples: 256,
        json: None,
        list: false,
        help: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().cloned().ok_or_else(|| format!("{name} needs a value"));
        let count = |name: &str, v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{name}: {v:?} is not a non-negative integer"))
        };
        match arg.as_str() {
            "--shapes" => {
                let mut shapes = Vec::new();
                for s in value("--shapes")?.split(',').filter(|s| !s.trim().is_empty()) {
                    let e = parse_shape(s)?;
                    if !shapes.contains(&e) {
                        shapes.push(e);
                    }
                }
                if shapes.is_empty() {
                    return Err("--shapes: no shape given".into());
                }
                o.shapes = shapes;
            }
            "--kernels" => {
                let names: Vec<String> = value("--kernels")?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                if names.is_empty() {
                    return Err("--kernels: no kernel given".into());
                }
                o.kernels = Some(names);
            }
            "--iters" => o.iters = count("--iters", value("--iters")?)?.max(1),
            "--warmup" => o.warmup = count("--warmup", value("--warmup")?)?,
            "--samples" => o.samples = count("--samples", value("--samples")?)?,
            "--json" => o.json = Some(value("--json")?),
            "--list" => o.list = true,
            "--help" | "-h" => o.help = true,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

/// Why this benchmark cannot run `info`, if it cannot: it takes bf16 `tnt` kernels computing
/// `act(alpha·A·B + beta·C + bias[col])` (no scale vectors, aux output or residual, no clamp).
fn out_of_scope(info: &KernelInfo) -> Option<String> {
    let f = &info.epilogue.fusion;
    let types = Types::of(info);
    if types != TYPES {
        Some(format!(
            "it takes {}/{}/{} {}; this benchmark runs bf16/bf16/bf16 tnt kernels (A row-major, B \
             column-major, D row-major)",
            types.a,
            types.b,
            types.c,
            types.layout_letters()
        ))
    } else if info.epilogue.kind != Epilogue::LinearCombination {
        Some(format!("its epilogue is {}", info.epilogue.kind))
    } else if f.scale != Broadcast::None || f.aux_output != AuxOutput::None || f.residual != Residual::None {
        Some(format!(
            "its fusion ({}) has scale vectors, an aux output or a residual; this benchmark passes a \
             per-column bias only",
            f.label()
        ))
    } else if f.bias == Broadcast::PerRow {
        Some("its bias is per-row; this benchmark passes a per-column bias (a linear layer's)".into())
    } else {
        None
    }
}

/// The default selection: the fused bias + GELU kernels, then the plain 3.x kernels of their tile.
fn default_kernels() -> Vec<&'static KernelInfo> {
    let in_scope = |k: &KernelInfo| out_of_scope(k).is_none();
    let fused = REGISTRY.filter(move |k| {
        in_scope(k)
            && k.epilogue.fusion.bias == Broadcast::PerCol
            && matches!(
                k.epilogue.fusion.activation,
                Activation::Gelu | Activation::GeluTaylor
            )
    });
    let plain = REGISTRY.filter(move |k| {
        in_scope(k)
            && k.is_plain()
            && k.api() == Api::Cutlass3x
            && (k.tile().m, k.tile().n, k.tile().k) == (128, 256, 64)
    });
    // Plain first: the baseline the fused rows are read against.
    plain.chain(fused).collect()
}

fn select(o: &Options) -> Result<Vec<&'static KernelInfo>, String> {
    let Some(names) = &o.kernels else {
        let chosen = default_kernels();
        return if chosen.is_empty() {
            Err(
                "no bf16 tn kernel with a per-column bias and GELU, and no plain 128x256x64 bf16 3.x kernel, \
                 in this binary (kernel_manifest.yaml)"
                    .into(),
            )
        } else {
            Ok(chosen)
        };
    };
    let mut chosen: Vec<&'static KernelInfo> = Vec::new();
    for name in names {
        let info = REGISTRY.by_name(name).ok_or_else(|| {
            format!(
                "no kernel named {name:?} in this binary ({} kernels; `profiler --list` lists them)",
                REGISTRY.all().len()
            )
        })?;
        if let Some(why) = out_of_scope(info) {
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

fn list_line(info: &KernelInfo) -> String {
    format!(
        "{:<40} {:<20} {} tile {} cluster {}{}",
        info.rust_name,
        info.epilogue.fusion.label(),
        info.api(),
        info.tile(),
        info.design.cluster(),
        if info.has_device_code() {
            ""
        } else {
            "  (no device code in this binary)"
        }
    )
}

// ---------------------------------------------------------------------------------------------
// One shape: operands on the device, host values for the reference
// ---------------------------------------------------------------------------------------------

/// The operands of one shape, shared by every kernel, and the f64 values the reference needs.
struct ShapeData {
    data: GemmData,
    bias: CudaSlice<u8>,
    /// Sampled positions of D (batch, row, column).
    positions: Vec<(usize, usize, usize)>,
    /// A·B at each sampled position, in f64 (not rounded).
    dots: Vec<f64>,
    /// bias[column] at each sampled position.
    bias_at: Vec<f64>,
}

impl ShapeData {
    fn new(stream: &Arc<CudaStream>, pools: &mut Pools, e: Extents, samples: usize) -> Result<Self, String> {
        let device = |what: &str| {
            let what = what.to_string();
            move |err: cudarc::driver::DriverError| format!("{what}: {err}")
        };
        let data = GemmData::new(stream, pools, e, TYPES, false).map_err(device("allocating A, B and D"))?;
        let pool = pools
            .get(DType::Bf16, SEED_BIAS)
            .map_err(device("uploading the bias pool"))?;
        let bias = common::filled_buffer(stream, pool, e.n).map_err(device("allocating the bias"))?;
        let host_bias = pool.host.clone();
        // Element i of every buffer is pool[i % POOL_LEN] (common::filled_buffer).
        let host_a = pools
            .get(DType::Bf16, common::SEED_A)
            .map_err(device("A's pool"))?
            .host
            .clone();
        let host_b = pools
            .get(DType::Bf16, common::SEED_B)
            .map_err(device("B's pool"))?
            .host
            .clone();
        let positions = common::sample_positions(e, samples);
        let at = |host: &[f64], shape: &MatrixShape, layout: Layout, row: usize, col: usize| {
            host[verify::offset(shape, layout, 0, row, col) % host.len()]
        };
        let dots: Vec<f64> = positions
            .iter()
            .map(|&(_, row, col)| {
                (0..e.k)
                    .map(|p| {
                        at(&host_a, &data.shape_a, Layout::Row, row, p)
                            * at(&host_b, &data.shape_b, Layout::Column, p, col)
                    })
                    .sum()
            })
            .collect();
        let bias_at = positions
            .iter()
            .map(|&(_, _, col)| host_bias[col % host_bias.len()])
            .collect();
        Ok(ShapeData {
            data,
            bias,
            positions,
            dots,
            bias_at,
        })
    }

    /// The f64 reference of `info` at the sampled positions, rounded to bf16.
    fn reference(&self, info: &KernelInfo) -> Vec<f64> {
        let f = &info.epilogue.fusion;
        let arg = activation_arg(info);
        self.dots
            .iter()
            .zip(&self.bias_at)
            .map(|(&dot, &bias)| {
                let z = dot + if f.bias == Broadcast::PerCol { bias } else { 0.0 };
                verify::round_to(DType::Bf16, verify::activation(f.activation, z, arg))
            })
            .collect()
    }
}

fn activation_arg(info: &KernelInfo) -> f64 {
    if info.epilogue.fusion.activation.has_argument() {
        LEAKY_SLOPE
    } else {
        0.0
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement
// ---------------------------------------------------------------------------------------------

/// Outcome of the sampled check.
struct Check {
    passed: bool,
    samples: usize,
    /// Samples outside the tolerance.
    bad: usize,
    /// The largest |D − ref| / max(1, |ref|) (infinite for a non-finite output).
    worst: f64,
    max_abs_error: f64,
    rel_error: f64,
    /// NaN elements in all of D, when D was small enough to scan.
    unwritten: Option<usize>,
}

fn check(got: &[f64], reference: &[f64], unwritten: Option<usize>) -> Check {
    let mut bad = 0;
    let mut worst = 0.0f64;
    for (&g, &r) in got.iter().zip(reference) {
        let scaled = if g.is_finite() {
            (g - r).abs() / r.abs().max(1.0)
        } else {
            f64::INFINITY
        };
        if scaled.is_nan() || scaled > TOLERANCE {
            bad += 1;
        }
        worst = worst.max(scaled);
    }
    Check {
        passed: bad == 0 && got.len() == reference.len() && unwritten.unwrap_or(0) == 0,
        samples: got.len(),
        bad,
        worst,
        max_abs_error: common::max_abs_error(got, reference),
        rel_error: verify::relative_error(got, reference),
        unwritten,
    }
}

struct Measured {
    timing: Timing,
    check: Check,
    tflops: f64,
}

/// Verification run, then timing, of one kernel on a shape's operands.
fn measure(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    o: &Options,
    info: &'static KernelInfo,
    shape: &ShapeData,
    spinner: Option<&Spinner>,
) -> Result<Measured, Failure> {
    let mut operands = shape.data.operands(1.0, 0.0);
    if info.epilogue.fusion.bias == Broadcast::PerCol {
        operands.fusion = FusionOperands {
            bias: Some(VectorOperand {
                len: shape.data.extents.n,
                address: common::address(&shape.bias, stream),
            }),
            activation_arg: activation_arg(info),
            ..FusionOperands::default()
        };
    } else if info.epilogue.fusion.activation.has_argument() {
        operands.fusion.activation_arg = activation_arg(info);
    }
    // SAFETY: A, B, D and the bias are live bf16 buffers of exactly the lengths in `operands`
    // (they outlive every launch: the stream is synchronised before they are dropped), and D
    // overlaps no input.
    let launch = || unsafe { cutlass_aot::gemm::launch_raw(info, stream, &operands) };
    let data = &shape.data;
    data.poison_d().map_err(common::device_failure)?;
    launch().map_err(|e| Failure::Kernel(e.to_string()))?;
    stream.synchronize().map_err(common::device_failure)?;
    let got = data.read_d(&shape.positions).map_err(common::device_failure)?;
    let unwritten = data
        .count_nan_d(common::FULL_NAN_SCAN_BYTES)
        .map_err(common::device_failure)?;
    let check = check(&got, &shape.reference(info), unwritten);
    let timing = common::time_launches(ctx, stream, o.warmup, o.iters, None, spinner, launch)?;
    Ok(Measured {
        tflops: data.extents.flops() / (timing.median_us * 1e-6) / 1e12,
        timing,
        check,
    })
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

struct Run {
    device: String,
    date: String,
    warmup: usize,
}

/// One result record (the fields `bench/compare_epilogue.py` reads, then details).
fn record(run: &Run, info: &KernelInfo, e: Extents, result: &Result<Measured, Failure>) -> String {
    let r = common::JsonRecord::new()
        .str("device", &run.device)
        .str("date", &run.date)
        .str("op", "gemm")
        .str("kernel", info.name)
        .str("rust_name", info.rust_name)
        .str("dtype", &common::dtype_label(info))
        .str("layout", &common::layout_ab(info))
        .str("layout_c", info.gemm().c.layout.letter())
        .str("epilogue", &info.epilogue.fusion.label())
        .str("activation", &info.epilogue.fusion.activation.to_string())
        .str("bias", &info.epilogue.fusion.bias.to_string())
        .str("api", &info.api().to_string())
        .str("schedule", &common::schedule(info).to_string())
        .str("tile", &info.tile().to_string())
        .str("cluster", &info.design.cluster().to_string())
        .int("m", e.m)
        .int("n", e.n)
        .int("k", e.k)
        .int("batch", e.batch)
        .num("alpha", 1.0, 3)
        .num("beta", 0.0, 3)
        .int("warmup", run.warmup);
    match result {
        Ok(m) => {
            let c = &m.check;
            let r = r
                .int("iters", m.timing.iters)
                .num("ours_us", m.timing.median_us, 2)
                .num("ours_us_mean", m.timing.mean_us, 2)
                .num("ours_tflops", m.tflops, 1)
                .bool("verified", c.passed)
                .sci("rel_error", c.rel_error)
                .sci("max_abs_error", c.max_abs_error)
                .sci("tolerance", TOLERANCE)
                .int("samples", c.samples)
                .int("samples_failed", c.bad);
            match c.unwritten {
                Some(n) => r.int("unwritten", n),
                None => r,
            }
            .finish()
        }
        Err(f) => r.bool("verified", false).str("error", &f.to_string()).finish(),
    }
}

fn table_header(width: usize) -> String {
    format!(
        "{:<width$} {:<20} {:>17} {:>10} {:>8}  verified (worst |err|/max(1,|ref|))",
        "kernel", "epilogue", "m x n x k", "us", "TFLOP/s"
    )
}

fn table_row(info: &KernelInfo, e: Extents, result: &Result<Measured, Failure>, width: usize) -> String {
    let shape = format!("{}x{}x{}", e.m, e.n, e.k);
    let head = format!(
        "{:<width$} {:<20} {:>17}",
        info.rust_name,
        info.epilogue.fusion.label(),
        shape
    );
    match result {
        Ok(m) => {
            let c = &m.check;
            let verdict = if c.passed {
                format!("yes ({:.1e})", c.worst)
            } else if c.unwritten.unwrap_or(0) > 0 {
                format!("NO ({} elements unwritten)", c.unwritten.unwrap_or(0))
            } else {
                format!(
                    "NO ({} of {} samples off; worst {:.1e} > {TOLERANCE:.0e})",
                    c.bad, c.samples, c.worst
                )
            };
            format!("{head} {:>10.2} {:>8.1}  {verdict}", m.timing.median_us, m.tflops)
        }
        Err(f) => format!("{head}  ERROR: {f}"),
    }
}

/// Where the table and the records go.
struct Output {
    /// JSON Lines file (None: no records, or records on stdout when `json_stdout`).
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

fn run(
    ctx: &Arc<CudaContext>,
    o: &Options,
    kernels: &[&'static KernelInfo],
    out: &mut Output,
) -> Result<ExitCode, String> {
    let stream = ctx.default_stream();
    let cc = device::props(ctx).map_err(|e| e.to_string())?.compute_capability;
    let runnable: Vec<_> = kernels.iter().filter(|k| k.runs_on(cc).is_ok()).collect();
    if runnable.is_empty() {
        let why = kernels[0].runs_on(cc).err().unwrap_or_default();
        return Err(format!(
            "none of the selected kernels runs on this device (compute capability {}.{}): {why}",
            cc / 10,
            cc % 10
        ));
    }
    let run = Run {
        device: common::device_name(ctx),
        date: common::utc_date(),
        warmup: o.warmup,
    };
    let spinner = match Spinner::new(ctx) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!(
                "epilogue_bench: warning: the spin kernel did not load ({e}); timings may include host gaps"
            );
            None
        }
    };
    let width = kernels
        .iter()
        .map(|k| k.rust_name.len())
        .max()
        .unwrap_or(6)
        .max(6);
    out.table(format!(
        "device: {} (compute capability {}.{}), {}; {} kernel(s), {} shape(s); time = median of {} launches \
         after {} warm-up",
        run.device,
        cc / 10,
        cc % 10,
        run.date,
        kernels.len(),
        o.shapes.len(),
        o.iters,
        o.warmup
    ));
    out.table(table_header(width));
    let mut pools = Pools::new(stream.clone());
    let mut failures = 0;
    for &e in &o.shapes {
        let shape = match ShapeData::new(&stream, &mut pools, e, o.samples) {
            Ok(s) => s,
            Err(why) => {
                // Most likely out of memory; the context is still usable.
                for &info in kernels {
                    let result = Err(Failure::Kernel(why.clone()));
                    out.table(table_row(info, e, &result, width));
                    out.record(&record(&run, info, e, &result))?;
                    failures += 1;
                }
                continue;
            }
        };
        let mut best_plain: Option<f64> = None;
        let mut fused: Vec<(&KernelInfo, f64)> = Vec::new();
        for &info in kernels {
            let result = measure(ctx, &stream, o, info, &shape, spinner.as_ref());
            out.table(table_row(info, e, &result, width));
            out.record(&record(&run, info, e, &result))?;
            match &result {
                Ok(m) if m.check.passed => {
                    if info.epilogue.fusion.is_none() {
                        best_plain =
                            Some(best_plain.map_or(m.timing.median_us, |b| b.min(m.timing.median_us)));
                    } else {
                        fused.push((info, m.timing.median_us));
                    }
                }
                Ok(_) => failures += 1,
                Err(Failure::Kernel(_)) => failures += 1,
                Err(Failure::Device(why)) => {
                    eprintln!(
                        "epilogue_bench: stopped after a device failure, which leaves the CUDA context \
                         unusable: {why}"
                    );
                    return Ok(ExitCode::from(1));
                }
            }
        }
        if let Some(plain) = best_plain.filter(|_| !fused.is_empty()) {
            let costs: Vec<String> = fused
                .iter()
                .map(|(info, us)| {
                    format!(
                        "{} {:+.1}%",
                        info.epilogue.fusion.label(),
                        (us / plain - 1.0) * 100.0
                    )
                })
                .collect();
            out.table(format!(
                "  {e}: fused epilogue vs the fastest plain kernel ({plain:.2} us): {}",
                costs.join(", ")
            ));
        }
        drop(shape);
        stream.synchronize().map_err(|e| format!("synchronising: {e}"))?;
    }
    if let Some((path, _)) = &out.file {
        eprintln!("epilogue_bench: records written to {path}");
    }
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!("epilogue_bench: {failures} run(s) failed or did not verify");
        ExitCode::from(1)
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("epilogue_bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if o.help {
        common::out(USAGE);
        return ExitCode::SUCCESS;
    }
    let kernels = match select(&o) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("epilogue_bench: {e}");
            return ExitCode::from(2);
        }
    };
    if o.list {
        for k in &kernels {
            common::out(list_line(k));
        }
        return ExitCode::SUCCESS;
    }
    let describe = || {
        eprintln!(
            "epilogue_bench would run, on {}:",
            o.shapes
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for k in &kernels {
            eprintln!("  {}", list_line(k));
        }
    };
    let ctx = match device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            describe();
            eprintln!("\nepilogue_bench: no GPU, nothing was run: {e}");
            return ExitCode::from(2);
        }
    };
    if !kernels.iter().any(|k| k.has_device_code()) {
        describe();
        eprintln!(
            "\nepilogue_bench: nothing can run: the selected kernels have no device code in this binary \
             (built with CUTLASS_AOT_NO_NVCC?)"
        );
        return ExitCode::from(2);
    }
    let file = match &o.json {
        Some(path) if path != "-" => match File::create(path) {
            Ok(f) => Some((path.clone(), f)),
            Err(e) => {
                eprintln!("epilogue_bench: cannot create {path}: {e}");
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
            eprintln!("epilogue_bench: {e}");
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
        assert_eq!(o.shapes.len(), 3);
        assert_eq!(o.shapes[2], parse_shape("4096x14336x4096").unwrap());
        assert_eq!(
            (o.iters, o.warmup, o.samples, o.json.as_deref()),
            (50, 10, 256, None)
        );
        let o = parse_args(&args(
            "--shapes 1x2x3,1x2x3,4x5x6 --iters 0 --warmup 2 --json x.jsonl --kernels a,b",
        ))
        .unwrap();
        assert_eq!(o.shapes.len(), 2);
        assert_eq!((o.iters, o.warmup), (1, 2));
        assert_eq!(o.json.as_deref(), Some("x.jsonl"));
        assert_eq!(o.kernels, Some(vec!["a".to_string(), "b".to_string()]));
        for bad in [
            "--shapes 1x2",
            "--shapes 0x1x1",
            "--iters x",
            "--json",
            "--frob",
            "--kernels ,",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn default_selection() {
        let kernels = default_kernels();
        for k in &kernels {
            assert!(out_of_scope(k).is_none(), "{}", k.rust_name);
            assert!(
                k.is_plain() || k.epilogue.fusion.bias == Broadcast::PerCol,
                "{}",
                k.rust_name
            );
        }
        let labels: Vec<String> = kernels.iter().map(|k| k.epilogue.fusion.label()).collect();
        assert!(labels.contains(&"bias_gelu".to_string()), "{labels:?}");
        assert!(labels.contains(&"bias_gelu_taylor".to_string()), "{labels:?}");
        assert!(labels.contains(&"linear_combination".to_string()), "{labels:?}");
        assert!(select(&parse_args(&args("--kernels no_such_kernel")).unwrap()).is_err());
    }

    #[test]
    fn checks() {
        let c = check(&[1.0, 50.0], &[1.01, 50.5], Some(0));
        assert!(c.passed && c.bad == 0);
        let c = check(&[1.0, 50.0], &[1.05, 50.0], None);
        assert!(!c.passed && c.bad == 1);
        let c = check(&[f64::NAN], &[0.0], None);
        assert!(!c.passed && c.worst.is_infinite());
        assert!(!check(&[1.0], &[1.0], Some(3)).passed);
    }
}
