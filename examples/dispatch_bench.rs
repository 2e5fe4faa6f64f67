//! Dispatch as a user calls it, measured: every shape runs through `cutlass_aot::dispatch` (no
//! kernel named), is verified against an f64 host reference on sampled elements and timed; one
//! JSON Lines record per (types, layouts, shape) with `"path": "dispatch"`, the kernel dispatch
//! chose and why (`choice`), for `bench/compare.py` to set beside torch.matmul.
//!
//!     cargo run --release --example dispatch_bench -- --dtype bf16,f16 --sweep issue12 --json
//!     cargo run --release --example dispatch_bench -- --dtype f16 --shapes 4096x4096x700 --layout nn
//!
//! Unlike the profiler, nothing here is aligned for a kernel: buffers are packed with the problem's
//! own extents (K = 700 gives lda = 700), so shapes no kernel reads directly run staged.

mod common;

use std::process::ExitCode;
use std::sync::Arc;

use common::{Extents, GemmData, JsonRecord, Pools, Spinner, Types};
use cudarc::driver::CudaContext;
use cutlass_aot::dispatch::{self, Options, Policy, Signature};
use cutlass_aot::model::{DType, Layout};

const USAGE: &str = "\
usage: dispatch_bench [options]
  --dtype T[,T...]        f16 bf16 f32 f64 (A, B and D; default bf16,f16)
  --layout L[,L...]       A and B letters (t row-major, n column-major) and optionally C's: tn, nt,
                          tt, nn, tnn, ... (default tn, C row-major)
  --shapes MxNxK[xB],...  shapes, or
  --sweep NAME            a named list (see the profiler's --help; default smoke)
  --random N              N problems drawn at random instead (types of --dtype, A and B of either
                          layout, M, N, K log-uniform in [1, 65536], some batched; see
                          common::sweeps::random_problems); --seed S picks them (default 1)
  --allow-tf32            f32 problems may run on TF32 (default: f32 accuracy)
  --iters N               timed launches (default 20), --warmup N (default 5)
  --max-seconds S         cap each shape's timed launches at about S seconds (default 1)
  --json                  JSON Lines records instead of a table";

struct Settings {
    dtypes: Vec<DType>,
    layouts: Vec<[Layout; 3]>,
    shapes: Vec<Extents>,
    /// `(count, seed)`: random problems instead of types × layouts × shapes.
    random: Option<(usize, u64)>,
    policy: Policy,
    iters: usize,
    warmup: usize,
    max_seconds: f64,
    json: bool,
}

fn parse(args: &[String]) -> Result<Settings, String> {
    let mut o = Settings {
        dtypes: vec![DType::Bf16, DType::F16],
        layouts: vec![[Layout::Row, Layout::Column, Layout::Row]],
        shapes: common::sweeps::sweep("smoke")?,
        random: None,
        policy: Policy::default(),
        iters: 20,
        warmup: 5,
        max_seconds: 1.0,
        json: false,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
        let count = |v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{flag}: {v:?} is not a count"))
        };
        match flag.as_str() {
            "--dtype" => {
                o.dtypes = value()?
                    .split(',')
                    .map(common::sweeps::parse_float_dtype)
                    .collect::<Result<_, _>>()?
            }
            "--layout" => {
                o.layouts = value()?
                    .split(',')
                    .map(|l| {
                        common::sweeps::parse_layout(l).map(|(a, b, c)| [a, b, c.unwrap_or(Layout::Row)])
                    })
                    .collect::<Result<_, _>>()?
            }
            "--shapes" => {
                o.shapes = value()?
                    .split(',')
                    .map(common::sweeps::parse_shape)
                    .collect::<Result<_, _>>()?
            }
            "--sweep" => o.shapes = common::sweeps::sweep(&value()?)?,
            "--random" => o.random = Some((count(value()?)?, o.random.map_or(1, |r| r.1))),
            "--seed" => {
                let seed = count(value()?)? as u64;
                o.random = Some((o.random.map_or(0, |r| r.0), seed));
            }
            "--allow-tf32" => o.policy.allow_tf32 = true,
            "--iters" => o.iters = count(value()?)?.max(1),
            "--warmup" => o.warmup = count(value()?)?,
            "--max-seconds" => {
                o.max_seconds = value()?
                    .parse()
                    .map_err(|_| "--max-seconds: a number of seconds".to_string())?
            }
            "--json" => o.json = true,
            "--help" | "-h" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(o)
}

fn letter(l: Layout) -> &'static str {
    if l == Layout::Row {
        "t"
    } else {
        "n"
    }
}

/// The problem's type as compare.py names its torch reference: f32 with f32 accuracy is cuBLAS's
/// SGEMM with TF32 off ("f32"), with TF32 allowed "tf32".
fn dtype_label(dtype: DType, policy: Policy) -> String {
    match dtype {
        DType::F32 if policy.allow_tf32 => "tf32".into(),
        other => other.to_string(),
    }
}

fn run(ctx: &Arc<CudaContext>, o: &Settings) -> Result<bool, String> {
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let device = common::device_name(ctx);
    let date = common::utc_date();
    let spinner = Spinner::new(ctx).ok();
    let mut all_ok = true;
    let problems: Vec<common::sweeps::RandomProblem> = match o.random {
        Some((count, seed)) => common::sweeps::random_problems(count, seed, &o.dtypes),
        None => o
            .dtypes
            .iter()
            .flat_map(|&d| {
                o.layouts
                    .iter()
                    .flat_map(move |&l| o.shapes.iter().map(move |&e| (d, l, e)))
            })
            .collect(),
    };
    let props = cutlass_aot::device::props(ctx).map_err(|e| e.to_string())?;
    let table =
        cutlass_aot::select::device_table(cutlass_aot::kernels::TABLES, props.name, props.compute_capability);
    for &(dtype, layouts, e) in &problems {
        let types = Types {
            a: dtype,
            b: dtype,
            c: dtype,
            layout_a: layouts[0],
            layout_b: layouts[1],
            layout_c: layouts[2],
        };
        let signature = Signature::uniform(dtype, layouts);
        let record = JsonRecord::new()
            .str("device", &device)
            .str("date", &date)
            .str("op", "gemm")
            .str("path", "dispatch")
            .str("dtype", &dtype_label(dtype, o.policy))
            .str("dtype_b", &dtype.to_string())
            .str("dtype_c", &dtype.to_string())
            .str("layout", &format!("{}{}", letter(layouts[0]), letter(layouts[1])))
            .str("layout_c", letter(layouts[2]))
            .int("m", e.m)
            .int("n", e.n)
            .int("k", e.k)
            .int("batch", e.batch)
            .num("alpha", 1.0, 3)
            .num("beta", 0.0, 3)
            .int("warmup", o.warmup)
            .bool("held_out", !measured(table, signature, e));
        let shape = format!(
            "{dtype} {}{}{} {}x{}x{}x{}",
            letter(layouts[0]),
            letter(layouts[1]),
            letter(layouts[2]),
            e.m,
            e.n,
            e.k,
            e.batch
        );
        match measure(ctx, &stream, o, types, signature, e, spinner.as_ref()) {
            Ok((ran, fields)) => {
                let verified = fields.1.passed();
                all_ok &= verified;
                let info = ran.kernel.expect("a non-empty problem launches a kernel");
                let r = record
                    .str("kernel", info.name)
                    .str("rust_name", info.rust_name)
                    .str("choice", &ran.describe())
                    .int("split_k", ran.split_k)
                    .bool("staged", !ran.staged.is_empty());
                let (timing, check, tflops, gbps) = fields;
                let r = common::measurement_fields(r, &timing, tflops, gbps, Some(&check));
                if o.json {
                    common::out(r.finish());
                } else {
                    common::out(format!(
                        "{shape:<34} {:>9.1} us {:>7.1} TFLOP/s  {}  {}",
                        timing.median_us,
                        tflops,
                        if verified { "ok" } else { "NOT VERIFIED" },
                        ran.describe()
                    ));
                }
            }
            Err(why) => {
                all_ok = false;
                if o.json {
                    common::out(record.bool("verified", false).str("error", &why).finish());
                } else {
                    common::out(format!("{shape:<34} REFUSED/FAILED: {why}"));
                }
            }
        }
    }
    Ok(all_ok)
}

/// Whether `table` measured the problem (either orientation): otherwise its result is held out.
fn measured(table: Option<&cutlass_aot::select::Table>, signature: Signature, e: Extents) -> bool {
    let Some(table) = table else { return false };
    let problem = cutlass_aot::GemmProblem::new(
        (e.m, e.n, e.k),
        (signature.element_a, signature.element_b, signature.element_c),
        (signature.layout_a, signature.layout_b, signature.layout_c),
    )
    .batched(e.batch);
    let key = dispatch::candidates::key_of(&problem);
    table.measured(&key) || table.measured(&dispatch::candidates::transposed_key(&key))
}

type Fields = (common::Timing, common::Check, f64, f64);

fn measure(
    ctx: &Arc<CudaContext>,
    stream: &Arc<cudarc::driver::CudaStream>,
    o: &Settings,
    types: Types,
    signature: Signature,
    e: Extents,
    spinner: Option<&Spinner>,
) -> Result<(dispatch::Dispatched, Fields), String> {
    let mut pools = Pools::new(stream.clone());
    let data = GemmData::new(stream, &mut pools, e, types, false).map_err(|e| e.to_string())?;
    let operands = data.operands(1.0, 0.0);
    let policy = o.policy;
    // SAFETY: the buffers of `data` hold exactly these element types and lengths.
    let launch = || unsafe {
        dispatch::launch_raw(
            stream,
            signature,
            &operands,
            Options {
                policy,
                workspace: None,
            },
        )
    };
    data.poison_d().map_err(|e| e.to_string())?;
    let ran = launch().map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())?;
    let info = ran.kernel.ok_or("nothing launched")?;
    let positions = common::sample_positions(e, 256);
    let reference = data.reference(&positions, 1.0, 0.0);
    let check = common::check(&data, info, &positions, &reference).map_err(|e| e.to_string())?;
    let timing = common::time_launches(
        ctx,
        stream,
        o.warmup,
        o.iters,
        Some(o.max_seconds),
        spinner,
        || launch().map(|_| ()),
    )
    .map_err(|f| f.to_string())?;
    let seconds = timing.median_us * 1e-6;
    let tflops = e.flops() / seconds / 1e12;
    let gbps = common::gemm_bytes(e, types, false) / seconds / 1e9;
    Ok((ran, (timing, check, tflops, gbps)))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    // Staging and the 3xTF32 split of big problems need more scratch than the cache keeps by
    // default; keep it between launches so timing measures kernels, not allocations.
    cutlass_aot::workspace::set_cache_limit(usize::MAX);
    let ctx = match cutlass_aot::device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("dispatch_bench: no GPU: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&ctx, &o) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("dispatch_bench: {e}");
            ExitCode::from(1)
        }
    }
}
