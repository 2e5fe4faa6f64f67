//! Measured tables, one format for every operation: each row is one way (a kernel at a split-K and
//! a tuning) timed on one problem as that kernel ran it. The build embeds every
//! `bench/dispatch/*.tsv` (`kernels::TABLES`); [`table_for`] picks the one of the device.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::calibration::Rates;
use super::cost::Work;
use super::Tuning;
use crate::kernel::KernelInfo;
use crate::model::{DType, Layout};

/// Extents a key holds at most (a conv2d's thirteen).
pub const DIMS: usize = 13;

/// What a row measured: an operation's problem as its kernel ran it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// The operation's name, as results files spell it: `gemm`, `conv2d_fprop`, `conv2d_dgrad`,
    /// `conv2d_wgrad`.
    pub op: &'static str,
    /// Element types of A, B and C/D.
    pub elements: [DType; 3],
    /// Layouts of A, B and C/D as the kernel read them (GEMM); `None` where the operation has none.
    pub layouts: Option<[Layout; 3]>,
    /// The operation's extents, unused ones 0 (`gemm`: m, n, k, batch; `conv2d_*`: n, h, w, c, k,
    /// r, s, pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w).
    pub dims: [usize; DIMS],
}

impl Key {
    /// A key of `dims` (at most [`DIMS`]; the rest 0).
    pub fn new(op: &'static str, elements: [DType; 3], layouts: Option<[Layout; 3]>, dims: &[usize]) -> Self {
        let mut all = [0; DIMS];
        all[..dims.len()].copy_from_slice(dims);
        Key {
            op,
            elements,
            layouts,
            dims: all,
        }
    }
}

/// One measured way.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub key: Key,
    /// The kernel that ran (for a conv problem, possibly a GEMM kernel over its matrix view).
    pub kernel: &'static KernelInfo,
    /// Split-K slices it ran with (1: none; a stream-K kernel's 1 is its own decomposition).
    pub split_k: usize,
    /// Run-time rasterisation it ran with (CUTLASS 3.x persistent kernels).
    pub tuning: Tuning,
    /// Measured time, microseconds.
    pub us: f64,
}

impl Row {
    /// A row of `key` (the build emits its rows as struct literals: a const fn call per row
    /// costs rustc several times the memory).
    pub const fn new(key: Key, kernel: &'static KernelInfo, split_k: usize, tuning: Tuning, us: f64) -> Self {
        Row {
            key,
            kernel,
            split_k,
            tuning,
            us,
        }
    }
}

impl Row {
    /// The row as a line of a table file (the build's format: `cutlass_aot_build::table`).
    pub fn tsv_line(&self) -> String {
        let k = &self.key;
        let layout = k
            .layouts
            .map_or("-".to_string(), |l| l.map(Layout::letter).concat());
        let used = if k.op == "gemm" { 4 } else { DIMS };
        let dims: Vec<String> = k.dims[..used].iter().map(|d| d.to_string()).collect();
        let raster = match self.tuning.raster {
            super::Raster::Heuristic => "auto",
            super::Raster::AlongM => "m",
            super::Raster::AlongN => "n",
        };
        format!(
            "{}\t{}\t{}\t{}\t{layout}\t{}\t{}\t{}\t{raster}\t{}\t{:.2}",
            k.op,
            k.elements[0],
            k.elements[1],
            k.elements[2],
            dims.join(","),
            self.kernel.name,
            self.split_k,
            self.tuning.max_swizzle,
            self.us
        )
    }
}

/// The header of a table file measured on `device` on `date`.
pub fn tsv_header(device: &str, date: &str) -> String {
    format!(
        "# cutlass-aot selection table\n# device: {device}\n# date: {date}\n\
         # columns: op a b c layout dims kernel split_k raster swizzle us\n"
    )
}

/// A measured table of one device.
#[derive(Debug)]
pub struct Table {
    /// The device's name as the driver reports it ("" for none).
    pub device: &'static str,
    pub date: &'static str,
    pub rows: &'static [Row],
    /// Rows of kernels `rows` never timed, from other tables of the device's architecture (see
    /// [`device_table`]); they count as the table's own.
    supplement: &'static [Row],
    index: OnceLock<HashMap<Key, Vec<u32>>>,
    rates: OnceLock<Rates>,
    id: OnceLock<u64>,
}

impl Table {
    pub const fn new(device: &'static str, date: &'static str, rows: &'static [Row]) -> Self {
        Table {
            device,
            date,
            rows,
            supplement: &[],
            index: OnceLock::new(),
            rates: OnceLock::new(),
            id: OnceLock::new(),
        }
    }

