//! Dispatch without a GPU: what it decides for problems no kernel reads as they lie (staging),
//! the problem-level checks made once, the refusal a person reads, and the per-device table.

mod common;

use common::{dispatch_problem as problem, ADDR_C, ADDR_D, H100, TN};
use cutlass_aot::dispatch::skinny::{self, Form};
use cutlass_aot::dispatch::{self, stage::StagePlan, Orientation, Policy, Signature};
use cutlass_aot::model::{DType, Layout};
use cutlass_aot::select::{self, Basis, Table};
use cutlass_aot::{Error, GemmOperands};

fn decide(signature: Signature, operands: &GemmOperands) -> Result<dispatch::Decision, Error> {
    decide_in(common::gemm_registry(), signature, operands)
}

fn decide_in(
    registry: &cutlass_aot::Registry,
    signature: Signature,
    operands: &GemmOperands,
) -> Result<dispatch::Decision, Error> {
    dispatch::decide(
        registry,
        &select::NO_TABLE,
        signature,
        operands,
        &H100,
        Policy::default(),
    )
}

#[test]
fn aligned_problems_run_directly() {
    let (sig, ops) = problem(DType::Bf16, TN, (1024, 1024, 1024, 1), 0, 0);
    let decision = decide(sig, &ops).unwrap();
    assert!(decision.staging.is_none());
    assert_eq!(
        decision.selection.kernel.api(),
        cutlass_aot::model::Api::Cutlass3x
    );
}

/// With kernels that read any alignment, small odd problems run directly: no copies.
#[cfg(feature = "alignments")]
#[test]
fn narrow_alignment_kernels_run_odd_problems_as_they_lie() {
    let registry = &cutlass_aot::kernels::REGISTRY;
    // Small problems, where copies would cost more than the product itself.
    for (shape, pad, offset) in [
        ((40, 24, 71, 1), 0, 0),
        ((64, 64, 64, 3), 3, 0),
        ((128, 128, 128, 1), 0, 1),
    ] {
        let (sig, ops) = problem(DType::F16, TN, shape, pad, offset);
        let decision = decide_in(registry, sig, &ops).unwrap();
        assert!(
            decision.staging.is_none(),
            "{shape:?}: {:?}",
            decision.staging.map(|p| p.staged)
        );
        let kernel = decision.selection.kernel;
        assert!(kernel.gemm().a.alignment < 8, "{}", kernel.name);
    }
}

#[test]
fn odd_k_stages_a_and_b_with_k_padded_and_zero_filled() {
    for k in [700, 701, 4097] {
        let (sig, ops) = problem(DType::F16, TN, (1024, 4096, k, 1), 0, 0);
        let decision = decide(sig, &ops).unwrap_or_else(|e| panic!("k = {k}: {e}"));
        let plan = decision.staging.expect("K not a multiple of 8 must be staged");
        assert_eq!(plan.staged, ["A", "B"], "k = {k}");
        let staged = plan.at(0);
        let kp = k.next_multiple_of(8);
        assert_eq!((staged.a.shape.cols, staged.b.shape.rows), (kp, kp));
        // D is written in place; C is read in place.
        assert_eq!(staged.d.address, ADDR_D);
        assert_eq!(staged.c.unwrap().address, ADDR_C);
        // Staging reads A and B and writes them padded (2 bytes an element), zeros included.
        assert_eq!(plan.traffic(), 2 * (1024 + 4096) * (k + kp));
    }
}

