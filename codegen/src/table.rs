//! Reads a measured selection table for embedding (`cutlass_aot::select::Table`): one format for
//! every operation, one row per way timed on one problem.
//!
//! ```text
//! # cutlass-aot selection table
//! # device: NVIDIA H100 80GB HBM3
//! # date: 2026-11-26
//! # columns: op a b c layout dims kernel split_k raster swizzle us
//! gemm<TAB>bf16<TAB>bf16<TAB>bf16<TAB>tnn<TAB>4096,4096,4096,1<TAB>cutlass3x_sm90a_...<TAB>1<TAB>auto<TAB>8<TAB>180.20
//! conv2d_fprop<TAB>f16<TAB>f16<TAB>f16<TAB>-<TAB>128,56,56,64,64,3,3,1,1,1,1,1,1<TAB>cutlass_...<TAB>1<TAB>auto<TAB>0<TAB>80.1
//! ```
//!
//! * `op`: `gemm`, or `conv2d_fprop` / `conv2d_dgrad` / `conv2d_wgrad`.
//! * `a`, `b`, `c`: manifest type names of A, B and C/D (a conv kind's roles).
//! * `layout`: A, B, C letters as the kernel read them (`t` row-major, `n` column-major) for
//!   `gemm`; `-` for conv.
//! * `dims`: `gemm` m,n,k,batch (the problem as the kernel ran it: a transposed run's M and N are
//!   swapped); conv n,h,w,c,k,r,s,pad_h,pad_w,stride_h,stride_w,dilation_h,dilation_w.
//! * `kernel`: a CUTLASS kernel name, or one of the crate's own kernels (`table/built_in.rs`: the
//!   skinny GEMM forms and the direct conv). A conv row may name a GEMM kernel of its types for a
//!   1×1, unpadded, unit-stride problem (run as a matrix product).
//! * `split_k` slices (1: none), `raster` (`auto`, `m`, `n`) and `swizzle` (0, 1, 2, 4, 8) of
//!   CUTLASS 3.x persistent kernels, `us` the time in microseconds.
//!
//! Rows naming a kernel the manifest does not have are dropped with a warning (the table may be
//! older than the manifest); anything malformed is an error naming its line.

mod built_in;

use crate::model::{ConvKind, DType, GemmKernel, Layout, OperationKind, SplitK};
use built_in::built_in_kernel;

/// The first line of a table.
pub const HEADER: &str = "# cutlass-aot selection table";

/// The header line of the columns.
pub const COLUMNS: &str = "# columns: op a b c layout dims kernel split_k raster swizzle us";

const FIELDS: usize = 11;
const KERNEL_FIELD: usize = 6;

/// Extents a row holds at most (the runtime's `select::table::DIMS`).
pub const DIMS: usize = 13;

/// The swizzle bands a row may name (0: automatic).
pub const SWIZZLES: [u32; 5] = [0, 1, 2, 4, 8];

/// The order in which a CUTLASS 3.x persistent kernel walks the output tiles (the runtime's
/// `cutlass_aot::Raster`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Raster {
    /// CUTLASS's choice (`auto`).
    #[default]
    Heuristic,
    /// Along M (`m`).
    AlongM,
    /// Along N (`n`).
    AlongN,
}

impl Raster {
    /// `auto`, `m` or `n`.
    pub fn parse(s: &str) -> Option<Raster> {
        match s {
            "auto" => Some(Raster::Heuristic),
            "m" => Some(Raster::AlongM),
            "n" => Some(Raster::AlongN),
            _ => None,
        }
    }

    /// The table's spelling: `auto`, `m` or `n`.
    pub fn name(self) -> &'static str {
        match self {
            Raster::Heuristic => "auto",
            Raster::AlongM => "m",
            Raster::AlongN => "n",
        }
    }
}

/// The operations a table may hold.
pub const OPS: [&str; 4] = ["gemm", "conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad"];

