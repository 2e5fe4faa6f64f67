//! GPU suite of user kernels (`kind: custom`): the CUTLASS API's bring-your-own-kernel example in
//! Rust — a naive f64 GEMM of our own source (examples/byo_kernel/naive_gemm.cu) with tiles 32×32
//! and 16×16 and the layouts of A and B as a family — discovered through a metadata filter, run and
//! checked against an f64 host reference; a filter on tile M = 256 finds none. Every variant runs
//! ragged, padded problems with `beta ≠ 0` through its typed `run`, and bad arguments are refused
//! before anything is launched.
//!
//! Where no NVIDIA driver or device exists, every test is reported *ignored* with the reason.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cutlass_aot::custom::{self, Args};
use cutlass_aot::kernels::{self, REGISTRY};
use cutlass_aot::model::custom::DesignValue;
use cutlass_aot::model::OperationKind;
use cutlass_aot::{device, Error, KernelInfo};
use libtest_mimic::{Arguments, Failed, Trial};

#[path = "common/gpu_trial.rs"]
mod gpu_trial;

/// Elements of poison behind D, which no kernel may write.
const TAIL: usize = 16;
const POISON: f64 = -777.0;

/// A GEMM problem in the naive kernel's terms.
#[derive(Clone, Copy, Debug)]
struct Problem {
    m: usize,
    n: usize,
    k: usize,
    a_row: bool,
    b_row: bool,
    /// Padding added to each leading dimension.
    pad: usize,
    alpha: f64,
    beta: f64,
}

struct Operands {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    lda: usize,
    ldb: usize,
    ldd: usize,
}

fn value(i: usize, salt: usize) -> f64 {
    // Inputs in [-1, 1], exactly representable, different per operand.
    ((i * 7919 + salt * 104729) % 2001) as f64 / 1000.0 - 1.0
}

impl Problem {
    fn operands(&self) -> Operands {
        let lda = if self.a_row { self.k } else { self.m } + self.pad;
        let ldb = if self.b_row { self.n } else { self.k } + self.pad;
        let ldd = self.n + self.pad;
        let a_len = if self.a_row { self.m * lda } else { self.k * lda };
        let b_len = if self.b_row { self.k * ldb } else { self.n * ldb };
        Operands {
            a: (0..a_len).map(|i| value(i, 1)).collect(),
            b: (0..b_len).map(|i| value(i, 2)).collect(),
            c: (0..self.m * ldd).map(|i| value(i, 3)).collect(),
            lda,
            ldb,
            ldd,
        }
    }

    /// D = alpha·A·B + beta·C on the host.
    fn reference(&self, o: &Operands) -> Vec<f64> {
        let mut d = vec![0.0; self.m * o.ldd];
        for i in 0..self.m {
            for j in 0..self.n {
                let mut sum = 0.0;
                for kk in 0..self.k {
                    let a = if self.a_row {
                        o.a[i * o.lda + kk]
                    } else {
                        o.a[kk * o.lda + i]
                    };
                    let b = if self.b_row {
                        o.b[kk * o.ldb + j]
                    } else {
                        o.b[j * o.ldb + kk]
                    };
                    sum += a * b;
                }
                d[i * o.ldd + j] = self.alpha * sum + self.beta * o.c[i * o.ldd + j];
            }
        }
        d
    }
}

fn layout_of(kernel: &KernelInfo, key: &str) -> Option<&'static str> {
    match kernel.design.as_custom()?.value(key)? {
        DesignValue::Word(w) => Some(w),
        DesignValue::Int(_) => None,
    }
}

/// Compares D (with its poisoned tail) with the reference over the m×n part.
fn check(problem: &Problem, o: &Operands, d: &[f64]) -> Result<(), Failed> {
    let want = problem.reference(o);
    for i in 0..problem.m {
        for j in 0..problem.n {
            let (got, want) = (d[i * o.ldd + j], want[i * o.ldd + j]);
            if (got - want).abs() > 1e-12 * (1.0 + want.abs()) {
                return Err(format!("{problem:?}: D[{i}][{j}] = {got}, expected {want}").into());
            }
        }
    }
    if d[problem.m * o.ldd..].iter().any(|&x| x != POISON) {
        return Err(format!("{problem:?}: the kernel wrote past D").into());
    }
    Ok(())
}

struct Device {
    a: CudaSlice<f64>,
    b: CudaSlice<f64>,
    c: CudaSlice<f64>,
    d: CudaSlice<f64>,
}

