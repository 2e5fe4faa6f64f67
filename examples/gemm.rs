//! The main job: runs one GEMM on the GPU through `cutlass_aot::dispatch` (the call a user makes
//! without naming a kernel), says which kernel dispatch chose and why (measured, calibrated
//! or bare model), verifies the result against an f64 host reference on sampled elements, and prints
//! time and TFLOP/s. `--kernel NAME` runs that kernel instead. Without a GPU it lists the embedded
//! kernels and says why nothing ran.
//!
//!     cargo run --release --example gemm -- [--kernel NAME | --dtype f16|bf16|f32|f64]
//!         [--m M --n N --k K] [--iters N] [--json]
//!
//! For many kernels and shapes, side by side, see the `profiler` example.

mod common;

use std::time::Instant;

use common::{Extents, GemmData, Pools, Types};
use cutlass_aot::dispatch::{self, Options as DispatchOptions, Signature};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{DType, Layout};
use cutlass_aot::{device, KernelInfo};

/// Elements of D compared with the f64 reference (plus the corners).
const SAMPLES: usize = 512;
const WARMUP: usize = 5;

struct Options {
    /// A kernel to run by name; `None`: dispatch chooses.
    kernel: Option<String>,
    /// A's, B's and D's type on the dispatch path (row-major A, column-major B, row-major D).
    dtype: DType,
    m: usize,
    n: usize,
    k: usize,
    iters: usize,
    json: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        kernel: None,
        dtype: DType::F16,
        m: 4096,
        n: 4096,
        k: 4096,
        iters: 50,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| match v.parse::<usize>() {
            Ok(x) if x >= 1 => Ok(x),
            _ => Err(format!("{flag}: {v:?} is not a positive integer")),
        };
        match flag.as_str() {
            "--kernel" => o.kernel = Some(value()?),
            "--dtype" => {
                o.dtype = common::sweeps::parse_float_dtype(&value()?)?;
            }
            "--m" => o.m = number(value()?)?,
            "--n" => o.n = number(value()?)?,
            "--k" => o.k = number(value()?)?,
            "--iters" => o.iters = number(value()?)?,
            "--json" => o.json = true,
            other => return Err(format!("unknown argument {other:?}; usage: gemm [--kernel NAME | --dtype f16|bf16|f32|f64] [--m M --n N --k K] [--iters N] [--json]")),
        }
    }
    Ok(o)
}

fn list_kernels() {
    println!("{} kernels embedded in this binary:", REGISTRY.all().len());
    for k in REGISTRY.all() {
        println!(
            "  {:<22} {}  A {} {}-major, B {} {}-major, C/D {} {}-major",
            k.rust_name,
            k.name,
            k.gemm().a.element,
            k.gemm().a.layout,
            k.gemm().b.element,
            k.gemm().b.layout,
            k.gemm().c.element,
            k.gemm().c.layout
        );
    }
}

fn main() {
    let options = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let named = match &options.kernel {
        None => None,
        Some(name) => match REGISTRY.by_name(name) {
            Some(info) => Some(info),
            None => {
                eprintln!("error: no kernel named {name:?}");
                list_kernels();
                std::process::exit(2);
            }
        },
    };
    let ctx = match device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            list_kernels();
            println!("\nNo GPU found, nothing was run: {e}");
            return;
        }
    };
    if let Err(e) = run(&ctx, named, &options) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    named: Option<&'static KernelInfo>,
    o: &Options,
) -> Result<(), Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let extents = Extents {
        m: o.m,
        n: o.n,
        k: o.k,
        batch: 1,
    };
    let types = match named {
        Some(info) => Types::of(info),
        None => Types {
            a: o.dtype,
            b: o.dtype,
            c: o.dtype,
            layout_a: Layout::Row,
            layout_b: Layout::Column,
            layout_c: Layout::Row,
        },
    };
    let signature = Signature {
        element_a: types.a,
        element_b: types.b,
        element_c: types.c,
        layout_a: types.layout_a,
        layout_b: types.layout_b,
        layout_c: types.layout_c,
    };
    let mut pools = Pools::new(stream.clone());
    let data = GemmData::new(&stream, &mut pools, extents, types, false)?;
    let operands = data.operands(1.0, 0.0);
    // What ran: the named kernel, or dispatch's choice (filled in by the first launch).
    let chosen = std::cell::Cell::new(named);
    let how = std::cell::RefCell::new(String::from("named with --kernel"));
    // SAFETY: the buffers of `data` hold exactly these element types and lengths.
    let launch = || -> Result<(), cutlass_aot::Error> {
        match named {
            Some(info) => unsafe { cutlass_aot::gemm::launch_raw(info, &stream, &operands) },
            None => {
                let ran = unsafe {
                    dispatch::launch_raw(&stream, signature, &operands, DispatchOptions::default())
                }?;
                if chosen.get().is_none() {
                    *how.borrow_mut() = ran.describe();
                }
                chosen.set(ran.kernel);
                Ok(())
            }
        }
    };

    // Verify sampled elements of a poisoned D against an f64 reference on the same inputs.
    data.poison_d()?;
    let first = Instant::now();
    launch()?; // loads the image and checks everything
    stream.synchronize()?;
    let first_call = first.elapsed();
    let info = chosen.get().ok_or("dispatch launched nothing")?;
    let positions = common::sample_positions(extents, SAMPLES);
    let reference = data.reference(&positions, 1.0, 0.0);
    let check = common::check(&data, info, &positions, &reference)?;
    let verified = check.passed();

    let spinner = common::Spinner::new(ctx).ok();
    let timing = common::time_launches(ctx, &stream, WARMUP, o.iters, None, spinner.as_ref(), launch)
        .map_err(|f| f.to_string())?;
    let seconds = timing.median_us * 1e-6;
    let tflops = extents.flops() / seconds / 1e12;
    let gbps = common::gemm_bytes(extents, data.types, false) / seconds / 1e9;
    let device_name = common::device_name(ctx);
    if o.json {
        let path = if named.is_some() { "kernel" } else { "dispatch" };
        let record = common::gemm_record(&device_name, &common::utc_date(), info, extents, 1.0, 0.0)
            .int("warmup", WARMUP)
            .str("path", path);
        println!(
            "{}",
            common::measurement_fields(record, &timing, tflops, gbps, Some(&check)).finish()
        );
    } else {
        println!("device:   {device_name}");
        let path = if named.is_some() {
            "named kernel"
        } else {
            "dispatch"
        };
        println!("path:     {path}: {}", how.borrow());
        println!("kernel:   {} ({})", info.rust_name, info.name);
        println!(
            "problem:  {}x{}x{}, A {} {}-major, B {} {}-major, D {} {}-major",
            o.m, o.n, o.k, types.a, types.layout_a, types.b, types.layout_b, types.c, types.layout_c
        );
        println!(
            "first call (image load + launch + sync): {:.1} ms",
            first_call.as_secs_f64() * 1e3
        );
        println!(
            "verified: {verified} ({} sampled elements, relative error {:.2e}, tolerance {:.0e}, unwritten {})",
            check.samples,
            check.rel_error,
            check.tolerance,
            check.unwritten.map_or("not counted".to_string(), |n| n.to_string())
        );
        println!(
            "time:     {:.1} us (median of {} launches, back to back)",
            timing.median_us, timing.iters
        );
        println!("rate:     {tflops:.1} TFLOP/s, {gbps:.0} GB/s");
    }
    if !verified {
        return Err("result does not match the reference".into());
    }
    Ok(())
}