/// One row, resolved against the manifest's kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// One of [`OPS`].
    pub op: &'static str,
    pub elements: [DType; 3],
    pub layouts: Option<[Layout; 3]>,
    /// The extents, unused ones 0.
    pub dims: [usize; DIMS],
    /// Rust module name of the kernel.
    pub rust_name: String,
    /// For a row timing one of the crate's own kernels (not a manifest kernel): the path of its
    /// static under `cutlass_aot` (`table/built_in.rs`).
    pub built_in: Option<String>,
    pub split_k: usize,
    pub raster: Raster,
    pub swizzle: u32,
    pub us: f64,
}

/// A parsed table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub device: String,
    pub date: String,
    pub rows: Vec<Row>,
    /// Rows dropped because their kernel is not in the manifest (for a build warning).
    pub unknown_kernels: Vec<String>,
}

/// Parses `text` (labelled `label` in errors) against `kernels`. Every malformed row is reported,
/// each with `label` and its line number.
pub fn parse(text: &str, label: &str, kernels: &[GemmKernel]) -> Result<Table, String> {
    let mut table = Table::default();
    let mut errors = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim();
            if let Some(device) = comment.strip_prefix("device:") {
                table.device = device.trim().to_string();
            } else if let Some(date) = comment.strip_prefix("date:") {
                table.date = date.trim().to_string();
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        match parse_row(line, kernels) {
            Ok(Some(row)) => table.rows.push(row),
            Ok(None) => table
                .unknown_kernels
                .push(line.split('\t').nth(KERNEL_FIELD).unwrap_or("").to_string()),
            Err(message) => errors.push(format!("{label}:{}: {message}", index + 1)),
        }
    }
    if errors.is_empty() {
        Ok(table)
    } else {
        Err(errors.join("\n"))
    }
}

/// The extents of `op`'s rows: their names and the least value each may take.
fn dims_of(op: &str) -> &'static [(&'static str, usize)] {
    const GEMM: &[(&str, usize)] = &[("m", 1), ("n", 1), ("k", 1), ("batch", 1)];
    const CONV: &[(&str, usize)] = &[
        ("n", 1),
        ("h", 1),
        ("w", 1),
        ("c", 1),
        ("k", 1),
        ("r", 1),
        ("s", 1),
        ("pad_h", 0),
        ("pad_w", 0),
        ("stride_h", 1),
        ("stride_w", 1),
        ("dilation_h", 1),
        ("dilation_w", 1),
    ];
    if op == "gemm" {
        GEMM
    } else {
        CONV
    }
}

fn parse_row(line: &str, kernels: &[GemmKernel]) -> Result<Option<Row>, String> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != FIELDS {
        return Err(format!(
            "{} tab-separated fields; expected {FIELDS}: {}",
            f.len(),
            COLUMNS.trim_start_matches("# columns: ")
        ));
    }
    let op = *OPS
        .iter()
        .find(|op| **op == f[0])
        .ok_or_else(|| format!("op {:?}: allowed {}", f[0], OPS.join(", ")))?;
    let dtype = |s: &str| {
        DType::from_manifest_name(s)
            .ok_or_else(|| format!("{s:?} is not a type; allowed: {}", DType::allowed()))
    };
    let elements = [dtype(f[1])?, dtype(f[2])?, dtype(f[3])?];
    let layouts = parse_layouts(op, f[4])?;
    let dims = parse_dims(op, f[5])?;
    let count = |s: &str, what: &str| match s.parse::<usize>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!("{what} {s:?} is not a positive integer")),
    };
    let split_k = count(f[7], "split_k")?;
    let raster = Raster::parse(f[8]).ok_or_else(|| format!("raster {:?}: allowed auto, m, n", f[8]))?;
    let swizzle = f[9]
        .parse::<u32>()
        .ok()
        .filter(|s| SWIZZLES.contains(s))
        .ok_or_else(|| format!("swizzle {:?}: allowed 0 (automatic), 1, 2, 4, 8", f[9]))?;
    let us: f64 = f[10]
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("time {:?} is not a positive number of microseconds", f[10]))?;
    // Every field is checked before the kernel name: a malformed row is an error even when its
    // kernel is unknown.
    if let Some(built_in) = built_in_kernel(f[KERNEL_FIELD]) {
        let layout_fits = built_in.layout_a.is_none() || layouts.map(|l| l[0]) == built_in.layout_a;
        let split_fits = built_in.splits || split_k == 1;
        if op != built_in.op
            || elements != [built_in.ab, built_in.ab, built_in.c]
            || !layout_fits
            || !split_fits
        {
            return Err(format!(
                "{} runs {} rows of A and B {} and C {}{}{}",
                f[KERNEL_FIELD],
                built_in.op,
                built_in.ab.manifest_name(),
                built_in.c.manifest_name(),
                match built_in.layout_a {
                    Some(Layout::Row) => ", A row-major (layout t..)",
                    Some(_) => ", A column-major (layout n..)",
                    None => "",
                },
                if built_in.splits { "" } else { ", split_k 1" }
            ));
        }
        return Ok(Some(Row {
            op,
            elements,
            layouts,
            dims,
            rust_name: built_in.rust_name,
            built_in: Some(built_in.path),
            split_k,
            raster,
            swizzle,
            us,
        }));
    }
    let Some(kernel) = kernels.iter().find(|k| k.name == f[KERNEL_FIELD]) else {
        return Ok(None);
    };
    check_kernel(op, kernel, elements, layouts, &dims, split_k)?;
    Ok(Some(Row {
        op,
        elements,
        layouts,
        dims,
        rust_name: kernel.rust_name.clone(),
        built_in: None,
        split_k,
        raster,
        swizzle,
        us,
    }))
}