fn upload(stream: &Arc<CudaStream>, o: &Operands) -> Result<Device, Failed> {
    let d = vec![POISON; o.c.len() + TAIL];
    let e = |e: cudarc::driver::DriverError| Failed::from(e.to_string());
    Ok(Device {
        a: stream.clone_htod(&o.a).map_err(e)?,
        b: stream.clone_htod(&o.b).map_err(e)?,
        c: stream.clone_htod(&o.c).map_err(e)?,
        d: stream.clone_htod(&d).map_err(e)?,
    })
}

fn args<'a>(stream: &'a Arc<CudaStream>, p: &Problem, o: &Operands, dev: &'a mut Device) -> Args<'a> {
    // D's buffer holds the poisoned tail: the kernel is told only its m rows.
    Args::new(stream)
        .scalar("m", p.m as i32)
        .scalar("n", p.n as i32)
        .scalar("k", p.k as i32)
        .scalar("alpha", p.alpha)
        .input("a", &dev.a)
        .scalar("lda", o.lda as i32)
        .input("b", &dev.b)
        .scalar("ldb", o.ldb as i32)
        .scalar("beta", p.beta)
        .input("c", &dev.c)
        .output("d", &mut dev.d)
        .scalar("ldd", o.ldd as i32)
}

fn download(stream: &Arc<CudaStream>, d: &CudaSlice<f64>) -> Result<Vec<f64>, Failed> {
    stream.clone_dtoh(d).map_err(|e| Failed::from(e.to_string()))
}

/// The seed's example: discovered through a metadata filter, run, checked; tile M = 256 finds none.
fn seed_example(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    let problem = Problem {
        m: 96,
        n: 80,
        k: 64,
        a_row: true,
        b_row: false,
        pad: 0,
        alpha: 1.0,
        beta: 0.0,
    };
    let o = problem.operands();
    let mut dev = upload(&stream, &o)?;
    let mut found = {
        let args = args(&stream, &problem, &o, &mut dev);
        let pick = |k: &KernelInfo| {
            k.tile().m == 32
                && layout_of(k, "layout_a") == Some("row")
                && layout_of(k, "layout_b") == Some("column")
        };
        let found: Vec<&'static KernelInfo> = REGISTRY.get_user_kernels(&args, pick).collect();
        let none: Vec<_> = REGISTRY.get_user_kernels(&args, |k| k.tile().m == 256).collect();
        if !none.is_empty() {
            return Err(format!(
                "a filter on tile M = 256 found {:?}",
                none.iter().map(|k| k.name).collect::<Vec<_>>()
            )
            .into());
        }
        found
    };
    if found.len() != 1 || found[0].operation.kind() != OperationKind::Custom {
        return Err(format!(
            "expected one user kernel, found {:?}",
            found.iter().map(|k| k.name).collect::<Vec<_>>()
        )
        .into());
    }
    let kernel = found.remove(0);
    // It is listed beside CUTLASS's kernels.
    if !REGISTRY.kernels().any(|k| std::ptr::eq(k, kernel)) || REGISTRY.by_name(kernel.name).is_none() {
        return Err("the user kernel is not in the registry's list of every kernel".into());
    }
    let mut args = args(&stream, &problem, &o, &mut dev);
    custom::launch(kernel, &mut args).map_err(|e| e.to_string())?;
    drop(args);
    check(&problem, &o, &download(&stream, &dev.d)?)
}

/// Every variant through its typed `run`, on ragged, padded problems with beta ≠ 0.
fn every_variant(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    let mut ran = 0;
    for kernel in REGISTRY.user_kernels() {
        let problem = Problem {
            m: 37,
            n: 45,
            k: 19,
            a_row: layout_of(kernel, "layout_a") == Some("row"),
            b_row: layout_of(kernel, "layout_b") == Some("row"),
            pad: 3,
            alpha: 1.5,
            beta: -0.5,
        };
        let o = problem.operands();
        let mut dev = upload(&stream, &o)?;
        let mut args = args(&stream, &problem, &o, &mut dev);
        custom::launch(kernel, &mut args).map_err(|e| format!("{}: {e}", kernel.name))?;
        drop(args);
        check(&problem, &o, &download(&stream, &dev.d)?)
            .map_err(|e| format!("{}: {:?}", kernel.name, e.message()))?;
        ran += 1;
    }
    // And one through the generated, typed function.
    let problem = Problem {
        m: 50,
        n: 33,
        k: 70,
        a_row: false,
        b_row: true,
        pad: 1,
        alpha: -1.0,
        beta: 2.0,
    };
    let o = problem.operands();
    let mut dev = upload(&stream, &o)?;
    kernels::naive_gemm_f64_16x16_column_row::run(
        &stream,
        problem.m as i32,
        problem.n as i32,
        problem.k as i32,
        problem.alpha,
        &dev.a,
        o.lda as i32,
        &dev.b,
        o.ldb as i32,
        problem.beta,
        &dev.c,
        &mut dev.d,
        o.ldd as i32,
    )
    .map_err(|e| e.to_string())?;
    check(&problem, &o, &download(&stream, &dev.d)?)?;
    if ran != 8 {
        return Err(format!("expected 8 user kernels, ran {ran}").into());
    }
    Ok(())
}

