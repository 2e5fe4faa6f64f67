//! A downstream crate of cutlass-aot: it chooses its kernels at compile time in its own
//! `kernel_manifest.yaml` (a projection GEMM per architecture and an RMSNorm kernel of its own
//! source), builds them with `cutlass-aot-build` in its build.rs, and runs them through
//! cutlass-aot's runtime. The core crate is used with `default-features = false`, so none of its
//! kernel families are compiled into this crate: `cutlass_aot::kernels::REGISTRY` is empty and
//! `kernels::REGISTRY` (this crate's) lists only the kernels below.
//!
//! [`project_and_normalize`] is what such a crate would export: `Y = rms_norm(X · Wᵀ) ⊙ gamma`, a
//! GEMM chosen from this crate's registry followed by its own kernel, both on the caller's stream.

use std::sync::Arc;

use cutlass_aot::cudarc::driver::{CudaSlice, CudaStream};
use cutlass_aot::custom::Args;
use cutlass_aot::half::f16;
use cutlass_aot::model::custom::DesignValue;
use cutlass_aot::{dispatch, ColumnMajor, Error, KernelInfo, MatrixMut, MatrixRef, RowMajor};

/// This crate's kernels: a module per kernel of kernel_manifest.yaml, and `REGISTRY`.
pub mod kernels {
    include!(env!("DOWNSTREAM_KERNELS_RS"));
}

/// A projection: `tokens` rows of `d_in` features onto `d_out` features, then RMSNorm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projection {
    pub tokens: usize,
    pub d_in: usize,
    pub d_out: usize,
    pub eps: f32,
}

/// What [`project_and_normalize`] ran.
#[derive(Clone, Debug)]
pub struct Ran {
    /// The GEMM (from this crate's registry) and why it was chosen.
    pub gemm: dispatch::Dispatched,
    /// The RMSNorm variant.
    pub norm: &'static KernelInfo,
}

/// The RMSNorm variant for rows of `cols` elements: 512 threads per row for wide rows, 128 for
/// narrow ones (fewer idle threads). Chosen by its design value alone, so that a launch with bad
/// arguments says which argument is wrong (`get_user_kernels` would only find none).
pub fn rms_norm_for(cols: usize) -> Result<&'static KernelInfo, Error> {
    let threads = if cols >= 2048 { 512 } else { 128 };
    kernels::REGISTRY
        .user_kernels()
        .iter()
        .copied()
        .find(|k| k.design.as_custom().and_then(|d| d.value("threads")) == Some(DesignValue::Int(threads)))
        .ok_or_else(|| {
            Error::invalid(
                "rms_norm",
                format!("no RMSNorm kernel of {threads} threads was built"),
            )
        })
}

/// `y = rms_norm(x · wᵀ) ⊙ gamma` on `stream`: `x` is `tokens × d_in` row-major, `w` is
/// `d_out × d_in` row-major (a linear layer's weight), `gamma` has `d_out` elements, `h` (the GEMM's
/// output) and `y` are `tokens × d_out` row-major. Every length is checked before anything runs on
/// the device; nothing is synchronised.
#[allow(clippy::too_many_arguments)]
pub fn project_and_normalize(
    stream: &Arc<CudaStream>,
    p: Projection,
    x: &CudaSlice<f16>,
    w: &CudaSlice<f16>,
    gamma: &CudaSlice<f32>,
    h: &mut CudaSlice<f16>,
    y: &mut CudaSlice<f16>,
) -> Result<Ran, Error> {
    let as_i32 = |what: &str, v: usize| {
        i32::try_from(v)
            .map_err(|_| Error::invalid("project_and_normalize", format!("{what} = {v} exceeds i32")))
    };
    let (rows, cols) = (as_i32("tokens", p.tokens)?, as_i32("d_out", p.d_out)?);
    if y.len() < p.tokens * p.d_out {
        return Err(Error::invalid(
            "project_and_normalize",
            format!(
                "y holds {} elements; tokens × d_out = {} are written",
                y.len(),
                p.tokens * p.d_out
            ),
        ));
    }
    let gemm = dispatch::run_in(
        &kernels::REGISTRY,
        kernels::TABLES,
        stream,
        MatrixRef::<f16, RowMajor>::new(x, p.tokens, p.d_in),
        MatrixRef::<f16, ColumnMajor>::new(w, p.d_in, p.d_out),
        None,
        MatrixMut::<f16, RowMajor>::new(h, p.tokens, p.d_out),
        1.0,
        dispatch::Options::default(),
    )?;
    let mut args = Args::new(stream)
        .scalar("rows", rows)
        .scalar("cols", cols)
        .input("x", &*h)
        .scalar("ldx", cols)
        .input("gamma", gamma)
        .output("y", y)
        .scalar("ldy", cols)
        .scalar("eps", p.eps);
    let norm = rms_norm_for(p.d_out)?;
    cutlass_aot::custom::launch(norm, &mut args)?;
    Ok(Ran { gemm, norm })
}
