//! Code the examples share (`gemm`, `profiler`, `host_overhead`): test data that fills even GiB-sized
//! operands in milliseconds, sampled verification against an f64 host reference, CUDA-event timing,
//! the UTC date, and JSON Lines records (DESIGN §6) written by hand — the records are flat, so no
//! JSON dependency is needed.
//!
//! Not every example uses every item.
#![allow(dead_code)]

pub mod sweeps;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use std::ffi::c_void;

use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DriverError,
};
use cutlass_aot::model::{DType, Layout, MathOp, OpClass, SplitK};
use cutlass_aot::verify;
use cutlass_aot::{GemmOperands, KernelInfo, MatrixShape, Operand};

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/// The `dtype` of a result record: A's type, or for f32 operands on tensor cores the math that
/// multiplies them: `tf32` (one TF32 product), `f32_3xtf32` (3xTF32: big and small TF32 parts,
/// f32 accuracy), `f32_fastf16` / `f32_fastbf16` (operands rounded to f16 / bf16). f32 on SIMT
/// cores stays `f32`.
pub fn dtype_label(info: &KernelInfo) -> String {
    if info.design.opclass() == OpClass::TensorOp && info.gemm().a.element == DType::F32 {
        match info.gemm().math {
            MathOp::MultiplyAddFastF32 => "f32_3xtf32",
            MathOp::MultiplyAddFastF16 => "f32_fastf16",
            MathOp::MultiplyAddFastBf16 => "f32_fastbf16",
            MathOp::MultiplyAdd | MathOp::MultiplyAddSaturate => "tf32",
        }
        .to_string()
    } else {
        info.gemm().a.element.to_string()
    }
}

/// Every `dtype` label [`dtype_label`] gives beyond the manifest's type names.
pub const F32_MATH_LABELS: [&str; 4] = ["tf32", "f32_3xtf32", "f32_fastf16", "f32_fastbf16"];

/// The layout letter's layout.
pub fn letter_layout(letter: char) -> Option<Layout> {
    match letter {
        't' | 'T' => Some(Layout::Row),
        'n' | 'N' => Some(Layout::Column),
        _ => None,
    }
}

/// A and B layout letters, e.g. `tn`.
pub fn layout_ab(info: &KernelInfo) -> String {
    format!(
        "{}{}",
        info.gemm().a.layout.letter(),
        info.gemm().b.layout.letter()
    )
}

/// A, B and C layout letters, e.g. `tnt` (CUTLASS's kernel-name suffix).
pub fn layout_abc(info: &KernelInfo) -> String {
    format!(
        "{}{}{}",
        info.gemm().a.layout.letter(),
        info.gemm().b.layout.letter(),
        info.gemm().c.layout.letter()
    )
}

/// The device's name, or `unknown device` if the driver cannot say.
pub fn device_name(ctx: &Arc<CudaContext>) -> String {
    ctx.name().unwrap_or_else(|_| "unknown device".to_string())
}

/// Prints `text` and a newline on stdout. Unlike `println!` it does not panic when stdout is gone
/// (a consumer such as `head` closed the pipe): the process then exits quietly with status 1.
pub fn out(text: impl std::fmt::Display) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{text}").and_then(|()| stdout.flush()).is_err() {
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------------------------
// Date
// ---------------------------------------------------------------------------------------------

