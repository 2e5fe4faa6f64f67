//! Reads a measured dispatch table (the profiler's `--dispatch-out` TSV) for embedding.
//!
//! ```text
//! # cutlass-aot dispatch table
//! # device: NVIDIA H100 80GB HBM3
//! # date: 2026-11-21
//! # columns: a b c layout m n k batch kernel split_k raster swizzle us
//! bf16<TAB>bf16<TAB>bf16<TAB>tnt<TAB>4096<TAB>4096<TAB>4096<TAB>1<TAB>cutlass3x_sm90a_...<TAB>1<TAB>auto<TAB>8<TAB>180.20
//! ```
//!
//! `a`/`b`/`c` are manifest type names, `layout` the A, B, C letters (`t` row-major, `n`
//! column-major), `kernel` a CUTLASS kernel name, `split_k` the split-K slices it was measured with
//! (1: none), `raster` the tile order of CUTLASS 3.x persistent kernels (`auto`: CUTLASS's choice,
//! `m`: along M, `n`: along N) and `swizzle` their swizzle band in tiles (0: automatic, 1, 2, 4,
//! 8); CUTLASS 2.x kernels ignore both. Rows of the older 10-column format
//! (`a b c layout m n k batch kernel us`) are read as split_k 1, raster auto, swizzle 0.
//!
//! Rows naming a kernel the manifest does not have are dropped with a warning (the table may be
//! older than the manifest); anything malformed is an error naming its line.

use crate::model::{DType, GemmKernel, Layout, SplitK};

/// The header line of the current format's columns.
pub const COLUMNS: &str = "# columns: a b c layout m n k batch kernel split_k raster swizzle us";

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

/// One row, resolved against the manifest's kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub element_a: DType,
    pub element_b: DType,
    pub element_c: DType,
    pub layouts: [Layout; 3],
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    /// Rust module name of the kernel.
    pub rust_name: String,
    /// Split-K slices the time was measured with (1: none).
    pub split_k: usize,
    /// Tile order (3.x kernels).
    pub raster: Raster,
    /// Swizzle band in tiles, one of [`SWIZZLES`] (3.x kernels; 0: automatic).
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

/// Parses `text` (labelled `label` in errors) against `kernels`.
pub fn parse(text: &str, label: &str, kernels: &[GemmKernel]) -> Result<Table, String> {
    let lines = parse_lines(text, label, 8, |line| parse_row(line, kernels))?;
    Ok(Table {
        device: lines.device,
        date: lines.date,
        rows: lines.rows,
        unknown_kernels: lines.unknown_kernels,
    })
}

/// A measured table's lines: `# device:` and `# date:` headers, rows, and the kernel names of rows
/// whose kernel the manifest lacks.
pub(crate) struct Lines<R> {
    pub device: String,
    pub date: String,
    pub rows: Vec<R>,
    pub unknown_kernels: Vec<String>,
}

/// Reads the header comments and parses each other non-empty line with `row` (`Ok(None)`: its
/// kernel, tab-separated field `kernel_field`, is unknown). Every malformed row is reported, each
/// with `label` and its line number. Shared by the GEMM and conv tables.
pub(crate) fn parse_lines<R>(
    text: &str,
    label: &str,
    kernel_field: usize,
    row: impl Fn(&str) -> Result<Option<R>, String>,
) -> Result<Lines<R>, String> {
    let mut lines = Lines {
        device: String::new(),
        date: String::new(),
        rows: Vec::new(),
        unknown_kernels: Vec::new(),
    };
    let mut errors = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim();
            if let Some(device) = comment.strip_prefix("device:") {
                lines.device = device.trim().to_string();
            } else if let Some(date) = comment.strip_prefix("date:") {
                lines.date = date.trim().to_string();
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        match row(line) {
            Ok(Some(parsed)) => lines.rows.push(parsed),
            Ok(None) => lines
                .unknown_kernels
                .push(line.split('\t').nth(kernel_field).unwrap_or("").to_string()),
            Err(message) => errors.push(format!("{label}:{}: {message}", index + 1)),
        }
    }
    if errors.is_empty() {
        Ok(lines)
    } else {
        Err(errors.join("\n"))
    }
}