#[test]
fn staging_copies_are_costed_by_kind_transposing_ones_by_whole_tiles() {
    use cutlass_aot::select::cost::{
        STAGING_LAUNCH_SECONDS, STAGING_ROW_BYTES_PER_SECOND, STAGING_TRANSPOSE_BYTES_PER_SECOND,
    };
    // A row-major A of odd K staged row-major: a straight copy of its bytes (read + written).
    let (sig, ops) = problem(DType::F16, TN, (1000, 64, 999, 1), 0, 0);
    let straight = StagePlan::new(sig, &ops, [Layout::Row, Layout::Column, Layout::Row]);
    assert_eq!(straight.staged, ["A", "B"]);
    let a_bytes = 2.0 * (1000 * 999 + 1000 * 1000) as f64;
    let b_bytes = 2.0 * (64 * 999 + 64 * 1000) as f64;
    let expected = (a_bytes + b_bytes) / STAGING_ROW_BYTES_PER_SECOND + 2.0 * STAGING_LAUNCH_SECONDS;
    assert!((straight.copy_seconds() - expected).abs() < 1e-12 * expected.max(1.0));
    // Both transposed: whole 64 × 64 tiles, however much of them the matrix fills (1000 × 999:
    // 16 × 16 tiles; B, 999 × 64: 16 × 1).
    let transposed = StagePlan::new(sig, &ops, [Layout::Column, Layout::Row, Layout::Row]);
    assert_eq!(transposed.staged, ["A", "B"]);
    let tile_bytes = |tiles: usize| 2.0 * (tiles * 64 * 64 * 2) as f64;
    let expected = (tile_bytes(16 * 16) + tile_bytes(16)) / STAGING_TRANSPOSE_BYTES_PER_SECOND
        + 2.0 * STAGING_LAUNCH_SECONDS;
    assert!(
        (transposed.copy_seconds() - expected).abs() < 1e-9 * expected,
        "{} vs {expected}",
        transposed.copy_seconds()
    );
}

#[test]
fn an_offset_view_stages_only_the_misaligned_operands() {
    // Every operand one element off: all are staged, D copied back.
    let (sig, ops) = problem(DType::Bf16, TN, (512, 512, 512, 1), 0, 1);
    let plan = decide(sig, &ops).unwrap().staging.unwrap();
    assert_eq!(plan.staged, ["A", "B", "C", "D"]);
    // Only A one element off.
    let (sig, mut ops) = problem(DType::Bf16, TN, (512, 512, 512, 1), 0, 0);
    ops.a.address += 2;
    let plan = decide(sig, &ops).unwrap().staging.unwrap();
    assert_eq!(plan.staged, ["A"]);
}

#[test]
fn odd_leading_dimensions_and_batch_strides_are_staged() {
    let (sig, ops) = problem(DType::F16, TN, (256, 256, 256, 3), 3, 0);
    let plan = decide(sig, &ops).unwrap().staging.unwrap();
    assert_eq!(plan.staged, ["A", "B", "C", "D"]);
    let staged = plan.at(1 << 20);
    assert_eq!(staged.a.shape.batch_count, 3);
    assert_eq!(staged.a.shape.ld % 8, 0);
    assert_eq!(staged.a.address % 256, 0);
}

#[test]
fn every_layout_combination_of_every_float_type_runs() {
    let layouts = [Layout::Row, Layout::Column];
    for dtype in [DType::F16, DType::Bf16, DType::F32, DType::F64] {
        for la in layouts {
            for lb in layouts {
                for lc in layouts {
                    for shape in [
                        (1000, 1000, 1000, 1),
                        (1, 4096, 4096, 1),
                        (64, 64, 64, 128),
                        (33, 17, 5, 2),
                    ] {
                        let (sig, ops) = problem(dtype, [la, lb, lc], shape, 0, 0);
                        let decision = decide(sig, &ops)
                            .unwrap_or_else(|e| panic!("{dtype} {la:?} {lb:?} {lc:?} {shape:?}: {e}"));
                        // f32 problems keep f32 accuracy by default.
                        assert!(!dispatch::rounds_to_tf32(decision.selection.kernel), "{dtype}");
                    }
                }
            }
        }
    }
}

#[test]
fn k_zero_stages_zero_a_and_b_and_reads_c() {
    let (sig, ops) = problem(DType::Bf16, TN, (64, 48, 0, 1), 0, 0);
    dispatch::validate(sig, &ops).unwrap();
    let plan = decide(sig, &ops).unwrap().staging.unwrap();
    assert_eq!(plan.staged, ["A", "B"]);
    let staged = plan.at(0);
    assert_eq!(staged.a.shape.cols, 8);
    assert_eq!(staged.c.unwrap().address, ADDR_C, "C is read where it is");
    assert_eq!(staged.beta, 0.5);
    // Nothing is copied from A or B: only cleared.
    let plan = StagePlan::new(sig, &ops, TN);
    assert_eq!(plan.traffic(), (64 * 8 + 8 * 48) * 2);
}

