//! Reads a measured dispatch table (the profiler's `--dispatch-out` TSV) for embedding.
//!
//! ```text
//! # cutlass-aot dispatch table
//! # device: NVIDIA H100 80GB HBM3
//! # date: 2026-11-21
//! # columns: a b c layout m n k batch kernel us
//! bf16<TAB>bf16<TAB>bf16<TAB>tnt<TAB>4096<TAB>4096<TAB>4096<TAB>1<TAB>cutlass3x_sm90a_...<TAB>180.20
//! ```
//!
//! `a`/`b`/`c` are manifest type names, `layout` the A, B, C letters (`t` row-major, `n`
//! column-major), `kernel` a CUTLASS kernel name. Rows naming a kernel the manifest does not have
//! are dropped with a warning (the table may be older than the manifest); anything malformed is an
//! error naming its line.

use crate::model::{DType, GemmKernel, Layout};

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
    let mut table = Table::default();
    let mut errors = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
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
                .push(line.split('\t').nth(8).unwrap_or("").to_string()),
            Err(message) => errors.push(format!("{label}:{line_no}: {message}")),
        }
    }
    if errors.is_empty() {
        Ok(table)
    } else {
        Err(errors.join("\n"))
    }
}

fn parse_row(line: &str, kernels: &[GemmKernel]) -> Result<Option<Row>, String> {
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() != 10 {
        return Err(format!(
            "{} tab-separated fields; expected 10: a b c layout m n k batch kernel us",
            fields.len()
        ));
    }
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
    let us: f64 = fields[9]
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("time {:?} is not a positive number of microseconds", fields[9]))?;
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
    let Some(kernel) = kernels.iter().find(|kernel| kernel.name == fields[8]) else {
        return Ok(None);
    };
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
        us,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two kernels of a small manifest: a CUTLASS 3.x bf16 TN kernel and a 2.x f16 TN kernel.
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
";
        let kernels = crate::manifest::parse(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kernels.len(), 2);
        assert_eq!(kernels[0].rust_name, "bf16_sm90_tn");
        assert_eq!(kernels[1].rust_name, "gemm_f16_tn");
        kernels
    }

    /// A tab-separated row.
    fn row(fields: &[&str]) -> String {
        fields.join("\t")
    }

    fn header() -> String {
        "# cutlass-aot dispatch table\n\
         # device: NVIDIA H100 80GB HBM3\n\
         # date: 2026-11-21\n\
         # columns: a b c layout m n k batch kernel us\n"
            .to_string()
    }

    /// Parses `header + body` and returns the error text (panics when it parses).
    fn error_of(body: &str, kernels: &[GemmKernel]) -> String {
        match parse(&format!("{}{body}\n", header()), "table.tsv", kernels) {
            Ok(table) => panic!("parsed a malformed table: {table:?}"),
            Err(message) => message,
        }
    }

    #[test]
    fn parses_headers_and_rows() {
        let ks = kernels();
        let text = format!(
            "{}{}\n\n{}\r\n",
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
                "35.5"
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
                    us: 35.5,
                },
            ]
        );
        // Column-major letters too.
        let text = row(&["f16", "f16", "f16", "nnn", "1", "2", "3", "4", &ks[1].name, "1e3"]);
        let table = parse(&text, "t", &ks).unwrap();
        assert_eq!(table.rows[0].layouts, [Layout::Column; 3]);
        assert_eq!((table.rows[0].m, table.rows[0].n, table.rows[0].k), (1, 2, 3));
        assert_eq!(table.rows[0].us, 1000.0);
        // No header: device and date stay empty.
        assert_eq!((table.device.as_str(), table.date.as_str()), ("", ""));
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
            "1.0",
        ]);
        let table = parse(&text, "t", &ks).unwrap();
        assert!(table.rows.is_empty());
        assert_eq!(table.unknown_kernels, ["bf16_sm90_tn"]);
        // With no kernels at all every row is unknown.
        let table = parse(&text, "t", &[]).unwrap();
        assert_eq!(table.unknown_kernels.len(), 1);
    }

    #[test]
    fn malformed_rows_are_errors_naming_label_and_line() {
        let ks = kernels();
        let name = ks[0].name.as_str();
        // The header takes lines 1-4, so the first row is line 5.
        let cases: [(Vec<&str>, &str); 8] = [
            (
                vec!["bf16", "bf16", "bf16", "tnt", "4096", "4096", "4096", "1", name],
                "9 tab-separated fields; expected 10",
            ),
            (
                vec!["bf17", "bf16", "bf16", "tnt", "1", "1", "1", "1", name, "1.0"],
                "\"bf17\" is not a type",
            ),
            (
                vec!["bf16", "bf16", "bf16", "txt", "1", "1", "1", "1", name, "1.0"],
                "layout letter 'x'",
            ),
            (
                vec!["bf16", "bf16", "bf16", "tn", "1", "1", "1", "1", name, "1.0"],
                "must be three letters",
            ),
            (
                vec!["bf16", "bf16", "bf16", "tnt", "0", "1", "1", "1", name, "1.0"],
                "m \"0\" is not a positive integer",
            ),
            (
                vec!["bf16", "bf16", "bf16", "tnt", "1", "1", "-8", "1", name, "1.0"],
                "k \"-8\" is not a positive integer",
            ),
            (
                vec!["bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", name, "-3.5"],
                "time \"-3.5\" is not a positive number of microseconds",
            ),
            (
                vec!["bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", name, "NaN"],
                "time \"NaN\"",
            ),
        ];
        for (fields, needle) in cases {
            let message = error_of(&row(&fields), &ks);
            assert!(message.starts_with("table.tsv:5: "), "{message}");
            assert!(message.contains(needle), "expected {needle:?} in {message:?}");
        }
        // Every malformed line is reported, each with its own line number.
        let good = row(&["bf16", "bf16", "bf16", "tnt", "1", "1", "1", "1", name, "1.0"]);
        let bad_batch = row(&["bf16", "bf16", "bf16", "tnt", "1", "1", "1", "x", name, "1.0"]);
        let message = error_of(&format!("{good}\n{bad_batch}\n\n# note\n{bad_batch}"), &ks);
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(lines.len(), 2, "{message}");
        assert!(lines[0].starts_with("table.tsv:6: batch \"x\""), "{message}");
        assert!(lines[1].starts_with("table.tsv:9: batch \"x\""), "{message}");
    }

    /// The contract (module docs): rows of unknown kernels are dropped, but "anything malformed is
    /// an error naming its line". A row that is malformed is an error whatever kernel it names.
    #[test]
    fn malformed_rows_are_errors_even_when_their_kernel_is_unknown() {
        let ks = kernels();
        let gone = "cutlass3x_sm90a_gone";
        for (fields, needle) in [
            (
                ["bf17", "bf16", "bf16", "tnt", "1", "1", "1", "1", gone, "1.0"],
                "\"bf17\" is not a type",
            ),
            (
                ["bf16", "bf16", "bf16", "txt", "1", "1", "1", "1", gone, "1.0"],
                "layout letter 'x'",
            ),
            (
                ["bf16", "bf16", "bf16", "tnt", "0", "1", "1", "1", gone, "1.0"],
                "m \"0\" is not a positive integer",
            ),
        ] {
            let text = row(&fields);
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
