//! This crate's tests, as a downstream user would write them: discovery over its own registry
//! (CPU), and its GEMM + RMSNorm against a host reference (GPU). Where no NVIDIA driver or device
//! exists, the GPU tests are reported *ignored* with the reason.

use std::sync::Arc;

use cutlass_aot::cudarc::driver::{CudaContext, CudaStream};
use cutlass_aot::custom::Args;
use cutlass_aot::half::f16;
use cutlass_aot::model::{DType, Layout};
use cutlass_aot::{device, Error, GemmProblem, KernelInfo};
use cutlass_aot_downstream_example::{kernels, project_and_normalize, rms_norm_for, Projection};
use libtest_mimic::{Arguments, Completion, Failed, Trial};

fn names<'a>(kernels: impl IntoIterator<Item = &'a KernelInfo>) -> Vec<&'a str> {
    kernels.into_iter().map(|k| k.rust_name).collect()
}

/// Only this manifest's kernels are in this crate; the core crate's families are off.
fn registry_has_only_this_crates_kernels() -> Result<(), Failed> {
    let gemms = names(kernels::REGISTRY.all().iter().copied());
    assert_eq!(gemms, ["proj_f16_sm80", "proj_f16_sm90", "proj_bf16_sm90"]);
    let own = names(kernels::REGISTRY.user_kernels().iter().copied());
    assert_eq!(own, ["rms_norm_f16_128", "rms_norm_f16_512"]);
    let core = names(cutlass_aot::kernels::REGISTRY.kernels());
    assert!(core.is_empty(), "the core crate was built with kernels: {core:?}");
    Ok(())
}

/// `get_kernels` over this crate's registry: by problem (types, layouts, device) and metadata.
fn gemm_discovery() -> Result<(), Failed> {
    let f16_problem = |cc| {
        GemmProblem::new(
            (300, 512, 256),
            (DType::F16, DType::F16, DType::F16),
            (Layout::Row, Layout::Column, Layout::Row),
        )
        .on_compute_capability(cc)
    };
    let hopper = f16_problem(90);
    let found = names(kernels::REGISTRY.get_kernels(&hopper, |_| true));
    assert_eq!(found, ["proj_f16_sm80", "proj_f16_sm90"]);
    let ampere = f16_problem(80);
    assert_eq!(
        names(kernels::REGISTRY.get_kernels(&ampere, |_| true)),
        ["proj_f16_sm80"]
    );
    let k64 = names(kernels::REGISTRY.get_kernels(&hopper, |k| k.tile().k == 64));
    assert_eq!(k64, ["proj_f16_sm90"]);
    assert!(kernels::REGISTRY
        .get_kernels(&hopper, |k| k.tile().m == 256)
        .next()
        .is_none());
    let bf16 = GemmProblem::new(
        (64, 64, 64),
        (DType::Bf16, DType::Bf16, DType::Bf16),
        (Layout::Row, Layout::Column, Layout::Row),
    )
    .on_compute_capability(90);
    assert_eq!(
        names(kernels::REGISTRY.get_kernels(&bf16, |_| true)),
        ["proj_bf16_sm90"]
    );
    // A layout no kernel here has: none, and each kernel says why.
    let nn = GemmProblem::new(
        (64, 64, 64),
        (DType::F16, DType::F16, DType::F16),
        (Layout::Column, Layout::Column, Layout::Row),
    );
    assert!(kernels::REGISTRY.get_kernels(&nn, |_| true).next().is_none());
    let why = kernels::REGISTRY.all()[0].supports(&nn).unwrap_err().to_string();
    assert!(why.contains("A is column-major"), "{why}");
    Ok(())
}

fn value(i: usize, salt: usize) -> f32 {
    // Small exact f16 values in [-1, 1].
    ((i * 7919 + salt * 104729) % 257) as f32 / 128.0 - 1.0
}

/// The host reference of `project_and_normalize`: the GEMM in f32 rounded to f16 (as the kernel
/// stores it), then RMSNorm in f32.
fn reference(p: Projection, x: &[f16], w: &[f16], gamma: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0; p.tokens * p.d_out];
    for t in 0..p.tokens {
        let h: Vec<f32> = (0..p.d_out)
            .map(|o| {
                let dot: f32 = (0..p.d_in)
                    .map(|i| x[t * p.d_in + i].to_f32() * w[o * p.d_in + i].to_f32())
                    .sum();
                f16::from_f32(dot).to_f32()
            })
            .collect();
        let inv_rms = 1.0 / (h.iter().map(|v| v * v).sum::<f32>() / p.d_out as f32 + p.eps).sqrt();
        for o in 0..p.d_out {
            y[t * p.d_out + o] = h[o] * inv_rms * gamma[o];
        }
    }
    y
}

