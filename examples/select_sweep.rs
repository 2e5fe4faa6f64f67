//! Measures a selection table on random GEMM problems: for each problem, the ways dispatch would
//! weigh (`dispatch::ways`: every kernel in both orientations, at its split-K counts, directly or
//! after staging) are ranked by the engine with the embedded table, and the `--top` of them (and the
//! best of each orientation) are timed, each kernel on packed operands of the problem as it runs it
//! (the way's table key); the crate's skinny kernels run through dispatch itself (their
//! orientation and partial sums), steered onto the way by a table that times it fastest. Every
//! time becomes a row of the table written to `--out` (the format the build embeds,
//! `cutlass_aot_build::table`); each problem's fastest way is also printed.
//!
//! ```text
//! cargo run --release --example select_sweep -- --count 300 --seed 11 --dtype f16,bf16 --out t.tsv
//! ```
//! Problems come from `common::sweeps::random_problems`, as `dispatch_bench --random` draws them
//! (with another seed, the two sets do not overlap).

mod common;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use common::{Extents, GemmData, Pools, Spinner, Types};
use cudarc::driver::{CudaContext, CudaStream};
use cutlass_aot::dispatch::{self, Signature};
use cutlass_aot::kernels::{self, REGISTRY};
use cutlass_aot::model::DType;
use cutlass_aot::select::{Key, Row, NO_TABLE};
use cutlass_aot::{gemm, GemmOperands, MatrixShape, Operand};

const USAGE: &str = "\
usage: select_sweep --out TABLE.tsv [options]
  --count N       random problems (default 100), --seed S (default 11)
  --dtype T,...   f16 bf16 f32 f64 (default f16,bf16)
  --top N         ways timed per problem, best estimated first (default 10)
  --iters N       timed launches per way (default 10; fewer where a launch is long)";

struct Settings {
    count: usize,
    seed: u64,
    dtypes: Vec<DType>,
    top: usize,
    iters: usize,
    out: String,
}

fn parse(args: &[String]) -> Result<Settings, String> {
    let mut o = Settings {
        count: 100,
        seed: 11,
        dtypes: vec![DType::F16, DType::Bf16],
        top: 10,
        iters: 10,
        out: String::new(),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
        let number = |v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{flag}: {v:?} is not a count"))
        };
        match flag.as_str() {
            "--count" => o.count = number(value()?)?,
            "--seed" => o.seed = number(value()?)? as u64,
            "--top" => o.top = number(value()?)?.max(1),
            "--iters" => o.iters = number(value()?)?.max(3),
            "--out" => o.out = value()?,
            "--dtype" => {
                o.dtypes = value()?
                    .split(',')
                    .map(common::sweeps::parse_float_dtype)
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(USAGE.to_string()),
        }
    }
    if o.out.is_empty() {
        return Err(USAGE.to_string());
    }
    Ok(o)
}

/// Packed operands of the problem a key describes (as its kernel runs it), from the pools.
fn data_of(stream: &Arc<CudaStream>, pools: &mut Pools, key: &Key) -> Result<GemmData, String> {
    let [la, lb, lc] = key.layouts.ok_or("a GEMM key has layouts")?;
    let [a, b, c] = key.elements;
    let [m, n, k, batch, ..] = key.dims;
    let types = Types {
        a,
        b,
        c,
        layout_a: la,
        layout_b: lb,
        layout_c: lc,
    };
    GemmData::new(stream, pools, Extents { m, n, k, batch }, types, false).map_err(|e| e.to_string())
}

/// A way the sweep times: its key and launch, and the problem whose operands it runs on.
struct Picked {
    key: Key,
    kernel: &'static cutlass_aot::KernelInfo,
    split_k: usize,
    data_key: Key,
    skinny: bool,
}

