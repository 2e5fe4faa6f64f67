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
//!
//! After a change to a kernel, `--retime NAME` times again every way of the device's embedded
//! table whose kernel's name contains NAME (`--min-split N`: of N or more split-K slices), on the
//! row's own problem, and writes those rows; `bench/dispatch/replace_rows.py` puts them in place of
//! the old ones in `bench/dispatch/*.tsv` (same key, kernel and split). `--rows FILE` takes the rows
//! of a table file instead (rows taken out of the tables, or another device's).

mod common;
#[path = "common/table_file.rs"]
mod table_file;

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
  --iters N       timed launches per way (default 10; fewer where a launch is long)
  --retime NAME   instead of random problems: time again every way of the device's embedded
                  table whose kernel name contains NAME (after a change to that kernel), each on
                  its row's problem; rows of the ways dispatch no longer offers are reported
  --min-split N   with --retime, only the rows of N or more split-K slices (after a change to
                  the split-K reduction)
  --rows FILE     with --retime, the rows of this table file instead of the embedded table's
                  (repeatable; rows taken out of the tables, e.g. bench/results/*_stale_*.tsv.gz
                  unpacked)
  --with NAME     with --retime, also time on each of those problems every way dispatch offers
                  whose kernel name contains NAME (a new kernel's first rows)";

struct Settings {
    count: usize,
    seed: u64,
    dtypes: Vec<DType>,
    top: usize,
    iters: usize,
    out: String,
    retime: Option<String>,
    min_split: usize,
    /// Table files whose rows `--retime` times instead of the embedded table's.
    rows: Vec<String>,
    /// With `--retime`: also every way of kernels named like this on the same problems.
    with: Option<String>,
}

fn parse(args: &[String]) -> Result<Settings, String> {
    let mut o = Settings {
        count: 100,
        seed: 11,
        dtypes: vec![DType::F16, DType::Bf16],
        top: 10,
        iters: 10,
        out: String::new(),
        retime: None,
        min_split: 1,
        rows: Vec::new(),
        with: None,
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
            "--retime" => o.retime = Some(value()?),
            "--min-split" => o.min_split = number(value()?)?,
            "--rows" => o.rows.push(value()?),
            "--with" => o.with = Some(value()?),
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
    if (!o.rows.is_empty() || o.with.is_some()) && o.retime.is_none() {
        return Err(
            "--rows and --with apply to the problems --retime NAME times: add --retime NAME".to_string(),
        );
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
    ways: &[WayId],
    forced: WayId,
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

/// Times ways on packed operands, one set per problem as its ways run it.
struct Timer<'a> {
    ctx: &'a Arc<CudaContext>,
    stream: Arc<CudaStream>,
    device: cutlass_aot::device::DeviceProps,
    spinner: Option<Spinner>,
    pools: Pools,
    data: std::collections::HashMap<Key, GemmData>,
    iters: usize,
}

impl Timer<'_> {
    /// The median time of `way` in microseconds; `every_way` are the ways of its problem (a
    /// skinny way runs through dispatch, steered onto it by a table that times it alone).
    fn time(&mut self, signature: Signature, every_way: &[WayId], way: &Picked) -> Result<f64, String> {
        let (kernel, split_k) = (way.kernel, way.split_k);
        let kernel_split = if way.skinny { 1 } else { split_k };
        let data = match self.data.entry(way.data_key) {
            std::collections::hash_map::Entry::Occupied(d) => d.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(data_of(&self.stream, &mut self.pools, &way.data_key)?)
            }
        };
        let operands = data.operands_split(1.0, 0.0, kernel_split);
        let forced = way
            .skinny
            .then(|| forcing_table(&self.device, every_way, (way.key, kernel, split_k)));
        let stream = &self.stream;
        let launch = || match forced {
            // SAFETY (both): the buffers of `data` hold exactly the key's element types and
            // lengths.
            None => unsafe { gemm::launch_raw(kernel, stream, &operands) },
            Some(tables) => unsafe {
                dispatch::launch_raw_with(
                    &REGISTRY,
                    tables,
                    stream,
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
        common::time_launches(
            self.ctx,
            stream,
            2,
            self.iters,
            Some(0.05),
            self.spinner.as_ref(),
            launch,
        )
        .map(|t| t.median_us.max(0.01))
        .map_err(|why| format!("{} split {split_k}: {why}", kernel.rust_name))
    }
}

/// The ways the engine ranks first for the user's problem (`top` of them, then the best of each
/// orientation and of direct and staged ways).
fn top_ways(ranked: &[cutlass_aot::select::Estimated<dispatch::GemmWay>], top: usize) -> Vec<Picked> {
    let mut picked: Vec<Picked> = Vec::new();
    let mut seen_kinds = BTreeMap::new();
    for r in ranked {
        let kind = (format!("{:?}", r.way.orientation), r.way.staged.is_some());
        let first_of_kind = seen_kinds.insert(kind, ()).is_none();
        let known = picked
            .iter()
            .any(|p| p.key == r.key && std::ptr::eq(p.kernel, r.kernel) && p.split_k == r.split_k);
        if (picked.len() < top || first_of_kind) && !known {
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
    picked
}

/// A way as the timer's forcing tables name it: its key, kernel and split.
type WayId = (Key, &'static cutlass_aot::KernelInfo, usize);

/// The ways dispatch weighs for the user's problem (packed operands), and their names.
fn ways_of(
    device: &cutlass_aot::device::DeviceProps,
    dtype: DType,
    layouts: [cutlass_aot::model::Layout; 3],
    e: Extents,
) -> (
    Signature,
    Vec<cutlass_aot::select::Candidate<dispatch::GemmWay>>,
    Vec<WayId>,
) {
    let signature = Signature::uniform(dtype, layouts);
    let user = user_operands(layouts, e);
    let candidates = dispatch::ways(&REGISTRY, signature, &user, device, Default::default());
    let every_way = candidates.iter().map(|c| (c.key, c.kernel, c.split_k)).collect();
    (signature, candidates, every_way)
}

/// The problem a GEMM key describes, as a user gives it (the key's own orientation).
fn user_problem(key: &Key) -> Option<(DType, [cutlass_aot::model::Layout; 3], Extents)> {
    let [m, n, k, batch, ..] = key.dims;
    (key.op == "gemm").then_some((key.elements[0], key.layouts?, Extents { m, n, k, batch }))
}

fn run(ctx: &Arc<CudaContext>, o: &Settings) -> Result<(), String> {
    let stream = ctx.new_stream().map_err(|e| e.to_string())?;
    let device = cutlass_aot::device::props(ctx).map_err(|e| e.to_string())?;
    let table = cutlass_aot::select::device_table(kernels::TABLES, device.name, device.compute_capability)
        .unwrap_or(&NO_TABLE);
    let mut text = cutlass_aot::select::table::tsv_header(device.name, &common::utc_date());
    let mut timer = Timer {
        ctx,
        stream: stream.clone(),
        device,
        spinner: Spinner::new(ctx).ok(),
        pools: Pools::new(stream),
        data: Default::default(),
        iters: o.iters,
    };
    match &o.retime {
        Some(name) => {
            let rows: Vec<&Row> = if o.rows.is_empty() {
                table.rows.iter().collect()
            } else {
                table_file::read_rows(&o.rows, None)?
            };
            let with = o.with.as_deref();
            retime(&mut timer, &rows, (name, o.min_split, with), &mut text)?
        }
        None => sweep(&mut timer, table, o, &mut text)?,
    }
    std::fs::write(&o.out, text).map_err(|e| format!("{}: {e}", o.out))
}

/// Times the top ways of random problems.
fn sweep(
    timer: &mut Timer,
    table: &cutlass_aot::select::Table,
    o: &Settings,
    text: &mut String,
) -> Result<(), String> {
    let problems = common::sweeps::random_problems(o.count, o.seed, &o.dtypes);
    for (index, &(dtype, layouts, e)) in problems.iter().enumerate() {
        let (signature, candidates, every_way) = ways_of(&timer.device, dtype, layouts, e);
        let mut ranked = dispatch::context(table, &timer.device).estimate_all(candidates, &[]);
        ranked.sort_by(|a, b| a.estimate_us.total_cmp(&b.estimate_us));
        let mut best: Option<(f64, String)> = None;
        timer.data.clear();
        for way in top_ways(&ranked, o.top) {
            match timer.time(signature, &every_way, &way) {
                Ok(us) => {
                    let row = Row::new(way.key, way.kernel, way.split_k, Default::default(), us);
                    text.push_str(&row.tsv_line());
                    text.push('\n');
                    if best.as_ref().map_or(true, |b| us < b.0) {
                        best = Some((us, format!("{} split {}", way.kernel.rust_name, way.split_k)));
                    }
                }
                Err(why) => eprintln!("  {why}"),
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
    Ok(())
}

/// Times again, on its own problem, every way of `rows` whose kernel's name contains `name`
/// (and, with `with`, every way of that problem whose kernel's name contains it).
fn retime(
    timer: &mut Timer,
    rows: &[&Row],
    (name, min_split, with): (&str, usize, Option<&str>),
    text: &mut String,
) -> Result<(), String> {
    let mut by_key: BTreeMap<String, (Key, Vec<&Row>)> = BTreeMap::new();
    let chosen = |r: &&Row| r.kernel.rust_name.contains(name) && r.split_k >= min_split;
    for row in rows.iter().copied().filter(chosen) {
        by_key
            .entry(format!("{:?}", row.key))
            .or_insert((row.key, Vec::new()))
            .1
            .push(row);
    }
    let (mut timed, mut missing) = (0, 0);
    for (index, (key, rows)) in by_key.values().enumerate() {
        let Some((dtype, layouts, e)) = user_problem(key) else {
            missing += rows.len();
            continue;
        };
        let (signature, candidates, every_way) = ways_of(&timer.device, dtype, layouts, e);
        timer.data.clear();
        let mut done = std::collections::HashSet::new();
        let mut picked = Vec::new();
        for row in rows {
            let offered = candidates
                .iter()
                .find(|c| c.key == row.key && std::ptr::eq(c.kernel, row.kernel) && c.split_k == row.split_k);
            match offered {
                Some(c) => picked.push((c, row.tuning)),
                None => {
                    eprintln!(
                        "  {:?} {} split {}: not a way dispatch offers",
                        key.dims, row.kernel.rust_name, row.split_k
                    );
                    missing += 1;
                }
            }
        }
        if let Some(with) = with {
            let named = |c: &&cutlass_aot::select::Candidate<dispatch::GemmWay>| {
                c.key == *key && c.kernel.rust_name.contains(with)
            };
            picked.extend(candidates.iter().filter(named).map(|c| (c, Default::default())));
        }
        for (c, tuning) in picked {
            if !done.insert((c.kernel.rust_name, c.split_k)) {
                continue;
            }
            let way = Picked {
                key: c.key,
                kernel: c.kernel,
                split_k: c.split_k,
                data_key: c.key,
                skinny: dispatch::skinny::elements_of(c.kernel).is_some(),
            };
            match timer.time(signature, &every_way, &way) {
                Ok(us) => {
                    text.push_str(&Row::new(way.key, way.kernel, way.split_k, tuning, us).tsv_line());
                    text.push('\n');
                    timed += 1;
                }
                Err(why) => eprintln!("  {why}"),
            }
        }
        if index % 50 == 0 {
            eprintln!("[{}/{}] {timed} ways timed", index + 1, by_key.len());
        }
    }
    eprintln!(
        "retimed {timed} ways of {} problems ({missing} rows not offered)",
        by_key.len()
    );
    Ok(())
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