fn parse_layouts(op: &str, field: &str) -> Result<Option<[Layout; 3]>, String> {
    if op != "gemm" {
        return match field {
            "-" => Ok(None),
            _ => Err(format!("layout {field:?}: a {op} row has none; write -")),
        };
    }
    let letter = |c: char| match c {
        't' => Ok(Layout::Row),
        'n' => Ok(Layout::Column),
        _ => Err(format!(
            "layout letter {c:?}: allowed t (row-major) and n (column-major)"
        )),
    };
    let letters: Vec<char> = field.chars().collect();
    if letters.len() != 3 {
        return Err(format!(
            "layout {field:?} must be three letters (A, B, C), e.g. tnt"
        ));
    }
    Ok(Some([
        letter(letters[0])?,
        letter(letters[1])?,
        letter(letters[2])?,
    ]))
}

fn parse_dims(op: &str, field: &str) -> Result<[usize; DIMS], String> {
    let names = dims_of(op);
    let values: Vec<&str> = field.split(',').collect();
    if values.len() != names.len() {
        let list: Vec<&str> = names.iter().map(|(name, _)| *name).collect();
        return Err(format!(
            "dims {field:?}: a {op} row has {} comma-separated extents ({})",
            names.len(),
            list.join(",")
        ));
    }
    let mut dims = [0; DIMS];
    for (i, (value, (name, least))) in values.iter().zip(names).enumerate() {
        dims[i] = value
            .parse::<usize>()
            .ok()
            .filter(|v| v >= least)
            .ok_or_else(|| format!("{name} {value:?} is not an integer of at least {least}"))?;
    }
    Ok(dims)
}