/// Today's date in UTC, `YYYY-MM-DD`.
pub fn utc_date() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (y, m, d) = civil_from_days(seconds.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// (year, month, day) of the day `days` after 1970-01-01 in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/// `s` as a JSON string literal (quotes included).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One flat JSON object, fields in insertion order.
#[derive(Default)]
pub struct JsonRecord {
    fields: Vec<(String, String)>,
}

impl JsonRecord {
    pub fn new() -> Self {
        Self::default()
    }

    fn raw(mut self, key: &str, value: String) -> Self {
        self.fields.push((key.to_string(), value));
        self
    }

    pub fn str(self, key: &str, value: &str) -> Self {
        self.raw(key, json_string(value))
    }

    pub fn int(self, key: &str, value: usize) -> Self {
        self.raw(key, value.to_string())
    }

    /// A number with `decimals` decimals; `null` when not finite (JSON has no NaN or infinity).
    pub fn num(self, key: &str, value: f64, decimals: usize) -> Self {
        let text = if value.is_finite() {
            format!("{value:.decimals$}")
        } else {
            "null".to_string()
        };
        self.raw(key, text)
    }

    /// A number in scientific notation with 3 decimals (`1.234e-5`); `null` when not finite.
    pub fn sci(self, key: &str, value: f64) -> Self {
        let text = if value.is_finite() {
            format!("{value:.3e}")
        } else {
            "null".to_string()
        };
        self.raw(key, text)
    }

    pub fn bool(self, key: &str, value: bool) -> Self {
        self.raw(key, value.to_string())
    }

    pub fn null(self, key: &str) -> Self {
        self.raw(key, "null".to_string())
    }

    /// The object on one line, `{"key": value, ...}`.
    pub fn finish(&self) -> String {
        let body: Vec<String> = self
            .fields
            .iter()
            .map(|(k, v)| format!("{}: {v}", json_string(k)))
            .collect();
        format!("{{{}}}", body.join(", "))
    }
}

/// The identifying fields of a GEMM result record (DESIGN §6), up to the measurement: device,
/// date, op, kernel (CUTLASS name), rust_name, kernel metadata, dtype ([`dtype_label`]), dtype_b,
/// dtype_c, layout (A and B letters), layout_c, epilogue, math, m, n, k, batch, split_k (1),
/// alpha, beta.
pub fn gemm_record(
    device: &str,
    date: &str,
    info: &KernelInfo,
    e: Extents,
    alpha: f64,
    beta: f64,
) -> JsonRecord {
    gemm_record_split(device, date, info, e, 1, alpha, beta)
}

/// [`gemm_record`] of a launch with K split into `split_k` slices: `op` is `gemm_split_k` (DESIGN
/// §6) when `split_k` > 1, and `split_k_mode` says how the kernel splits (serial, parallel,
/// stream_k, none).
pub fn gemm_record_split(
    device: &str,
    date: &str,
    info: &KernelInfo,
    e: Extents,
    split_k: usize,
    alpha: f64,
    beta: f64,
) -> JsonRecord {
    JsonRecord::new()
        .str("device", device)
        .str("date", date)
        .str("op", if split_k > 1 { "gemm_split_k" } else { "gemm" })
        .str("kernel", info.name)
        .str("rust_name", info.rust_name)
        .str("api", &info.api().to_string())
        .str("schedule", &schedule(info).to_string())
        .str("tile_scheduler", &tile_scheduler(info).to_string())
        .str("tile", &info.tile().to_string())
        .str("cluster", &info.design.cluster().to_string())
        .str("dtype", &dtype_label(info))
        .str("dtype_b", &info.gemm().b.element.to_string())
        .str("dtype_c", &info.gemm().c.element.to_string())
        .str("layout", &layout_ab(info))
        .str("layout_c", info.gemm().c.layout.letter())
        .str("epilogue", &info.epilogue.kind.to_string())
        .str("math", &info.gemm().math.to_string())
        .int("m", e.m)
        .int("n", e.n)
        .int("k", e.k)
        .int("batch", e.batch)
        .int("split_k", split_k)
        .str("split_k_mode", &info.design.split_k().to_string())
        .num("alpha", alpha, 3)
        .num("beta", beta, 3)
}

/// The measurement fields of a GEMM result record: iters, ours_us (median), ours_us_mean,
/// ours_tflops, ours_gbps, then verified (`null` when not verified), rel_error (norm-wise over the
/// samples), max_abs_error (largest |D − reference| of a sample), tolerance, samples and unwritten
/// (when counted).
pub fn measurement_fields(
    r: JsonRecord,
    timing: &Timing,
    tflops: f64,
    gbps: f64,
    check: Option<&Check>,
) -> JsonRecord {
    let r = r
        .int("iters", timing.iters)
        .num("ours_us", timing.median_us, 2)
        .num("ours_us_mean", timing.mean_us, 2)
        .num("ours_tflops", tflops, 1)
        .num("ours_gbps", gbps, 1);
    match check {
        Some(c) => {
            let r = r
                .bool("verified", c.passed())
                .sci("rel_error", c.rel_error)
                .sci("max_abs_error", c.max_abs_error)
                .sci("tolerance", c.tolerance)
                .int("samples", c.samples);
            match c.unwritten {
                Some(n) => r.int("unwritten", n),
                None => r,
            }
        }
        None => r.null("verified"),
    }
}

// ---------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------

/// Median of `values` (the upper one of the middle two for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

// ---------------------------------------------------------------------------------------------
// Test data: periodic fills from a random pool
// ---------------------------------------------------------------------------------------------

/// Elements in a pool. Not a power of two, so rows of power-of-two matrices do not repeat.
pub const POOL_LEN: usize = (1 << 20) + 7;

/// Seeds of the A, B and C pools.
pub const SEED_A: u64 = 1;
pub const SEED_B: u64 = 2;
pub const SEED_C: u64 = 3;

/// One device-to-device copy of a periodic fill, in bytes: from the pool (`from_pool`) or from the
/// already filled start of the destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FillCopy {
    pub from_pool: bool,
    pub src: usize,
    pub dst: usize,
    pub bytes: usize,
}

/// The copies that make byte `i` of a `bytes`-long buffer equal to byte `i % pool_bytes` of the
/// pool: the pool once, then the filled prefix doubled until the buffer is full (a logarithmic
/// number of copies; each copy's source and destination are disjoint).
pub fn fill_plan(pool_bytes: usize, bytes: usize) -> Vec<FillCopy> {
    let mut plan = Vec::new();
    if bytes == 0 || pool_bytes == 0 {
        return plan;
    }
    let first = pool_bytes.min(bytes);
    plan.push(FillCopy {
        from_pool: true,
        src: 0,
        dst: 0,
        bytes: first,
    });
    let mut filled = first;
    while filled < bytes {
        // `filled` is a multiple of the pool here, so a copy of the prefix keeps the period.
        let n = filled.min(bytes - filled);
        plan.push(FillCopy {
            from_pool: false,
            src: 0,
            dst: filled,
            bytes: n,
        });
        filled += n;
    }
    plan
}

/// Random values of one type and seed, on the host (for the reference) and on the device.
pub struct Pool {
    pub dtype: DType,
    pub host: Arc<Vec<f64>>,
    pub device: CudaSlice<u8>,
}

/// Pools by (type, seed), uploaded once.
pub struct Pools {
    stream: Arc<CudaStream>,
    pools: Vec<((DType, u64), Pool)>,
}

impl Pools {
    pub fn new(stream: Arc<CudaStream>) -> Self {
        Pools {
            stream,
            pools: Vec::new(),
        }
    }

    pub fn get(&mut self, dtype: DType, seed: u64) -> Result<&Pool, DriverError> {
        let index = match self.pools.iter().position(|(key, _)| *key == (dtype, seed)) {
            Some(index) => index,
            None => {
                let host = verify::random_values(dtype, POOL_LEN, seed);
                let device = self.stream.clone_htod(&verify::encode(dtype, &host))?;
                self.pools.push((
                    (dtype, seed),
                    Pool {
                        dtype,
                        host: Arc::new(host),
                        device,
                    },
                ));
                self.pools.len() - 1
            }
        };
        Ok(&self.pools[index].1)
    }
}

