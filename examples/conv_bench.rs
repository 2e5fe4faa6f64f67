//! Times every conv kernel that supports a problem (ResNet-50's layers, and a sweep of other
//! shapes) and, for a 1×1 unit-stride problem, every GEMM kernel that runs it as a matrix
//! product; then the problem as a user runs it through `conv::dispatch`, and writes one JSON line per problem: the dispatched time
//! (`ours_us`, what the cuDNN comparison uses) and route, the fastest single conv kernel
//! (`best_kernel*`), `unseen_us`: dispatch with this run's table less this problem's own rows, i.e.
//! a problem the table has not measured, and `committed_us`: dispatch with the tables the build
//! embedded (what a user gets on a problem of no table). Every result is spot-checked against an
//! f64 reference.
//! `bench/conv_cudnn.py` times cuDNN on the same problems in the same run, and
//! `bench/compare_conv.py` joins the two into ratios.
//!
//! Dispatch runs with the conv table this run measured (pass 1), the selection table
//! `--dispatch-out` writes for the build to embed from `bench/dispatch/`: the times are what the
//! embedded table gives, measured in one GPU session.
//!
//! ```text
//! cargo build --release --features conv --example conv_bench
//! conv_bench [--set resnet50|sweep|all] [--batch 128] [--dtype f16,bf16] [--kinds fprop,dgrad,wgrad]
//!            [--iters 20] [--rounds 3] [--list] [--verbose] [--out FILE] [--dispatch-out FILE]
//!            [--problem N,HW,C,K,RS,STRIDE,PAD]... [--random COUNT] [--seed S]
//! ```
//! `--problem` adds a square problem of your own (set `custom`); `--random` adds COUNT problems
//! drawn with seed S (set `random`: square, N log-uniform in [1, 64], H = W in [4, 112], C and K in
//! [1, 1024] — mostly channel counts no vector width divides —, a 1×1, 3×3, 5×5 or 7×7 filter,
//! stride 1 or 2, "same" or no padding); with either, `--set` defaults to none.
//! `--list` prints the problems as JSON lines (what the cuDNN script reads) and times nothing;
//! `--verbose` prints every kernel's time to stderr. `--rounds R` times the fastest way and the
//! three dispatches again R times, interleaved, and reports each one's median: a choice is judged
//! against the fastest way timed beside it.

#[path = "common/mod.rs"]
mod common;

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cutlass_aot::conv::dispatch::ConvWay;
use cutlass_aot::conv::{self, Conv2dProblem, ConvGeometry, ConvOperands, TensorOperand};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{ConvKind, DType};
use cutlass_aot::select::{Key, Row, Table};
use cutlass_aot::{verify, KernelInfo};

use common::{address, device_name, time_launches, utc_date, JsonRecord, Spinner};

/// One layer: H = W, C → K, R = S, stride, padding.
#[derive(Clone, Copy, Debug)]
struct Layer {
    hw: usize,
    c: usize,
    k: usize,
    rs: usize,
    stride: usize,
    pad: usize,
}

const fn layer(hw: usize, c: usize, k: usize, rs: usize, stride: usize) -> Layer {
    Layer {
        hw,
        c,
        k,
        rs,
        stride,
        pad: rs / 2,
    }
}

/// ResNet-50's distinct conv layers (torchvision's v1.5: the stride in the 3×3 of a stage's first
/// block, 1×1 downsample shortcuts), the stem first.
const RESNET50: &[Layer] = &[
    layer(224, 3, 64, 7, 2),
    layer(56, 64, 64, 1, 1),
    layer(56, 64, 64, 3, 1),
    layer(56, 64, 256, 1, 1),
    layer(56, 256, 64, 1, 1),
    layer(56, 256, 128, 1, 1),
    layer(56, 128, 128, 3, 2),
    layer(28, 128, 512, 1, 1),
    layer(56, 256, 512, 1, 2),
    layer(28, 512, 128, 1, 1),
    layer(28, 128, 128, 3, 1),
    layer(28, 512, 256, 1, 1),
    layer(28, 256, 256, 3, 2),
    layer(14, 256, 1024, 1, 1),
    layer(28, 512, 1024, 1, 2),
    layer(14, 1024, 256, 1, 1),
    layer(14, 256, 256, 3, 1),
    layer(14, 1024, 512, 1, 1),
    layer(14, 512, 512, 3, 2),
    layer(7, 512, 2048, 1, 1),
    layer(14, 1024, 2048, 1, 2),
    layer(7, 2048, 512, 1, 1),
    layer(7, 512, 512, 3, 1),
];

