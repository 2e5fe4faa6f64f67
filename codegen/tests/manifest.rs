//! Tests of the manifest reader: a corpus of bad manifests (`tests/manifest_errors/*.yaml`, each
//! stating the messages it must produce) and checks of expansion, defaults and naming.

use cutlass_aot_build::manifest::{self, ManifestError};
use cutlass_aot_build::model::{
    Api, DType, Epilogue, EpilogueSchedule, GemmKernel, KernelSchedule, Layout, MathOp, OpClass, Shape3,
    Swizzle, TileScheduler,
};
use std::path::Path;

/// Every corpus file must fail, and the error text must contain each `# expect: ` line.
#[test]
fn error_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/manifest_errors");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 25, "corpus has only {} files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let label = path.file_name().unwrap().to_str().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        assert!(!expected.is_empty(), "{label} has no `# expect: ` line");
        match manifest::parse(&text, label) {
            Ok(kernels) => failures.push(format!("{label}: parsed into {} kernels", kernels.len())),
            Err(err) => {
                let shown = err.to_string();
                for e in expected.iter().filter(|e| !shown.contains(*e)) {
                    failures.push(format!("{label}: missing `{e}` in:\n{shown}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

const BASE: &str = "version: 1
operations:
  - kind: gemm
    arch: 80
";

/// Parses one entry whose fields (after `kind` and `arch`) are `fields`, indented by four spaces.
fn entry(fields: &str) -> Result<Vec<GemmKernel>, ManifestError> {
    let body: String = fields.lines().map(|l| format!("    {}\n", l.trim())).collect();
    manifest::parse(&format!("{BASE}{body}"), "test.yaml")
}

fn one(fields: &str) -> GemmKernel {
    let kernels = entry(fields).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernels.len(), 1);
    kernels.into_iter().next().unwrap()
}

#[test]
fn family_expands_to_cross_product_in_field_order() {
    let kernels = entry(
        "a: f16
         layout_a: [row, column]
         layout_b: column
         tile: [[128, 128, 32], [64, 64, 32]]
         warps: [2, 2, 1]
         stages: [3, 4]",
    )
    .unwrap();
    let got: Vec<(Layout, Shape3, u32)> = kernels.iter().map(|k| (k.layout_a, k.tile, k.stages)).collect();
    let (big, small) = (Shape3::new(128, 128, 32), Shape3::new(64, 64, 32));
    let want = vec![
        (Layout::Row, big, 3),
        (Layout::Row, big, 4),
        (Layout::Row, small, 3),
        (Layout::Row, small, 4),
        (Layout::Column, big, 3),
        (Layout::Column, big, 4),
        (Layout::Column, small, 3),
        (Layout::Column, small, 4),
    ];
    assert_eq!(got, want);
    assert!(kernels.iter().all(|k| k.origin == "test.yaml:3"));
}

#[test]
fn a_flat_list_of_three_integers_is_one_shape() {
    let k = one("a: f16\nlayout_a: row\nlayout_b: column\ntile: [64, 128, 32]\nwarps: [[2, 2, 1]]");
    assert_eq!(k.tile, Shape3::new(64, 128, 32));
    assert_eq!(k.warps, Shape3::new(2, 2, 1));
}

#[test]
fn defaults_tensorop_f16() {
    let k = one("a: f16\nlayout_a: row\nlayout_b: column\ntile: [128, 128, 32]\nwarps: [2, 2, 1]");
    assert_eq!(k.arch, 80);
    assert_eq!(k.opclass, OpClass::TensorOp);
    assert_eq!(
        (k.element_a, k.element_b, k.element_c),
        (DType::F16, DType::F16, DType::F16)
    );
    assert_eq!(k.element_accumulator, DType::F32);
    assert_eq!(k.element_epilogue, DType::F32);
    assert_eq!(k.layout_c, Layout::Row);
    assert_eq!((k.alignment_a, k.alignment_b, k.alignment_c), (8, 8, 8));
    assert_eq!(k.instruction, Shape3::new(16, 8, 16));
    assert_eq!(k.stages, 3);
    assert_eq!(k.math, MathOp::MultiplyAdd);
    assert_eq!(k.swizzle, Swizzle::Identity8);
    assert_eq!(k.epilogue, Epilogue::LinearCombination);
    assert_eq!(k.name, k.library_name());
    assert_eq!(
        k.rust_name, k.name,
        "without `name`, the Rust name is the library name"
    );
    assert_eq!(k.origin, "test.yaml:3");
}

#[test]
fn defaults_depend_on_types_and_opclass() {
    let shape = "layout_a: row\nlayout_b: column\ntile: [64, 64, 16]\nwarps: [2, 2, 1]";
    let bf16 = one(&format!("a: bf16\n{shape}"));
    assert_eq!(
        (bf16.alignment_a, bf16.instruction, bf16.element_accumulator),
        (8, Shape3::new(16, 8, 16), DType::F32)
    );
    let tf32 = one(&format!("a: f32\n{shape}"));
    assert_eq!(
        (tf32.alignment_a, tf32.instruction, tf32.element_accumulator),
        (4, Shape3::new(16, 8, 8), DType::F32)
    );
    let f64 = one(&format!("a: f64\n{shape}"));
    // f64 tensor-op mainloops only take one-element accesses.
    assert_eq!(
        (f64.alignment_a, f64.alignment_c, f64.instruction),
        (1, 1, Shape3::new(8, 8, 4))
    );
    assert_eq!(
        (f64.element_c, f64.element_accumulator, f64.element_epilogue),
        (DType::F64, DType::F64, DType::F64)
    );
    let simt = one(&format!("opclass: simt\na: f32\n{}", shape.replace("16]", "8]")));
    assert_eq!(
        (simt.alignment_a, simt.alignment_c, simt.instruction, simt.stages),
        (1, 1, Shape3::new(1, 1, 1), 4)
    );
    // alignment_c defaults to min(alignment, 128 bits / bits of c); epilogue_compute to the accumulator.
    let c32 = one(&format!("a: f16\nc: f32\naccumulator: f16\n{shape}"));
    assert_eq!((c32.alignment_a, c32.alignment_c), (8, 4));
    assert_eq!(c32.alignment_c, c32.default_alignment_c());
    assert_eq!(c32.element_epilogue, DType::F16);
}

#[test]
fn library_names_follow_cutlass() {
    let check = |fields: &str, want: &str| {
        let k = one(fields);
        assert_eq!(k.name, k.library_name());
        assert_eq!(k.name, want);
    };
    let f16 = "a: f16\nc: f16\naccumulator: f32\nlayout_a: row\nlayout_b: column\nalignment: 8\ntile: [128, 128, 32]\nwarps: [2, 2, 1]\nstages: 3";
    check(
        &format!("{f16}\nlayout_c: column"),
        "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x3_tn_align8",
    );
    check(
        &format!("{f16}\nlayout_c: row"),
        "cutlass_tensorop_f16_s16816gemm_f16_128x128_32x3_tnt_align8",
    );
    check(
        "a: f32\nlayout_a: row\nlayout_b: column\nlayout_c: column\ntile: [128, 128, 32]\nwarps: [2, 2, 1]",
        "cutlass_tensorop_s1688tf32gemm_128x128_32x3_tn_align4",
    );
    check(
        "opclass: simt\na: f64\nlayout_a: column\nlayout_b: column\nlayout_c: column\ntile: [128, 128, 8]\nwarps: [2, 4, 1]",
        "cutlass_simt_dgemm_128x128_8x4_nn_align1",
    );
}

#[test]
fn name_placeholders_are_substituted() {
    let kernels = entry(
        "name: g_{a}_{b}_{c}_{acc}_{layout}{layout_c}_{tile}_s{stages}_a{align}_{swizzle}_{opclass}
         a: f16
         layout_a: [row, column]
         layout_b: column
         tile: [128, 128, 32]
         warps: [2, 2, 1]",
    )
    .unwrap();
    let names: Vec<&str> = kernels.iter().map(|k| k.rust_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "g_f16_f16_f16_f32_tnt_128x128x32_s3_a8_identity8_tensorop",
            "g_f16_f16_f16_f32_nnt_128x128x32_s3_a8_identity8_tensorop",
        ]
    );
    assert!(kernels.iter().all(|k| k.name == k.library_name()));
}

#[test]
fn problems_carry_file_line_and_field() {
    let err = entry("a: f16\nlayout_a: row\nlayout_b: column\ntile: [128, 128, 32]\nwarps: [2, 2, 1]\nstages: 1\nswizzle: spiral")
        .unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    let p = &err.problems[0];
    assert_eq!(
        (p.file.as_str(), p.line, p.field.as_str()),
        ("test.yaml", Some(10), "operations[0].stages")
    );
    assert_eq!(p.message, "1 is out of range for tensorop; allowed: 2 to 10");
    let shown = err.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0],
        "test.yaml:10: operations[0].stages: 1 is out of range for tensorop; allowed: 2 to 10"
    );
    assert!(lines[1].starts_with(
        "test.yaml:11: operations[0].swizzle: `spiral` is not allowed; allowed values: identity1"
    ));
}

#[test]
fn flow_style_entries_get_lines_too() {
    let text = "version: 1\noperations:\n  - {kind: gemm, arch: 80, a: f16, layout_a: row, layout_b: column,\n     tile: [128, 128, 32], warps: [2, 2, 1], stages: 1}\n";
    let err = manifest::parse(text, "flow.yaml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "flow.yaml:4: operations[0].stages: 1 is out of range for tensorop; allowed: 2 to 10"
    );
}

#[test]
fn load_reads_a_file_and_labels_problems_with_its_path() {
    let dir = std::env::temp_dir().join(format!("cutlass-aot-manifest-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kernel_manifest.yaml");
    std::fs::write(&path, format!("{BASE}    a: f16\n    layout_a: row\n    layout_b: column\n    tile: [64, 64, 32]\n    warps: [2, 2, 1]\n")).unwrap();
    let kernels = manifest::load(&path).unwrap();
    assert_eq!(kernels[0].origin, format!("{}:3", path.display()));
    std::fs::remove_dir_all(&dir).unwrap();
    let err = manifest::load(&path).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot read the manifest: ", path.display())),
        "{err}"
    );
}

// CUTLASS 3.x entries (arch 90).

/// Parses one arch 90 entry whose fields (after `kind` and `arch`) are `fields`.
fn entry90(fields: &str) -> Result<Vec<GemmKernel>, ManifestError> {
    let body: String = fields.lines().map(|l| format!("    {}\n", l.trim())).collect();
    manifest::parse(
        &format!("{}{body}", BASE.replace("arch: 80", "arch: 90")),
        "test.yaml",
    )
}

fn one90(fields: &str) -> GemmKernel {
    let kernels = entry90(fields).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(kernels.len(), 1);
    kernels.into_iter().next().unwrap()
}

#[test]
fn sm90_family_expands_in_field_order_with_3x_defaults() {
    let kernels = entry90(
        "a: f16
         layout_a: row
         layout_b: column
         tile: [[128, 128, 64], [64, 256, 64]]
         cluster: [[1, 1, 1], [2, 1, 1]]
         stages: [auto, 4]
         schedule: [pingpong, warpspecialized]",
    )
    .unwrap();
    // tile, then cluster, then stages, then schedule (fastest).
    let got: Vec<(Shape3, Shape3, u32, KernelSchedule)> = kernels
        .iter()
        .map(|k| (k.tile, k.cluster, k.stages, k.schedule))
        .collect();
    let mut want = Vec::new();
    for tile in [Shape3::new(128, 128, 64), Shape3::new(64, 256, 64)] {
        for cluster in [Shape3::new(1, 1, 1), Shape3::new(2, 1, 1)] {
            for stages in [0, 4] {
                for schedule in [KernelSchedule::Pingpong, KernelSchedule::WarpSpecialized] {
                    want.push((tile, cluster, stages, schedule));
                }
            }
        }
    }
    assert_eq!(got, want);
    for k in &kernels {
        assert_eq!(
            (k.arch, k.api(), k.opclass),
            (90, Api::Cutlass3x, OpClass::TensorOp)
        );
        assert_eq!(
            (k.element_a, k.element_b, k.element_c),
            (DType::F16, DType::F16, DType::F16)
        );
        assert_eq!(
            (k.element_accumulator, k.element_epilogue),
            (DType::F32, DType::F32)
        );
        assert_eq!(k.layout_c, Layout::Row);
        assert_eq!((k.alignment_a, k.alignment_b, k.alignment_c), (8, 8, 8));
        // 2.x-only fields are stored as "decided by CUTLASS".
        assert_eq!(
            (k.warps, k.instruction),
            (Shape3::new(0, 0, 0), Shape3::new(0, 0, 0))
        );
        assert_eq!(k.swizzle, Swizzle::Identity8);
        assert_eq!(k.epilogue_schedule, EpilogueSchedule::Auto);
        assert_eq!(k.tile_scheduler, TileScheduler::Persistent);
        assert_eq!(
            (k.math, k.epilogue),
            (MathOp::MultiplyAdd, Epilogue::LinearCombination)
        );
        assert_eq!(k.name, k.library_name());
        assert_eq!(k.rust_name, k.name);
        assert!(
            k.name
                .starts_with("cutlass3x_sm90a_tensorop_gemm_f16_f16_f32_f16_f16_"),
            "{}",
            k.name
        );
        assert_eq!(k.origin, "test.yaml:3");
    }
}

#[test]
fn sm90_defaults_when_nothing_3x_is_given() {
    let k = one90("a: bf16\nlayout_a: column\nlayout_b: row\ntile: [128, 128, 64]");
    assert_eq!(k.cluster, Shape3::new(1, 1, 1));
    assert_eq!(k.stages, 0, "stages default to auto on arch 90");
    assert_eq!(
        (k.schedule, k.epilogue_schedule, k.tile_scheduler),
        (
            KernelSchedule::Auto,
            EpilogueSchedule::Auto,
            TileScheduler::Persistent
        )
    );
    assert_eq!((k.element_c, k.element_accumulator), (DType::Bf16, DType::F32));
}

#[test]
fn sm90_defaults_depend_on_types() {
    let tn = "layout_a: row\nlayout_b: column";
    let s8 = one90(&format!("a: s8\n{tn}\ntile: [128, 128, 128]"));
    assert_eq!(
        (
            s8.element_b,
            s8.element_c,
            s8.element_accumulator,
            s8.element_epilogue
        ),
        (DType::S8, DType::S32, DType::S32, DType::S32)
    );
    // A/B: 128 bits; C: at most 128 bits of s32.
    assert_eq!((s8.alignment_a, s8.alignment_c), (16, 4));
    let s8_out = one90(&format!(
        "a: s8\nc: s8\nepilogue_compute: f32\n{tn}\ntile: [128, 128, 128]"
    ));
    assert_eq!(
        (s8_out.element_c, s8_out.element_epilogue, s8_out.alignment_c),
        (DType::S8, DType::F32, 16)
    );
    let fp8 = one90(&format!("a: e4m3\nb: e5m2\nc: bf16\n{tn}\ntile: [128, 128, 128]"));
    assert_eq!(
        (
            fp8.element_a,
            fp8.element_b,
            fp8.element_c,
            fp8.element_accumulator
        ),
        (DType::E4m3, DType::E5m2, DType::Bf16, DType::F32)
    );
    assert_eq!((fp8.alignment_a, fp8.alignment_b, fp8.alignment_c), (16, 16, 8));
    let e5m2 = one90(&format!("a: e5m2\n{tn}\ntile: [64, 128, 64]"));
    assert_eq!(
        (e5m2.element_b, e5m2.element_c, e5m2.alignment_c),
        (DType::E5m2, DType::E5m2, 16)
    );
    let tf32 = one90(&format!("a: f32\n{tn}\ntile: [128, 128, 32]"));
    assert_eq!(
        (tf32.alignment_a, tf32.alignment_c, tf32.element_accumulator),
        (4, 4, DType::F32)
    );
    let h = one90(&format!("a: f16\naccumulator: f16\n{tn}\ntile: [128, 128, 64]"));
    assert_eq!(
        (h.element_accumulator, h.element_epilogue),
        (DType::F16, DType::F16)
    );
}

#[test]
fn sm90_accepts_realistic_kernels() {
    let ok = [
        // f16 and bf16 take every layout.
        "a: [f16, bf16]\nlayout_a: [row, column]\nlayout_b: [row, column]\nlayout_c: [row, column]\ntile: [128, 256, 64]",
        "a: f16\nlayout_a: row\nlayout_b: column\ntile: [64, 256, 64]\nschedule: pingpong\nepilogue_schedule: tma",
        "a: f16\nlayout_a: row\nlayout_b: column\ntile: [256, 128, 64]\ncluster: [[2, 1, 1], [2, 4, 1], [4, 2, 1]]\nschedule: cooperative\nstages: 4\ntile_scheduler: [persistent, stream_k]",
        "a: f16\nlayout_a: row\nlayout_b: column\ntile: [192, 128, 64]\nschedule: [pingpong, warpspecialized]\nepilogue_schedule: no_smem",
        "a: f16\naccumulator: f16\nepilogue_compute: [f16, f32]\nc: [f16, f32]\nlayout_a: column\nlayout_b: row\ntile: [[128, 128, 32], [64, 16, 64]]",
        "a: [e4m3, e5m2]\nb: [e4m3, e5m2]\nc: [f16, bf16, f32, e4m3, e5m2]\nlayout_a: row\nlayout_b: column\ntile: [128, 128, 128]",
        "a: s8\nc: s32\nepilogue_compute: [s32, f32]\nlayout_a: row\nlayout_b: column\ntile: [128, 256, 128]\nschedule: cooperative",
        "a: f32\nlayout_a: row\nlayout_b: column\nalignment_c: [1, 2, 4]\ntile: [128, 128, 32]",
        // The most stages that fit: 4 x (16 KiB of A + 32 KiB of B) = 192 KiB.
        "a: f16\nlayout_a: row\nlayout_b: column\ntile: [128, 256, 64]\nschedule: cooperative\nstages: [2, 4]",
    ];
    for fields in ok {
        let kernels = entry90(fields).unwrap_or_else(|e| panic!("{fields}\n{e}"));
        assert!(kernels
            .iter()
            .all(|k| k.api() == Api::Cutlass3x && k.name == k.library_name()));
    }
    // One stage more than fits.
    let err =
        entry90("a: f16\nlayout_a: row\nlayout_b: column\ntile: [128, 256, 64]\nstages: 5").unwrap_err();
    assert!(
        err.to_string().contains("shared memory estimate 245760 bytes"),
        "{err}"
    );
}

#[test]
fn sm90_library_names_follow_cutlass_3x() {
    let check = |fields: &str, want: &str| {
        let k = one90(fields);
        assert_eq!(k.name, k.library_name());
        assert_eq!(k.name, want);
    };
    check(
        "a: f16\nlayout_a: row\nlayout_b: column\ntile: [128, 256, 64]\ncluster: [2, 1, 1]\nschedule: cooperative\nepilogue_schedule: tma\ntile_scheduler: stream_k",
        "cutlass3x_sm90a_tensorop_gemm_f16_f16_f32_f16_f16_128x256x64_2x1x1_0_tnt_align8_warpspecialized_cooperative_epi_tma_stream_k",
    );
    check(
        "a: f32\nlayout_a: row\nlayout_b: column\nlayout_c: column\ntile: [128, 128, 32]\nstages: 4",
        "cutlass3x_sm90a_tensorop_gemm_tf32_tf32_f32_f32_f32_128x128x32_1x1x1_4_tnn_align4",
    );
}

#[test]
fn sm90_name_placeholders_are_substituted() {
    let kernels = entry90(
        "name: g_{a}_{tile}_{cluster}_{schedule}_{epilogue_schedule}_{tile_scheduler}_s{stages}
         a: f16
         layout_a: row
         layout_b: column
         tile: [128, 128, 64]
         cluster: [2, 1, 1]
         schedule: cooperative
         epilogue_schedule: tma
         tile_scheduler: stream_k
         stages: [auto, 3]",
    )
    .unwrap();
    let names: Vec<&str> = kernels.iter().map(|k| k.rust_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "g_f16_128x128x64_2x1x1_cooperative_tma_stream_k_sauto",
            "g_f16_128x128x64_2x1x1_cooperative_tma_stream_k_s3",
        ]
    );
}