/// The device address of a buffer (valid while the buffer lives; all work here is on one stream).
pub fn address(buffer: &CudaSlice<u8>, stream: &CudaStream) -> u64 {
    let (ptr, _record) = buffer.device_ptr(stream);
    ptr
}

/// A new buffer of `elements` elements whose element `i` is `pool[i % POOL_LEN]`.
pub fn filled_buffer(
    stream: &Arc<CudaStream>,
    pool: &Pool,
    elements: usize,
) -> Result<CudaSlice<u8>, DriverError> {
    let bytes = elements * verify::element_bytes(pool.dtype);
    // SAFETY: every byte is written by the fill below before anything reads it.
    let buffer = unsafe { stream.alloc::<u8>(bytes) }?;
    let dst = address(&buffer, stream);
    let src = address(&pool.device, stream);
    stream.context().bind_to_thread()?;
    for copy in fill_plan(pool.device.len(), bytes) {
        let from = if copy.from_pool { src } else { dst } + copy.src as u64;
        // SAFETY: both ranges lie inside live buffers (the plan stays within `bytes` and the pool)
        // and do not overlap; the copy is ordered on `stream` before any later use.
        unsafe { result::memcpy_dtod_async(dst + copy.dst as u64, from, copy.bytes, stream.cu_stream()) }?;
    }
    Ok(buffer)
}

// ---------------------------------------------------------------------------------------------
// One GEMM's operands on the device, and its sampled f64 reference
// ---------------------------------------------------------------------------------------------

/// Extents of a GEMM: D (m×n) = A (m×k) · B (k×n), `batch` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Extents {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
}

impl Extents {
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64 * self.batch as f64
    }
}

impl std::fmt::Display for Extents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.n, self.k)?;
        if self.batch != 1 {
            write!(f, "x{}", self.batch)?;
        }
        Ok(())
    }
}

/// Operand types and layouts: what one set of device buffers serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Types {
    pub a: DType,
    pub b: DType,
    pub c: DType,
    pub layout_a: Layout,
    pub layout_b: Layout,
    pub layout_c: Layout,
}

impl Types {
    pub fn of(info: &KernelInfo) -> Self {
        Types {
            a: info.gemm().a.element,
            b: info.gemm().b.element,
            c: info.gemm().c.element,
            layout_a: info.gemm().a.layout,
            layout_b: info.gemm().b.layout,
            layout_c: info.gemm().c.layout,
        }
    }

    /// `tnt`.
    pub fn layout_letters(&self) -> String {
        format!(
            "{}{}{}",
            self.layout_a.letter(),
            self.layout_b.letter(),
            self.layout_c.letter()
        )
    }
}

/// Packed, possibly batched, geometry of a `rows × cols` operand.
pub fn packed(rows: usize, cols: usize, batch: usize, layout: Layout) -> MatrixShape {
    MatrixShape {
        batch_count: batch,
        ..MatrixShape::packed(rows, cols, layout)
    }
}

/// Bytes a GEMM moves at least once: A, B and D, plus C when it is read (beta ≠ 0).
pub fn gemm_bytes(e: Extents, types: Types, reads_c: bool) -> f64 {
    let size = |d: DType| verify::element_bytes(d) as f64;
    let (m, n, k, b) = (e.m as f64, e.n as f64, e.k as f64, e.batch as f64);
    let c = if reads_c { m * n * size(types.c) } else { 0.0 };
    b * (m * k * size(types.a) + k * n * size(types.b) + m * n * size(types.c) + c)
}

/// Positions (batch, row, column) of D to verify: the four corners of the first and last batch,
/// then `count` pseudo-random positions (deterministic).
pub fn sample_positions(e: Extents, count: usize) -> Vec<(usize, usize, usize)> {
    let last = e.batch - 1;
    let mut positions = vec![
        (0, 0, 0),
        (0, e.m - 1, e.n - 1),
        (last, e.m - 1, 0),
        (last, 0, e.n - 1),
    ];
    let pick = |u: f64, extent: usize| (((u + 1.0) / 2.0 * extent as f64) as usize).min(extent - 1);
    let random = verify::random_values(DType::F64, 3 * count, 0x5eed);
    for r in random.chunks_exact(3) {
        positions.push((pick(r[0], e.batch), pick(r[1], e.m), pick(r[2], e.n)));
    }
    positions
}

/// Device buffers of one GEMM problem: A, B (and C) filled from pools, D to write.
pub struct GemmData {
    pub extents: Extents,
    pub types: Types,
    pub shape_a: MatrixShape,
    pub shape_b: MatrixShape,
    pub shape_d: MatrixShape,
    pub a: CudaSlice<u8>,
    pub b: CudaSlice<u8>,
    pub c: Option<CudaSlice<u8>>,
    pub d: CudaSlice<u8>,
    host_a: Arc<Vec<f64>>,
    host_b: Arc<Vec<f64>>,
    host_c: Option<Arc<Vec<f64>>>,
    stream: Arc<CudaStream>,
}

