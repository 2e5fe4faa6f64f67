//! The main job: runs one GEMM from the default manifest on the GPU, verifies it against an f64
//! host reference on sampled elements, and prints time and TFLOP/s. Without a GPU it lists the
//! embedded kernels and says why nothing ran.
//!
//!     cargo run --release --example gemm -- [--kernel NAME] [--m M --n N --k K] [--iters N] [--json]

use std::time::Instant;

use cudarc::driver::DevicePtr;
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::verify;
use cutlass_aot::{device, GemmOperands, KernelInfo, MatrixShape, Operand};

struct Options {
    kernel: String,
    m: usize,
    n: usize,
    k: usize,
    iters: usize,
    json: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut o = Options {
        kernel: "gemm_f16_tn".into(),
        m: 4096,
        n: 4096,
        k: 4096,
        iters: 50,
        json: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{flag}: {v:?} is not a positive integer"))
        };
        match flag.as_str() {
            "--kernel" => o.kernel = value()?,
            "--m" => o.m = number(value()?)?,
            "--n" => o.n = number(value()?)?,
            "--k" => o.k = number(value()?)?,
            "--iters" => o.iters = number(value()?)?.max(1),
            "--json" => o.json = true,
            other => return Err(format!("unknown argument {other:?}; usage: gemm [--kernel NAME] [--m M --n N --k K] [--iters N] [--json]")),
        }
    }
    Ok(o)
}

fn list_kernels() {
    println!("{} kernels embedded in this binary:", REGISTRY.all().len());
    for k in REGISTRY.all() {
        println!(
            "  {:<22} {}  A {} {}-major, B {} {}-major, C/D {} {}-major",
            k.rust_name, k.name, k.element_a, k.layout_a, k.element_b, k.layout_b, k.element_c, k.layout_c
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
    let Some(info) = REGISTRY.by_name(&options.kernel) else {
        eprintln!("error: no kernel named {:?}", options.kernel);
        list_kernels();
        std::process::exit(2);
    };
    let ctx = match device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            list_kernels();
            println!("\nNo GPU found, nothing was run: {e}");
            return;
        }
    };
    if let Err(e) = run(&ctx, info, &options) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(
    ctx: &std::sync::Arc<cudarc::driver::CudaContext>,
    info: &'static KernelInfo,
    o: &Options,
) -> Result<(), Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let (m, n, k) = (o.m, o.n, o.k);
    let (sa, sb, sd) = (
        MatrixShape::packed(m, k, info.layout_a),
        MatrixShape::packed(k, n, info.layout_b),
        MatrixShape::packed(m, n, info.layout_c),
    );
    let a_host = verify::random_values(info.element_a, m * k, 1);
    let b_host = verify::random_values(info.element_b, k * n, 2);
    let a = stream.clone_htod(&verify::encode(info.element_a, &a_host))?;
    let b = stream.clone_htod(&verify::encode(info.element_b, &b_host))?;
    let d = stream.clone_htod(&verify::encode(info.element_c, &vec![f64::NAN; m * n]))?;
    let (pa, _ga) = a.device_ptr(&stream);
    let (pb, _gb) = b.device_ptr(&stream);
    let (pd, _gd) = d.device_ptr(&stream);
    let operands = GemmOperands {
        a: Operand {
            shape: sa,
            len: m * k,
            address: pa,
        },
        b: Operand {
            shape: sb,
            len: k * n,
            address: pb,
        },
        c: None,
        d: Operand {
            shape: sd,
            len: m * n,
            address: pd,
        },
        alpha: 1.0,
        beta: 0.0,
    };
    // SAFETY: the buffers above hold exactly these element types and lengths.
    let launch = || unsafe { cutlass_aot::gemm::launch_raw(info, &stream, &operands) };
    let first = Instant::now();
    launch()?; // loads the image and checks everything
    stream.synchronize()?;
    let first_call = first.elapsed();

    // Verify sampled elements against an f64 reference on the same (rounded) inputs.
    let out = verify::decode(info.element_c, &stream.clone_dtoh(&d)?);
    let (mut got, mut want) = (Vec::new(), Vec::new());
    let samples = verify::random_values(cutlass_aot::model::DType::F64, 2 * 512, 3);
    for pair in samples.chunks(2) {
        let i = ((pair[0] + 1.0) / 2.0 * (m - 1) as f64) as usize;
        let j = ((pair[1] + 1.0) / 2.0 * (n - 1) as f64) as usize;
        let dot: f64 = (0..k)
            .map(|p| {
                a_host[verify::offset(&sa, info.layout_a, 0, i, p)]
                    * b_host[verify::offset(&sb, info.layout_b, 0, p, j)]
            })
            .sum();
        got.push(out[verify::offset(&sd, info.layout_c, 0, i, j)]);
        want.push(verify::round_to(info.element_c, dot));
    }
    let unwritten = out.iter().filter(|v| v.is_nan()).count();
    let error = verify::relative_error(&got, &want);
    let verified = unwritten == 0 && error <= verify::tolerance(info);

    for _ in 0..5 {
        launch()?;
    }
    let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (ctx.new_event(timing)?, ctx.new_event(timing)?);
    let mut times = Vec::new();
    for _ in 0..o.iters {
        start.record(&stream)?;
        launch()?;
        end.record(&stream)?;
        end.synchronize()?;
        times.push(start.elapsed_ms(&end)? as f64 * 1e3);
    }
    times.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let median_us = times[times.len() / 2];
    let tflops = 2.0 * (m * n * k) as f64 / (median_us * 1e-6) / 1e12;
    let device_name = ctx.name()?;
    if o.json {
        println!(
            "{{\"device\": {:?}, \"op\": \"gemm\", \"kernel\": {:?}, \"dtype\": \"{}\", \"layout\": \"{}{}{}\", \"epilogue\": \"{}\", \"m\": {m}, \"n\": {n}, \"k\": {k}, \"batch\": 1, \"ours_us\": {median_us:.2}, \"ours_tflops\": {tflops:.1}, \"verified\": {verified}, \"rel_error\": {error:.3e}}}",
            device_name,
            info.name,
            if info.opclass == cutlass_aot::model::OpClass::TensorOp && info.element_a == cutlass_aot::model::DType::F32 { "tf32".to_string() } else { info.element_a.to_string() },
            info.layout_a.letter(),
            info.layout_b.letter(),
            info.layout_c.letter(),
            info.epilogue,
        );
    } else {
        println!("device:   {device_name}");
        println!("kernel:   {} ({})", info.rust_name, info.name);
        println!(
            "problem:  {m}x{n}x{k}, A {} {}-major, B {} {}-major, D {} {}-major",
            info.element_a, info.layout_a, info.element_b, info.layout_b, info.element_c, info.layout_c
        );
        println!(
            "first call (image load + launch + sync): {:.1} ms",
            first_call.as_secs_f64() * 1e3
        );
        println!("verified: {verified} ({} sampled elements, relative error {error:.2e}, tolerance {:.0e}, unwritten {unwritten})", got.len(), verify::tolerance(info));
        println!("time:     {median_us:.1} us (median of {})", o.iters);
        println!("rate:     {tflops:.1} TFLOP/s");
    }
    if !verified {
        return Err("result does not match the reference".into());
    }
    Ok(())
}