    /// A number no other table of this process has (decisions are remembered per table: an
    /// address could be reused by a table made after this one is dropped).
    pub fn id(&self) -> u64 {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        *self
            .id
            .get_or_init(|| NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// The rows and the supplement's, in that order (what the index numbers).
    pub fn all_rows(&self) -> impl Iterator<Item = &'static Row> {
        let (rows, supplement): (&'static [Row], &'static [Row]) = (self.rows, self.supplement);
        rows.iter().chain(supplement)
    }

    /// The supplement's rows (see [`device_table`]).
    pub fn supplement(&self) -> &'static [Row] {
        self.supplement
    }

    fn index(&self) -> &HashMap<Key, Vec<u32>> {
        self.index.get_or_init(|| {
            let mut index: HashMap<Key, Vec<u32>> = HashMap::new();
            for (i, row) in self.all_rows().enumerate() {
                index.entry(row.key).or_default().push(i as u32);
            }
            index
        })
    }

    /// The rows that measured `key`.
    pub fn rows_of(&self, key: &Key) -> impl Iterator<Item = &'static Row> + '_ {
        let (rows, supplement): (&'static [Row], &'static [Row]) = (self.rows, self.supplement);
        let row = move |i: usize| rows.get(i).unwrap_or_else(|| &supplement[i - rows.len()]);
        self.index()
            .get(key)
            .into_iter()
            .flatten()
            .map(move |&i| row(i as usize))
    }

    /// Whether the table measured `key` at all.
    pub fn measured(&self, key: &Key) -> bool {
        self.index().contains_key(key)
    }

    /// The fastest row of `kernel` at `split_k` on `key`.
    pub fn fastest(&self, key: &Key, kernel: &KernelInfo, split_k: usize) -> Option<&'static Row> {
        self.rows_of(key)
            .filter(|r| std::ptr::eq(r.kernel, kernel) && r.split_k == split_k)
            .min_by(|a, b| a.us.total_cmp(&b.us))
    }

    /// Distinct problems of operation `op` the table measured.
    pub fn problems_of(&self, op: &str) -> usize {
        self.index().keys().filter(|k| k.op == op).count()
    }

    /// The model's rates fitted on every row (see [`super::calibration`]), on first use; `work_of`
    /// gives a row's work (the crate's operations, [`crate::operations::row_work`]).
    pub fn rates(&self, multiprocessors: u32, work_of: &dyn Fn(&Row) -> Option<Work>) -> &Rates {
        self.rates
            .get_or_init(|| Rates::fit(self.all_rows(), multiprocessors, work_of))
    }
}

/// A table measured on one device, for [`table_for`].
pub trait MeasuredOn {
    /// The device's name as the driver reports it ("" for none).
    fn device(&self) -> &str;
    /// How many ways it timed.
    fn rows(&self) -> usize;
}

impl MeasuredOn for Table {
    fn device(&self) -> &str {
        self.device
    }
    fn rows(&self) -> usize {
        self.rows.len()
    }
}

/// The empty table: every way is estimated by the bare model.
pub static NO_TABLE: Table = Table::new("", "", &[]);

/// Hopper parts: their kernels and the kernels' relative speeds carry over between them.
const HOPPER_MODELS: [&str; 5] = ["H100", "H200", "H800", "H20", "GH200"];

/// How close a table's device is to `device` (compute capability `compute_capability`): 2 the
/// device itself, 1 another of its model (`H100`, `H200`, `A100`, ...: the first word with a digit
/// after "NVIDIA", up to a hyphen), 0 another Hopper part on compute capability 9.0; `None`: its
/// kernels' relative speeds do not carry over.
fn closeness(table_device: &str, device: &str, compute_capability: u32) -> Option<u8> {
    let model = |name: &str| {
        name.split_whitespace()
            .find(|w| *w != "NVIDIA" && w.chars().any(|c| c.is_ascii_digit()))
            .map(|w| w.split('-').next().unwrap_or(w).to_ascii_uppercase())
    };
    let (wanted, other) = (model(device), model(table_device));
    if table_device == device {
        Some(2)
    } else if wanted.is_some() && other == wanted {
        Some(1)
    } else if compute_capability == 90 && other.as_deref().is_some_and(|m| HOPPER_MODELS.contains(&m)) {
        Some(0)
    } else {
        None
    }
}