#[test]
fn one_manifest_holds_2x_and_3x_kernels() {
    let text = "version: 1
operations:
  - kind: gemm
    arch: 80
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 128, 32]
    warps: [2, 2, 1]
  - kind: gemm
    arch: 90
    a: f16
    layout_a: row
    layout_b: column
    tile: [128, 128, 64]
";
    let kernels = manifest::parse(text, "mixed.yaml").unwrap();
    let apis: Vec<Api> = kernels.iter().map(GemmKernel::api).collect();
    assert_eq!(apis, [Api::Cutlass2x, Api::Cutlass3x]);
    let k80 = &kernels[0];
    // 3.x fields keep their neutral values on 2.x kernels.
    assert_eq!((k80.cluster, k80.stages), (Shape3::new(1, 1, 1), 3));
    assert_eq!(
        (k80.schedule, k80.epilogue_schedule, k80.tile_scheduler),
        (
            KernelSchedule::Auto,
            EpilogueSchedule::Auto,
            TileScheduler::Persistent
        )
    );
    assert_eq!(k80.instruction, Shape3::new(16, 8, 16));
    assert_eq!(
        (kernels[1].origin.as_str(), kernels[1].stages),
        ("mixed.yaml:10", 0)
    );
}

#[test]
fn arch_key_problems_name_the_field_and_line() {
    let err = entry90("a: f16\nlayout_a: row\nlayout_b: column\ntile: [128, 128, 64]\nwarps: [2, 2, 1]")
        .unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    let p = &err.problems[0];
    assert_eq!((p.line, p.field.as_str()), (Some(9), "operations[0].warps"));
    assert!(
        p.message.starts_with("warps is only for arch 80 (CUTLASS 2.x)"),
        "{}",
        p.message
    );
    // Missing warps on arch 80 keeps its message, at the entry's line.
    let err = entry("a: f16\nlayout_a: row\nlayout_b: column\ntile: [128, 128, 32]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "test.yaml:3: operations[0].warps: missing; `warps` is required: the warp count [M, N, K], e.g. [2, 2, 1]"
    );
}