/// Tables timing every way of a problem, `forced` fastest by far: dispatch takes it.
fn forcing_table(
    device: &cutlass_aot::device::DeviceProps,
    ways: &[(Key, &'static cutlass_aot::KernelInfo, usize)],
    forced: (Key, &'static cutlass_aot::KernelInfo, usize),
) -> &'static [cutlass_aot::select::Table] {
    let is_forced = |w: &(Key, &cutlass_aot::KernelInfo, usize)| {
        w.0 == forced.0 && std::ptr::eq(w.1, forced.1) && w.2 == forced.2
    };
    let rows: Vec<Row> = ways
        .iter()
        .map(|w| {
            Row::new(
                w.0,
                w.1,
                w.2,
                Default::default(),
                if is_forced(w) { 1.0 } else { 1e3 },
            )
        })
        .collect();
    let table = cutlass_aot::select::Table::new(device.name, "sweep", Box::leak(rows.into_boxed_slice()));
    Box::leak(vec![table].into_boxed_slice())
}

/// The user's packed operands at stand-in addresses (only alignment matters to the ways).
fn user_operands(layouts: [cutlass_aot::model::Layout; 3], e: Extents) -> GemmOperands {
    let op = |rows: usize, cols: usize, layout, at: u64| Operand {
        shape: MatrixShape {
            batch_count: e.batch,
            batch_stride: rows * cols,
            ..MatrixShape::packed(rows, cols, layout)
        },
        len: rows * cols * e.batch,
        address: at << 36,
    };
    GemmOperands {
        a: op(e.m, e.k, layouts[0], 1),
        b: op(e.k, e.n, layouts[1], 2),
        c: None,
        d: op(e.m, e.n, layouts[2], 3),
        alpha: 1.0,
        beta: 0.0,
        split_k_slices: 1,
        fusion: Default::default(),
    }
}

fn run(ctx: &Arc<CudaContext>, o: &Settings) -> Result<(), String> {
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let device = cutlass_aot::device::props(ctx).map_err(|e| e.to_string())?;
    let table = cutlass_aot::select::table_for(kernels::TABLES, device.name, device.compute_capability)
        .unwrap_or(&NO_TABLE);
    let spinner = Spinner::new(ctx).ok();
    let mut pools = Pools::new(stream.clone());
    let mut text = cutlass_aot::select::table::tsv_header(device.name, &common::utc_date());
    let problems = common::sweeps::random_problems(o.count, o.seed, &o.dtypes);
    for (index, &(dtype, layouts, e)) in problems.iter().enumerate() {
        let signature = Signature::uniform(dtype, layouts);
        let user = user_operands(layouts, e);
        let candidates = dispatch::ways(&REGISTRY, signature, &user, &device, Default::default());
        let every_way: Vec<(Key, &'static cutlass_aot::KernelInfo, usize)> =
            candidates.iter().map(|c| (c.key, c.kernel, c.split_k)).collect();
        let mut ranked = dispatch::context(table, &device).estimate_all(candidates, &[]);
        ranked.sort_by(|a, b| a.estimate_us.total_cmp(&b.estimate_us));
        // The top ways, then the best of each orientation and of direct and staged ways.
        let mut picked: Vec<Picked> = Vec::new();
        let mut seen_kinds = BTreeMap::new();
        for r in &ranked {
            let kind = (format!("{:?}", r.way.orientation), r.way.staged.is_some());
            let first_of_kind = seen_kinds.insert(kind, ()).is_none();
            let known = picked
                .iter()
                .any(|p| p.key == r.key && std::ptr::eq(p.kernel, r.kernel) && p.split_k == r.split_k);
            if (picked.len() < o.top || first_of_kind) && !known {
                let skinny = dispatch::skinny::elements_of(r.kernel).is_some();
                let transposed = r.way.orientation == dispatch::Orientation::Transposed;
                picked.push(Picked {
                    key: r.key,
                    kernel: r.kernel,
                    split_k: r.split_k,
                    // A skinny way runs through dispatch, on the problem as the user gave it.
                    data_key: match (skinny, transposed) {
                        (true, true) => dispatch::candidates::transposed_key(&r.key),
                        _ => r.key,
                    },
                    skinny,
                });
            }
        }
        let mut best: Option<(f64, String)> = None;
        // Operands per key, shared by the ways that run it.
        let mut data: std::collections::HashMap<Key, GemmData> = std::collections::HashMap::new();
        for Picked {
            key,
            kernel,
            split_k,
            data_key,
            skinny,
        } in picked
        {
            let kernel_split = if skinny { 1 } else { split_k };
            let operands = match data.entry(data_key) {
                std::collections::hash_map::Entry::Occupied(d) => {
                    d.get().operands_split(1.0, 0.0, kernel_split)
                }
                std::collections::hash_map::Entry::Vacant(slot) => slot
                    .insert(data_of(&stream, &mut pools, &data_key)?)
                    .operands_split(1.0, 0.0, kernel_split),
            };
            // Skinny kernels launch through dispatch (orientation, partial sums), steered onto this
            // way by a table that times it alone.
            let forced = skinny.then(|| forcing_table(&device, &every_way, (key, kernel, split_k)));
            let launch = || match forced {
                // SAFETY (both): the buffers of `data` hold exactly the key's element types and
                // lengths.
                None => unsafe { gemm::launch_raw(kernel, &stream, &operands) },
                Some(tables) => unsafe {
                    dispatch::launch_raw_with(
                        &REGISTRY,
                        tables,
                        &stream,
                        signature,
                        &operands,
                        Default::default(),
                    )
                }
                .and_then(|ran| match ran.kernel {
                    Some(k) if std::ptr::eq(k, kernel) && ran.split_k == split_k => Ok(()),
                    other => Err(cutlass_aot::Error::invalid(
                        "select_sweep",
                        format!(
                            "dispatch ran {:?} split {}, not the forced way",
                            other.map(|k| k.rust_name),
                            ran.split_k
                        ),
                    )),
                }),
            };
            match common::time_launches(ctx, &stream, 2, o.iters, Some(0.05), spinner.as_ref(), launch) {
                Ok(t) => {
                    let row = Row::new(key, kernel, split_k, Default::default(), t.median_us.max(0.01));
                    text.push_str(&row.tsv_line());
                    text.push('\n');
                    if best.as_ref().map_or(true, |b| t.median_us < b.0) {
                        best = Some((t.median_us, format!("{} split {split_k}", kernel.rust_name)));
                    }
                }
                Err(why) => eprintln!("  {} split {split_k}: {why}", kernel.rust_name),
            }
        }
        if let Some((us, way)) = best {
            eprintln!(
                "[{}/{}] {dtype} {e} {:?}: fastest {us:.1} us ({way})",
                index + 1,
                problems.len(),
                layouts
            );
        }
    }
    std::fs::write(&o.out, text).map_err(|e| format!("{}: {e}", o.out))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(why) => {
            eprintln!("{why}");
            return ExitCode::from(2);
        }
    };
    let ctx = match cutlass_aot::device::context(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("select_sweep: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&ctx, &o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("select_sweep: {why}");
            ExitCode::FAILURE
        }
    }
}