/// The indices of the tables of `tables` whose rows carry over to the device, best first: the
/// most rows, then the closest device ([`closeness`]), then the H100's.
fn ranked<T: MeasuredOn>(tables: &[T], device: &str, compute_capability: u32) -> Vec<usize> {
    let mut eligible: Vec<(usize, u8)> = tables
        .iter()
        .enumerate()
        .filter_map(|(i, t)| closeness(t.device(), device, compute_capability).map(|close| (i, close)))
        .collect();
    eligible.sort_by_key(|&(i, close)| {
        let t = &tables[i];
        std::cmp::Reverse((t.rows(), close, t.device().contains("H100")))
    });
    eligible.into_iter().map(|(i, _)| i).collect()
}

/// The table of `tables` that calibrates the engine best on the device named `device` with
/// compute capability `compute_capability` (major·10 + minor): of the tables measured on that
/// device, on another of its model or, on compute capability 9.0, on any Hopper part, the one with
/// the most rows; on a tie the closest device's, then the H100's. Coverage ranks ways better than
/// the device's own identity (on an H200, the H100's tables chose better than its own smaller one:
/// `bench/results/h200_2026-11-28_issue26_table_rule.txt`). Tables of another architecture rank
/// the kernels wrongly: none of them (`None`: the bare model decides). [`device_table`] adds the
/// rows of kernels it lacks.
pub fn table_for<'t, T: MeasuredOn>(tables: &'t [T], device: &str, compute_capability: u32) -> Option<&'t T> {
    ranked(tables, device, compute_capability)
        .first()
        .map(|&i| &tables[i])
}

/// [`table_for`]'s table, supplemented with the rows of every kernel it never timed (neither the
/// kernel nor its bf16/f16 speed twin) from the first of the other eligible tables that did, in
/// [`table_for`]'s order: a kernel added or changed since that table was measured (its rows taken
/// out) is calibrated on another device of the architecture rather than by the bare model.
/// A supplemented table is made once per set of tables and kept for the process's life.
pub fn device_table<'t>(tables: &'t [Table], device: &str, compute_capability: u32) -> Option<&'t Table> {
    use std::sync::Mutex;
    type Remembered = (Vec<u64>, String, u32, Given);
    // A lookup per launch: no allocation where the set was seen before.
    static GIVEN: Mutex<Vec<Remembered>> = Mutex::new(Vec::new());
    let same_set =
        |ids: &[u64]| ids.len() == tables.len() && ids.iter().zip(tables).all(|(&id, t)| id == t.id());
    let mut given = GIVEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let known = given
        .iter()
        .find(|(ids, name, cc, _)| *cc == compute_capability && name == device && same_set(ids))
        .map(|r| r.3);
    let answer = match known {
        Some(answer) => answer,
        None => {
            let answer = supplemented(tables, device, compute_capability);
            let ids = tables.iter().map(Table::id).collect();
            given.push((ids, device.to_string(), compute_capability, answer));
            answer
        }
    };
    match answer {
        Given::None => None,
        Given::Index(i) => tables.get(i),
        Given::Made(table) => Some(table),
    }
}

/// What a set of tables gives a device ([`device_table`]): none, one of them, or one made.
#[derive(Clone, Copy)]
enum Given {
    None,
    Index(usize),
    Made(&'static Table),
}

/// [`device_table`] worked out afresh.
fn supplemented(tables: &[Table], device: &str, compute_capability: u32) -> Given {
    use std::borrow::Cow;
    use std::collections::HashSet;
    let ranked = ranked(tables, device, compute_capability);
    let Some((&main_index, others)) = ranked.split_first() else {
        return Given::None;
    };
    let main = &tables[main_index];
    let twin = |row: &Row| -> Cow<'static, str> { super::calibration::speed_twin(row.kernel.name) };
    let mut timed: HashSet<Cow<'static, str>> = main.rows.iter().map(twin).collect();
    let mut supplement = Vec::new();
    for other in others.iter().map(|&i| &tables[i]) {
        let missing: HashSet<Cow<'static, str>> = other
            .rows
            .iter()
            .map(twin)
            .filter(|k| !timed.contains(k))
            .collect();
        supplement.extend(other.rows.iter().filter(|r| missing.contains(&twin(r))));
        timed.extend(missing);
    }
    if supplement.is_empty() {
        return Given::Index(main_index);
    }
    Given::Made(Box::leak(Box::new(Table {
        supplement: Box::leak(supplement.into_boxed_slice()),
        ..Table::new(main.device, main.date, main.rows)
    })))
}