fn project_matches_host(stream: &Arc<CudaStream>) -> Result<(), Failed> {
    // Narrow and wide rows (both RMSNorm variants), aligned and ragged extents (the latter staged
    // by dispatch), one token.
    let shapes = [(33, 72, 200), (256, 512, 4096), (5, 100, 3000), (1, 64, 8)];
    for (tokens, d_in, d_out) in shapes {
        let p = Projection {
            tokens,
            d_in,
            d_out,
            eps: 1e-5,
        };
        let x: Vec<f16> = (0..tokens * d_in).map(|i| f16::from_f32(value(i, 1))).collect();
        let w: Vec<f16> = (0..d_out * d_in)
            .map(|i| f16::from_f32(value(i, 2) / 8.0))
            .collect();
        let gamma: Vec<f32> = (0..d_out).map(|i| 0.5 + value(i, 3).abs()).collect();
        let dx = stream.clone_htod(&x)?;
        let dw = stream.clone_htod(&w)?;
        let dgamma = stream.clone_htod(&gamma)?;
        let mut h = stream.alloc_zeros::<f16>(tokens * d_out)?;
        let mut y = stream.alloc_zeros::<f16>(tokens * d_out)?;
        let ran = project_and_normalize(stream, p, &dx, &dw, &dgamma, &mut h, &mut y)?;
        let got = stream.clone_dtoh(&y)?;
        let want = reference(p, &x, &w, &gamma);
        let threads = if d_out >= 2048 { "512" } else { "128" };
        assert!(
            ran.norm.rust_name.ends_with(threads),
            "{p:?} ran {}",
            ran.norm.rust_name
        );
        for (i, (g, r)) in got.iter().zip(&want).enumerate() {
            let err = (g.to_f32() - r).abs();
            if err > 2e-2 + 1e-2 * r.abs() {
                return Err(format!(
                    "{p:?} ({}, {}): y[{i}] = {} but the host says {r}",
                    ran.gemm.describe(),
                    ran.norm.rust_name,
                    g.to_f32()
                )
                .into());
            }
        }
    }
    Ok(())
}

fn refusals(stream: &Arc<CudaStream>) -> Result<(), Failed> {
    let p = Projection {
        tokens: 4,
        d_in: 64,
        d_out: 256,
        eps: 1e-5,
    };
    let dx = stream.alloc_zeros::<f16>(4 * 64)?;
    let dw = stream.alloc_zeros::<f16>(256 * 64)?;
    let dgamma = stream.alloc_zeros::<f32>(256)?;
    let mut h = stream.alloc_zeros::<f16>(4 * 256)?;
    let mut short_y = stream.alloc_zeros::<f16>(4 * 256 - 1)?;
    let e = project_and_normalize(stream, p, &dx, &dw, &dgamma, &mut h, &mut short_y).unwrap_err();
    assert!(e.to_string().contains("y holds 1023 elements"), "{e}");
    // Too short a gamma: refused by the user kernel's generated length check, naming the buffer.
    let short_gamma = stream.alloc_zeros::<f32>(255)?;
    let mut y = stream.alloc_zeros::<f16>(4 * 256)?;
    let e = project_and_normalize(stream, p, &dx, &dw, &short_gamma, &mut h, &mut y).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("gamma"),
        "{e}"
    );
    // A leading dimension below the row: the manifest's reason.
    let args = Args::new(stream)
        .scalar("rows", 4i32)
        .scalar("cols", 256i32)
        .input("x", &h)
        .scalar("ldx", 128i32)
        .input("gamma", &dgamma)
        .output("y", &mut y)
        .scalar("ldy", 256i32)
        .scalar("eps", 1e-5f32);
    let norm = rms_norm_for(256)?;
    assert_eq!(norm.rust_name, "rms_norm_f16_128");
    let why = norm.supports(&args).unwrap_err().to_string();
    assert!(why.contains("ldx and ldy must cover"), "{why}");
    assert!(kernels::REGISTRY
        .get_user_kernels(&args, |_| true)
        .next()
        .is_none());
    Ok(())
}

type GpuTest = fn(&Arc<CudaStream>) -> Result<(), Failed>;

fn main() {
    let gpu: Result<Arc<CudaContext>, String> = device::context(0).map_err(|e| e.to_string());
    let mut trials = vec![
        Trial::test(
            "registry_has_only_this_crates_kernels",
            registry_has_only_this_crates_kernels,
        ),
        Trial::test("gemm_discovery", gemm_discovery),
    ];
    let gpu_tests: [(&str, GpuTest); 2] = [
        ("project_and_normalize_matches_host", project_matches_host),
        ("refusals", refusals),
    ];
    for (name, body) in gpu_tests {
        let gpu = gpu.clone();
        trials.push(Trial::ignorable_test(name, move || match gpu {
            Err(reason) => Ok(Completion::ignored_with(format!("needs a GPU: {reason}"))),
            Ok(ctx) => body(&ctx.default_stream()).map(|()| Completion::Completed),
        }));
    }
    libtest_mimic::run(&Arguments::from_args(), trials).exit();
}