impl GemmData {
    /// Allocates and fills the operands (`with_c`: also C, for beta ≠ 0). D is left unset.
    pub fn new(
        stream: &Arc<CudaStream>,
        pools: &mut Pools,
        extents: Extents,
        types: Types,
        with_c: bool,
    ) -> Result<Self, DriverError> {
        let Extents { m, n, k, batch } = extents;
        let (shape_a, shape_b, shape_d) = (
            packed(m, k, batch, types.layout_a),
            packed(k, n, batch, types.layout_b),
            packed(m, n, batch, types.layout_c),
        );
        let pool = pools.get(types.a, SEED_A)?;
        let (a, host_a) = (filled_buffer(stream, pool, m * k * batch)?, pool.host.clone());
        let pool = pools.get(types.b, SEED_B)?;
        let (b, host_b) = (filled_buffer(stream, pool, k * n * batch)?, pool.host.clone());
        let (c, host_c) = if with_c {
            let pool = pools.get(types.c, SEED_C)?;
            (
                Some(filled_buffer(stream, pool, m * n * batch)?),
                Some(pool.host.clone()),
            )
        } else {
            (None, None)
        };
        // SAFETY: D is poisoned or written by a kernel before it is read.
        let d = unsafe { stream.alloc::<u8>(m * n * batch * verify::element_bytes(types.c)) }?;
        Ok(GemmData {
            extents,
            types,
            shape_a,
            shape_b,
            shape_d,
            a,
            b,
            c,
            d,
            host_a,
            host_b,
            host_c,
            stream: stream.clone(),
        })
    }

    /// The operands for `launch_raw` (C only when this data has one), K not split.
    pub fn operands(&self, alpha: f64, beta: f64) -> GemmOperands {
        self.operands_split(alpha, beta, 1)
    }

    /// The operands for `launch_raw` with K split into `split_k_slices` slices (1: no split).
    pub fn operands_split(&self, alpha: f64, beta: f64, split_k_slices: usize) -> GemmOperands {
        let s = &self.stream;
        let len = |shape: &MatrixShape| shape.rows * shape.cols * shape.batch_count;
        GemmOperands {
            a: Operand {
                shape: self.shape_a,
                len: len(&self.shape_a),
                address: address(&self.a, s),
            },
            b: Operand {
                shape: self.shape_b,
                len: len(&self.shape_b),
                address: address(&self.b, s),
            },
            c: self.c.as_ref().map(|c| Operand {
                shape: self.shape_d,
                len: len(&self.shape_d),
                address: address(c, s),
            }),
            d: Operand {
                shape: self.shape_d,
                len: len(&self.shape_d),
                address: address(&self.d, s),
            },
            alpha,
            beta,
            split_k_slices,
            fusion: Default::default(),
        }
    }

    /// Sets every byte of D to 0xFF: NaN in every floating-point type, so unwritten outputs show.
    pub fn poison_d(&self) -> Result<(), DriverError> {
        self.stream.context().bind_to_thread()?;
        let at = address(&self.d, &self.stream);
        // SAFETY: D is a live buffer of exactly this many bytes.
        unsafe { result::memset_d8_async(at, 0xFF, self.d.len(), self.stream.cu_stream()) }
    }

    fn element(
        host: &[f64],
        shape: &MatrixShape,
        layout: Layout,
        batch: usize,
        row: usize,
        col: usize,
    ) -> f64 {
        let batch = if shape.batch_count == 1 { 0 } else { batch };
        host[verify::offset(shape, layout, batch, row, col) % host.len()]
    }

    /// The f64 reference of D at `positions`, rounded to C's type: alpha·A·B + beta·C.
    pub fn reference(&self, positions: &[(usize, usize, usize)], alpha: f64, beta: f64) -> Vec<f64> {
        let t = &self.types;
        positions
            .iter()
            .map(|&(batch, row, col)| {
                let dot: f64 = (0..self.extents.k)
                    .map(|p| {
                        Self::element(&self.host_a, &self.shape_a, t.layout_a, batch, row, p)
                            * Self::element(&self.host_b, &self.shape_b, t.layout_b, batch, p, col)
                    })
                    .sum();
                let source = self.host_c.as_ref().map_or(0.0, |c| {
                    Self::element(c, &self.shape_d, t.layout_c, batch, row, col)
                });
                verify::round_to(t.c, alpha * dot + beta * source)
            })
            .collect()
    }

    /// D's values at `positions` (copied one element at a time; no host copy of the whole matrix).
    pub fn read_d(&self, positions: &[(usize, usize, usize)]) -> Result<Vec<f64>, DriverError> {
        let size = verify::element_bytes(self.types.c);
        let base = address(&self.d, &self.stream);
        let mut bytes = vec![0u8; positions.len() * size];
        self.stream.context().bind_to_thread()?;
        for (slot, &(batch, row, col)) in bytes.chunks_exact_mut(size).zip(positions) {
            let at = verify::offset(&self.shape_d, self.types.layout_c, batch, row, col) * size;
            // SAFETY: the offset lies inside D (positions are within the extents).
            unsafe { result::memcpy_dtoh_async(slot, base + at as u64, self.stream.cu_stream()) }?;
        }
        self.stream.synchronize()?;
        Ok(verify::decode(self.types.c, &bytes))
    }

    /// The number of NaN elements of D, if D is a floating-point type of at most `max_bytes`
    /// bytes (else `None`: not counted).
    pub fn count_nan_d(&self, max_bytes: usize) -> Result<Option<usize>, DriverError> {
        if self.types.c.is_integer() || self.d.len() > max_bytes {
            return Ok(None);
        }
        let bytes = self.stream.clone_dtoh(&self.d)?;
        Ok(Some(count_nan(self.types.c, &bytes)))
    }
}

