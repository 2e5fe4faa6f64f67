//! Host overhead: what one GEMM call costs the host (argument checks, Params / TMA descriptor
//! build, launch) against a bare `cuLaunchKernel` of an empty kernel, measured in the same run.
//!
//!     cargo run --release --example host_overhead -- [--json] [--kernels NAME,...] [--m M --n N --k K]
//!                                                    [--calls N] [--batches N]
//!
//! Paths, all on the context's default stream:
//! * `bare`: `cuLaunchKernel` of `cutlass_aot_empty` (hand-written PTX, JIT-compiled by the driver),
//!   grid 1, block 32, no parameters;
//! * `raw`: `gemm::launch_raw` — registry-driven, untyped; one CUTLASS 2.x kernel and one 3.x
//!   kernel per schedule / epilogue schedule / tile scheduler / cluster kind;
//! * `typed`: `kernels::gemm_f16_tn::run` (typed views, the same checks, then the raw path);
//! * `plan`: `gemm::plan` alone (argument checks, ABI arguments), no launch;
//! * `plan_prepare`: `gemm::plan` + `KernelInfo::prepare` — the whole pure-CPU part, no launch;
//! * `dispatch`: `dispatch::launch_raw` on the first kernel's buffers (decision from the memo,
//!   Params built per call);
//! * `dispatch_plan`: a `dispatch::Plan` of the same problem launched again and again (Params
//!   built once): what a serving loop or a CUDA-graph capture runs.
//!
//! Method: host time (`Instant`) of batches of `--calls` calls (default 100, well inside the
//! driver's launch queue), the stream synchronised between batches (not timed); `--batches`
//! rounds (default 200) in which every path runs one batch in turn, so all paths see the same
//! conditions. Reported: the median per-call time of each path and its excess over `bare`.

mod common;

use std::ffi::c_void;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use common::JsonRecord;
use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream};
use cutlass_aot::half::f16;
use cutlass_aot::kernels::{self, REGISTRY};
use cutlass_aot::model::{Api, OpClass};
use cutlass_aot::{abi, device, gemm, Gemm, GemmProblem, KernelInfo, MatrixMut, MatrixRef};

const USAGE: &str = "\
usage: host_overhead [--json] [--kernels NAME[,NAME...]] [--m M] [--n N] [--k K]
                     [--calls N] [--batches N]

  --kernels   kernels for the raw and plan_prepare paths (default: gemm_f16_tn and one CUTLASS
              3.x kernel per schedule / epilogue schedule / tile scheduler / cluster kind)
  --m/--n/--k problem (default 128x128x64)
  --calls     calls per timed batch (default 100)
  --batches   timed batches per path (default 200); the median per-call time is reported
  --json      one DESIGN §6 record per path (op host_overhead) instead of the table
Exit status: 0 measured, 1 a path failed, 2 usage error or no GPU.";

/// Target of the issue: our host cost at most this much above a bare launch.
const TARGET_US: f64 = 3.0;

/// An empty kernel, as PTX the driver JIT-compiles (no nvcc or NVRTC needed).
const EMPTY_PTX: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry cutlass_aot_empty()
{
\tret;
}
";

/// The kernel of the typed path.
const TYPED_KERNEL: &str = "gemm_f16_tn";