#[test]
fn problem_level_mistakes_are_reported_once_before_any_kernel() {
    let message = |sig: Signature, ops: &GemmOperands| match dispatch::validate(sig, ops) {
        Err(Error::InvalidArgument { kernel, message }) => {
            assert_eq!(kernel, "dispatch");
            assert_eq!(message.lines().count(), 1, "{message}");
            message
        }
        other => panic!("expected a refusal, got {other:?}"),
    };
    let (sig, ops) = problem(DType::F16, TN, (128, 128, 128, 1), 0, 0);
    // A buffer too short.
    let mut short = ops;
    short.b.len -= 1;
    assert!(message(sig, &short)
        .contains("B (128×128, ld 128, batch 1 × stride 16384) needs a buffer of 16384 elements"));
    // ld below the extent.
    let mut low = ops;
    low.a.shape.ld = 100;
    assert!(message(sig, &low).contains("leading dimension of A is 100"));
    // An extent that overflows 32 bits.
    let (sig2, big) = problem(DType::S8, TN, (1, 1, 1, 1), 0, 0);
    let mut big = big;
    big.a.shape.cols = 1 << 31;
    big.b.shape.rows = 1 << 31;
    assert!(message(sig2, &big).contains("k = 2147483648 overflows"));
    // D's batches overlapping.
    let (sig3, mut overlap) = problem(DType::F16, TN, (16, 16, 16, 2), 0, 0);
    overlap.d.shape.batch_stride = 100;
    assert!(
        message(sig3, &overlap).contains("D's batch stride 100 is smaller than one matrix (256 elements)")
    );
    // Mismatched extents and a beta without C.
    let mut mismatched = ops;
    mismatched.b.shape.rows = 64;
    assert!(message(sig, &mismatched).contains("B must have 128 rows"));
    let no_c = GemmOperands { c: None, ..ops };
    assert!(message(sig, &no_c).contains("beta is 0.5 but no C was given"));
    // Empty problems are not mistakes.
    for shape in [(0, 16, 16, 1), (16, 0, 16, 1), (16, 16, 0, 1), (16, 16, 16, 0)] {
        let (sig, ops) = problem(DType::F16, TN, shape, 0, 0);
        dispatch::validate(sig, &ops).unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    }
}

#[test]
fn a_refusal_names_the_distinct_reasons_in_a_few_lines() {
    // f16 A with bf16 B: no kernel of any layout or alignment takes it; staging cannot help.
    let (mut sig, ops) = problem(DType::F16, TN, (100, 100, 100, 1), 0, 0);
    sig.element_b = DType::Bf16;
    let message = match decide(sig, &ops) {
        Err(Error::InvalidArgument { message, .. }) => message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    assert!(message.lines().count() <= 15, "{message}");
    assert!(
        message.starts_with("no kernel of this build can run D = A·B (100x100x100"),
        "{message}"
    );
    assert!(message.contains("B is bf16 but the kernel takes"), "{message}");
    assert!(message.contains("nearest: "), "{message}");
    // No reason is listed twice.
    let lines: Vec<&str> = message.lines().collect();
    let mut unique = lines.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), lines.len(), "{message}");
    // TF32 is never picked for f32 unless allowed; with the policy it is.
    let (sig, ops) = problem(DType::F32, TN, (4096, 4096, 4096, 1), 0, 0);
    let registry = common::gemm_registry();
    let allow = Policy { allow_tf32: true };
    let d = dispatch::decide(registry, &select::NO_TABLE, sig, &ops, &H100, allow).unwrap();
    assert!(
        dispatch::rounds_to_tf32(d.selection.kernel),
        "{}",
        d.selection.kernel.rust_name
    );
    assert_eq!(d.selection.choice.basis, Basis::Model);
}

