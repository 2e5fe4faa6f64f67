//! Reads a measured conv dispatch table (`conv_bench --dispatch-out`) for embedding
//! (`cutlass_aot::conv::dispatch::Table`). It lives beside the GEMM tables (`bench/dispatch/`) and
//! is told apart by its first line:
//!
//! ```text
//! # cutlass-aot conv dispatch table
//! # device: NVIDIA H100 80GB HBM3
//! # date: 2026-11-23
//! # columns: kind a b c n h w c k r s pad_h pad_w stride_h stride_w dilation_h dilation_w kernel split_k us
//! fprop<TAB>f16<TAB>f16<TAB>f16<TAB>128<TAB>56<TAB>56<TAB>64<TAB>64<TAB>3<TAB>3<TAB>1<TAB>1<TAB>1<TAB>1<TAB>1<TAB>1<TAB>cutlass3x_sm90a_...<TAB>1<TAB>80.1
//! ```
//!
//! `kind` is `fprop`, `dgrad` or `wgrad`; `a`/`b`/`c` the manifest type names of A, B and C/D in
//! that kind's roles; `kernel` a CUTLASS kernel name of that kind and those types, or of a GEMM
//! kernel of those types for a 1×1, unpadded, unit-stride problem (run as a matrix product);
//! `split_k` the slices it was measured with. Rows naming a kernel the manifest does not have are dropped with a
//! warning (silently when the manifest has no conv kernels: the conv family is a cargo feature);
//! anything malformed is an error naming its line.

use crate::model::{ConvKind, DType, GemmKernel};

/// The first line of a conv table.
pub const HEADER: &str = "# cutlass-aot conv dispatch table";

/// The header line of the columns.
pub const COLUMNS: &str = "# columns: kind a b c n h w c k r s pad_h pad_w stride_h stride_w dilation_h dilation_w kernel split_k us";

const FIELDS: usize = 20;

/// Whether `text` is a conv table (rather than a GEMM one).
pub fn is_conv_table(text: &str) -> bool {
    text.lines().next().map(str::trim_end) == Some(HEADER)
}

/// One row, resolved against the manifest's kernels.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub kind: ConvKind,
    pub elements: (DType, DType, DType),
    pub activation: [usize; 4],
    pub filter: [usize; 3],
    pub pad: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    /// Rust module name of the kernel.
    pub rust_name: String,
    pub split_k: usize,
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
    let lines = crate::dispatch_table::parse_lines(text, label, 17, |line| parse_row(line, kernels))?;
    Ok(Table {
        device: lines.device,
        date: lines.date,
        rows: lines.rows,
        unknown_kernels: lines.unknown_kernels,
    })
}