fn parse_row(line: &str, kernels: &[GemmKernel]) -> Result<Option<Row>, String> {
    let fields: Vec<&str> = line.split('\t').collect();
    // The current format has split_k, raster and swizzle between kernel and us; the older one
    // (10 fields) has none of them.
    let tuned = match fields.len() {
        13 => true,
        10 => false,
        n => {
            return Err(format!(
                "{n} tab-separated fields; expected 13: a b c layout m n k batch kernel split_k raster \
                 swizzle us (or the older 10: a b c layout m n k batch kernel us)"
            ))
        }
    };
    let dtype = |s: &str| {
        DType::from_manifest_name(s)
            .ok_or_else(|| format!("{s:?} is not a type; allowed: {}", DType::allowed()))
    };
    let layout = |c: char| match c {
        't' => Ok(Layout::Row),
        'n' => Ok(Layout::Column),
        _ => Err(format!(
            "layout letter {c:?}: allowed t (row-major) and n (column-major)"
        )),
    };
    let letters: Vec<char> = fields[3].chars().collect();
    if letters.len() != 3 {
        return Err(format!(
            "layout {:?} must be three letters (A, B, C), e.g. tnt",
            fields[3]
        ));
    }
    let count = |s: &str, what: &str| match s.parse::<usize>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!("{what} {s:?} is not a positive integer")),
    };
    let us_field = fields[fields.len() - 1];
    let us: f64 = us_field
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("time {us_field:?} is not a positive number of microseconds"))?;
    // Every field is checked before the kernel name: a malformed row is an error even when its
    // kernel is unknown.
    let (element_a, element_b, element_c) = (dtype(fields[0])?, dtype(fields[1])?, dtype(fields[2])?);
    let layouts = [layout(letters[0])?, layout(letters[1])?, layout(letters[2])?];
    let (m, n, k) = (
        count(fields[4], "m")?,
        count(fields[5], "n")?,
        count(fields[6], "k")?,
    );
    let batch = count(fields[7], "batch")?;
    let (split_k, raster, swizzle) = if tuned {
        let split_k = count(fields[9], "split_k")?;
        let raster = Raster::parse(fields[10])
            .ok_or_else(|| format!("raster {:?}: allowed auto, m, n", fields[10]))?;
        let swizzle = fields[11]
            .parse::<u32>()
            .ok()
            .filter(|s| SWIZZLES.contains(s))
            .ok_or_else(|| format!("swizzle {:?}: allowed 0 (automatic), 1, 2, 4, 8", fields[11]))?;
        (split_k, raster, swizzle)
    } else {
        (1, Raster::Heuristic, 0)
    };
    let Some(kernel) = kernels.iter().find(|kernel| kernel.name == fields[8]) else {
        return Ok(None);
    };
    let kernel_types = (kernel.element_a, kernel.element_b, kernel.element_c);
    let kernel_layouts = [kernel.layout_a, kernel.layout_b, kernel.layout_c];
    if (element_a, element_b, element_c) != kernel_types || layouts != kernel_layouts {
        return Err(format!(
            "kernel {} takes {} {} {} {}, not the row's {} {} {} {}",
            kernel.name,
            kernel.element_a,
            kernel.element_b,
            kernel.element_c,
            kernel_layouts.map(Layout::letter).concat(),
            element_a,
            element_b,
            element_c,
            fields[3]
        ));
    }
    if split_k > 1 && kernel.spec().design.split_k() == SplitK::None {
        return Err(format!(
            "split_k {split_k}: kernel {} cannot split K (a 3.x kernel without the stream-K \
             scheduler); its rows take split_k 1",
            kernel.name
        ));
    }
    Ok(Some(Row {
        element_a,
        element_b,
        element_c,
        layouts,
        m,
        n,
        k,
        batch,
        rust_name: kernel.rust_name.clone(),
        split_k,
        raster,
        swizzle,
        us,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four kernels of a small manifest: a CUTLASS 3.x bf16 TN kernel (persistent: cannot split
    /// K), a 2.x f16 TN kernel (serial split-K), a 3.x stream-K bf16 TN kernel and a 2.x f16 kernel
    /// with every matrix column-major.
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
  - kind: gemm
    name: bf16_sm90_streamk
    arch: 90
    a: bf16
    layout_a: row
    layout_b: column
    tile: [128, 128, 64]
    schedule: cooperative
    epilogue_schedule: tma
    tile_scheduler: stream_k
  - kind: gemm
    name: gemm_f16_nnn
    arch: 80
    a: f16
    layout_a: column
    layout_b: column
    layout_c: column
    tile: [128, 128, 32]
    warps: [2, 2, 1]
    stages: 3
";
        let kernels = crate::manifest::parse(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kernels.len(), 4);
        assert_eq!(kernels[0].rust_name, "bf16_sm90_tn");
        assert_eq!(kernels[1].rust_name, "gemm_f16_tn");
        assert_eq!(kernels[2].rust_name, "bf16_sm90_streamk");
        assert_eq!(kernels[0].spec().design.split_k(), SplitK::None);
        assert_eq!(kernels[1].spec().design.split_k(), SplitK::Serial);
        assert_eq!(kernels[2].spec().design.split_k(), SplitK::StreamK);
        assert_eq!(kernels[3].rust_name, "gemm_f16_nnn");
        kernels
    }

    /// A tab-separated row.
    fn row(fields: &[&str]) -> String {
        fields.join("\t")
    }

    fn header() -> String {
        format!(
            "# cutlass-aot dispatch table\n\
             # device: NVIDIA H100 80GB HBM3\n\
             # date: 2026-11-21\n\
             {COLUMNS}\n"
        )
    }

    /// Parses `header + body` and returns the error text (panics when it parses).
    fn error_of(body: &str, kernels: &[GemmKernel]) -> String {
        match parse(&format!("{}{body}\n", header()), "table.tsv", kernels) {
            Ok(table) => panic!("parsed a malformed table: {table:?}"),
            Err(message) => message,
        }
    }

    #[test]
    fn columns_header_names_thirteen_columns() {
        let names: Vec<&str> = COLUMNS
            .trim_start_matches("# columns:")
            .split_whitespace()
            .collect();
        assert_eq!(names.len(), 13);
        assert_eq!(names[8..], ["kernel", "split_k", "raster", "swizzle", "us"]);
    }

    #[test]
    fn rasters_round_trip() {
        for raster in [Raster::Heuristic, Raster::AlongM, Raster::AlongN] {
            assert_eq!(Raster::parse(raster.name()), Some(raster));
        }
        assert_eq!(Raster::default(), Raster::Heuristic);
        assert_eq!(Raster::parse("M"), None);
        assert_eq!(Raster::parse(""), None);
    }

    #[test]
    fn parses_headers_and_rows() {
        let ks = kernels();
        let text = format!(
            "{}{}\n\n{}\r\n{}\n",
            header(),
            row(&[
                "bf16",
                "bf16",
                "bf16",
                "tnt",
                "4096",
                "4096",
                "4096",
                "1",
                &ks[0].name,
                "1",
                "n",
                "8",
                "180.20"
            ]),
            row(&[
                "f16",
                "f16",
                "f16",
                "tnt",
                "16",
                "4096",
                "8192",
                "2",
                &ks[1].name,
                "4",
                "auto",
                "0",
                "35.5"
            ]),
            row(&[
                "bf16",
                "bf16",
                "bf16",
                "tnt",
                "512",
                "512",
                "32768",
                "1",
                &ks[2].name,
                "16",
                "m",
                "2",
                "40.25"
            ]),
        );
        let table = parse(&text, "table.tsv", &ks).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(table.device, "NVIDIA H100 80GB HBM3");
        assert_eq!(table.date, "2026-11-21");
        assert!(table.unknown_kernels.is_empty());
        assert_eq!(
            table.rows,
            [
                Row {
                    element_a: DType::Bf16,
                    element_b: DType::Bf16,
                    element_c: DType::Bf16,
                    layouts: [Layout::Row, Layout::Column, Layout::Row],
                    m: 4096,
                    n: 4096,
                    k: 4096,
                    batch: 1,
                    rust_name: "bf16_sm90_tn".into(),
                    split_k: 1,
                    raster: Raster::AlongN,
                    swizzle: 8,
                    us: 180.20,
                },
                Row {
                    element_a: DType::F16,
                    element_b: DType::F16,
                    element_c: DType::F16,
                    layouts: [Layout::Row, Layout::Column, Layout::Row],
                    m: 16,
                    n: 4096,
                    k: 8192,
                    batch: 2,
                    rust_name: "gemm_f16_tn".into(),
                    split_k: 4,
                    raster: Raster::Heuristic,
                    swizzle: 0,
                    us: 35.5,
                },
                Row {
                    element_a: DType::Bf16,
                    element_b: DType::Bf16,
                    element_c: DType::Bf16,
                    layouts: [Layout::Row, Layout::Column, Layout::Row],
                    m: 512,
                    n: 512,
                    k: 32768,
                    batch: 1,
                    rust_name: "bf16_sm90_streamk".into(),
                    split_k: 16,
                    raster: Raster::AlongM,
                    swizzle: 2,
                    us: 40.25,
                },
            ]
        );
        // Column-major letters too.
        let text = row(&[
            "f16",
            "f16",
            "f16",
            "nnn",
            "1",
            "2",
            "3",
            "4",
            &ks[3].name,
            "1",
            "auto",
            "1",
            "1e3",
        ]);
        let table = parse(&text, "t", &ks).unwrap();
        assert_eq!(table.rows[0].layouts, [Layout::Column; 3]);
        assert_eq!((table.rows[0].m, table.rows[0].n, table.rows[0].k), (1, 2, 3));
        assert_eq!(table.rows[0].us, 1000.0);
        assert_eq!(table.rows[0].swizzle, 1);
        // No header: device and date stay empty.
        assert_eq!((table.device.as_str(), table.date.as_str()), ("", ""));
        // Every swizzle band CUTLASS has.
        for swizzle in SWIZZLES {
            let text = row(&[
                "bf16",
                "bf16",
                "bf16",
                "tnt",
                "1",
                "1",
                "1",
                "1",
                &ks[0].name,
                "1",
                "auto",
                &swizzle.to_string(),
                "1.0",
            ]);
            assert_eq!(parse(&text, "t", &ks).unwrap().rows[0].swizzle, swizzle);
        }
    }

    /// Tables written before split_k, raster and swizzle were recorded still build: their rows
    /// are 1 slice, CUTLASS's raster and the automatic swizzle.
    #[test]
    fn old_ten_column_rows_are_read_with_default_tuning() {
        let ks = kernels();
        let text = format!(
            "# cutlass-aot dispatch table\n# device: NVIDIA H200\n# date: 2026-11-21\n\
             # columns: a b c layout m n k batch kernel us\n{}\n{}\n",
            row(&[
                "bf16",
                "bf16",
                "bf16",
                "tnt",
                "4096",
                "4096",
                "4096",
                "1",
                &ks[0].name,
                "180.20"
            ]),
            // Old and new rows may even be mixed (tables merged by hand).
            row(&[
                "bf16",
                "bf16",
                "bf16",
                "tnt",
                "8192",
                "8192",
                "8192",
                "1",
                &ks[0].name,
                "1",
                "m",
                "4",
                "1400"
            ]),
        );
        let table = parse(&text, "old.tsv", &ks).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(table.device, "NVIDIA H200");
        assert_eq!(table.rows.len(), 2);
        let old = &table.rows[0];
        assert_eq!(
            (old.m, old.split_k, old.raster, old.swizzle, old.us),
            (4096, 1, Raster::Heuristic, 0, 180.20)
        );
        let new = &table.rows[1];
        assert_eq!(
            (new.m, new.split_k, new.raster, new.swizzle, new.us),
            (8192, 1, Raster::AlongM, 4, 1400.0)
        );
    }

    #[test]
    fn empty_table_parses_to_nothing() {
        let table = parse(&header(), "table.tsv", &kernels()).unwrap();
        assert!(table.rows.is_empty());
        assert!(table.unknown_kernels.is_empty());
        assert_eq!(parse("", "t", &[]).unwrap(), Table::default());
    }

    #[test]
    fn rows_of_unknown_kernels_are_dropped_not_errors() {
        let ks = kernels();
        let text = format!(
            "{}{}\n{}\n",
            header(),
            row(&[
                "bf16",
                "bf16",
                "bf16",
                "tnt",
                "4096",
                "4096",
                "4096",
                "1",
                "cutlass3x_sm90a_gone",
                "1",
                "auto",
                "0",
                "1.0"
            ]),
            row(&[
                "bf16",
                "bf16",
                "bf16",
                "tnt",
                "128",
                "128",
                "128",
                "1",
                &ks[0].name,
                "1",
                "auto",
                "0",
                "2.0"
            ]),
        );
        let table = parse(&text, "table.tsv", &ks).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(table.unknown_kernels, ["cutlass3x_sm90a_gone"]);
        assert_eq!(table.rows.len(), 1);
        assert_eq!(table.rows[0].rust_name, "bf16_sm90_tn");
        // Kernels are matched by CUTLASS name, not by Rust name.
        let text = row(&[
            "bf16",
            "bf16",
            "bf16",
            "tnt",
            "1",
            "1",
            "1",
            "1",
            "bf16_sm90_tn",
            "1",
            "auto",
            "0",
            "1.0",
        ]);
        let table = parse(&text, "t", &ks).unwrap();
        assert!(table.rows.is_empty());
        assert_eq!(table.unknown_kernels, ["bf16_sm90_tn"]);
        // With no kernels at all every row is unknown, in either format.
        let table = parse(&text, "t", &[]).unwrap();
        assert_eq!(table.unknown_kernels.len(), 1);
        let old = row(&["bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", "gone", "1.0"]);
        assert_eq!(parse(&old, "t", &[]).unwrap().unknown_kernels, ["gone"]);
        // A split_k the kernel could not run is only checked against known kernels.
        let text = row(&[
            "bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", "gone", "8", "auto", "0", "1.0",
        ]);
        assert_eq!(parse(&text, "t", &ks).unwrap().unknown_kernels, ["gone"]);
    }

    #[test]
    fn malformed_rows_are_errors_naming_label_and_line() {
        let ks = kernels();
        let name = ks[0].name.as_str();
        let f16 = ks[1].name.as_str();
        // The header takes lines 1-4, so the first row is line 5.
        fn with<'a>(name: &'a str, changes: &[(usize, &'a str)]) -> Vec<&'a str> {
            let mut fields = vec![
                "bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", name, "1", "auto", "0", "1.0",
            ];
            for &(index, value) in changes {
                fields[index] = value;
            }
            fields
        }
        let good = |changes: &[(usize, &'static str)]| with(name, changes);
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (
                vec!["bf16", "bf16", "bf16", "tnt", "4096", "4096", "4096", "1", name],
                "9 tab-separated fields; expected 13",
            ),
            (
                good(&[]).into_iter().chain(["x"]).collect(),
                "14 tab-separated fields; expected 13",
            ),
            (good(&[])[..11].to_vec(), "11 tab-separated fields"),
            (good(&[(0, "bf17")]), "\"bf17\" is not a type"),
            (good(&[(3, "txt")]), "layout letter 'x'"),
            (good(&[(3, "tn")]), "must be three letters"),
            (good(&[(4, "0")]), "m \"0\" is not a positive integer"),
            (good(&[(6, "-8")]), "k \"-8\" is not a positive integer"),
            (
                good(&[(12, "-3.5")]),
                "time \"-3.5\" is not a positive number of microseconds",
            ),
            (good(&[(12, "NaN")]), "time \"NaN\""),
            // The new columns.
            (good(&[(9, "0")]), "split_k \"0\" is not a positive integer"),
            (good(&[(9, "two")]), "split_k \"two\" is not a positive integer"),
            (good(&[(9, "")]), "split_k \"\" is not a positive integer"),
            (good(&[(10, "M")]), "raster \"M\": allowed auto, m, n"),
            (good(&[(10, "heuristic")]), "raster \"heuristic\""),
            (good(&[(10, "")]), "raster \"\""),
            (
                good(&[(11, "3")]),
                "swizzle \"3\": allowed 0 (automatic), 1, 2, 4, 8",
            ),
            (good(&[(11, "16")]), "swizzle \"16\""),
            (good(&[(11, "-1")]), "swizzle \"-1\""),
            (good(&[(11, "auto")]), "swizzle \"auto\""),
            // Columns in the wrong order: the time where the raster belongs.
            (good(&[(10, "1.0"), (12, "auto")]), "time \"auto\""),
            // The row's types and layouts must be the kernel's.
            (
                good(&[(0, "f16"), (1, "f16"), (2, "f16")]),
                "takes bf16 bf16 bf16 tnt, not the row's f16 f16 f16 tnt",
            ),
            (good(&[(3, "tnn")]), "not the row's bf16 bf16 bf16 tnn"),
            // A persistent 3.x kernel cannot split K.
            (good(&[(9, "2")]), "split_k 2: kernel cutlass3x_"),
            // The old format's rows are checked as before.
            (
                vec!["bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", name, "-3.5"],
                "time \"-3.5\"",
            ),
        ];
        for (fields, needle) in cases {
            let message = error_of(&row(&fields), &ks);
            assert!(message.starts_with("table.tsv:5: "), "{message}");
            assert!(message.contains(needle), "expected {needle:?} in {message:?}");
        }
        // 2.x (serial split-K) and stream-K kernels take slices.
        let ok = [
            with(f16, &[(0, "f16"), (1, "f16"), (2, "f16"), (9, "16")]),
            with(&ks[2].name, &[(9, "3")]),
        ];
        for fields in ok {
            let table = parse(&row(&fields), "t", &ks).unwrap_or_else(|e| panic!("{e}"));
            assert!(table.rows[0].split_k > 1);
        }
        // Every malformed line is reported, each with its own line number.
        let good_row = row(&good(&[]));
        let bad_batch = row(&good(&[(7, "x")]));
        let bad_swizzle = row(&good(&[(11, "5")]));
        let message = error_of(&format!("{good_row}\n{bad_batch}\n\n# note\n{bad_swizzle}"), &ks);
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(lines.len(), 2, "{message}");
        assert!(lines[0].starts_with("table.tsv:6: batch \"x\""), "{message}");
        assert!(lines[1].starts_with("table.tsv:9: swizzle \"5\""), "{message}");
    }

    /// The contract (module docs): rows of unknown kernels are dropped, but "anything malformed is
    /// an error naming its line". A row that is malformed is an error whatever kernel it names.
    #[test]
    fn malformed_rows_are_errors_even_when_their_kernel_is_unknown() {
        let ks = kernels();
        let gone = "cutlass3x_sm90a_gone";
        let cases: [(&[&str], &str); 6] = [
            (
                &["bf17", "bf16", "bf16", "tnt", "1", "1", "1", "1", gone, "1.0"],
                "\"bf17\" is not a type",
            ),
            (
                &["bf16", "bf16", "bf16", "txt", "1", "1", "1", "1", gone, "1.0"],
                "layout letter 'x'",
            ),
            (
                &["bf16", "bf16", "bf16", "tnt", "0", "1", "1", "1", gone, "1.0"],
                "m \"0\" is not a positive integer",
            ),
            (
                &[
                    "bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", gone, "0", "auto", "0", "1.0",
                ],
                "split_k \"0\"",
            ),
            (
                &[
                    "bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", gone, "1", "x", "0", "1.0",
                ],
                "raster \"x\"",
            ),
            (
                &[
                    "bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", gone, "1", "m", "7", "1.0",
                ],
                "swizzle \"7\"",
            ),
        ];
        for (fields, needle) in cases {
            let text = row(fields);
            match parse(&text, "table.tsv", &ks) {
                Err(message) => {
                    assert!(message.starts_with("table.tsv:1: "), "{message}");
                    assert!(message.contains(needle), "expected {needle:?} in {message:?}");
                }
                Ok(table) => panic!(
                    "malformed row {text:?} was accepted (dropped as unknown: {:?})",
                    table.unknown_kernels
                ),
            }
        }
    }
}
