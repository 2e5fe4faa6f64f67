//! Elementwise bandwidth: each operation of `cutlass_aot::elementwise` on large tensors (≥ 256 MiB
//! moved) beside a device-to-device copy of as many bytes in the same run, as JSON Lines (DESIGN
//! §6): `ours_gbps` and `copy_gbps` count bytes read plus bytes written. bench/compare_elementwise.py
//! adds torch's time for the same operation, measured on the same GPU right after.
//!
//! `cargo run --release --example elementwise_bench -- [--elements N] [--cols N] [--iters N] [--out FILE]`
//!
//! The tensors are contiguous `rows × cols` with `rows = elements / cols`; a `cols` that is not a
//! multiple of 16 makes their length end in a partial vector.

mod common;

use std::io::Write;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use cutlass_aot::elementwise::{self, Broadcast, Elementwise, Op, Shape, Tensor, TensorMut};
use cutlass_aot::half::{bf16, f16};
use cutlass_aot::model::elementwise::Combine;
use cutlass_aot::model::Activation;
use cutlass_aot::{device, Element, Error, F8E4M3};

use common::JsonRecord;

struct Options {
    elements: usize,
    cols: usize,
    iters: usize,
    out: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        elements: 128 << 20,
        cols: 4096,
        iters: 20,
        out: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--elements" => o.elements = value.parse().expect("--elements N"),
            "--cols" => o.cols = value.parse().expect("--cols N"),
            "--iters" => o.iters = value.parse().expect("--iters N"),
            "--out" => o.out = Some(value),
            other => panic!("unknown option {other}; allowed: --elements N --cols N --iters N --out FILE"),
        }
        i += 2;
    }
    o
}

/// A case: `name` (torch's side uses the same), the op, and how y is given.
#[derive(Clone, Copy)]
enum Y {
    None,
    Tensor,
    Row,
}

struct Bench<'a> {
    ctx: &'a Arc<CudaContext>,
    stream: &'a Arc<CudaStream>,
    o: &'a Options,
    device: String,
    date: String,
    lines: Vec<String>,
}

fn filled<T: DeviceRepr + ValidAsZeroBits + Copy>(
    stream: &Arc<CudaStream>,
    n: usize,
    f: impl Fn(usize) -> T,
) -> CudaSlice<T> {
    let host: Vec<T> = (0..n).map(f).collect();
    stream.clone_htod(&host).expect("upload")
}

impl Bench<'_> {
    fn copy_gbps(&self, bytes: usize) -> f64 {
        let src = self.stream.alloc_zeros::<u8>(bytes).expect("alloc");
        let mut dst = self.stream.alloc_zeros::<u8>(bytes).expect("alloc");
        let t = common::time_launches(self.ctx, self.stream, 3, self.o.iters, None, None, || {
            self.stream
                .memcpy_dtod(&src, &mut dst)
                .map_err(|error| Error::Driver {
                    context: "copy",
                    error,
                })
        })
        .expect("timing the copy");
        2.0 * bytes as f64 / (t.median_us * 1e3)
    }

    #[allow(clippy::too_many_arguments)]
    fn case<X, D>(&mut self, name: &str, op: Op, y: Y, x_of: impl Fn(usize) -> X, scale: f64, beta: f64)
    where
        X: Element + DeviceRepr + ValidAsZeroBits + Copy,
        D: Element + DeviceRepr + ValidAsZeroBits + Copy,
    {
        let cols = self.o.cols.max(1);
        let rows = (self.o.elements / cols).max(1);
        let n = rows * cols;
        let shape = Shape::new(1, rows, cols);
        let x = filled(self.stream, n, &x_of);
        let y_full = match y {
            Y::Tensor => Some(filled(self.stream, n, |i| x_of(i * 7 + 3))),
            _ => None,
        };
        let y_row = match y {
            Y::Row => Some(filled(self.stream, cols, |i| x_of(i * 5 + 1))),
            _ => None,
        };
        let mut d = self.stream.alloc_zeros::<D>(n).expect("alloc");
        let y_bytes = match y {
            Y::None => 0,
            Y::Tensor => n * std::mem::size_of::<X>(),
            Y::Row => cols * std::mem::size_of::<X>(),
        };
        let bytes = n * (std::mem::size_of::<X>() + std::mem::size_of::<D>()) + y_bytes;
        let mut kernel = None;
        let timing = common::time_launches(self.ctx, self.stream, 3, self.o.iters, None, None, || {
            let args = match (&y_full, &y_row) {
                (Some(y), _) => Elementwise::<X, X, D>::binary(
                    Tensor::new(&x, shape),
                    Broadcast::tensor(Tensor::new(y, shape)),
                    TensorMut::new(&mut d, shape),
                ),
                (_, Some(y)) => Elementwise::binary(
                    Tensor::new(&x, shape),
                    Broadcast::row(y),
                    TensorMut::new(&mut d, shape),
                ),
                _ => Elementwise::unary(Tensor::new(&x, shape), TensorMut::new(&mut d, shape)),
            };
            kernel = Some(elementwise::run(self.stream, op, args.beta(beta).scale(scale))?);
            Ok(())
        });
        let timing = match timing {
            Ok(t) => t,
            Err(e) => {
                eprintln!("elementwise_bench: {name}: {e}");
                return;
            }
        };
        // The copy of the same bytes right after, on the same device.
        let copy = self.copy_gbps(bytes / 2);
        let ours = bytes as f64 / (timing.median_us * 1e3);
        let record = JsonRecord::new()
            .str("bench", "elementwise")
            .str("op", name)
            .str("kernel", kernel.map_or("", |k| k.name))
            .str("x", &X::DTYPE.to_string())
            .str("d", &D::DTYPE.to_string())
            .str(
                "y",
                match y {
                    Y::None => "none",
                    Y::Tensor => "tensor",
                    Y::Row => "row",
                },
            )
            .int("rows", rows)
            .int("cols", cols)
            .int("bytes_moved", bytes)
            .num("ours_us", timing.median_us, 2)
            .num("ours_gbps", ours, 1)
            .num("copy_gbps", copy, 1)
            .num("ours_vs_copy", ours / copy, 3)
            .str("device", &self.device)
            .str("date", &self.date)
            .finish();
        println!("{record}");
        self.lines.push(record);
    }
}