/// The number of NaN elements in device bytes of `dtype` (by bit pattern; 0 for integer types).
pub fn count_nan(dtype: DType, bytes: &[u8]) -> usize {
    let size = verify::element_bytes(dtype);
    let chunks = bytes.chunks_exact(size);
    match dtype {
        DType::F16 => chunks
            .filter(|c| u16::from_le_bytes([c[0], c[1]]) & 0x7fff > 0x7c00)
            .count(),
        DType::Bf16 => chunks
            .filter(|c| u16::from_le_bytes([c[0], c[1]]) & 0x7fff > 0x7f80)
            .count(),
        DType::F32 => chunks
            .filter(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) & 0x7fff_ffff > 0x7f80_0000)
            .count(),
        DType::F64 => chunks
            .filter(|c| {
                let bits = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
                bits & 0x7fff_ffff_ffff_ffff > 0x7ff0_0000_0000_0000
            })
            .count(),
        DType::E4m3 => chunks.filter(|c| c[0] & 0x7f == 0x7f).count(),
        DType::E5m2 => chunks.filter(|c| c[0] & 0x7f > 0x7c).count(),
        DType::S8 | DType::S32 => 0,
    }
}

/// Outcome of a sampled verification.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Check {
    pub samples: usize,
    /// ‖D − reference‖ / ‖reference‖ over the samples ([`verify::relative_error`]).
    pub rel_error: f64,
    /// The largest |D − reference| of one sample (infinite when a sample is not finite).
    pub max_abs_error: f64,
    pub tolerance: f64,
    /// NaN outputs in all of D (poisoned before the run), when D was small enough to count.
    pub unwritten: Option<usize>,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.unwritten.unwrap_or(0) == 0 && self.rel_error <= self.tolerance
    }
}

/// Largest D (bytes) whose NaNs are counted in full after a verification run.
pub const FULL_NAN_SCAN_BYTES: usize = 64 << 20;

/// The largest |out − reference| (infinite if an output is not finite; 0 when empty).
pub fn max_abs_error(out: &[f64], reference: &[f64]) -> f64 {
    out.iter().zip(reference).fold(0.0, |worst, (&o, &r)| {
        if o.is_finite() {
            worst.max((o - r).abs())
        } else {
            f64::INFINITY
        }
    })
}

/// The verification tolerance of `info` on a problem of depth `k` with K split into `slices`
/// (relative error against the f64 reference rounded to C's type, as [`verify::relative_error`]
/// measures it). It is [`verify::tolerance`] except where the profiler knows more:
///
/// * **3xTF32** (`multiply_add_fast_f32`): held to f32-like error, not TF32's. Each product keeps
///   about 21 bits (the dropped small·small term and the small parts' own rounding: 2^-22
///   relative), and the sum is an f32 accumulation whose tensor-core adds may truncate instead of
///   round (three MMAs per K step), which biases the result by up to about 1e-8·k (a host
///   simulation of round-toward-zero accumulation: 9.6e-6 at k = 1024, 4.4e-5 at 4096, 7.3e-5 at
///   8192). The tolerance is max(1e-5, 1.5e-8·k) — at k ≤ 8192 below the error of 2xTF32 (one
///   cross term missing: 1.6e-4) and far below 1xTF32's (7e-4 on these inputs at any k), so a
///   kernel that silently ran as TF32 fails.
/// * **fast f16 / bf16** (`multiply_add_fast_f16` / `_bf16`): the operands are rounded to f16 /
///   bf16, an error of up to 2^-11 / 2^-8 per operand (norm-wise about 4e-4 / 3e-3 on these inputs,
///   twice that if the conversion truncates): the f16 and bf16 output terms, 2e-3 and 1e-2, plus
///   the f32 accumulation's 1e-8·k.
/// * **serial split-K** with an f16 or bf16 output: the running sum is rounded to D's type between
///   slices, one more rounding per slice: the tolerance grows with √slices. Parallel split-K and
///   stream-K reduce in f32 (their tolerance does not change).
pub fn tolerance(info: &KernelInfo, k: usize, slices: usize) -> f64 {
    let k = k as f64;
    let output = match info.gemm().c.element {
        DType::F16 => 2e-3,
        DType::Bf16 => 1e-2,
        DType::F32 => 1e-5,
        DType::F64 => 1e-12,
        _ => verify::tolerance(info),
    };
    let fast_f32 = info.design.opclass() == OpClass::TensorOp && info.gemm().a.element == DType::F32;
    let base = match info.gemm().math {
        // Hopper's 3xTF32 by splitting K: the warpgroup MMA truncates its f32 accumulator.
        MathOp::MultiplyAddFastF32 if fast_f32 && info.api() == cutlass_aot::model::Api::Cutlass3x => {
            output.max(2e-8 * 3.0 * k)
        }
        MathOp::MultiplyAddFastF32 if fast_f32 => output.max(1.5e-8 * k),
        MathOp::MultiplyAddFastF16 if fast_f32 => output.max(2e-3) + 1e-8 * k,
        MathOp::MultiplyAddFastBf16 if fast_f32 => output.max(1e-2) + 1e-8 * k,
        _ => verify::tolerance(info),
    };
    let rounds_between_slices = info.design.split_k() == SplitK::Serial
        && slices > 1
        && matches!(info.gemm().c.element, DType::F16 | DType::Bf16);
    if rounds_between_slices {
        base * (slices as f64).sqrt()
    } else {
        base
    }
}

/// Compares D at `positions` with `reference` (from [`GemmData::reference`]) for `info`, K not
/// split.
pub fn check(
    data: &GemmData,
    info: &KernelInfo,
    positions: &[(usize, usize, usize)],
    reference: &[f64],
) -> Result<Check, DriverError> {
    check_split(data, info, 1, positions, reference)
}

/// [`check`] of a launch with K split into `slices`, against [`tolerance`].
pub fn check_split(
    data: &GemmData,
    info: &KernelInfo,
    slices: usize,
    positions: &[(usize, usize, usize)],
    reference: &[f64],
) -> Result<Check, DriverError> {
    let got = data.read_d(positions)?;
    Ok(Check {
        samples: positions.len(),
        rel_error: verify::relative_error(&got, reference),
        max_abs_error: max_abs_error(&got, reference),
        tolerance: tolerance(info, data.extents.k, slices),
        unwritten: data.count_nan_d(FULL_NAN_SCAN_BYTES)?,
    })
}

