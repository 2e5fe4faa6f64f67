//! Golden tests of the emitted C++ and Rust: a change to generated code shows up as a diff of a
//! committed file. Rewrite them with `CUTLASS_AOT_BLESS=1 cargo test -p cutlass-aot-build --test emit`.

use std::path::{Path, PathBuf};

use cutlass_aot_build::emit_cpp;
use cutlass_aot_build::emit_rust::{self, UnitImage};
use cutlass_aot_build::manifest;

const MANIFEST: &str = "\
version: 1
operations:
  - kind: gemm
    name: hgemm_{layout}
    arch: 80
    a: f16
    layout_a: [row, column]
    layout_b: column
    layout_c: column
    tile: [128, 128, 32]
    warps: [2, 2, 1]
    stages: 3
  - kind: gemm
    arch: 80
    opclass: simt
    a: f64
    layout_a: row
    layout_b: row
    tile: [64, 64, 8]
    warps: [2, 2, 1]
    stages: 2
    swizzle: identity4
  - kind: gemm
    name: bf16_sm90_{schedule}
    arch: 90
    a: bf16
    layout_a: row
    layout_b: column
    tile: [128, 128, 64]
    cluster: [2, 1, 1]
    schedule: [cooperative, pingpong]
    epilogue_schedule: tma
  - kind: gemm
    name: f16_sm90_streamk
    arch: 90
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 128, 64]
    stages: 4
    schedule: cooperative
    tile_scheduler: stream_k
  - kind: gemm
    name: s8_tn_{split_k}
    arch: 80
    a: s8
    c: s8
    layout_a: row
    layout_b: column
    tile: [128, 128, 64]
    warps: [2, 2, 1]
    stages: 3
    split_k: parallel
  - kind: gemm
    name: f32_3xtf32_horizontal
    arch: 80
    a: f32
    layout_a: row
    layout_b: column
    tile: [128, 128, 32]
    warps: [4, 2, 1]
    stages: 3
    math: multiply_add_fast_f32
    swizzle: horizontal
  - kind: gemm
    name: f16_tn_{activation}
    arch: 80
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 128, 32]
    warps: [2, 2, 1]
    stages: 3
    activation: leaky_relu
  - kind: gemm
    name: bf16_sm90_{fusion}
    arch: 90
    a: bf16
    layout_a: row
    layout_b: column
    tile: [128, 128, 64]
    schedule: cooperative
    epilogue_schedule: tma
    bias: per_col
    activation: gelu
    aux_output: pre_activation
  - kind: gemm
    name: f16_sm90_{fusion}
    arch: 90
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 128, 64]
    schedule: cooperative
    epilogue_schedule: tma
    scale: per_row
    bias: per_row
    activation: silu
  - kind: gemm_grouped
    name: grouped_f16_{group_schedule}
    arch: 80
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 128, 32]
    warps: [2, 2, 1]
    stages: 4
    group_schedule: [device, host]
  - kind: gemm_grouped
    name: grouped_bf16_sm90_{schedule}_{activation}
    arch: 90
    a: bf16
    layout_a: row
    layout_b: column
    tile: [128, 128, 64]
    schedule: [cooperative, pingpong]
    activation: [identity, silu]
    feature: grouped
  - kind: gemm
    name: f16_sm90_array
    arch: 90
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 256, 64]
    batch_mode: array
";

/// Two measured tables: one naming one kernel of the manifest and one it does not have, and one
/// of another device with a conv-free GEMM row at split-K and a tuned row.
fn dispatch_tables(kernels: &[cutlass_aot_build::model::GemmKernel]) -> Vec<cutlass_aot_build::table::Table> {
    use cutlass_aot_build::table::{parse, COLUMNS, HEADER};
    let name = &kernels
        .iter()
        .find(|k| k.rust_name == "bf16_sm90_cooperative")
        .unwrap()
        .name;
    let text = format!(
        "{HEADER}\n# device: NVIDIA H100 80GB HBM3\n# date: 2026-11-21\n{COLUMNS}\n\
         gemm\tbf16\tbf16\tbf16\ttnt\t4096,4096,4096,1\t{name}\t1\tauto\t0\t180.25\n\
         gemm\tbf16\tbf16\tbf16\ttnt\t16,4096,4096,1\tcutlass3x_gone\t1\tauto\t0\t10.5\n"
    );
    let first = parse(&text, "golden.tsv", kernels).unwrap();
    assert_eq!(first.unknown_kernels, ["cutlass3x_gone"]);
    let hgemm = &kernels.iter().find(|k| k.rust_name == "hgemm_tn").unwrap().name;
    let text = format!(
        "{HEADER}\n# device: NVIDIA H200\n# date: 2026-11-24\n{COLUMNS}\n\
         gemm\tbf16\tbf16\tbf16\ttnt\t8192,8192,8192,1\t{name}\t1\tn\t8\t1403.5\n\
         gemm\tf16\tf16\tf16\ttnn\t512,512,32768,1\t{hgemm}\t8\tauto\t0\t95.25\n"
    );
    let second = parse(&text, "golden_h200.tsv", kernels).unwrap();
    assert!(second.unknown_kernels.is_empty());
    assert_eq!(second.rows.len(), 2);
    vec![first, second]
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn check_golden(name: &str, actual: &str) {
    let path = golden(name);
    if std::env::var_os("CUTLASS_AOT_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "missing golden file {} ({e}); run with CUTLASS_AOT_BLESS=1",
            path.display()
        )
    });
    if expected != actual {
        let first = expected.lines().zip(actual.lines()).position(|(e, a)| e != a);
        panic!(
            "{name} differs from the golden file (first differing line: {:?}); \
             inspect and rerun with CUTLASS_AOT_BLESS=1 if the change is intended",
            first.map(|i| i + 1)
        );
    }
}