fn main() {
    let o = options();
    let ctx = match device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("elementwise_bench: {e}");
            std::process::exit(2);
        }
    };
    let stream = ctx.default_stream();
    let mut b = Bench {
        ctx: &ctx,
        stream: &stream,
        o: &o,
        device: common::device_name(&ctx),
        date: common::utc_date(),
        lines: Vec::new(),
    };
    let h = |i: usize| f16::from_f32(((i * 7919) % 2001) as f32 / 1000.0 - 1.0);
    let bh = |i: usize| bf16::from_f32(((i * 7919) % 2001) as f32 / 1000.0 - 1.0);
    let f = |i: usize| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0;
    let unary = Op::unary;
    b.case::<f16, f16>("relu_f16", unary(Activation::Relu), Y::None, h, 1.0, 1.0);
    b.case::<f16, f16>("gelu_f16", unary(Activation::Gelu), Y::None, h, 1.0, 1.0);
    b.case::<bf16, bf16>("silu_bf16", unary(Activation::Silu), Y::None, bh, 1.0, 1.0);
    b.case::<f32, f32>("sigmoid_f32", unary(Activation::Sigmoid), Y::None, f, 1.0, 1.0);
    b.case::<f16, f16>("add_f16", Op::binary(Combine::Add), Y::Tensor, h, 1.0, 1.0);
    b.case::<bf16, bf16>("mul_bf16", Op::binary(Combine::Mul), Y::Tensor, bh, 1.0, 1.0);
    b.case::<f32, f32>("axpby_f32", Op::binary(Combine::Add), Y::Tensor, f, 1.0, 0.5);
    b.case::<f16, f16>("add_row_f16", Op::binary(Combine::Add), Y::Row, h, 1.0, 1.0);
    b.case::<f32, f16>(
        "convert_f32_to_f16",
        unary(Activation::Identity),
        Y::None,
        f,
        1.0,
        1.0,
    );
    b.case::<f16, f32>(
        "convert_f16_to_f32",
        unary(Activation::Identity),
        Y::None,
        h,
        1.0,
        1.0,
    );
    b.case::<bf16, f16>(
        "convert_bf16_to_f16",
        unary(Activation::Identity),
        Y::None,
        bh,
        1.0,
        1.0,
    );
    b.case::<f32, F8E4M3>(
        "convert_f32_to_e4m3",
        unary(Activation::Identity),
        Y::None,
        f,
        448.0,
        1.0,
    );
    b.case::<f16, F8E4M3>(
        "convert_f16_to_e4m3",
        unary(Activation::Identity),
        Y::None,
        h,
        448.0,
        1.0,
    );
    if let Some(path) = &o.out {
        let mut file = std::fs::File::create(path).expect("--out file");
        for line in &b.lines {
            writeln!(file, "{line}").expect("writing --out");
        }
    }
}