/// Shapes no ResNet has: odd sizes, ragged channels, 5×5, wide and narrow layers (batch 32).
const SWEEP: &[(usize, Layer)] = &[
    (32, layer(100, 40, 72, 3, 1)),
    (32, layer(33, 96, 200, 5, 1)),
    (32, layer(64, 256, 256, 3, 1)),
    (32, layer(17, 520, 136, 3, 2)),
    (32, layer(128, 32, 32, 3, 1)),
    (32, layer(9, 1536, 384, 1, 1)),
    (32, layer(48, 64, 192, 5, 2)),
    (32, layer(24, 768, 768, 3, 1)),
];

struct Options {
    set: String,
    batch: usize,
    dtypes: Vec<DType>,
    kinds: Vec<ConvKind>,
    iters: usize,
    /// Interleaved re-timings of the fastest way and the dispatches (their medians are reported).
    rounds: usize,
    list: bool,
    /// Every kernel's time to stderr.
    verbose: bool,
    out: Option<String>,
    dispatch_out: Option<String>,
    /// `--problem`s: (batch, layer).
    custom: Vec<(usize, Layer)>,
    /// `--random` problems and their seed.
    random: usize,
    seed: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        set: "all".into(),
        batch: 128,
        dtypes: vec![DType::F16, DType::Bf16],
        kinds: vec![ConvKind::Fprop, ConvKind::Dgrad, ConvKind::Wgrad],
        iters: 20,
        rounds: 3,
        list: false,
        verbose: false,
        out: None,
        dispatch_out: None,
        custom: Vec::new(),
        random: 0,
        seed: 31,
    };
    let mut set_given = false;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--set" => {
                o.set = value()?;
                set_given = true;
            }
            "--problem" => o.custom.push(parse_problem(&value()?)?),
            "--batch" => o.batch = value()?.parse().map_err(|e| format!("--batch: {e}"))?,
            "--iters" => o.iters = value()?.parse().map_err(|e| format!("--iters: {e}"))?,
            "--dtype" => {
                o.dtypes = value()?
                    .split(',')
                    .map(|d| DType::from_manifest_name(d).ok_or(format!("--dtype: unknown {d}")))
                    .collect::<Result<_, _>>()?
            }
            "--kinds" => {
                o.kinds = value()?
                    .split(',')
                    .map(|k| ConvKind::from_manifest_name(k).ok_or(format!("--kinds: unknown {k}")))
                    .collect::<Result<_, _>>()?
            }
            "--rounds" => {
                o.rounds = value()?
                    .parse::<usize>()
                    .map_err(|e| format!("--rounds: {e}"))?
                    .max(1)
            }
            "--list" => o.list = true,
            "--verbose" => o.verbose = true,
            "--out" => o.out = Some(value()?),
            "--dispatch-out" => o.dispatch_out = Some(value()?),
            "--random" => o.random = value()?.parse().map_err(|e| format!("--random: {e}"))?,
            "--seed" => o.seed = value()?.parse().map_err(|e| format!("--seed: {e}"))?,
            other => {
                return Err(format!(
                    "unknown argument {other}; see the header of examples/conv_bench.rs"
                ))
            }
        }
    }
    if (!o.custom.is_empty() || o.random > 0) && !set_given {
        o.set = "none".into();
    }
    Ok(o)
}