/// The row's kernel must compute its operation on its types (and layouts), and split K if asked.
fn check_kernel(
    op: &str,
    kernel: &GemmKernel,
    elements: [DType; 3],
    layouts: Option<[Layout; 3]>,
    dims: &[usize; DIMS],
    split_k: usize,
) -> Result<(), String> {
    let is_gemm = kernel.kind == OperationKind::Gemm;
    let conv_kind = op.strip_prefix("conv2d_").and_then(ConvKind::from_manifest_name);
    match conv_kind {
        None if !is_gemm => {
            return Err(format!(
                "kernel {} is a {} kernel, not a GEMM",
                kernel.name, kernel.kind
            ))
        }
        Some(kind) if kernel.conv_kind() != Some(kind) && !is_gemm => {
            return Err(format!(
                "kernel {} is a {} kernel, not {op} nor a GEMM",
                kernel.name, kernel.kind
            ))
        }
        // A GEMM kernel runs 1x1 unit-stride problems as a matrix product (conv::dispatch::as_gemm).
        Some(_)
            if is_gemm && (dims[5], dims[6], dims[7], dims[8], dims[9], dims[10]) != (1, 1, 0, 0, 1, 1) =>
        {
            return Err(format!(
                "GEMM kernel {} runs only 1x1, unpadded, unit-stride problems as a matrix product",
                kernel.name
            ))
        }
        _ => {}
    }
    let kernel_types = [kernel.element_a, kernel.element_b, kernel.element_c];
    if elements != kernel_types {
        return Err(format!(
            "the row's types {}/{}/{} are not kernel {}'s {}/{}/{}",
            elements[0],
            elements[1],
            elements[2],
            kernel.name,
            kernel_types[0],
            kernel_types[1],
            kernel_types[2]
        ));
    }
    let kernel_layouts = [kernel.layout_a, kernel.layout_b, kernel.layout_c];
    if let Some(layouts) = layouts.filter(|l| *l != kernel_layouts) {
        return Err(format!(
            "kernel {} takes {}, not the row's {}",
            kernel.name,
            kernel_layouts.map(Layout::letter).concat(),
            layouts.map(Layout::letter).concat()
        ));
    }
    if split_k > 1 && kernel.spec().design.split_k() == SplitK::None {
        return Err(format!(
            "split_k {split_k}: kernel {} cannot split K (a 3.x kernel without the stream-K \
             scheduler); its rows take split_k 1",
            kernel.name
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CUTLASS 3.x bf16 TN kernel (persistent: cannot split K), a 2.x f16 TN kernel (serial
    /// split-K) and a conv fprop kernel of f16.
    fn kernels() -> Vec<GemmKernel> {
        let yaml = "version: 1
operations:
  - kind: gemm
    name: bf16_sm90_tn
    arch: 90
    a: bf16
    layout_a: row
    layout_b: column
    tile: [128, 256, 64]
    cluster: [2, 1, 1]
    schedule: cooperative
    epilogue_schedule: tma
  - kind: gemm
    name: gemm_f16_tn
    arch: 80
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 256, 64]
    warps: [2, 4, 1]
    stages: 3
  - kind: conv2d_fprop
    name: fprop_f16
    arch: 80
    a: f16
    tile: [128, 128, 32]
    warps: [2, 2, 1]
    stages: 3
";
        crate::manifest::parse(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn text(rows: &[String]) -> String {
        format!(
            "{HEADER}\n# device: NVIDIA H100 80GB HBM3\n# date: 2026-11-26\n{COLUMNS}\n{}\n",
            rows.join("\n")
        )
    }

    /// A row from space-separated fields.
    fn row(fields: &str) -> String {
        fields.replace(' ', "\t")
    }

    const STEM: &str = "128,224,224,4,64,7,7,3,3,2,2,1,1";
    const POINTWISE: &str = "128,56,56,64,256,1,1,0,0,1,1,1,1";

    #[test]
    fn reads_gemm_and_conv_rows_of_every_kind_of_kernel() {
        let k = kernels();
        let (bf16, f16, fprop) = (&k[0].name, &k[1].name, &k[2].name);
        let t = parse(
            &text(&[
                row(&format!(
                    "gemm bf16 bf16 bf16 tnt 4096,4096,4096,1 {bf16} 1 n 8 180.5"
                )),
                row(&format!(
                    "gemm f16 f16 f16 tnt 512,512,32768,1 {f16} 8 auto 0 95.25"
                )),
                row(&format!(
                    "conv2d_fprop f16 f16 f16 - {STEM} {fprop} 2 auto 0 294.7"
                )),
                row(&format!(
                    "conv2d_fprop f16 f16 f16 - {POINTWISE} {f16} 1 auto 0 30.5"
                )),
                row("gemm f16 f16 f16 tnt 1,2,3,1 cutlass_gone 1 auto 0 1.0"),
            ]),
            "t.tsv",
            &k,
        )
        .unwrap();
        assert_eq!(t.device, "NVIDIA H100 80GB HBM3");
        assert_eq!(t.date, "2026-11-26");
        assert_eq!(t.unknown_kernels, ["cutlass_gone"]);
        assert_eq!(t.rows.len(), 4);
        let first = &t.rows[0];
        assert_eq!(
            (first.op, first.raster, first.swizzle, first.us),
            ("gemm", Raster::AlongN, 8, 180.5)
        );
        assert_eq!(first.layouts, Some([Layout::Row, Layout::Column, Layout::Row]));
        assert_eq!(&first.dims[..5], &[4096, 4096, 4096, 1, 0]);
        assert_eq!(t.rows[1].split_k, 8);
        assert_eq!(t.rows[2].layouts, None);
        assert_eq!(t.rows[2].dims, [128, 224, 224, 4, 64, 7, 7, 3, 3, 2, 2, 1, 1]);
        assert_eq!(t.rows[3].rust_name, "gemm_f16_tn");
    }

    #[test]
    fn reads_rows_of_the_crates_own_skinny_kernels() {
        let t = parse(
            &text(&[
                row(
                    "gemm bf16 bf16 bf16 tnt 20763,14,13774,1 cutlass_aot_skinny_tensor_bf16 16 auto 0 405.2",
                ),
                row("gemm f16 f16 f32 nnn 9,3,77,2 cutlass_aot_skinny_axpy_f16_f32 1 auto 0 4.5"),
                row("gemm f64 f64 f64 ntn 9,3,7,1 cutlass_aot_skinny_tiny_warp_f64 1 auto 0 4.7"),
                row("gemm bf16 bf16 f32 ttt 9,3,7,1 cutlass_aot_skinny_tiny_thread_bf16_f32 1 auto 0 4.6"),
                // The tensor form takes 16-bit operands only: an unknown kernel, as a stale name.
                row("gemm f32 f32 f32 tnt 9,3,77,1 cutlass_aot_skinny_tensor_f32 1 auto 0 4.5"),
            ]),
            "t.tsv",
            &kernels(),
        )
        .unwrap();
        let built_in: Vec<_> = t
            .rows
            .iter()
            .map(|r| (r.built_in.as_deref(), r.rust_name.as_str()))
            .collect();
        assert_eq!(
            built_in,
            [
                (Some("dispatch::skinny::TENSOR_BF16"), "skinny_tensor_bf16"),
                (Some("dispatch::skinny::AXPY_F16_F32"), "skinny_axpy_f16_f32"),
                (Some("dispatch::skinny::TINY_WARP_F64"), "skinny_tiny_warp_f64"),
                (
                    Some("dispatch::skinny::TINY_THREAD_BF16_F32"),
                    "skinny_tiny_thread_bf16_f32"
                )
            ]
        );
        assert_eq!(t.unknown_kernels, ["cutlass_aot_skinny_tensor_f32"]);
        let conv = parse(
            &text(&[row(&format!(
                "conv2d_fprop f16 f16 f16 - {STEM} cutlass_aot_skinny_dot_f16 1 auto 0 1.0"
            ))]),
            "t.tsv",
            &kernels(),
        );
        assert!(conv.unwrap_err().contains("runs gemm rows"));
        // Types or A's layout other than the kernel's: a malformed row.
        for wrong in [
            "gemm f16 f16 f16 tnt 9,3,77,1 cutlass_aot_skinny_axpy_f16_f32 1 auto 0 4.5",
            "gemm f16 f16 f32 tnt 9,3,77,1 cutlass_aot_skinny_axpy_f16_f32 1 auto 0 4.5",
        ] {
            let e = parse(&text(&[row(wrong)]), "t.tsv", &kernels()).unwrap_err();
            assert!(e.contains("A and B f16 and C f32, A column-major"), "{e}");
        }
    }

    #[test]
    fn every_malformed_row_is_an_error_naming_its_line_and_what_is_allowed() {
        let k = kernels();
        let (bf16, f16, fprop) = (&k[0].name, &k[1].name, &k[2].name);
        let bad = [
            (
                row(&format!(
                    "gemm bf16 bf16 bf16 tnt 4096,4096,4096,1 {bf16} 1 auto 0"
                )),
                "10 tab-separated fields",
            ),
            (
                row(&format!("conv3d f16 f16 f16 - {STEM} {fprop} 1 auto 0 1.0")),
                "op \"conv3d\": allowed gemm",
            ),
            (
                row(&format!("gemm f17 f16 f16 tnt 1,1,1,1 {f16} 1 auto 0 1.0")),
                "\"f17\" is not a type",
            ),
            (
                row(&format!("gemm f16 f16 f16 tx 1,1,1,1 {f16} 1 auto 0 1.0")),
                "must be three letters",
            ),
            (
                row(&format!("gemm f16 f16 f16 tnt 1,1,1 {f16} 1 auto 0 1.0")),
                "has 4 comma-separated extents (m,n,k,batch)",
            ),
            (
                row(&format!("gemm f16 f16 f16 tnt 0,1,1,1 {f16} 1 auto 0 1.0")),
                "m \"0\" is not an integer of at least 1",
            ),
            (
                row(&format!("gemm f16 f16 f16 tnt 1,1,1,1 {f16} 0 auto 0 1.0")),
                "split_k \"0\"",
            ),
            (
                row(&format!("gemm f16 f16 f16 tnt 1,1,1,1 {f16} 1 diag 0 1.0")),
                "raster \"diag\"",
            ),
            (
                row(&format!("gemm f16 f16 f16 tnt 1,1,1,1 {f16} 1 auto 3 1.0")),
                "swizzle \"3\"",
            ),
            (
                row(&format!("gemm f16 f16 f16 tnt 1,1,1,1 {f16} 1 auto 0 -1")),
                "time \"-1\"",
            ),
            (
                row(&format!(
                    "conv2d_fprop f16 f16 f16 tnt {STEM} {fprop} 1 auto 0 1.0"
                )),
                "write -",
            ),
            (
                row(&format!("gemm bf16 bf16 bf16 ttt 1,1,1,1 {bf16} 1 auto 0 1.0")),
                "takes tnt, not the row's ttt",
            ),
            (
                row(&format!("gemm bf16 bf16 bf16 tnt 1,1,1,1 {bf16} 4 auto 0 1.0")),
                "cannot split K",
            ),
            (
                row(&format!("gemm f16 f16 f16 tnt 1,1,1,1 {fprop} 1 auto 0 1.0")),
                "not a GEMM",
            ),
            (
                row(&format!("conv2d_fprop f16 f16 f16 - {STEM} {f16} 1 auto 0 1.0")),
                "only 1x1",
            ),
            (
                row(&format!("conv2d_dgrad f16 f16 f16 - {STEM} {fprop} 1 auto 0 1.0")),
                "not conv2d_dgrad",
            ),
            (
                row(&format!(
                    "conv2d_fprop bf16 bf16 bf16 - {STEM} {fprop} 1 auto 0 1.0"
                )),
                "are not kernel",
            ),
        ];
        let rows: Vec<String> = bad.iter().map(|(r, _)| r.clone()).collect();
        let message = parse(&text(&rows), "t.tsv", &k).unwrap_err();
        for (i, (_, expected)) in bad.iter().enumerate() {
            let line = message
                .lines()
                .find(|l| l.starts_with(&format!("t.tsv:{}:", i + 5)))
                .unwrap_or_else(|| panic!("no error for line {}: {message}", i + 5));
            assert!(
                line.contains(expected),
                "line {}: {line:?} lacks {expected:?}",
                i + 5
            );
        }
        // A malformed row is an error even when its kernel is unknown.
        let message = parse(
            &text(&[row("gemm f16 f16 f16 tnt 1,1,1,1 gone 1 auto 7 1.0")]),
            "t.tsv",
            &k,
        )
        .unwrap_err();
        assert!(message.contains("swizzle \"7\""), "{message}");
    }
}