// ---------------------------------------------------------------------------------------------
// Timing with CUDA events
// ---------------------------------------------------------------------------------------------

/// Why a measurement stopped: the kernel refused (the device is fine), or the device failed (the
/// context may be unusable from here on).
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    Kernel(String),
    Device(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Kernel(m) => f.write_str(m),
            Failure::Device(m) => write!(f, "device failure: {m}"),
        }
    }
}

pub fn device_failure(e: DriverError) -> Failure {
    Failure::Device(e.to_string())
}

/// GPU time of launches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// Median of the per-launch times (one event between consecutive launches).
    pub median_us: f64,
    /// Total time of all timed launches / their count.
    pub mean_us: f64,
    /// Launches timed.
    pub iters: usize,
}

/// A kernel that holds the GPU for a while, so that launches enqueued behind it run back to back
/// however long the host takes to enqueue them: timings are then GPU time even for kernels
/// shorter than a launch's host cost. PTX the driver JIT-compiles; it spins on `%globaltimer`.
const SPIN_PTX: &str = "\
.version 8.0
.target sm_80
.address_size 64

.visible .entry cutlass_aot_spin(.param .u64 cutlass_aot_spin_ns)
{
\t.reg .pred %p<2>;
\t.reg .b64 %rd<5>;
\tld.param.u64 %rd1, [cutlass_aot_spin_ns];
\tmov.u64 %rd2, %globaltimer;
$L_spin:
\tmov.u64 %rd3, %globaltimer;
\tsub.s64 %rd4, %rd3, %rd2;
\tsetp.lt.u64 %p1, %rd4, %rd1;
\t@%p1 bra $L_spin;
\tret;
}
";

/// The spin kernel, loaded in one context.
pub struct Spinner {
    function: CudaFunction,
}

impl Spinner {
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self, DriverError> {
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(SPIN_PTX))?;
        Ok(Spinner {
            function: module.load_function("cutlass_aot_spin")?,
        })
    }

    /// Enqueues a single-thread kernel that returns after `ns` nanoseconds.
    pub fn spin(&self, stream: &CudaStream, ns: u64) -> Result<(), DriverError> {
        let mut ns = ns;
        let mut params = [(&mut ns as *mut u64).cast::<c_void>()];
        stream.context().bind_to_thread()?;
        // SAFETY: the kernel takes one u64 parameter, passed by address; the stream is live.
        unsafe {
            result::launch_kernel(
                self.function.cu_function(),
                (1, 1, 1),
                (1, 1, 1),
                0,
                stream.cu_stream(),
                &mut params,
            )
        }
    }
}

/// How long to hold the GPU before `launches` timed launches: far more than the host needs to
/// enqueue them (a launch and an event record take well under 50 µs), at least 1 ms, at most 100 ms.
pub fn spin_ns(launches: usize) -> u64 {
    (launches as u64 * 50_000).clamp(1_000_000, 100_000_000)
}

/// Events that record time (cudarc's default flags disable timing).
pub fn timing_event(ctx: &Arc<CudaContext>) -> Result<CudaEvent, DriverError> {
    ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
}