#[derive(Clone, Debug, PartialEq)]
struct Options {
    kernels: Option<Vec<String>>,
    m: usize,
    n: usize,
    k: usize,
    calls: usize,
    batches: usize,
    json: bool,
    help: bool,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        kernels: None,
        m: 128,
        n: 128,
        k: 64,
        calls: 100,
        batches: 200,
        json: false,
        help: false,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let flag = flag.as_str();
        let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
        let positive = |v: String| match v.parse::<usize>() {
            Ok(x) if x >= 1 => Ok(x),
            _ => Err(format!("{flag}: {v:?} is not a positive integer")),
        };
        match flag {
            "--kernels" | "--kernel" => {
                let names: Vec<String> = value()?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
                if names.is_empty() {
                    return Err(format!("{flag} needs at least one kernel name"));
                }
                o.kernels = Some(names);
            }
            "--m" => o.m = positive(value()?)?,
            "--n" => o.n = positive(value()?)?,
            "--k" => o.k = positive(value()?)?,
            "--calls" => o.calls = positive(value()?)?,
            "--batches" => o.batches = positive(value()?)?,
            "--json" => o.json = true,
            "--help" | "-h" => o.help = true,
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    Ok(o)
}

/// A kind of kernel for the default selection: 2.x, or 3.x by its scheduling and clustering.
fn kind(info: &KernelInfo) -> String {
    match info.api() {
        Api::Cutlass2x => "2x".to_string(),
        Api::Cutlass3x => format!(
            "3x {} {} {} cluster{}",
            common::schedule(info),
            common::epilogue_schedule(info),
            common::tile_scheduler(info),
            if info.design.cluster().m * info.design.cluster().n * info.design.cluster().k > 1 {
                ">1"
            } else {
                "=1"
            }
        ),
    }
}

/// The default kernels: the typed path's 2.x kernel (else the first 2.x tensor-op kernel), then
/// the first 3.x kernel of each kind, preferring A's type of the 2.x one (like for like).
fn default_kernels(all: &[&'static KernelInfo]) -> Vec<&'static KernelInfo> {
    // GEMM kernels that take plain problems (not grouped, not Hopper pointer-array kernels).
    let all: Vec<&'static KernelInfo> = all
        .iter()
        .copied()
        .filter(|k| k.operation.kind() == cutlass_aot::model::OperationKind::Gemm)
        .filter(|k| {
            k.design
                .as_3x()
                .map_or(true, |d| d.batch_mode == cutlass_aot::model::BatchMode::Strided)
        })
        .collect();
    let mut chosen: Vec<&'static KernelInfo> = Vec::new();
    let two = all
        .iter()
        .find(|k| k.rust_name == TYPED_KERNEL)
        .or_else(|| {
            all.iter()
                .find(|k| k.api() == Api::Cutlass2x && k.design.opclass() == OpClass::TensorOp)
        })
        .copied();
    chosen.extend(two);
    let preferred = two.map(|k| k.gemm().a.element);
    let mut threes: Vec<&'static KernelInfo> = all
        .iter()
        .copied()
        .filter(|k| k.api() == Api::Cutlass3x)
        .collect();
    // Stable: kernels of the preferred type first, otherwise manifest order.
    threes.sort_by_key(|k| Some(k.gemm().a.element) != preferred);
    for k in threes {
        if !chosen.iter().any(|c| kind(c) == kind(k)) {
            chosen.push(k);
        }
    }
    chosen
}

fn select(o: &Options) -> Result<Vec<&'static KernelInfo>, String> {
    match &o.kernels {
        Some(names) => names
            .iter()
            .map(|n| {
                REGISTRY
                    .by_name(n)
                    .ok_or_else(|| format!("no kernel named {n:?} in this binary"))
            })
            .collect(),
        None => Ok(default_kernels(REGISTRY.all())),
    }
}

/// One measured path.
struct Path<'a> {
    path: &'static str,
    kernel: &'static str,
    rust_name: &'static str,
    extents: Option<(usize, usize, usize)>,
    call: Box<dyn FnMut() -> Result<(), String> + 'a>,
    per_call_us: Vec<f64>,
    error: Option<String>,
}

impl Path<'_> {
    fn median_us(&self) -> f64 {
        common::median(&self.per_call_us)
    }
}

/// Result of one path, for output.
#[derive(Clone, Debug, PartialEq)]
struct Measurement {
    path: &'static str,
    kernel: &'static str,
    rust_name: &'static str,
    extents: Option<(usize, usize, usize)>,
    /// Median host µs per call; `Err` why the path could not be measured.
    us: Result<f64, String>,
}

impl Measurement {
    /// The host cost beyond a bare launch: ours − bare for paths that launch; for `plan_prepare`,
    /// which launches nothing, all of it.
    fn overhead(&self, bare: f64) -> Option<f64> {
        let us = *self.us.as_ref().ok()?;
        Some(match self.path {
            "plan" | "plan_prepare" => us,
            _ => us - bare,
        })
    }
}