#[test]
fn tables_are_chosen_per_device() {
    static TABLES: [Table; 2] = [
        Table::new("NVIDIA H200", "2026-11-21", &[]),
        Table::new("NVIDIA H100 80GB HBM3", "2026-11-23", &[]),
    ];
    // Equal (empty) tables: the closest device's.
    let pick = |name: &str, cc: u32| select::table_for(&TABLES, name, cc).map(|t| t.device);
    assert_eq!(pick("NVIDIA H100 80GB HBM3", 90), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(pick("NVIDIA H200", 90), Some("NVIDIA H200"));
    // Another H100 part: same model.
    assert_eq!(pick("NVIDIA H100 PCIe", 90), Some("NVIDIA H100 80GB HBM3"));
    // Another Hopper: the H100 table.
    assert_eq!(pick("NVIDIA GH200 480GB", 90), Some("NVIDIA H100 80GB HBM3"));
    // Ampere without a table of its own: the heuristic.
    assert_eq!(pick("NVIDIA A100-SXM4-80GB", 80), None);
    // A device's own table loses to a Hopper table that measured more ways, and wins on a tie.
    struct Measured(&'static str, usize);
    impl select::MeasuredOn for Measured {
        fn device(&self) -> &str {
            self.0
        }
        fn rows(&self) -> usize {
            self.1
        }
    }
    let tables = [
        Measured("NVIDIA H200", 12_044),
        Measured("NVIDIA H100 80GB HBM3", 151_553),
        Measured("NVIDIA A100-SXM4-80GB", 500_000),
    ];
    let pick = |name: &str, cc: u32| select::table_for(&tables, name, cc).map(|t| t.0);
    assert_eq!(pick("NVIDIA H200", 90), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(pick("NVIDIA A100 80GB PCIe", 80), Some("NVIDIA A100-SXM4-80GB"));
    let tied = [Measured("NVIDIA H100 80GB HBM3", 10), Measured("NVIDIA H200", 10)];
    assert_eq!(
        select::table_for(&tied, "NVIDIA H200", 90).map(|t| t.0),
        Some("NVIDIA H200")
    );
    // Another architecture's table is never used, however large.
    assert_eq!(
        select::table_for(&tables[2..], "NVIDIA H200", 90).map(|t| t.0),
        None
    );
    // The build embeds the measured tables with their devices.
    for table in cutlass_aot::kernels::TABLES {
        assert!(table.device.starts_with("NVIDIA "), "{:?}", table.device);
        assert!(!table.rows.is_empty());
    }
}

#[test]
fn device_table_adds_the_rows_of_kernels_the_chosen_table_lacks() {
    use cutlass_aot::kernels::REGISTRY;
    use cutlass_aot::select::{Key, Row};
    let f16 = |k: &&cutlass_aot::KernelInfo| k.name.contains("_f16_") && k.name.contains("gemm");
    let kept = REGISTRY
        .all()
        .iter()
        .copied()
        .find(|k| f16(k) && REGISTRY.by_name(&k.name.replace("f16", "bf16")).is_some())
        .expect("an f16 GEMM kernel with a bf16 twin");
    let twin = REGISTRY.by_name(&kept.name.replace("f16", "bf16")).unwrap();
    let added = REGISTRY
        .all()
        .iter()
        .copied()
        .find(|k| f16(k) && k.name != kept.name)
        .unwrap();
    let key = |m: usize| {
        Key::new(
            "gemm",
            [DType::F16; 3],
            Some([Layout::Row, Layout::Column, Layout::Row]),
            &[m, 64, 64, 1],
        )
    };
    let row = |kernel, m| Row::new(key(m), kernel, 1, Default::default(), m as f64);
    let rows = |r: Vec<Row>| -> &'static [Row] { Box::leak(r.into_boxed_slice()) };
    let tables: &'static [Table] = Box::leak(Box::new([
        Table::new(
            "NVIDIA H100 80GB HBM3",
            "2026-11-24",
            rows((1..=5).map(|m| row(kept, m)).collect()),
        ),
        // The kernel the H100 table has, its twin (pooled with it) and one it lacks.
        Table::new(
            "NVIDIA H200",
            "2026-11-28",
            rows(vec![row(kept, 4), row(twin, 5), row(added, 6), row(added, 7)]),
        ),
    ]));
    let table = select::device_table(tables, "NVIDIA H200", 90).expect("a Hopper table");
    assert_eq!(table.device, "NVIDIA H100 80GB HBM3");
    assert_eq!(table.rows.len(), 5);
    let supplement: Vec<(&str, f64)> = table.supplement().iter().map(|r| (r.kernel.name, r.us)).collect();
    assert_eq!(supplement, [(added.name, 6.0), (added.name, 7.0)]);
    // The supplement counts as measured, and the kernels it did not add stay unmeasured there.
    assert_eq!(table.fastest(&key(6), added, 1).map(|r| r.us), Some(6.0));
    assert!(table.fastest(&key(6), kept, 1).is_none());
    assert!(table.fastest(&key(5), twin, 1).is_none());
    // Made once; a device with nothing to add gets the chosen table itself.
    assert!(std::ptr::eq(
        table,
        select::device_table(tables, "NVIDIA H200", 90).unwrap()
    ));
    let alone = select::device_table(&tables[..1], "NVIDIA H200", 90).unwrap();
    assert!(std::ptr::eq(alone, &tables[0]));
    assert!(select::device_table(tables, "NVIDIA A100-SXM4-80GB", 80).is_none());
}