/// `N,HW,C,K,RS,STRIDE,PAD` → (batch, layer).
fn parse_problem(text: &str) -> Result<(usize, Layer), String> {
    let v: Vec<usize> = text
        .split(',')
        .map(|x| x.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--problem {text}: {e}; expected N,HW,C,K,RS,STRIDE,PAD"))?;
    let &[n, hw, c, k, rs, stride, pad] = v.as_slice() else {
        return Err(format!(
            "--problem {text}: expected 7 numbers N,HW,C,K,RS,STRIDE,PAD"
        ));
    };
    Ok((
        n,
        Layer {
            hw,
            c,
            k,
            rs,
            stride,
            pad,
        },
    ))
}

/// (set label, batch, layer) of every problem asked for.
fn problems(o: &Options) -> Vec<(&'static str, usize, Layer)> {
    let mut out = Vec::new();
    if o.set == "resnet50" || o.set == "all" {
        out.extend(RESNET50.iter().map(|&l| ("resnet50", o.batch, l)));
    }
    if o.set == "sweep" || o.set == "all" {
        out.extend(SWEEP.iter().map(|&(n, l)| ("sweep", n, l)));
    }
    out.extend(o.custom.iter().map(|&(n, l)| ("custom", n, l)));
    out.extend(
        random_layers(o.random, o.seed)
            .into_iter()
            .map(|(n, l)| ("random", n, l)),
    );
    out
}

/// `count` square problems drawn with `seed` (see the header), redrawn while they have more than
/// 2^34 multiply-adds or a tensor over 2^28 elements.
fn random_layers(count: usize, seed: u64) -> Vec<(usize, Layer)> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let log_uniform = |rng: &mut rand::rngs::StdRng, low: f64, high: f64| {
        (rng.random_range(low.ln()..high.ln())).exp().round().max(low) as usize
    };
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let n = log_uniform(&mut rng, 1.0, 64.0);
        let hw = log_uniform(&mut rng, 4.0, 112.0);
        let (c, k) = (
            log_uniform(&mut rng, 1.0, 1024.0),
            log_uniform(&mut rng, 1.0, 1024.0),
        );
        let rs = [1, 3, 3, 5, 7][rng.random_range(0..5)];
        let stride = if rng.random_range(0..3) == 0 { 2 } else { 1 };
        let pad = if rng.random_range(0..4) == 0 { 0 } else { rs / 2 };
        if hw + 2 * pad < rs {
            continue;
        }
        let pq = (hw + 2 * pad - rs) / stride + 1;
        let macs = (n * pq * pq * k * c * rs * rs) as f64;
        let largest = (n * hw * hw * c).max(n * pq * pq * k).max(k * rs * rs * c);
        if macs > 2f64.powi(34) || largest > 1 << 28 {
            continue;
        }
        out.push((
            n,
            Layer {
                hw,
                c,
                k,
                rs,
                stride,
                pad,
            },
        ));
    }
    out
}

/// Our problem for a layer, as cuDNN gets it.
fn conv_problem(kind: ConvKind, dtype: DType, n: usize, l: Layer) -> Conv2dProblem {
    Conv2dProblem::new(
        kind,
        [n, l.hw, l.hw, l.c],
        [l.k, l.rs, l.rs],
        (dtype, dtype, dtype),
    )
    .padding(l.pad, l.pad)
    .stride(l.stride, l.stride)
}

fn kind_op(kind: ConvKind) -> &'static str {
    match kind {
        ConvKind::Fprop => "conv2d_fprop",
        ConvKind::Dgrad => "conv2d_dgrad",
        ConvKind::Wgrad => "conv2d_wgrad",
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(m) => {
            eprintln!("{m}");
            return ExitCode::from(2);
        }
    };
    if o.list {
        for (set, n, l) in problems(&o) {
            for &kind in &o.kinds {
                for &dtype in &o.dtypes {
                    println!(
                        "{{\"set\": \"{set}\", \"op\": \"{}\", \"dtype\": \"{dtype}\", \"n\": {n}, \"h\": {}, \"w\": {}, \"c\": {}, \"k\": {}, \"r\": {}, \"s\": {}, \"pad\": {}, \"stride\": {}, \"dilation\": 1}}",
                        kind_op(kind), l.hw, l.hw, l.c, l.k, l.rs, l.rs, l.pad, l.stride
                    );
                }
            }
        }
        return ExitCode::SUCCESS;
    }
    cutlass_aot::workspace::set_cache_limit(usize::MAX);
    let ctx = match cutlass_aot::device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("conv_bench: no GPU: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&ctx, &o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conv_bench: {e}");
            ExitCode::from(1)
        }
    }
}

/// Random inputs in [-1, 1] shared by every launch (A and B read the same pool), and one output.
struct Buffers {
    dtype: DType,
    pool_values: Vec<f64>,
    pool: CudaSlice<u8>,
    out: CudaSlice<u8>,
}

/// One problem's first-pass result: the fastest conv kernel.
struct Measured {
    set: &'static str,
    layer: Layer,
    problem: Conv2dProblem,
    best: Best,
    /// Every way timed: kernel, split-K slices, µs (the table's rows).
    timed: Vec<Timed>,
}