fn table(device: &str, date: &str, o: &Options, bare: f64, rows: &[Measurement]) -> String {
    let width = rows.iter().map(|r| r.rust_name.len()).max().unwrap_or(6).max(6);
    let mut out = format!(
        "device: {device}, {date}; host time per call, median of {} batches of {} calls\n\
         {:<12} {:<width$} {:>14} {:>10} {:>10} {:>10}\n",
        o.batches, o.calls, "path", "kernel", "m x n x k", "host us", "bare us", "over bare"
    );
    for r in rows {
        let shape = r
            .extents
            .map_or("-".to_string(), |(m, n, k)| format!("{m}x{n}x{k}"));
        let line = match &r.us {
            Ok(us) => {
                let over = r.overhead(bare).unwrap_or(f64::NAN);
                let verdict = match r.path {
                    "bare" => String::new(),
                    "plan" | "plan_prepare" => "  (no launch: all of it is overhead)".to_string(),
                    _ if over <= TARGET_US => format!("  ok (target <= {TARGET_US} us)"),
                    _ => format!("  ABOVE the {TARGET_US} us target"),
                };
                format!(
                    "{:<12} {:<width$} {:>14} {:>10.2} {:>10.2} {:>10.2}{verdict}",
                    r.path, r.rust_name, shape, us, bare, over
                )
            }
            Err(why) => format!(
                "{:<12} {:<width$} {:>14}  ERROR: {why}",
                r.path, r.rust_name, shape
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn json(device: &str, date: &str, o: &Options, bare: f64, r: &Measurement) -> String {
    let mut rec = JsonRecord::new()
        .str("device", device)
        .str("date", date)
        .str("op", "host_overhead")
        .str("kernel", r.kernel)
        .str("rust_name", r.rust_name)
        .str("path", r.path);
    if let Some((m, n, k)) = r.extents {
        rec = rec.int("m", m).int("n", n).int("k", k);
    }
    if let Some(info) = REGISTRY.by_name(r.kernel) {
        rec = rec
            .str("dtype", &common::dtype_label(info))
            .str("api", &info.api().to_string())
            .str("schedule", &common::schedule(info).to_string())
            .str("tile_scheduler", &common::tile_scheduler(info).to_string())
            .str("cluster", &info.design.cluster().to_string());
    }
    rec = rec.int("calls_per_batch", o.calls).int("batches", o.batches);
    match &r.us {
        Ok(us) => {
            rec = rec.num("ours_us", *us, 3).num("bare_launch_us", bare, 3).num(
                "overhead_us",
                r.overhead(bare).unwrap_or(f64::NAN),
                3,
            );
            if r.path == "raw" || r.path == "typed" {
                rec = rec
                    .num("target_us", TARGET_US, 1)
                    .bool("meets_target", r.overhead(bare).is_some_and(|x| x <= TARGET_US));
            }
        }
        Err(why) => rec = rec.str("error", why),
    }
    rec.finish()
}

/// The driver's `cuTensorMapEncodeTiled`, which CUTLASS 3.x `prepare` needs (the launch path
/// fills it in itself).
fn driver_encode_tiled() -> Result<abi::cutlass_aot_encode_tiled_fn, String> {
    cutlass_aot::tma::encode_tiled("host_overhead").map_err(|e| e.to_string())
}

/// Device buffers of one kernel's small problem.
struct Buffers {
    info: &'static KernelInfo,
    m: usize,
    n: usize,
    k: usize,
    a: CudaSlice<u8>,
    b: CudaSlice<u8>,
    d: CudaSlice<u8>,
}

impl Buffers {
    fn new(
        stream: &Arc<CudaStream>,
        info: &'static KernelInfo,
        (m, n, k): (usize, usize, usize),
    ) -> Result<Self, String> {
        let bytes = |elements: usize, d| elements * cutlass_aot::verify::element_bytes(d);
        let alloc = |len| {
            stream
                .alloc_zeros::<u8>(len)
                .map_err(|e| format!("allocating: {e}"))
        };
        Ok(Buffers {
            info,
            m,
            n,
            k,
            a: alloc(bytes(m * k, info.gemm().a.element))?,
            b: alloc(bytes(k * n, info.gemm().b.element))?,
            d: alloc(bytes(m * n, info.gemm().c.element))?,
        })
    }

    fn operands(&self, stream: &CudaStream) -> cutlass_aot::GemmOperands {
        let info = self.info;
        let (m, n, k) = (self.m, self.n, self.k);
        let operand = |buffer: &CudaSlice<u8>, rows, cols, layout| cutlass_aot::Operand {
            shape: common::packed(rows, cols, 1, layout),
            len: rows * cols,
            address: common::address(buffer, stream),
        };
        cutlass_aot::GemmOperands {
            a: operand(&self.a, m, k, info.gemm().a.layout),
            b: operand(&self.b, k, n, info.gemm().b.layout),
            c: None,
            d: operand(&self.d, m, n, info.gemm().c.layout),
            alpha: 1.0,
            beta: 0.0,
            split_k_slices: 1,
            fusion: Default::default(),
        }
    }
}

fn problem_of(info: &KernelInfo, (m, n, k): (usize, usize, usize), cc: Option<u32>) -> GemmProblem {
    let mut p = GemmProblem::new(
        (m, n, k),
        (
            info.gemm().a.element,
            info.gemm().b.element,
            info.gemm().c.element,
        ),
        (info.gemm().a.layout, info.gemm().b.layout, info.gemm().c.layout),
    );
    p.compute_capability = cc;
    p
}

fn run(ctx: &Arc<CudaContext>, o: &Options, kernels: &[&'static KernelInfo]) -> Result<ExitCode, String> {
    // The default stream: cudarc adds per-buffer event tracking once a second stream exists, which
    // would charge the typed path for bookkeeping a single-stream user never pays.
    let stream = ctx.default_stream();
    let props = device::props(ctx).map_err(|e| e.to_string())?;
    let device_name = common::device_name(ctx);
    let date = common::utc_date();
    let extents = (o.m, o.n, o.k);

    // Bare launch of the empty kernel.
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(EMPTY_PTX))
        .map_err(|e| format!("loading the empty kernel's PTX: {e}"))?;
    let empty = module
        .load_function("cutlass_aot_empty")
        .map_err(|e| format!("finding cutlass_aot_empty: {e}"))?;
    let (empty_fn, cu_stream) = (empty.cu_function(), stream.cu_stream());

    // Buffers of the typed path (declared before the paths that borrow them).
    let typed_a = stream.alloc_zeros::<f16>(o.m * o.k).map_err(|e| e.to_string())?;
    let typed_b = stream.alloc_zeros::<f16>(o.k * o.n).map_err(|e| e.to_string())?;
    let mut typed_d = stream.alloc_zeros::<f16>(o.m * o.n).map_err(|e| e.to_string())?;

    let mut paths: Vec<Path> = vec![Path {
        path: "bare",
        kernel: "cutlass_aot_empty",
        rust_name: "cutlass_aot_empty",
        extents: None,
        // SAFETY: a loaded kernel without parameters, launched on a live stream.
        call: Box::new(move || {
            unsafe {
                sys::cuLaunchKernel(
                    empty_fn,
                    1,
                    1,
                    1,
                    32,
                    1,
                    1,
                    0,
                    cu_stream,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .map_err(|e| e.to_string())
        }),
        per_call_us: Vec::new(),
        error: None,
    }];

    // Raw and plan + prepare paths: buffers first (the closures borrow nothing but copies).
    let mut skipped: Vec<Measurement> = Vec::new();
    let mut buffers = Vec::new();
    for &info in kernels {
        let fail = |why: String| Measurement {
            path: "raw",
            kernel: info.name,
            rust_name: info.rust_name,
            extents: Some(extents),
            us: Err(why),
        };
        if let Err(why) = info.supports(&problem_of(info, extents, Some(props.compute_capability))) {
            skipped.push(fail(why.reasons.join("; ")));
            continue;
        }
        match Buffers::new(&stream, info, extents) {
            Ok(b) => buffers.push(b),
            Err(why) => skipped.push(fail(why)),
        }
    }
    let encode = match driver_encode_tiled() {
        Ok(f) => f,
        Err(why) => {
            eprintln!("host_overhead: {why}; CUTLASS 3.x plan_prepare paths will fail");
            None
        }
    };
    let workspace = stream
        .alloc_zeros::<u8>(64 << 20)
        .map_err(|e| format!("allocating a workspace: {e}"))?;
    let workspace_address = common::address(&workspace, &stream);
    for b in &buffers {
        let info = b.info;
        let operands = b.operands(&stream);
        let s = stream.clone();
        paths.push(Path {
            path: "raw",
            kernel: info.name,
            rust_name: info.rust_name,
            extents: Some(extents),
            // SAFETY: the buffers hold these element types and lengths and outlive the paths.
            call: Box::new(move || {
                unsafe { gemm::launch_raw(info, &s, &operands) }.map_err(|e| e.to_string())
            }),
            per_call_us: Vec::new(),
            error: None,
        });
        paths.push(Path {
            path: "plan",
            kernel: info.name,
            rust_name: info.rust_name,
            extents: Some(extents),
            call: Box::new(move || {
                let args = gemm::plan(info, &operands, &props).map_err(|e| e.to_string())?;
                std::hint::black_box(&args);
                Ok(())
            }),
            per_call_us: Vec::new(),
            error: None,
        });
        paths.push(Path {
            path: "plan_prepare",
            kernel: info.name,
            rust_name: info.rust_name,
            extents: Some(extents),
            call: Box::new(move || {
                let mut args = gemm::plan(info, &operands, &props).map_err(|e| e.to_string())?;
                if info.api() == Api::Cutlass3x {
                    args.encode_tiled = encode;
                }
                if info.may_need_workspace(1) {
                    args.workspace = workspace_address as *mut c_void;
                    args.workspace_capacity = 64 << 20;
                }
                let prepared = info.prepare(&args).map_err(|e| e.to_string())?;
                std::hint::black_box(&prepared);
                Ok(())
            }),
            per_call_us: Vec::new(),
            error: None,
        });
    }

    // Dispatch as a user calls it (decision from the memo, Params built per call) and a dispatch
    // plan launched again and again (Params built once), over the first kernel's buffers.
    if let Some(b) = buffers.first() {
        let operands = b.operands(&stream);
        let g = b.info.gemm();
        let signature = cutlass_aot::dispatch::Signature {
            element_a: g.a.element,
            element_b: g.b.element,
            element_c: g.c.element,
            layout_a: g.a.layout,
            layout_b: g.b.layout,
            layout_c: g.c.layout,
        };
        let s = stream.clone();
        // SAFETY: the buffers hold these element types and lengths and outlive the paths.
        let launched = |p: &cutlass_aot::dispatch::Plan| p.dispatched().kernel.map_or("none", |k| k.name);
        let mut plan = unsafe {
            cutlass_aot::dispatch::plan_raw(
                &REGISTRY,
                kernels::TABLES,
                &stream,
                signature,
                &operands,
                Default::default(),
            )
        }
        .map_err(|e| e.to_string())?;
        let (chosen, chosen_rust) = (
            launched(&plan),
            plan.dispatched().kernel.map_or("none", |k| k.rust_name),
        );
        paths.push(Path {
            path: "dispatch",
            kernel: chosen,
            rust_name: chosen_rust,
            extents: Some(extents),
            call: Box::new(move || {
                unsafe { cutlass_aot::dispatch::launch_raw(&s, signature, &operands, Default::default()) }
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }),
            per_call_us: Vec::new(),
            error: None,
        });
        let s = stream.clone();
        paths.push(Path {
            path: "dispatch_plan",
            kernel: chosen,
            rust_name: chosen_rust,
            extents: Some(extents),
            // SAFETY: as above; the plan runs on one stream.
            call: Box::new(move || unsafe { plan.launch_raw(&s, &operands) }.map_err(|e| e.to_string())),
            per_call_us: Vec::new(),
            error: None,
        });
    }

    // The typed path.
    let typed_info = &kernels::gemm_f16_tn::INFO;
    let (m, n, k) = extents;
    match typed_info.supports(&problem_of(typed_info, extents, Some(props.compute_capability))) {
        Ok(()) => {
            let s = stream.clone();
            let (a, b, d) = (&typed_a, &typed_b, &mut typed_d);
            paths.push(Path {
                path: "typed",
                kernel: typed_info.name,
                rust_name: typed_info.rust_name,
                extents: Some(extents),
                call: Box::new(move || {
                    kernels::gemm_f16_tn::run(
                        &s,
                        Gemm::new(
                            MatrixRef::new(a, m, k),
                            MatrixRef::new(b, k, n),
                            MatrixMut::new(&mut *d, m, n),
                            1.0,
                        ),
                    )
                    .map_err(|e| e.to_string())
                }),
                per_call_us: Vec::new(),
                error: None,
            });
        }
        Err(why) => skipped.push(Measurement {
            path: "typed",
            kernel: typed_info.name,
            rust_name: typed_info.rust_name,
            extents: Some(extents),
            us: Err(why.reasons.join("; ")),
        }),
    }

    // First calls (image loads, workspace growth) and a warm-up batch, untimed.
    for p in &mut paths {
        for _ in 0..o.calls {
            if let Err(why) = (p.call)() {
                p.error = Some(why);
                break;
            }
        }
        stream
            .synchronize()
            .map_err(|e| format!("device failure after the first {} calls: {e}", p.path))?;
    }
    // Round robin: one batch of every path per round; the first tenth of the rounds (at least 10)
    // only warms up (CPU clocks, caches) and is not recorded.
    let warm_rounds = (o.batches / 10).max(10);
    for round in 0..warm_rounds + o.batches {
        for p in paths.iter_mut().filter(|p| p.error.is_none()) {
            stream.synchronize().map_err(|e| format!("device failure: {e}"))?;
            let start = Instant::now();
            let mut failed = None;
            for _ in 0..o.calls {
                if let Err(why) = (p.call)() {
                    failed = Some(why);
                    break;
                }
            }
            let elapsed = start.elapsed();
            match failed {
                Some(why) => p.error = Some(why),
                None if round >= warm_rounds => {
                    p.per_call_us.push(elapsed.as_secs_f64() * 1e6 / o.calls as f64)
                }
                None => {}
            }
        }
    }
    stream.synchronize().map_err(|e| format!("device failure: {e}"))?;
    drop(module);

    let bare = paths[0].median_us();
    let mut rows: Vec<Measurement> = paths
        .iter()
        .map(|p| Measurement {
            path: p.path,
            kernel: p.kernel,
            rust_name: p.rust_name,
            extents: p.extents,
            us: match &p.error {
                Some(why) => Err(why.clone()),
                None => Ok(p.median_us()),
            },
        })
        .collect();
    rows.extend(skipped);
    if o.json {
        for r in &rows {
            common::out(json(&device_name, &date, o, bare, r));
        }
    } else {
        common::out(table(&device_name, &date, o, bare, &rows).trim_end());
    }
    Ok(if rows.iter().any(|r| r.us.is_err()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("host_overhead: {e}\n\n{USAGE}");
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
            eprintln!("host_overhead: {e}");
            return ExitCode::from(2);
        }
    };
    let ctx = match device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            let describe = |k: &KernelInfo| format!("{} ({}, {})", k.rust_name, k.name, kind(k));
            eprintln!("host_overhead would measure, on {}x{}x{}:", o.m, o.n, o.k);
            eprintln!("  bare          cuLaunchKernel of an empty kernel (PTX, grid 1, block 32)");
            for k in &kernels {
                eprintln!("  raw           gemm::launch_raw, {}", describe(k));
                eprintln!("  plan          gemm::plan, {}", describe(k));
                eprintln!(
                    "  plan_prepare  gemm::plan + KernelInfo::prepare, {}",
                    describe(k)
                );
            }
            eprintln!("  typed         kernels::{TYPED_KERNEL}::run");
            eprintln!("\nhost_overhead: no GPU, nothing was measured: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&ctx, &o, &kernels) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("host_overhead: {e}");
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
        assert_eq!(
            (o.m, o.n, o.k, o.calls, o.batches, o.json),
            (128, 128, 64, 100, 200, false)
        );
        let o = parse_args(&args(
            "--m 256 --n 64 --k 32 --calls 10 --batches 5 --json --kernels a,b",
        ))
        .unwrap();
        assert_eq!(
            (o.m, o.n, o.k, o.calls, o.batches, o.json),
            (256, 64, 32, 10, 5, true)
        );
        assert_eq!(o.kernels, Some(vec!["a".to_string(), "b".to_string()]));
        for bad in ["--m 0", "--calls", "--batches x", "--bogus", "--kernels ,"] {
            assert!(parse_args(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn default_selection() {
        let chosen = default_kernels(REGISTRY.all());
        assert_eq!(chosen[0].rust_name, TYPED_KERNEL);
        // One kernel per kind, every 3.x kind present in the manifest covered.
        let kinds: Vec<String> = chosen.iter().map(|k| kind(k)).collect();
        let mut distinct = kinds.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), kinds.len(), "{kinds:?}");
        for k in REGISTRY.all() {
            assert!(kinds.contains(&kind(k)), "no kernel of kind {}", kind(k));
        }
        // Like for like: 3.x kernels of the 2.x kernel's type where the manifest has them.
        for c in &chosen[1..] {
            let same_kind_same_type = REGISTRY
                .all()
                .iter()
                .any(|k| kind(k) == kind(c) && k.gemm().a.element == chosen[0].gemm().a.element);
            if same_kind_same_type {
                assert_eq!(c.gemm().a.element, chosen[0].gemm().a.element, "{}", c.rust_name);
            }
        }
        assert!(select(&parse_args(&args("--kernels nope")).unwrap()).is_err());
    }

    #[test]
    fn output() {
        let o = parse_args(&[]).unwrap();
        let info = REGISTRY.by_name(TYPED_KERNEL).unwrap();
        let rows = vec![
            Measurement {
                path: "bare",
                kernel: "cutlass_aot_empty",
                rust_name: "cutlass_aot_empty",
                extents: None,
                us: Ok(2.0),
            },
            Measurement {
                path: "raw",
                kernel: info.name,
                rust_name: info.rust_name,
                extents: Some((128, 128, 64)),
                us: Ok(4.5),
            },
            Measurement {
                path: "plan_prepare",
                kernel: info.name,
                rust_name: info.rust_name,
                extents: Some((128, 128, 64)),
                us: Ok(0.75),
            },
            Measurement {
                path: "typed",
                kernel: info.name,
                rust_name: info.rust_name,
                extents: Some((128, 128, 64)),
                us: Err("no \"GPU\"".into()),
            },
        ];
        assert_eq!(rows[1].overhead(2.0), Some(2.5));
        assert_eq!(rows[2].overhead(2.0), Some(0.75));
        assert_eq!(rows[3].overhead(2.0), None);
        let t = table("GPU", "2026-11-22", &o, 2.0, &rows);
        assert!(t.contains("ok (target <= 3 us)"), "{t}");
        assert!(t.contains("ERROR: no \"GPU\""), "{t}");
        let j = json("NVIDIA H100", "2026-11-22", &o, 2.0, &rows[1]);
        assert!(j.starts_with(
            "{\"device\": \"NVIDIA H100\", \"date\": \"2026-11-22\", \"op\": \"host_overhead\", \"kernel\": \""
        ));
        for field in [
            "\"path\": \"raw\"",
            "\"m\": 128, \"n\": 128, \"k\": 64",
            "\"ours_us\": 4.500, \"bare_launch_us\": 2.000, \"overhead_us\": 2.500",
            "\"meets_target\": true",
        ] {
            assert!(j.contains(field), "{field} missing from {j}");
        }
        let j = json("GPU", "2026-11-22", &o, 2.0, &rows[3]);
        assert!(j.ends_with("\"error\": \"no \\\"GPU\\\"\"}"), "{j}");
        assert!(EMPTY_PTX.contains(".visible .entry cutlass_aot_empty()"));
    }
}