/// A repeated problem is decided from the memo: a hash lookup, not a scan of the table and every
/// kernel's rules (the first staged decision takes hundreds of microseconds).
#[test]
fn repeated_problems_are_decided_from_the_memo() {
    let registry = common::gemm_registry();
    let table = &cutlass_aot::kernels::TABLES[0];
    for shape in [(4096, 4096, 700, 1), (64, 64, 64, 256)] {
        let (sig, ops) = problem(DType::F16, TN, shape, 0, 0);
        let first = dispatch::decide(registry, table, sig, &ops, &H100, Policy::default()).unwrap();
        let start = std::time::Instant::now();
        for _ in 0..1000 {
            let again = dispatch::decide(registry, table, sig, &ops, &H100, Policy::default()).unwrap();
            assert_eq!(again.selection.kernel.name, first.selection.kernel.name);
            assert_eq!(again.staging, first.staging);
        }
        let per_call = start.elapsed() / 1000;
        assert!(
            per_call.as_micros() < 50,
            "{shape:?}: {per_call:?} per repeated decision"
        );
    }
}

/// A 2.x kernel in the problem's own layouts loses to copying one operand into the layout of a 3.x
/// kernel when the copy is small next to the product: a small-M problem with a column-major A runs
/// transposed on a narrow-tile 3.x kernel after copying A's 16 rows.
#[test]
fn staging_beats_a_slower_direct_kernel() {
    let nn = [Layout::Column, Layout::Column, Layout::Row];
    let (sig, ops) = problem(DType::Bf16, nn, (16, 8192, 8192, 1), 0, 0);
    let d = decide(sig, &ops).unwrap();
    assert_eq!(d.selection.kernel.api(), cutlass_aot::model::Api::Cutlass3x);
    assert_eq!(d.staging.unwrap().staged, ["A"]);
    // A tiny problem is not worth a copy; nor is f64, whose only kernels are 2.x.
    let (sig, ops) = problem(DType::Bf16, nn, (64, 64, 64, 1), 0, 0);
    assert!(decide(sig, &ops).unwrap().staging.is_none());
    let tt = [Layout::Row, Layout::Row, Layout::Row];
    let (sig, ops) = problem(DType::F64, tt, (4096, 4096, 4096, 1), 0, 0);
    assert!(decide(sig, &ops).unwrap().staging.is_none());
}

/// The skinny ways of a problem: `(form, orientation, split)` of each.
fn skinny_ways(signature: Signature, operands: &GemmOperands) -> Vec<(Form, Orientation, usize)> {
    all_skinny_ways(signature, operands)
        .into_iter()
        .filter(|(form, ..)| !form.is_tiny())
        .collect()
}

/// [`skinny_ways`] with the tiny forms.
fn all_skinny_ways(signature: Signature, operands: &GemmOperands) -> Vec<(Form, Orientation, usize)> {
    dispatch::ways(
        common::gemm_registry(),
        signature,
        operands,
        &H100,
        Policy::default(),
    )
    .iter()
    .filter_map(|w| skinny::skinny_of(w.kernel).map(|(_, form)| (form, w.way.orientation, w.split_k)))
    .collect()
}