fn units() -> Vec<emit_cpp::Unit> {
    let kernels = manifest::parse(MANIFEST, "golden.yaml").expect("golden manifest is valid");
    emit_cpp::plan_units(&kernels, 4)
}

#[test]
fn units_group_kernels_by_family() {
    let units = units();
    let names: Vec<_> = units.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tensorop_f16_f32_0",
            "simt_f64_f64_0",
            "sm90_tensorop_bf16_f32_0",
            "sm90_tensorop_f16_f32_0",
            "tensorop_s8_s32_0",
            "tensorop_f32_f32_0",
            // Grouped kernels have units of their own; a cargo feature is part of the family.
            "grouped_tensorop_f16_f32_0",
            "sm90_grouped_tensorop_bf16_f32_grouped_0",
            "sm90_array_tensorop_f16_f32_0"
        ]
    );
    assert_eq!(units[0].kernels.len(), 3);
    // Each unit's cache key covers the glue it includes, and only that.
    assert_eq!(units[0].glue, ["cutlass_aot/abi.h", "cutlass_aot/gemm_2x.cuh"]);
    assert!(units[6].glue.contains(&"cutlass_aot/grouped_2x.cuh"));
    assert!(!units[6].glue.contains(&"cutlass_aot/grouped_3x.cuh"));
    assert!(units[7].glue.contains(&"cutlass_aot/grouped_3x.cuh"));
    // Families are split at the per-unit limit, in manifest order.
    let kernels = manifest::parse(MANIFEST, "golden.yaml").unwrap();
    let split = emit_cpp::plan_units(&kernels, 1);
    let names: Vec<_> = split.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tensorop_f16_f32_0",
            "tensorop_f16_f32_1",
            "tensorop_f16_f32_2",
            "simt_f64_f64_0",
            "sm90_tensorop_bf16_f32_0",
            "sm90_tensorop_bf16_f32_1",
            "sm90_tensorop_bf16_f32_2",
            "sm90_tensorop_f16_f32_0",
            "sm90_tensorop_f16_f32_1",
            "tensorop_s8_s32_0",
            "tensorop_f32_f32_0",
            "grouped_tensorop_f16_f32_0",
            "grouped_tensorop_f16_f32_1",
            "sm90_grouped_tensorop_bf16_f32_grouped_0",
            "sm90_grouped_tensorop_bf16_f32_grouped_1",
            "sm90_grouped_tensorop_bf16_f32_grouped_2",
            "sm90_grouped_tensorop_bf16_f32_grouped_3",
            "sm90_array_tensorop_f16_f32_0"
        ]
    );
}

#[test]
fn emitted_cpp_matches_golden() {
    for unit in units() {
        check_golden(&format!("{}.cu", unit.name), &unit.source);
    }
}

#[test]
fn emitted_rust_matches_golden() {
    let units = units();
    let kernels = manifest::parse(MANIFEST, "golden.yaml").unwrap();
    let tables = dispatch_tables(&kernels);
    let fatbin = PathBuf::from("/out/cutlass_aot/unit.fatbin");
    let images: Vec<_> = units
        .iter()
        .map(|u| UnitImage {
            unit_name: &u.name,
            fatbin: Some(&fatbin),
            kernels: &u.kernels,
        })
        .collect();
    check_golden("kernels.rs", &generate(&images, &kernels, &tables).unwrap());
    // Without nvcc: same API, no device code and no references to host symbols.
    let images: Vec<_> = units
        .iter()
        .map(|u| UnitImage {
            unit_name: &u.name,
            fatbin: None,
            kernels: &u.kernels,
        })
        .collect();
    let stub = generate(&images, &kernels, &tables).unwrap();
    assert!(
        !stub.contains("extern \"C\""),
        "stub build must not reference host symbols"
    );
    assert!(
        !stub.contains("include_bytes"),
        "stub build must not embed images"
    );
    check_golden("kernels_without_nvcc.rs", &stub);
    // Without measured tables: an empty list.
    let none = generate(&images, &kernels, &[]).unwrap();
    let squeezed: String = none.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        squeezed.contains("pub(super) static TABLES: [Table; 0usize] = [];"),
        "{squeezed}"
    );
    assert!(!none.contains("Row {"));
}

/// The generated file of CUTLASS kernels only.
fn generate(
    images: &[UnitImage<'_>],
    kernels: &[cutlass_aot_build::model::GemmKernel],
    tables: &[cutlass_aot_build::table::Table],
) -> Result<String, syn::Error> {
    emit_rust::generate(
        "golden.yaml",
        &emit_rust::Generated {
            units: images,
            manifest_order: kernels,
            elementwise: &[],
            user_kernels: &[],
            tables,
        },
    )
}