/// Times `launch`: `warmup` untimed launches, then up to `iters` launches enqueued back to back with
/// an event between consecutive ones (no host synchronisation in between). With a `spinner`, the
/// timed launches are enqueued behind a spin kernel (see [`Spinner`]), so the GPU runs them back to
/// back even when one launch costs the host more than the kernel runs. With `max_seconds`, one
/// calibration launch first estimates the kernel's time and the count is cut so that the timed
/// launches take about that long (at least 3).
pub fn time_launches(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    warmup: usize,
    iters: usize,
    max_seconds: Option<f64>,
    spinner: Option<&Spinner>,
    mut launch: impl FnMut() -> Result<(), cutlass_aot::Error>,
) -> Result<Timing, Failure> {
    let kernel = |e: cutlass_aot::Error| Failure::Kernel(e.to_string());
    for _ in 0..warmup {
        launch().map_err(kernel)?;
    }
    let mut count = iters.max(1);
    if let Some(budget) = max_seconds.filter(|_| count > 3) {
        let (start, end) = (
            timing_event(ctx).map_err(device_failure)?,
            timing_event(ctx).map_err(device_failure)?,
        );
        start.record(stream).map_err(device_failure)?;
        launch().map_err(kernel)?;
        end.record(stream).map_err(device_failure)?;
        let ms = start.elapsed_ms(&end).map_err(device_failure)? as f64;
        if ms > 0.0 {
            let fit = (budget * 1e3 / ms).floor() as usize;
            count = count.min(fit.max(3));
        }
    }
    let events = (0..=count)
        .map(|_| timing_event(ctx))
        .collect::<Result<Vec<_>, _>>()
        .map_err(device_failure)?;
    if let Some(spinner) = spinner {
        spinner.spin(stream, spin_ns(count)).map_err(device_failure)?;
    }
    events[0].record(stream).map_err(device_failure)?;
    for event in &events[1..] {
        launch().map_err(kernel)?;
        event.record(stream).map_err(device_failure)?;
    }
    events[count].synchronize().map_err(device_failure)?;
    let mut times = Vec::with_capacity(count);
    for pair in events.windows(2) {
        times.push(pair[0].elapsed_ms(&pair[1]).map_err(device_failure)? as f64 * 1e3);
    }
    let total = events[0].elapsed_ms(&events[count]).map_err(device_failure)? as f64 * 1e3;
    Ok(Timing {
        median_us: median(&times),
        mean_us: total / count as f64,
        iters: count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_513), (2026, 3, 1));
        assert_eq!(civil_from_days(20_778), (2026, 11, 21));
        let today = utc_date();
        assert_eq!(today.len(), 10);
        assert!(today.as_str() >= "2024-01-01", "{today}");
    }

    #[test]
    fn json_escaping() {
        assert_eq!(json_string("plain"), "\"plain\"");
        assert_eq!(
            json_string("a\"b\\c\nd\te\u{1}"),
            "\"a\\\"b\\\\c\\nd\\te\\u0001\""
        );
        assert_eq!(json_string("4096×4096 — ok"), "\"4096×4096 — ok\"");
        let r = JsonRecord::new()
            .str("device", "NVIDIA \"H100\"")
            .int("m", 4096usize)
            .num("us", 12.3456, 2)
            .num("bad", f64::INFINITY, 2)
            .sci("err", 1.5e-5)
            .sci("nan", f64::NAN)
            .bool("verified", true)
            .null("none")
            .finish();
        assert_eq!(
            r,
            "{\"device\": \"NVIDIA \\\"H100\\\"\", \"m\": 4096, \"us\": 12.35, \"bad\": null, \"err\": 1.500e-5, \
             \"nan\": null, \"verified\": true, \"none\": null}"
        );
    }

    #[test]
    fn fill_plan_is_periodic() {
        for (pool, len) in [(7, 1), (7, 7), (7, 8), (7, 100), (10, 1000), (3, 64), (5, 0)] {
            let source: Vec<u8> = (0..pool as u8)
                .map(|b| b.wrapping_mul(37).wrapping_add(1))
                .collect();
            let mut buffer = vec![0u8; len];
            let plan = fill_plan(pool, len);
            assert!(
                plan.len() <= 2 + (len.max(1) as f64).log2().ceil() as usize,
                "{plan:?}"
            );
            for c in &plan {
                assert!(c.dst + c.bytes <= len);
                if c.from_pool {
                    buffer[c.dst..c.dst + c.bytes].copy_from_slice(&source[c.src..c.src + c.bytes]);
                } else {
                    assert!(c.src + c.bytes <= c.dst, "overlapping copy {c:?}");
                    let (head, tail) = buffer.split_at_mut(c.dst);
                    tail[..c.bytes].copy_from_slice(&head[c.src..c.src + c.bytes]);
                }
            }
            for (i, &b) in buffer.iter().enumerate() {
                assert_eq!(b, source[i % pool], "pool {pool} len {len} byte {i}");
            }
        }
    }

    #[test]
    fn nan_counts_match_decode() {
        for dtype in DType::ALL.iter().copied() {
            let size = verify::element_bytes(dtype);
            // Every pattern of the 8- and 16-bit types; for the wider ones, patterns around the
            // infinities and NaNs in the top bytes.
            let patterns: Vec<Vec<u8>> = match size {
                1 => (0..=255u8).map(|b| vec![b]).collect(),
                2 => (0..=u16::MAX).map(|b| b.to_le_bytes().to_vec()).collect(),
                _ => (0..=u16::MAX)
                    .step_by(7)
                    .chain([0x7f80, 0x7f81, 0xff80, 0x7ff0, 0x7ff1, 0xfff8, 0xffff])
                    .map(|top| {
                        let mut v = vec![0u8; size];
                        v[size - 2..].copy_from_slice(&top.to_le_bytes());
                        v[0] = (top & 0xff) as u8;
                        v
                    })
                    .collect(),
            };
            for p in patterns {
                let want = verify::decode(dtype, &p).iter().filter(|v| v.is_nan()).count();
                assert_eq!(count_nan(dtype, &p), want, "{dtype} {p:x?}");
            }
            assert_eq!(
                count_nan(dtype, &vec![0xff; 4 * size]),
                if dtype.is_integer() { 0 } else { 4 }
            );
        }
    }

    fn kernels_where(f: impl Fn(&KernelInfo) -> bool) -> Vec<&'static KernelInfo> {
        cutlass_aot::kernels::REGISTRY.filter(f).collect()
    }

    #[test]
    fn dtype_labels_name_the_math() {
        for k in cutlass_aot::kernels::REGISTRY.all() {
            let label = dtype_label(k);
            let tensor_f32 = k.design.opclass() == OpClass::TensorOp && k.gemm().a.element == DType::F32;
            let want = match (tensor_f32, k.gemm().math) {
                (true, MathOp::MultiplyAddFastF32) => "f32_3xtf32".to_string(),
                (true, MathOp::MultiplyAddFastF16) => "f32_fastf16".to_string(),
                (true, MathOp::MultiplyAddFastBf16) => "f32_fastbf16".to_string(),
                (true, _) => "tf32".to_string(),
                (false, _) => k.gemm().a.element.to_string(),
            };
            assert_eq!(label, want, "{}", k.rust_name);
            assert!(
                F32_MATH_LABELS.contains(&label.as_str()) || DType::from_manifest_name(&label).is_some(),
                "{label}"
            );
        }
        // The default manifest has each kind (issue 4).
        for label in F32_MATH_LABELS.iter().chain(&["f32", "s8"]) {
            assert!(
                !kernels_where(|k| dtype_label(k) == *label).is_empty(),
                "no {label} kernel in the default manifest"
            );
        }
    }

    #[test]
    fn tolerances_by_math_and_split() {
        let one_of = |math: MathOp, api: cutlass_aot::model::Api| {
            kernels_where(|k| {
                k.gemm().math == math
                    && k.design.opclass() == OpClass::TensorOp
                    && k.gemm().a.element == DType::F32
                    && k.api() == api
            })
            .first()
            .copied()
        };
        let one = |math: MathOp| one_of(math, cutlass_aot::model::Api::Cutlass2x);
        // Hopper's 3xTF32 by splitting K: its truncating accumulator errs ~1e-5 per 1000 of K.
        let split = one_of(MathOp::MultiplyAddFastF32, cutlass_aot::model::Api::Cutlass3x)
            .expect("Hopper's split 3xTF32 kernel");
        assert!((tolerance(split, 4096, 1) - 2.4576e-4).abs() < 1e-9);
        let x3 = one(MathOp::MultiplyAddFastF32).expect("a 3xTF32 kernel");
        let tf32 = one(MathOp::MultiplyAdd).expect("a TF32 kernel");
        // 3xTF32: f32-like, growing with k, well under 2xTF32's 1.6e-4 up to k = 8192 and under the
        // TF32 tolerance everywhere it is used.
        assert_eq!(tolerance(x3, 100, 1), 1e-5);
        assert!((tolerance(x3, 4096, 1) - 6.144e-5).abs() < 1e-9);
        assert!(tolerance(x3, 8192, 1) < 1.6e-4);
        assert!(tolerance(x3, 8192, 1) * 30.0 < tolerance(tf32, 8192, 1));
        assert_eq!(tolerance(tf32, 8192, 1), verify::tolerance(tf32));
        if let Some(f16) = one(MathOp::MultiplyAddFastF16) {
            assert!((tolerance(f16, 1000, 1) - 2.01e-3).abs() < 1e-9);
        }
        if let Some(bf16) = one(MathOp::MultiplyAddFastBf16) {
            assert!((tolerance(bf16, 1000, 1) - 1.001e-2).abs() < 1e-9);
        }
        // Serial split-K with f16 output: √slices; parallel and stream-K: unchanged.
        let f16 = |mode: SplitK| {
            kernels_where(|k| k.design.split_k() == mode && k.gemm().c.element == DType::F16)
                .first()
                .copied()
        };
        let serial = f16(SplitK::Serial).expect("a serial split-K f16 kernel");
        assert_eq!(tolerance(serial, 65536, 1), verify::tolerance(serial));
        assert_eq!(tolerance(serial, 65536, 16), 4.0 * verify::tolerance(serial));
        for mode in [SplitK::Parallel, SplitK::StreamK] {
            if let Some(k) = f16(mode) {
                assert_eq!(tolerance(k, 65536, 16), verify::tolerance(k), "{}", k.rust_name);
            }
        }
        assert_eq!(max_abs_error(&[1.0, 2.5], &[1.5, 2.0]), 0.5);
        assert_eq!(max_abs_error(&[f64::NAN], &[1.0]), f64::INFINITY);
        assert_eq!(max_abs_error(&[], &[]), 0.0);
    }

    #[test]
    fn spin_lengths() {
        assert_eq!(spin_ns(1), 1_000_000);
        assert_eq!(spin_ns(100), 5_000_000);
        assert_eq!(spin_ns(1_000_000), 100_000_000);
        assert!(SPIN_PTX.contains(".visible .entry cutlass_aot_spin("));
    }

    #[test]
    fn samples_stay_inside() {
        let e = Extents {
            m: 1003,
            n: 8,
            k: 1,
            batch: 3,
        };
        let positions = sample_positions(e, 256);
        assert_eq!(positions.len(), 260);
        assert!(positions.contains(&(2, 1002, 0)));
        for &(b, i, j) in &positions {
            assert!(b < 3 && i < 1003 && j < 8);
        }
        assert!(positions.iter().any(|&(b, _, _)| b == 1));
    }

    #[test]
    fn bytes_and_flops() {
        let e = Extents {
            m: 2,
            n: 3,
            k: 4,
            batch: 2,
        };
        let t = Types {
            a: DType::Bf16,
            b: DType::Bf16,
            c: DType::F32,
            layout_a: Layout::Row,
            layout_b: Layout::Column,
            layout_c: Layout::Row,
        };
        assert_eq!(e.flops(), 96.0);
        assert_eq!(
            gemm_bytes(e, t, false),
            2.0 * (8.0 * 2.0 + 12.0 * 2.0 + 6.0 * 4.0)
        );
        assert_eq!(
            gemm_bytes(e, t, true),
            2.0 * (8.0 * 2.0 + 12.0 * 2.0 + 12.0 * 4.0)
        );
        assert_eq!(t.layout_letters(), "tnt");
        assert_eq!(e.to_string(), "2x3x4x2");
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert!(median(&[]).is_nan());
    }
}

/// A kernel's 3.x kernel schedule, `auto` for a 2.x kernel (for records and listings).
pub fn schedule(info: &KernelInfo) -> cutlass_aot::model::KernelSchedule {
    info.design
        .as_3x()
        .map_or(cutlass_aot::model::KernelSchedule::Auto, |d| d.schedule)
}

/// A kernel's 3.x epilogue schedule, `auto` for a 2.x kernel.
pub fn epilogue_schedule(info: &KernelInfo) -> cutlass_aot::model::EpilogueSchedule {
    info.design
        .as_3x()
        .map_or(cutlass_aot::model::EpilogueSchedule::Auto, |d| {
            d.epilogue_schedule
        })
}

/// A kernel's 3.x tile scheduler, `persistent` for a 2.x kernel (which launches a tile per CTA).
pub fn tile_scheduler(info: &KernelInfo) -> cutlass_aot::model::TileScheduler {
    info.design
        .as_3x()
        .map_or(cutlass_aot::model::TileScheduler::Persistent, |d| {
            d.tile_scheduler
        })
}