/// Products with few columns, as given or transposed, may run on the crate's skinny kernels: the
/// CUDA-core form that walks X as it lies (at most 16 columns), and for 16-bit operands the
/// tensor-core one (at most 64); splits of K down to slices of 32 (64 for the tensor form).
#[test]
fn skinny_ways_follow_the_narrow_side_and_the_layout() {
    if !cutlass_aot::kernels::IMAGE_SUPPORT.has_code() {
        let (sig, ops) = problem(DType::F16, TN, (3, 5000, 1001, 1), 0, 0);
        assert!(
            skinny_ways(sig, &ops).is_empty(),
            "no support kernels, no skinny ways"
        );
        return;
    }
    // M = 3: only the transposed product is skinny; B column-major is B^T row-major: the dot form.
    let (sig, ops) = problem(DType::F16, TN, (3, 5000, 1001, 1), 0, 0);
    let ways = skinny_ways(sig, &ops);
    assert!(
        ways.iter().all(|(_, o, _)| *o == Orientation::Transposed),
        "{ways:?}"
    );
    let splits = |form: Form| {
        ways.iter()
            .filter(|w| w.0 == form)
            .map(|w| w.2)
            .collect::<Vec<_>>()
    };
    assert_eq!(splits(Form::Dot), [1, 2, 4, 8, 16]);
    assert_eq!(splits(Form::Tensor), [1, 2, 4, 8]);
    assert!(splits(Form::Axpy).is_empty());
    // A column-major with N = 5: the axpy form as given; no tensor form for f32.
    let (sig, ops) = problem(
        DType::F32,
        [Layout::Column, Layout::Row, Layout::Row],
        (4000, 5, 300, 1),
        0,
        0,
    );
    let ways = skinny_ways(sig, &ops);
    assert!(!ways.is_empty());
    assert!(
        ways.iter()
            .all(|w| w.0 == Form::Axpy && w.1 == Orientation::AsGiven),
        "{ways:?}"
    );
    // 40 columns: the CUDA-core form (three groups of 16) and the tensor form, as given; 65: none.
    let (sig, ops) = problem(DType::Bf16, TN, (2000, 40, 512, 1), 0, 0);
    let ways = skinny_ways(sig, &ops);
    assert!(ways.iter().all(|w| w.1 == Orientation::AsGiven), "{ways:?}");
    assert!(ways.iter().any(|w| w.0 == Form::Dot) && ways.iter().any(|w| w.0 == Form::Tensor));
    let (sig, ops) = problem(DType::Bf16, TN, (2000, 65, 512, 1), 0, 0);
    assert!(skinny_ways(sig, &ops).is_empty());
}

/// The vector dot form is offered where X and Y both walk K in aligned 16-byte vectors: A
/// row-major and B column-major, lines, batches and addresses 16-byte aligned; never else.
#[test]
fn the_vector_dot_form_needs_both_operands_along_k_and_aligned() {
    if !cutlass_aot::kernels::IMAGE_SUPPORT.has_code() {
        return;
    }
    let vector = |dtype, layouts, (m, n, k, batch), pad, offset| {
        let (sig, ops) = problem(dtype, layouts, (m, n, k, batch), pad, offset);
        skinny_ways(sig, &ops)
            .into_iter()
            .filter(|w| w.0 == Form::DotVector)
            .map(|w| (w.1, w.2))
            .collect::<Vec<_>>()
    };
    // A decode step (M = 4): W·x transposed, split down to slices of 32.
    let decode = vector(DType::Bf16, TN, (4, 4096, 2048, 1), 0, 0);
    assert_eq!(
        decode,
        [1, 2, 4, 8, 16, 32, 64].map(|s| (Orientation::Transposed, s))
    );
    // N = 5 as given, f32 (4-element vectors) and f64 (2), batched.
    assert!(!vector(DType::F32, TN, (900, 5, 1000, 3), 0, 0).is_empty());
    assert!(!vector(DType::F64, TN, (900, 5, 1002, 3), 0, 0).is_empty());
    // K not a whole number of vectors, a padded leading dimension that is, an address 2 bytes off,
    // and a layout where Y runs across K.
    assert!(vector(DType::F16, TN, (4, 4096, 2047, 1), 0, 0).is_empty());
    assert!(!vector(DType::F16, TN, (4, 4096, 2047, 1), 1, 0).is_empty());
    assert!(vector(DType::F16, TN, (4, 4096, 2048, 1), 0, 1).is_empty());
    let tt = [Layout::Row, Layout::Row, Layout::Row];
    assert!(vector(DType::F16, tt, (4, 4096, 2048, 1), 0, 0).is_empty());
    // More than 8 columns on both sides: the other forms only.
    assert!(vector(DType::F16, TN, (900, 9, 1024, 1), 0, 0).is_empty());
}