fn parse_row(line: &str, kernels: &[GemmKernel]) -> Result<Option<Row>, String> {
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() != FIELDS {
        return Err(format!(
            "{} tab-separated fields; expected {FIELDS}: {}",
            fields.len(),
            COLUMNS.trim_start_matches("# columns: ")
        ));
    }
    let kind = ConvKind::from_manifest_name(fields[0])
        .ok_or_else(|| format!("kind {:?}: allowed fprop, dgrad, wgrad", fields[0]))?;
    let dtype = |s: &str| {
        DType::from_manifest_name(s)
            .ok_or_else(|| format!("{s:?} is not a type; allowed: {}", DType::allowed()))
    };
    let elements = (dtype(fields[1])?, dtype(fields[2])?, dtype(fields[3])?);
    let number = |i: usize, what: &str, least: usize| match fields[i].parse::<usize>() {
        Ok(v) if v >= least => Ok(v),
        _ => Err(format!(
            "{what} {:?} is not an integer of at least {least}",
            fields[i]
        )),
    };
    let activation = [
        number(4, "n", 1)?,
        number(5, "h", 1)?,
        number(6, "w", 1)?,
        number(7, "c", 1)?,
    ];
    let filter = [number(8, "k", 1)?, number(9, "r", 1)?, number(10, "s", 1)?];
    let pad = [number(11, "pad_h", 0)?, number(12, "pad_w", 0)?];
    let stride = [number(13, "stride_h", 1)?, number(14, "stride_w", 1)?];
    let dilation = [number(15, "dilation_h", 1)?, number(16, "dilation_w", 1)?];
    let split_k = number(18, "split_k", 1)?;
    let us: f64 = fields[19]
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("time {:?} is not a positive number of microseconds", fields[19]))?;
    let Some(kernel) = kernels.iter().find(|k| k.name == fields[17]) else {
        return Ok(None);
    };
    // A GEMM kernel runs 1x1 unit-stride problems as a matrix product (conv::dispatch::as_gemm).
    let is_gemm = kernel.kind == crate::model::OperationKind::Gemm;
    if kernel.conv_kind() != Some(kind) && !is_gemm {
        return Err(format!(
            "kernel {} is a {} kernel, not conv2d {} nor a GEMM",
            kernel.name, kernel.kind, fields[0]
        ));
    }
    if is_gemm && (filter[1], filter[2], pad, stride) != (1, 1, [0, 0], [1, 1]) {
        return Err(format!(
            "GEMM kernel {} runs only 1x1, unpadded, unit-stride problems as a matrix product",
            kernel.name
        ));
    }
    let kernel_types = (kernel.element_a, kernel.element_b, kernel.element_c);
    if elements != kernel_types {
        return Err(format!(
            "the row's types {}/{}/{} are not kernel {}'s {}/{}/{}",
            fields[1], fields[2], fields[3], kernel.name, kernel_types.0, kernel_types.1, kernel_types.2
        ));
    }
    Ok(Some(Row {
        kind,
        elements,
        activation,
        filter,
        pad,
        stride,
        dilation,
        rust_name: kernel.rust_name.clone(),
        split_k,
        us,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A conv fprop kernel and a GEMM kernel of the same types (f16).
    fn kernels() -> Vec<GemmKernel> {
        let yaml = "version: 1
operations:
  - kind: conv2d_fprop
    name: fprop_f16
    arch: 80
    a: f16
    tile: [128, 128, 32]
    warps: [2, 2, 1]
    stages: 3
  - kind: gemm
    name: gemm_f16_tn
    arch: 80
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 128, 32]
    warps: [2, 2, 1]
    stages: 3
";
        crate::manifest::parse(yaml, "test.yaml").unwrap()
    }

    /// A table of `rows` (each a tab-separated line) under the header.
    fn table(rows: &[String]) -> String {
        format!(
            "{HEADER}\n# device: NVIDIA H100 80GB HBM3\n# date: 2026-11-24\n{COLUMNS}\n{}\n",
            rows.join("\n")
        )
    }

    fn row(kind: &str, types: &str, geometry: &str, kernel: &str, tail: &str) -> String {
        format!("{kind}\t{types}\t{geometry}\t{kernel}\t{tail}").replace(' ', "\t")
    }

    const STEM: &str = "128 224 224 4 64 7 7 3 3 2 2 1 1";
    const POINTWISE: &str = "128 56 56 64 256 1 1 0 0 1 1 1 1";

    #[test]
    fn reads_rows_of_conv_and_gemm_kernels() {
        let k = kernels();
        let text = table(&[
            row("fprop", "f16 f16 f16", STEM, &k[0].name, "1 294.72"),
            row("fprop", "f16 f16 f16", POINTWISE, &k[1].name, "1 30.5"),
        ]);
        assert!(is_conv_table(&text));
        let t = parse(&text, "t.tsv", &k).unwrap();
        assert_eq!(
            (t.device.as_str(), t.date.as_str()),
            ("NVIDIA H100 80GB HBM3", "2026-11-24")
        );
        assert_eq!(t.rows.len(), 2);
        let stem = &t.rows[0];
        assert_eq!(stem.kind, ConvKind::Fprop);
        assert_eq!(stem.activation, [128, 224, 224, 4]);
        assert_eq!(stem.filter, [64, 7, 7]);
        assert_eq!((stem.pad, stem.stride, stem.dilation), ([3, 3], [2, 2], [1, 1]));
        assert_eq!(
            (stem.rust_name.as_str(), stem.split_k, stem.us),
            ("fprop_f16", 1, 294.72)
        );
        assert_eq!(t.rows[1].rust_name, "gemm_f16_tn");
        assert!(t.unknown_kernels.is_empty());
    }

    #[test]
    fn drops_rows_of_kernels_the_manifest_lacks() {
        let text = table(&[row("fprop", "f16 f16 f16", STEM, "cutlass_not_built", "1 10")]);
        let t = parse(&text, "t.tsv", &kernels()).unwrap();
        assert!(t.rows.is_empty());
        assert_eq!(t.unknown_kernels, vec!["cutlass_not_built".to_string()]);
        // A GEMM table is not a conv table.
        assert!(!is_conv_table("# cutlass-aot dispatch table\n"));
    }

    #[test]
    fn names_each_bad_line_and_what_is_allowed() {
        let k = kernels();
        let text = table(&[
            "fprop\tf16".to_string(),
            row("xgrad", "f16 f16 f16", STEM, &k[0].name, "1 10"),
            row("dgrad", "f16 f16 f16", STEM, &k[0].name, "1 10"),
            row("fprop", "f16 f16 f16", STEM, &k[1].name, "1 10"),
            row("fprop", "bf16 bf16 bf16", STEM, &k[0].name, "1 10"),
            row("fprop", "f16 f16 f16", STEM, &k[0].name, "0 10"),
            row("fprop", "f16 f16 f16", STEM, &k[0].name, "1 -3"),
            row(
                "fprop",
                "f16 f16 f16",
                "128 224 224 4 64 7 7 3 3 0 2 1 1",
                &k[0].name,
                "1 10",
            ),
        ]);
        let err = parse(&text, "t.tsv", &k).unwrap_err();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 8, "{err}");
        let expect = [
            "t.tsv:5: 2 tab-separated fields; expected 20",
            "t.tsv:6: kind \"xgrad\": allowed fprop, dgrad, wgrad",
            "t.tsv:7: kernel cutlass_tensorop_",
            "t.tsv:8: GEMM kernel",
            "t.tsv:9: the row's types bf16/bf16/bf16 are not kernel",
            "t.tsv:10: split_k \"0\" is not an integer of at least 1",
            "t.tsv:11: time \"-3\" is not a positive number of microseconds",
            "t.tsv:12: stride_h \"0\" is not an integer of at least 1",
        ];
        for (line, want) in lines.iter().zip(expect) {
            assert!(line.starts_with(want), "{line:?} does not start with {want:?}");
        }
        assert!(lines[2].contains("not conv2d dgrad nor a GEMM"), "{}", lines[2]);
        assert!(
            lines[3].contains("runs only 1x1, unpadded, unit-stride problems"),
            "{}",
            lines[3]
        );
    }
}
