//! A deployment binary: built with the cargo feature `static-cxx`, it needs only the C library and
//! the NVIDIA driver (`ldd target/release/examples/deploy`; README, "Deployment binaries"). It runs
//! one f16 GEMM on device 0 through `dispatch::run`, checks sampled elements against an f64 host
//! reference and says what ran.
//!
//!     cargo build --release --features static-cxx --example deploy
//!
//! Exit status: 0 verified, 1 a failed launch or a wrong result, 2 no driver or no GPU.

use cutlass_aot::half::f16;
use cutlass_aot::model::DType;
use cutlass_aot::{device, dispatch, verify, ColumnMajor, MatrixMut, MatrixRef, RowMajor};

const M: usize = 2048;
const N: usize = 1024;
const K: usize = 512;
/// Elements of D compared with the reference.
const SAMPLES: usize = 512;

fn main() {
    let ctx = match device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("deploy: nothing was run: {e}");
            std::process::exit(2);
        }
    };
    match run(&ctx) {
        Ok(true) => println!("PASS"),
        Ok(false) => {
            println!("FAIL: the result does not match the reference");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("deploy: error: {e}");
            std::process::exit(1);
        }
    }
}

/// Runs D (row-major M×N) = A (row-major M×K) · B (column-major K×N); whether D is right.
fn run(
    ctx: &std::sync::Arc<cutlass_aot::cudarc::driver::CudaContext>,
) -> Result<bool, Box<dyn std::error::Error>> {
    let stream = ctx.default_stream();
    let host_a = verify::random_values(DType::F16, M * K, 1);
    let host_b = verify::random_values(DType::F16, K * N, 2);
    let to_f16 = |v: &[f64]| v.iter().map(|&x| f16::from_f64(x)).collect::<Vec<_>>();
    let a = stream.clone_htod(&to_f16(&host_a))?;
    let b = stream.clone_htod(&to_f16(&host_b))?;
    let mut d = stream.alloc_zeros::<f16>(M * N)?;
    let ran = dispatch::run(
        &stream,
        MatrixRef::<f16, RowMajor>::new(&a, M, K),
        MatrixRef::<f16, ColumnMajor>::new(&b, K, N),
        None::<(MatrixRef<f16, RowMajor>, f64)>,
        MatrixMut::<f16, RowMajor>::new(&mut d, M, N),
        1.0,
    )?;
    let out = stream.clone_dtoh(&d)?;
    let kernel = ran.kernel.ok_or("dispatch launched nothing")?;

    // Sampled positions (the corners first), each compared with its f64 dot product rounded to f16.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let positions: Vec<(usize, usize)> = [(0, 0), (0, N - 1), (M - 1, 0), (M - 1, N - 1)]
        .into_iter()
        .chain((4..SAMPLES).map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (((state >> 33) as usize) % M, ((state >> 13) as usize) % N)
        }))
        .collect();
    let got: Vec<f64> = positions.iter().map(|&(r, c)| out[r * N + c].to_f64()).collect();
    let reference: Vec<f64> = positions
        .iter()
        .map(|&(r, c)| {
            let dot: f64 = (0..K).map(|i| host_a[r * K + i] * host_b[c * K + i]).sum();
            verify::round_to(DType::F16, dot)
        })
        .collect();
    let error = verify::relative_error(&got, &reference);
    let tolerance = verify::tolerance(kernel);

    println!("device:   {}", device::props(ctx)?.name);
    println!("problem:  {M}x{N}x{K} f16, A row-major, B column-major, D row-major");
    println!("ran:      {}", ran.describe());
    println!("verified: {SAMPLES} sampled elements, relative error {error:.2e} (tolerance {tolerance:.0e})");
    Ok(error <= tolerance)
}