/// The tiny forms take any shape in either orientation, unsplit: a warp per output where there
/// are at most 65,536 outputs and 2^24 multiply-adds, a thread per output where K is at most 64.
#[test]
fn tiny_ways_are_offered_for_few_outputs_or_short_depth() {
    if !cutlass_aot::kernels::IMAGE_SUPPORT.has_code() {
        return;
    }
    let tiny = |m, n, k| {
        let (sig, ops) = problem(DType::F32, TN, (m, n, k, 1), 0, 0);
        let mut ways: Vec<_> = all_skinny_ways(sig, &ops)
            .into_iter()
            .filter(|(form, ..)| form.is_tiny())
            .collect();
        assert!(ways.iter().all(|w| w.2 == 1), "{ways:?}");
        ways.sort_by_key(|w| format!("{w:?}"));
        ways.into_iter().map(|w| (w.0, w.1)).collect::<Vec<_>>()
    };
    let both = |form| [(form, Orientation::AsGiven), (form, Orientation::Transposed)];
    assert_eq!(tiny(300, 200, 250), both(Form::TinyWarp));
    assert!(tiny(300, 200, 280).is_empty(), "past 2^24 multiply-adds");
    assert_eq!(tiny(3000, 2000, 64), both(Form::TinyThread));
    assert!(tiny(3000, 2000, 65).is_empty());
    assert_eq!(tiny(30, 20, 10).len(), 4);
}

/// A decode-like product with a misaligned K runs on a skinny kernel: CUTLASS's kernels would read
/// the weight two bytes at a time into a mostly empty tile, or copy it first.
#[test]
fn misaligned_decode_products_run_on_skinny_kernels() {
    if !cutlass_aot::kernels::IMAGE_SUPPORT.has_code() {
        return;
    }
    for (m, n, k) in [(3, 5000, 4097), (1, 11008, 4095), (7, 4099, 1999)] {
        let (sig, ops) = problem(DType::F16, TN, (m, n, k, 1), 0, 0);
        let decision = decide(sig, &ops).unwrap();
        let kernel = decision.selection.kernel;
        assert!(
            skinny::skinny_of(kernel).is_some(),
            "{m}x{n}x{k}: {}",
            kernel.name
        );
        assert!(decision.staging.is_none());
    }
}

/// Parallel split-K ways are offered where the unsplit output tiles fill fewer than four waves of
/// SMs (slices are there to fill the GPU), at up to 64 slices; past four waves only other ways are.
#[test]
fn parallel_split_k_only_where_the_tiles_leave_the_gpu_idle() {
    let parallel = |dims| {
        let (sig, ops) = problem(DType::F16, TN, dims, 0, 0);
        dispatch::ways(common::gemm_registry(), sig, &ops, &H100, Policy::default())
            .iter()
            .filter(|w| w.kernel.design.split_k() == cutlass_aot::model::SplitK::Parallel)
            .map(|w| w.split_k)
            .max()
    };
    // 2 x 2 tiles of 128 x 128 over K = 32768: 64 slices.
    assert_eq!(parallel((256, 256, 32768, 1)), Some(64));
    // 32 x 32 tiles of 128 x 128 (1,024, past four waves of 132 SMs): none.
    assert_eq!(parallel((4096, 4096, 4096, 1)), None);
}