/// Bad arguments: refused with a reason that names them, and nothing is written.
fn refusals(ctx: &Arc<CudaContext>) -> Result<(), Failed> {
    let stream = ctx.default_stream();
    let kernel = &kernels::naive_gemm_f64_32x32_row_row::INFO;
    let problem = Problem {
        m: 40,
        n: 40,
        k: 40,
        a_row: true,
        b_row: true,
        pad: 0,
        alpha: 1.0,
        beta: 0.0,
    };
    let o = problem.operands();
    let mut dev = upload(&stream, &o)?;
    let short = stream.alloc_zeros::<f64>(10).map_err(|e| e.to_string())?;
    let expect = |result: Result<(), Error>, needles: &[&str]| -> Result<(), Failed> {
        match result {
            Err(Error::InvalidArgument { message, .. }) if needles.iter().all(|n| message.contains(n)) => {
                Ok(())
            }
            other => Err(format!("expected a refusal naming {needles:?}, got {other:?}").into()),
        }
    };
    // A too-short A.
    let mut a = args(&stream, &problem, &o, &mut dev).input("a", &short);
    expect(
        custom::launch(kernel, &mut a),
        &["buffer `a` holds 10 elements", "with m = 40, k = 40, lda = 40"],
    )?;
    drop(a);
    // lda below the extent.
    let mut a = args(&stream, &problem, &o, &mut dev).scalar("lda", 20i32);
    expect(
        custom::launch(kernel, &mut a),
        &["lda must cover A's contiguous extent"],
    )?;
    drop(a);
    // A missing argument, one of the wrong type and an unknown one, all at once.
    let mut a = Args::new(&stream).scalar("m", 4i64).scalar("q", 1i32);
    expect(
        custom::launch(kernel, &mut a),
        &[
            "argument `m` is an i64 but the kernel takes an i32",
            "argument `n` is missing",
            "no parameter `q`",
        ],
    )?;
    drop(a);
    // Empty m: the requirement says why.
    let mut a = args(&stream, &problem, &o, &mut dev).scalar("m", 0i32);
    expect(custom::launch(kernel, &mut a), &["m, n and k must be positive"])?;
    drop(a);
    // supports() says the same thing without launching.
    let a = args(&stream, &problem, &o, &mut dev).input("b", &short);
    let why = kernel
        .supports(&a)
        .err()
        .map(|u| u.to_string())
        .unwrap_or_default();
    if !why.contains("buffer `b` holds 10 elements") {
        return Err(format!("supports() should refuse a short B, said {why:?}").into());
    }
    drop(a);
    // A CUTLASS kernel is not launched through the user-kernel path.
    let gemm = REGISTRY.all()[0];
    let mut a = Args::new(&stream);
    expect(custom::launch(gemm, &mut a), &["not a user kernel"])?;
    let d = download(&stream, &dev.d)?;
    if d.iter().any(|&x| x != POISON) {
        return Err("a refused launch wrote to D".into());
    }
    Ok(())
}

fn main() {
    let gpu = device::context(0).map_err(|e| e.to_string());
    let tests: Vec<(&str, gpu_trial::GpuTest)> = vec![
        ("byo_seed_example_filter_run_check", Box::new(seed_example)),
        ("byo_every_variant_ragged_padded_beta", Box::new(every_variant)),
        ("byo_refusals_name_the_argument", Box::new(refusals)),
    ];
    let trials: Vec<Trial> = tests
        .into_iter()
        .map(|(name, body)| gpu_trial::trial(&gpu, name.to_string(), body))
        .collect();
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