/// One timed kernel: the problem it ran (its table key), kernel, split-K slices, µs. A padded way
/// is timed whole for the fastest way, and its kernel alone on the padded problem for the table
/// (which models the copies).
type Timed = (Key, &'static KernelInfo, usize, f64);

fn run(ctx: &Arc<CudaContext>, o: &Options) -> Result<(), String> {
    let stream = ctx.default_stream();
    let spinner = Spinner::new(ctx).map_err(|e| format!("spinner: {e}"))?;
    let device = device_name(ctx);
    let date = utc_date();
    let mut sink: Box<dyn std::io::Write> = match &o.out {
        Some(path) => Box::new(std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?),
        None => Box::new(std::io::stdout()),
    };
    let all = problems(o);
    let mut pools = Vec::new();
    for &dtype in &o.dtypes {
        pools.push(buffers(&stream, o, &all, dtype)?);
    }
    // Pass 1: every kernel of every problem; the fastest verified ones make the dispatch table.
    let mut measured: Vec<Measured> = Vec::new();
    for b in &pools {
        for &(set, n, layer) in &all {
            for &kind in &o.kinds {
                let problem = conv_problem(kind, b.dtype, n, layer);
                match measure(ctx, &stream, &spinner, o, b, &problem)? {
                    Some((best, timed)) => measured.push(Measured {
                        set,
                        layer,
                        problem,
                        best,
                        timed,
                    }),
                    None => eprintln!("{set} {kind} {} {layer:?}: no kernel supports it", b.dtype),
                }
            }
        }
    }
    // Every way timed on the problems whose fastest way passed its spot check: the fastest serves
    // the problem itself, the rest calibrate the cost model for problems the table lacks.
    let verified: Vec<&Measured> = measured.iter().filter(|m| m.best.4).collect();
    let entries: Vec<Row> = verified.iter().flat_map(|m| entries_of(m)).collect();
    let entries: &'static [Row] = Box::leak(entries.into_boxed_slice());
    let table = Table::new(device.clone().leak(), date.clone().leak(), entries);
    if let Some(path) = &o.dispatch_out {
        let mut text = cutlass_aot::select::table::tsv_header(&device, &date);
        for row in entries {
            text.push_str(&row.tsv_line());
            text.push('\n');
        }
        std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
        eprintln!(
            "conv dispatch table: {} rows of {} problems in {path}",
            entries.len(),
            verified.len()
        );
    }
    // Pass 2: each problem as a user runs it, through dispatch with this run's table (what the
    // build embeds from --dispatch-out), and with the table less the problem's own rows (a
    // problem the table has not seen: the cost model calibrated on the other problems).
    for m in measured.iter_mut() {
        let b = pools.iter().find(|b| b.dtype == m.problem.elements.0).unwrap();
        // Held out: the problem's rows, and those of its kernels' runs of it padded.
        let own: Vec<Key> = m.timed.iter().map(|t| t.0).collect();
        let others: Vec<Row> = entries
            .iter()
            .filter(|e| !own.contains(&e.key))
            .copied()
            .collect();
        let others = Table::new(table.device, table.date, Box::leak(others.into_boxed_slice()));
        let run = |tables: &[Table]| measure_dispatch(ctx, &stream, &spinner, o, b, &m.problem, tables);
        // The fastest way and the three dispatches timed again, interleaved, `o.rounds` times:
        // each is judged by its median beside the fastest way's, timed under the same conditions
        // (pass 1's fastest of ~50 single timings is the luckiest one).
        let mut best_us = Vec::new();
        let (mut dispatched, mut unseen, mut committed) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..o.rounds {
            best_us.push(time_best(ctx, &stream, &spinner, o, b, m)?);
            dispatched.push(run(std::slice::from_ref(&table)));
            unseen.push(run(std::slice::from_ref(&others)));
            // What a user of the crate gets: the build's tables (a fresh problem is in none).
            committed.push(run(cutlass_aot::kernels::TABLES));
        }
        m.best.3 = median(best_us);
        let [dispatched, unseen, committed] = [dispatched, unseen, committed].map(median_run);
        let record = record_of(m, &dispatched, &unseen, &committed, &device, &date);
        writeln!(sink, "{}", record.finish()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The benchmark's pools for `dtype`: random inputs in [-1, 1] shared by every launch and one output.
fn buffers(
    stream: &Arc<CudaStream>,
    o: &Options,
    all: &[(&'static str, usize, Layer)],
    dtype: DType,
) -> Result<Buffers, String> {
    // The largest tensor of any problem, for the shared pools.
    let largest = all
        .iter()
        .flat_map(|&(_, n, l)| {
            o.kinds.iter().map(move |&kind| {
                // Channels as a padded way runs them (whole 16 bytes) too.
                let padded = Layer {
                    c: l.c.next_multiple_of(8),
                    k: l.k.next_multiple_of(8),
                    ..l
                };
                let dims = conv_problem(kind, dtype, n, padded).tensor_dims().unwrap();
                dims.iter().map(|d| d.iter().product::<usize>()).max().unwrap()
            })
        })
        .max()
        .unwrap_or(1);
    // A and B read different halves of the pool: aliased operands would correlate (wgrad of a
    // layer with K = C would sum squares and overflow f16).
    let pool_values = verify::random_values(dtype, 2 * largest, 11);
    let pool = stream
        .clone_htod(&verify::encode(dtype, &pool_values))
        .map_err(|e| format!("upload: {e}"))?;
    let out = stream
        .alloc_zeros::<u8>(largest * verify::element_bytes(dtype))
        .map_err(|e| format!("alloc: {e}"))?;
    Ok(Buffers {
        dtype,
        pool_values,
        pool,
        out,
    })
}

/// A measured problem's table rows: every kernel timed.
fn entries_of(m: &Measured) -> Vec<Row> {
    m.timed
        .iter()
        .map(|&(key, kernel, split_k, us)| Row::new(key, kernel, split_k, Default::default(), us))
        .collect()
}

/// `record` with a dispatch's time, route and check as `{name}_us`, `{name}_route`,
/// `{name}_verified` (or `{name}_error`).
fn with_run(record: JsonRecord, name: &str, run: &Result<DispatchedRun, String>) -> JsonRecord {
    match run {
        Ok(r) => record
            .num(&format!("{name}_us"), r.us, 2)
            .str(&format!("{name}_route"), &r.route)
            .bool(&format!("{name}_verified"), r.verified),
        Err(e) => record.str(&format!("{name}_error"), e),
    }
}

/// The JSON record of one problem: dispatched (ours), unseen-problem dispatch (this run's other
/// problems' rows), dispatch with the committed tables (`committed`), fastest kernel.
fn record_of(
    m: &Measured,
    dispatched: &Result<DispatchedRun, String>,
    unseen: &Result<DispatchedRun, String>,
    committed: &Result<DispatchedRun, String>,
    device: &str,
    date: &str,
) -> JsonRecord {
    let (l, p) = (m.layer, &m.problem);
    let (best, best_slices, best_way, best_us, best_verified, tried) = m.best;
    let (out_p, out_q) = p.output_size().unwrap();
    let flops = 2.0 * (p.n * out_p * out_q * l.k * l.rs * l.rs * l.c) as f64;
    let mut record = JsonRecord::new()
        .str("device", device)
        .str("date", date)
        .str("op", kind_op(p.kind))
        .str("set", m.set);
    let (us, verified) = match dispatched {
        Ok(d) => {
            record = record
                .str("kernel", d.kernel_name)
                .str("rust_name", d.rust_name)
                .str("route", &d.route);
            (d.us, d.verified)
        }
        Err(e) => {
            record = record
                .str("kernel", best.name)
                .str("rust_name", best.rust_name)
                .str("dispatch_error", e);
            (best_us, best_verified)
        }
    };
    record = record
        .str("dtype", p.elements.0.manifest_name())
        .str("layout", "nhwc")
        .int("n", p.n)
        .int("h", l.hw)
        .int("w", l.hw)
        .int("c", l.c)
        .int("k", l.k)
        .int("r", l.rs)
        .int("s", l.rs)
        .int("pad", l.pad)
        .int("stride", l.stride)
        .int("dilation", 1)
        .int("p", out_p)
        .int("q", out_q)
        .num("ours_us", us, 2)
        .num("ours_tflops", flops / us / 1e6, 1)
        .bool("verified", verified)
        .str("best_kernel", best.rust_name)
        .int("best_kernel_split_k", best_slices)
        .bool("best_kernel_padded", matches!(best_way, ConvWay::Padded(_)))
        .num("best_kernel_us", best_us, 2)
        .bool("best_kernel_verified", best_verified)
        .int("kernels_tried", tried);
    record = with_run(record, "unseen", unseen);
    record = with_run(record, "committed", committed);
    eprintln!(
        "{} {} {} {}x{} {}->{} {}x{} s{}: {:.1} us, {:.0} TFLOP/s ({}); unseen {}; best kernel {} {:.1} us",
        m.set,
        kind_op(p.kind),
        p.elements.0,
        l.hw,
        l.hw,
        l.c,
        l.k,
        l.rs,
        l.rs,
        l.stride,
        us,
        flops / us / 1e6,
        dispatched
            .as_ref()
            .map_or_else(|e| e.clone(), |d| d.route.clone()),
        unseen
            .as_ref()
            .map_or_else(|e| e.clone(), |u| format!("{:.1} us {}", u.us, u.route)),
        best.rust_name,
        best_us,
    );
    record
}

/// The fastest way of a problem: (kernel, split-K slices, way, µs, spot check passed, launches
/// tried).
type Best = (&'static KernelInfo, usize, ConvWay, f64, bool, usize);

/// Times every way dispatch may run `problem` (`conv::ways::candidates`): the fastest (kernel,
/// µs, spot check passed, kernels tried) and every time, or `None` when nothing supports it.
fn measure(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    spinner: &Spinner,
    o: &Options,
    b: &Buffers,
    problem: &Conv2dProblem,
) -> Result<Option<(Best, Vec<Timed>)>, String> {
    let ops = operands(stream, b, problem)?;
    let mut best: Option<(&'static KernelInfo, usize, ConvWay, f64)> = None;
    let mut timed: Vec<Timed> = Vec::new();
    let mut tried = 0;
    // Times `info` at `slices` the `way` given on `problem` (a conv kernel, a GEMM kernel on the
    // matrix-product view, or a conv kernel with the channels padded); `route` labels it.
    let mut time =
        |info: &'static KernelInfo, slices: usize, way: ConvWay, problem: &Conv2dProblem, route: &str| {
            tried += 1;
            let ops = operands(stream, b, problem)?;
            // SAFETY: the pools hold at least every tensor's elements of the kernel's type, padded
            // channels included; a GEMM kernel views the same buffers as matrices.
            let launch =
                || unsafe { conv::dispatch::launch_on(info, slices, way, stream, problem, &ops, None) };
            let timing = time_launches(ctx, stream, 3, o.iters, Some(0.2), Some(spinner), launch);
            match timing {
                Ok(t) => {
                    if o.verbose {
                        eprintln!(
                            "  {:>9.2} us  {}{route} split {slices}",
                            t.median_us, info.rust_name
                        );
                    }
                    Ok(Some(t.median_us))
                }
                Err(e) => {
                    eprintln!("  {}{route} split {slices}: {e:?}", info.rust_name);
                    Ok::<_, String>(None)
                }
            }
        };
    // Every way dispatch may run it: each conv kernel at each split-K it supports, for a 1×1
    // unit-stride problem each GEMM kernel that takes it as a matrix product, and where its
    // channels are not whole 16 bytes each 16-byte kernel on them padded.
    let props = cutlass_aot::device::props(ctx).map_err(|e| e.to_string())?;
    let mut p = *problem;
    p.compute_capability = Some(props.compute_capability);
    p.addresses = Some([ops.a.address, ops.b.address, ops.d.address, ops.d.address]);
    for way in conv::ways::candidates(&REGISTRY, &p, &ops) {
        let (kernel, slices) = (way.kernel, way.split_k);
        let (route, runs) = match way.way {
            ConvWay::Direct => (String::new(), None),
            ConvWay::AsGemm => (" (as a GEMM)".into(), None),
            ConvWay::Padded(padding) => (
                format!(" (padded to C = {}, K = {})", padding.c, padding.k),
                Some(conv::padded::padded_problem(problem, padding)),
            ),
        };
        let Some(us) = time(kernel, slices, way.way, problem, &route)? else {
            continue;
        };
        if best.map_or(true, |(.., fastest)| us < fastest) {
            best = Some((kernel, slices, way.way, us));
        }
        match runs {
            None => timed.push((conv::dispatch::key_of(problem), kernel, slices, us)),
            Some(padded) => {
                if let Some(us) = time(kernel, slices, ConvWay::Direct, &padded, " (the padded problem)")? {
                    timed.push((conv::dispatch::key_of(&padded), kernel, slices, us));
                }
            }
        }
    }
    let Some((info, slices, way, us)) = best else {
        return Ok(None);
    };
    // Spot check of the winner: a few output elements against the f64 reference.
    // SAFETY: as above.
    unsafe { conv::dispatch::launch_on(info, slices, way, stream, problem, &ops, None) }
        .map_err(|e| e.to_string())?;
    let verified = check_output(stream, b, problem)?;
    Ok(Some(((info, slices, way, us, verified, tried), timed)))
}

/// The median of `values` (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One dispatch's rounds as one run: the median time, the first round's route and checks (an
/// error in any round is the result).
fn median_run(rounds: Vec<Result<DispatchedRun, String>>) -> Result<DispatchedRun, String> {
    let rounds: Vec<DispatchedRun> = rounds.into_iter().collect::<Result<_, _>>()?;
    let us = median(rounds.iter().map(|r| r.us).collect());
    let verified = rounds.iter().all(|r| r.verified);
    let first = rounds.into_iter().next().ok_or("no rounds")?;
    Ok(DispatchedRun {
        us,
        verified,
        ..first
    })
}

/// Times `m`'s fastest way of pass 1 again.
fn time_best(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    spinner: &Spinner,
    o: &Options,
    b: &Buffers,
    m: &Measured,
) -> Result<f64, String> {
    let (info, slices, way, ..) = m.best;
    let ops = operands(stream, b, &m.problem)?;
    // SAFETY: as in `measure`, which ran this way on these buffers.
    let launch = || unsafe { conv::dispatch::launch_on(info, slices, way, stream, &m.problem, &ops, None) };
    time_launches(ctx, stream, 3, o.iters, Some(0.2), Some(spinner), launch)
        .map(|t| t.median_us)
        .map_err(|e| format!("{}: {e:?}", info.rust_name))
}

/// A dispatched run of a problem: time, route, kernel, spot check.
struct DispatchedRun {
    us: f64,
    route: String,
    kernel_name: &'static str,
    rust_name: &'static str,
    verified: bool,
}

/// Times `problem` as `conv::dispatch` runs it with conv table `table` (and the embedded GEMM
/// tables) and spot-checks the result.
fn measure_dispatch(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    spinner: &Spinner,
    o: &Options,
    b: &Buffers,
    problem: &Conv2dProblem,
    tables: &[Table],
) -> Result<DispatchedRun, String> {
    let ops = operands(stream, b, problem)?;
    let signature = conv::dispatch::ConvSignature {
        kind: problem.kind,
        elements: problem.elements,
    };
    // SAFETY: the pools hold at least every tensor's elements of the problem's types.
    let launch = || unsafe {
        conv::dispatch::launch_raw_with(&REGISTRY, tables, stream, signature, &ops, Default::default())
    };
    let ran = launch().map_err(|e| e.to_string())?;
    let t = time_launches(ctx, stream, 3, o.iters, Some(0.2), Some(spinner), || {
        launch().map(|_| ())
    })
    .map_err(|e| format!("{e:?}"))?;
    launch().map_err(|e| e.to_string())?;
    let verified = check_output(stream, b, problem)?;
    let kernel = ran.kernel;
    Ok(DispatchedRun {
        us: t.median_us,
        route: ran.describe(),
        kernel_name: kernel.name,
        rust_name: kernel.rust_name,
        verified,
    })
}

/// The benchmark's operands of `problem`: A and B from the pool's halves, D the output buffer.
fn operands(stream: &Arc<CudaStream>, b: &Buffers, problem: &Conv2dProblem) -> Result<ConvOperands, String> {
    let dims = problem.tensor_dims()?;
    let count = |d: [usize; 4]| d.iter().product::<usize>();
    let pool = address(&b.pool, stream);
    let half = (b.pool_values.len() / 2) as u64;
    let pool_b = pool + half * verify::element_bytes(b.dtype) as u64;
    let out = address(&b.out, stream);
    let tensor = |dims: [usize; 4], address: u64| TensorOperand {
        dims,
        len: count(dims),
        address,
    };
    Ok(ConvOperands {
        a: tensor(dims[0], pool),
        b: tensor(dims[1], pool_b),
        c: None,
        d: tensor(dims[2], out),
        geometry: ConvGeometry {
            pad: problem.pad,
            stride: problem.stride,
            dilation: problem.dilation,
            mode: problem.mode,
        },
        alpha: 1.0,
        beta: 0.0,
        split_k_slices: 1,
        activation_arg: 0.0,
    })
}

/// Reads D back and spot-checks it (see [`spot_check`]).
fn check_output(stream: &Arc<CudaStream>, b: &Buffers, problem: &Conv2dProblem) -> Result<bool, String> {
    let dims = problem.tensor_dims()?;
    let elements = dims[2].iter().product::<usize>();
    let bytes = stream.clone_dtoh(&b.out).map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())?;
    let got = verify::decode(b.dtype, &bytes[..elements * verify::element_bytes(b.dtype)]);
    Ok(spot_check(problem, &b.pool_values, &got, b.dtype))
}

/// Compares 16 output elements spread over D with their f64 values (A and B read the pool).
fn spot_check(problem: &Conv2dProblem, pool: &[f64], got: &[f64], dtype: DType) -> bool {
    let (p_out, q_out) = problem.output_size().unwrap();
    let (n, h, w, c, k, r, s) = (
        problem.n, problem.h, problem.w, problem.c, problem.k, problem.r, problem.s,
    );
    let (sh, sw, ph, pw) = (
        problem.stride[0],
        problem.stride[1],
        problem.pad[0],
        problem.pad[1],
    );
    // A reads the pool's first half, B its second (see `run`).
    let half = pool.len() / 2;
    let (x_base, f_base, y_base) = match problem.kind {
        ConvKind::Fprop => (0, half, 0),
        ConvKind::Dgrad => (0, half, 0),
        ConvKind::Wgrad => (half, 0, 0),
    };
    let x = |ni: usize, hi: usize, wi: usize, ci: usize| pool[x_base + ((ni * h + hi) * w + wi) * c + ci];
    let f = |ki: usize, ri: usize, si: usize, ci: usize| pool[f_base + ((ki * r + ri) * s + si) * c + ci];
    let y =
        |ni: usize, pi: usize, qi: usize, ki: usize| pool[y_base + ((ni * p_out + pi) * q_out + qi) * k + ki];
    // Input pixel of output (p, q) and tap (r, s), if inside the image.
    let at = |pi: usize, ri: usize, size: usize, stride: usize, pad: usize| {
        let v = (pi * stride + ri) as isize - pad as isize;
        (v >= 0 && v < size as isize).then_some(v as usize)
    };
    let tol = if dtype == DType::Bf16 { 2e-2 } else { 5e-3 };
    for sample in 0..16 {
        let index = (got.len() - 1) * sample / 15;
        let mut sum = 0.0;
        let mut norm = 0.0;
        match problem.kind {
            ConvKind::Fprop => {
                let (ni, pi, qi, ki) = (
                    index / (p_out * q_out * k),
                    index / (q_out * k) % p_out,
                    index / k % q_out,
                    index % k,
                );
                for ri in 0..r {
                    for si in 0..s {
                        if let (Some(hi), Some(wi)) = (at(pi, ri, h, sh, ph), at(qi, si, w, sw, pw)) {
                            for ci in 0..c {
                                sum += x(ni, hi, wi, ci) * f(ki, ri, si, ci);
                                norm += (x(ni, hi, wi, ci) * f(ki, ri, si, ci)).abs();
                            }
                        }
                    }
                }
            }
            ConvKind::Dgrad => {
                let (ni, hi, wi, ci) = (index / (h * w * c), index / (w * c) % h, index / c % w, index % c);
                for pi in 0..p_out {
                    for qi in 0..q_out {
                        for ri in 0..r {
                            for si in 0..s {
                                if at(pi, ri, h, sh, ph) == Some(hi) && at(qi, si, w, sw, pw) == Some(wi) {
                                    for ki in 0..k {
                                        sum += y(ni, pi, qi, ki) * f(ki, ri, si, ci);
                                        norm += (y(ni, pi, qi, ki) * f(ki, ri, si, ci)).abs();
                                    }
                                }
                            }
                        }
                    }
                }
            }
            ConvKind::Wgrad => {
                let (ki, ri, si, ci) = (index / (r * s * c), index / (s * c) % r, index / c % s, index % c);
                for ni in 0..n {
                    for pi in 0..p_out {
                        for qi in 0..q_out {
                            if let (Some(hi), Some(wi)) = (at(pi, ri, h, sh, ph), at(qi, si, w, sw, pw)) {
                                sum += y(ni, pi, qi, ki) * x(ni, hi, wi, ci);
                                norm += (y(ni, pi, qi, ki) * x(ni, hi, wi, ci)).abs();
                            }
                        }
                    }
                }
            }
        }
        // Relative to the sum of magnitudes: rounding of the output and of the accumulation.
        if (got[index] - sum).abs() > tol * norm.max(1.0) {
            eprintln!("  spot check: D[{index}] = {}, reference {sum}", got[index]);
            return false;
        }
    }
    true
}
