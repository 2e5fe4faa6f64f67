//! CPU tests of the conv2d runtime (`--features conv`): output size, metadata, the checks made
//! before anything launches (shapes, buffers, channels against alignments, strides a kernel
//! handles, split-K) and the host Params of every conv kernel. No GPU needed.

mod common;

use common::{A100, H100};
use cutlass_aot::conv::dispatch::ConvWay;
use cutlass_aot::conv::{self, Conv2dProblem, ConvGeometry, ConvMode, ConvOperands, TensorOperand};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{Api, ConvKind, DType, IteratorAlgorithm, OperationKind, StrideSupport};
use cutlass_aot::select::{self, NO_TABLE};
use cutlass_aot::{Error, KernelInfo};

fn f16_problem(kind: ConvKind, activation: [usize; 4], filter: [usize; 3]) -> Conv2dProblem {
    Conv2dProblem::new(kind, activation, filter, (DType::F16, DType::F16, DType::F16))
}

fn kernel(rust_name: &str) -> &'static KernelInfo {
    REGISTRY
        .all()
        .iter()
        .copied()
        .find(|k| k.rust_name == rust_name)
        .unwrap_or_else(|| panic!("no kernel {rust_name}"))
}

/// Operands of a packed problem at aligned fake addresses (host checks only).
fn operands(problem: &Conv2dProblem) -> ConvOperands {
    let dims = problem.tensor_dims().unwrap();
    let tensor = |i: usize| TensorOperand {
        dims: dims[i],
        len: dims[i].iter().product(),
        address: 0x7f00_0000_0000 + (i as u64) * 0x1_0000_0000,
    };
    ConvOperands {
        a: tensor(0),
        b: tensor(1),
        c: None,
        d: tensor(2),
        geometry: ConvGeometry {
            pad: problem.pad,
            stride: problem.stride,
            dilation: problem.dilation,
            mode: problem.mode,
        },
        alpha: 1.0,
        beta: 0.0,
        split_k_slices: problem.split_k_slices,
        activation_arg: 0.0,
    }
}

fn invalid(result: Result<impl Sized, Error>) -> String {
    match result {
        Err(Error::InvalidArgument { message, .. }) => message,
        Err(other) => panic!("expected InvalidArgument, got {other}"),
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn output_size_matches_pytorch() {
    // (H + 2·pad − dilation·(R − 1) − 1) / stride + 1, as torch.nn.functional.conv2d.
    let p = f16_problem(ConvKind::Fprop, [1, 224, 224, 3], [64, 7, 7])
        .padding(3, 3)
        .stride(2, 2);
    assert_eq!(p.output_size().unwrap(), (112, 112));
    let p = f16_problem(ConvKind::Fprop, [1, 14, 15, 8], [8, 3, 3])
        .padding(1, 1)
        .stride(2, 2);
    assert_eq!(p.output_size().unwrap(), (7, 8));
    let p = f16_problem(ConvKind::Fprop, [1, 12, 12, 8], [8, 3, 3])
        .padding(2, 2)
        .dilation(2, 2);
    assert_eq!(p.output_size().unwrap(), (12, 12));
    let err = f16_problem(ConvKind::Fprop, [1, 2, 2, 8], [8, 5, 5])
        .output_size()
        .unwrap_err();
    assert!(err.contains("output would be empty"), "{err}");
    let err = f16_problem(ConvKind::Fprop, [1, 8, 8, 8], [8, 3, 3])
        .stride(0, 1)
        .output_size()
        .unwrap_err();
    assert!(err.contains("at least 1"), "{err}");
}

#[test]
fn implicit_gemm_extents_by_kind() {
    let p = |kind| f16_problem(kind, [2, 10, 10, 16], [32, 3, 3]).padding(1, 1);
    assert_eq!(p(ConvKind::Fprop).gemm_extent().unwrap(), (200, 32, 144));
    assert_eq!(p(ConvKind::Dgrad).gemm_extent().unwrap(), (200, 16, 288));
    assert_eq!(p(ConvKind::Wgrad).gemm_extent().unwrap(), (32, 144, 200));
}

#[test]
fn registry_lists_conv_kernels_with_their_metadata() {
    let convs: Vec<_> = REGISTRY
        .all()
        .iter()
        .filter(|k| k.operation.conv().is_some())
        .collect();
    assert!(convs.len() >= 40, "only {} conv kernels", convs.len());
    for kind in [
        OperationKind::Conv2dFprop,
        OperationKind::Conv2dDgrad,
        OperationKind::Conv2dWgrad,
    ] {
        for api in [Api::Cutlass2x, Api::Cutlass3x] {
            assert!(
                convs.iter().any(|k| k.operation.kind() == kind && k.api() == api),
                "no {kind} kernel of {api}"
            );
        }
    }
    let fixed = kernel("conv_fprop_f16_fixed_channels_4_sm80");
    let conv = fixed.operation.conv().unwrap();
    assert_eq!(conv.iterator, IteratorAlgorithm::FixedChannels);
    assert_eq!(conv.gemm.a.alignment, 4);
    assert!(fixed.name.contains("fprop_fixed_channels"), "{}", fixed.name);
    let first = kernel("conv_fprop_f16_first_layer_4_sm80");
    let conv = first.operation.conv().unwrap();
    assert_eq!(conv.iterator, IteratorAlgorithm::FirstLayer);
    assert_eq!((conv.gemm.a.alignment, conv.gemm.c.alignment), (4, 8));
    assert!(first.name.contains("fprop_first_layer"), "{}", first.name);
    let unity = kernel("conv_dgrad_f16_unity_sm80");
    assert_eq!(
        unity.operation.conv().unwrap().stride_support,
        StrideSupport::Unity
    );
    assert!(unity.name.ends_with("_unity_stride"), "{}", unity.name);
}

#[test]
fn supports_explains_each_refusal() {
    let optimized = kernel("conv_fprop_f16_optimized_sm80");
    let ragged = f16_problem(ConvKind::Fprop, [1, 8, 8, 12], [20, 3, 3]).padding(1, 1);
    let reasons = optimized.supports(&ragged).unwrap_err().reasons.join("; ");
    assert!(
        reasons.contains("12 channels, not a multiple of the kernel's alignment 8"),
        "{reasons}"
    );
    assert!(reasons.contains("20 channels"), "{reasons}");

    let fixed = kernel("conv_fprop_f16_fixed_channels_4_sm80");
    let eight = f16_problem(ConvKind::Fprop, [1, 8, 8, 8], [16, 3, 3]);
    let reasons = fixed.supports(&eight).unwrap_err().reasons.join("; ");
    assert!(
        reasons.contains("reads exactly 4 channels per pixel but the activation has 8"),
        "{reasons}"
    );

    let first = kernel("conv_fprop_f16_first_layer_4_sm80");
    let conv = first.operation.conv().unwrap();
    assert_eq!(conv.iterator, IteratorAlgorithm::FirstLayer);
    assert_eq!((conv.gemm.a.alignment, conv.gemm.c.alignment), (4, 8));
    assert!(first.name.contains("fprop_first_layer"), "{}", first.name);
    let unity = kernel("conv_dgrad_f16_unity_sm80");
    let strided = f16_problem(ConvKind::Dgrad, [1, 8, 8, 8], [16, 3, 3])
        .padding(1, 1)
        .stride(2, 2);
    // A unit-stride 2.x dgrad runs a strided dgrad as stride phases staged in scratch memory, of
    // one slice and unit dilation, even where some of dx lies past every filter window.
    assert!(unity.supports(&strided).is_ok());
    let mut split_strided = strided;
    split_strided.split_k_slices = 2;
    let reasons = unity.supports(&split_strided).unwrap_err().reasons.join("; ");
    assert!(reasons.contains("which it does not split"), "{reasons}");
    let reasons = unity
        .supports(&strided.dilation(2, 2).padding(2, 2))
        .unwrap_err()
        .reasons
        .join("; ");
    assert!(reasons.contains("need dilation 1"), "{reasons}");
    assert!(unity
        .supports(&f16_problem(ConvKind::Dgrad, [1, 6, 6, 8], [16, 3, 3]).stride(2, 2))
        .is_ok());

    let strided_dgrad = kernel("conv_dgrad_f16_strided_sm80");
    let mut dilated = f16_problem(ConvKind::Dgrad, [1, 8, 8, 8], [16, 3, 3])
        .padding(2, 2)
        .dilation(2, 2);
    dilated.split_k_slices = 2;
    let reasons = strided_dgrad.supports(&dilated).unwrap_err().reasons.join("; ");
    assert!(reasons.contains("take no dilation"), "{reasons}");

    let hopper = REGISTRY
        .all()
        .iter()
        .copied()
        .find(|k| k.api() == Api::Cutlass3x && k.operation.kind() == OperationKind::Conv2dDgrad)
        .unwrap();
    let mut p = strided;
    p.mode = ConvMode::Convolution;
    p.split_k_slices = 2;
    let reasons = hopper.supports(&p).unwrap_err().reasons.join("; ");
    for needle in ["does not split K", "cross-correlation only"] {
        assert!(reasons.contains(needle), "missing `{needle}` in {reasons}");
    }
    // A Hopper dgrad runs a strided dgrad as stride phases (unit dilation, every phase's last
    // pixels inside some filter window).
    assert!(hopper.supports(&strided).is_ok());
    let dilated_strided = strided.dilation(2, 2).padding(2, 2);
    let reasons = hopper.supports(&dilated_strided).unwrap_err().reasons.join("; ");
    assert!(reasons.contains("need dilation 1"), "{reasons}");
    let past_windows = f16_problem(ConvKind::Dgrad, [1, 6, 6, 8], [16, 3, 3]).stride(2, 2);
    let reasons = hopper.supports(&past_windows).unwrap_err().reasons.join("; ");
    assert!(reasons.contains("past every filter window"), "{reasons}");
    assert!(strided_dgrad.supports(&past_windows).is_ok());
    // A stream-K kernel splits K, into at most as many slices as the conv's K has tiles
    // (⌈C/64⌉·R·S = 9 here).
    let stream_k = kernel("conv_fprop_f16_128x128x64_streamk_sm90");
    let mut split = f16_problem(ConvKind::Fprop, [1, 8, 8, 64], [64, 3, 3]).padding(1, 1);
    split.split_k_slices = 9;
    assert!(stream_k.supports(&split).is_ok());
    split.split_k_slices = 10;
    let reasons = stream_k.supports(&split).unwrap_err().reasons.join("; ");
    assert!(
        reasons.contains("only 9 tile(s) of 64") && reasons.contains("use at most 9"),
        "{reasons}"
    );

    // Another operation's problem gets one reason, not the conv rules.
    let wgrad = kernel("conv_wgrad_f16_sm80");
    let reasons = wgrad.supports(&ragged).unwrap_err().reasons;
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(
        reasons[0].contains("conv2d_wgrad kernel but the problem is a conv2d_fprop"),
        "{reasons:?}"
    );
}

#[test]
fn plan_checks_tensors_before_anything_else() {
    let info = kernel("conv_fprop_f16_optimized_sm80");
    let p = f16_problem(ConvKind::Fprop, [2, 10, 10, 16], [32, 3, 3]).padding(1, 1);
    let good = operands(&p);
    let args = conv::plan(info, &good, &H100).unwrap();
    assert_eq!((args.p, args.q, args.c, args.k), (10, 10, 16, 32));

    let mut wrong_output = good;
    wrong_output.d.dims = [2, 9, 10, 32];
    let message = invalid(conv::plan(info, &wrong_output, &H100));
    assert!(message.contains("give [2, 10, 10, 32]"), "{message}");

    let mut short = good;
    short.b.len -= 1;
    let message = invalid(conv::plan(info, &short, &H100));
    assert!(
        message.contains("needs a buffer of 4608 elements but the buffer has 4607"),
        "{message}"
    );

    let mut channels = good;
    channels.b.dims = [32, 3, 3, 8];
    let message = invalid(conv::plan(info, &channels, &H100));
    assert!(
        message.contains("the activation has 16 channels") && message.contains("the filter has 8"),
        "{message}"
    );

    let mut beta = good;
    beta.beta = 0.5;
    assert!(invalid(conv::plan(info, &beta, &H100)).contains("no C was given"));

    let mut misaligned = good;
    misaligned.a.address += 2;
    let message = invalid(conv::plan(info, &misaligned, &H100));
    assert!(message.contains("not a multiple of 16 bytes"), "{message}");

    let mut split = good;
    split.split_k_slices = 64;
    let message = invalid(conv::plan(info, &split, &H100));
    assert!(message.contains("use at most 5"), "{message}");
}

/// Every conv kernel's host code builds Params for a problem it supports, and reports the
/// workspace a split needs, without a GPU.
#[test]
fn host_params_of_every_conv_kernel() {
    for info in REGISTRY
        .all()
        .iter()
        .copied()
        .filter(|k| k.operation.conv().is_some())
    {
        if !info.has_device_code() {
            continue; // built without nvcc
        }
        let conv = info.operation.conv().unwrap();
        let g = &conv.gemm;
        let align = g.a.alignment.max(g.b.alignment).max(g.c.alignment) as usize;
        let c = if conv.iterator.fixed_channel_count() {
            g.a.alignment as usize
        } else {
            4 * align
        };
        let p = Conv2dProblem::new(
            conv.kind,
            [2, 12, 12, c],
            [4 * align, 3, 3],
            (g.a.element, g.b.element, g.c.element),
        )
        .padding(1, 1);
        let ops = operands(&p);
        let device = H100;
        let bytes =
            conv::workspace_bytes(info, &ops, &device).unwrap_or_else(|e| panic!("{}: {e}", info.name));
        // Parallel split-K kernels always write partial sums to the workspace; others need none
        // without a split, but for stream-K kernels, whose own decomposition (1 slice) may split K
        // over the SMs.
        let parallel = info.design.split_k() == cutlass_aot::model::SplitK::Parallel;
        let stream_k = info.design.split_k() == cutlass_aot::model::SplitK::StreamK;
        if conv.iterator == IteratorAlgorithm::FirstLayer {
            // Ours: one tile counter per CTA column of output channels.
            let columns = (4 * align).div_ceil(info.tile().n as usize);
            assert_eq!(bytes, 4 * columns, "{}: tile counters", info.name);
            continue;
        }
        assert!(
            stream_k || (bytes > 0) == parallel,
            "{}: {bytes} bytes of workspace without a split",
            info.name
        );
        let (_, _, gemm_k) = p.gemm_extent().unwrap();
        // (An s8 output refuses serial split-K: see `supports_explains_each_refusal`.)
        let s8 = g.c.element == DType::S8;
        let splits = if info.api() == Api::Cutlass2x {
            info.k_tiles(gemm_k) >= 2 && !s8
        } else {
            stream_k && p.k_tiles_3x(info.tile().k as usize) >= 2
        };
        if splits {
            let split = ConvOperands {
                split_k_slices: 2,
                ..ops
            };
            let bytes =
                conv::workspace_bytes(info, &split, &device).unwrap_or_else(|e| panic!("{}: {e}", info.name));
            assert!(bytes > 0, "{}: a split needs a workspace", info.name);
        }
        // A Hopper dgrad at stride 2 gathers the filter's taps into one sub-filter per stride
        // phase, in its workspace.
        if info.api() == Api::Cutlass3x && conv.kind == ConvKind::Dgrad && info.is_plain() {
            let strided = operands(&p.stride(2, 2));
            let bytes = conv::workspace_bytes(info, &strided, &device)
                .unwrap_or_else(|e| panic!("{}: {e}", info.name));
            let filter_bytes = 4 * align * 9 * c * g.b.element.bits() as usize / 8;
            assert!(
                bytes >= filter_bytes,
                "{}: {bytes} bytes of workspace for a {filter_bytes}-byte filter's stride phases",
                info.name
            );
        }
        // A 2.x unit-stride dgrad at stride 2 computes each phase of dx into its workspace too:
        // 2×12×12×C of dx in four phases, each at least its share, besides the gathered filters.
        let unity = conv.stride_support == StrideSupport::Unity;
        if info.api() == Api::Cutlass2x && conv.kind == ConvKind::Dgrad && unity && info.is_plain() {
            let strided = operands(&p.stride(2, 2));
            let bytes = conv::workspace_bytes(info, &strided, &device)
                .unwrap_or_else(|e| panic!("{}: {e}", info.name));
            let dx_bytes = 2 * 12 * 12 * c * g.c.element.bits() as usize / 8;
            assert!(
                bytes >= dx_bytes,
                "{}: {bytes} bytes of workspace for the stride phases of a {dx_bytes}-byte dx",
                info.name
            );
        }
    }
}

#[test]
fn dispatch_runs_1x1_unit_stride_convolutions_as_gemms_over_the_same_buffers() {
    use conv::dispatch::as_gemm;
    use cutlass_aot::model::Layout::{Column, Row};
    // (kind, A's shape and layout, B's, D's): the product's M × K, K × N, M × N.
    let pixels = 2 * 7 * 5;
    let expected = [
        (ConvKind::Fprop, (pixels, 24, Row), (24, 40, Column), (pixels, 40)),
        (ConvKind::Dgrad, (pixels, 40, Row), (40, 24, Row), (pixels, 24)),
        (ConvKind::Wgrad, (40, pixels, Column), (pixels, 24, Row), (40, 24)),
    ];
    for (kind, a, b, d) in expected {
        let problem = f16_problem(kind, [2, 7, 5, 24], [40, 1, 1]);
        let ops = operands(&problem);
        let (signature, gemm) = as_gemm(&problem, &ops).expect("1x1 unit stride is a GEMM");
        assert_eq!(
            (gemm.a.shape.rows, gemm.a.shape.cols, signature.layout_a),
            a,
            "{kind} A"
        );
        assert_eq!(
            (gemm.b.shape.rows, gemm.b.shape.cols, signature.layout_b),
            b,
            "{kind} B"
        );
        assert_eq!((gemm.d.shape.rows, gemm.d.shape.cols), d, "{kind} D");
        assert_eq!(signature.layout_c, Row);
        // Packed leading dimensions are the channel counts: the tensors as they lie.
        assert_eq!(gemm.a.shape.ld, if kind == ConvKind::Fprop { 24 } else { 40 });
        assert_eq!(
            (gemm.a.address, gemm.b.address, gemm.d.address),
            (ops.a.address, ops.b.address, ops.d.address)
        );
    }
    // Padding, a stride or a wider filter is not a plain product.
    for problem in [
        f16_problem(ConvKind::Fprop, [2, 7, 5, 24], [40, 1, 1]).padding(1, 0),
        f16_problem(ConvKind::Fprop, [2, 8, 8, 24], [40, 1, 1]).stride(2, 2),
        f16_problem(ConvKind::Wgrad, [2, 7, 5, 24], [40, 3, 1]),
    ] {
        assert!(as_gemm(&problem, &operands(&problem)).is_none(), "{problem:?}");
    }
}

/// The engine's choice for `problem` on `device` with `table`: kernel, split-K, why.
fn chosen(
    table: &select::Table,
    problem: &Conv2dProblem,
    device: &cutlass_aot::device::DeviceProps,
) -> (&'static KernelInfo, usize, select::Choice) {
    let d = conv::dispatch::decide(&REGISTRY, table, problem, &operands(problem), device).expect("a kernel");
    (d.kernel, d.split_k, d.choice)
}

#[test]
fn dispatch_bare_model_picks_a_supporting_kernel_of_the_device() {
    let on_hopper = f16_problem(ConvKind::Fprop, [32, 28, 28, 128], [128, 3, 3]).padding(1, 1);
    let (kernel, slices, choice) = chosen(&NO_TABLE, &on_hopper, &H100);
    assert_eq!(kernel.api(), Api::Cutlass3x, "{}", kernel.rust_name);
    assert_eq!(slices, 1);
    assert_eq!(choice.basis, select::Basis::Model);
    let (kernel, _, _) = chosen(&NO_TABLE, &on_hopper, &A100);
    assert_eq!(kernel.api(), Api::Cutlass2x, "{}", kernel.rust_name);
    // A wgrad with a small filter gradient and a long reduction splits K on Ampere.
    let long_k = f16_problem(ConvKind::Wgrad, [128, 56, 56, 64], [64, 1, 1]);
    let (kernel, slices, _) = chosen(&NO_TABLE, &long_k, &A100);
    assert!(slices > 1, "{} with {slices} slices", kernel.rust_name);
    // The stem's 4 channels: only the fixed/few-channel kernels and ours take it; ours is the
    // model's choice (it measured about 3x the others).
    let stem = f16_problem(ConvKind::Fprop, [8, 224, 224, 4], [64, 7, 7])
        .padding(3, 3)
        .stride(2, 2);
    let (kernel, _, _) = chosen(&NO_TABLE, &stem, &A100);
    let iterator = kernel.operation.conv().unwrap().iterator;
    assert_eq!(iterator, IteratorAlgorithm::FirstLayer, "{}", kernel.rust_name);
    // Never a kernel with a fused activation, nor one that rounds f32 to TF32.
    let f32_problem = Conv2dProblem::new(
        ConvKind::Fprop,
        [2, 9, 9, 8],
        [16, 3, 3],
        (DType::F32, DType::F32, DType::F32),
    );
    // On Hopper too, where a TF32 kernel (conv_fprop_f32_tf32_sm90) is a candidate by type.
    for device in [A100, H100] {
        let (kernel, _, _) = chosen(&NO_TABLE, &f32_problem, &device);
        assert!(
            !cutlass_aot::dispatch::rounds_to_tf32(kernel),
            "{}",
            kernel.rust_name
        );
        assert!(kernel.is_plain());
    }
}

/// The Hopper TF32 fprop kernel is one the dispatch test above must avoid: a 3.x kernel that
/// rounds f32 operands to TF32.
#[test]
fn hopper_tf32_fprop_rounds_to_tf32() {
    let tf32 = kernel("conv_fprop_f32_tf32_sm90");
    assert_eq!(tf32.api(), Api::Cutlass3x);
    assert!(cutlass_aot::dispatch::rounds_to_tf32(tf32));
}

/// A table row of `problem` for `kernel` at `split_k`.
fn row(problem: &Conv2dProblem, kernel: &'static KernelInfo, split_k: usize, us: f64) -> select::Row {
    select::Row::new(
        conv::dispatch::key_of(problem),
        kernel,
        split_k,
        Default::default(),
        us,
    )
}

fn table(rows: Vec<select::Row>) -> &'static select::Table {
    Box::leak(Box::new(select::Table::new(
        "NVIDIA H100 80GB HBM3",
        "2026-11-24",
        Box::leak(rows.into_boxed_slice()),
    )))
}

/// The bare model's time (µs) of `kernel` at `split_k` on `problem` on the H100.
fn model_us(kernel: &KernelInfo, problem: &Conv2dProblem, split_k: usize) -> f64 {
    let work = conv::ways::work_of(kernel, problem).unwrap();
    select::cost::kernel_seconds(kernel, &work, split_k, H100.multiprocessors) * 1e6
}

/// A problem the table measured runs its fastest row that can run it, at that row's split-K; a
/// problem it did not measure is estimated.
#[test]
fn dispatch_table_runs_a_measured_problem_its_fastest_way() {
    let analytic = kernel("conv_fprop_f16_analytic_sm80");
    let optimized = kernel("conv_fprop_f16_optimized_sm80");
    let measured = f16_problem(ConvKind::Fprop, [64, 14, 14, 256], [256, 3, 3]).padding(1, 1);
    let t = table(vec![
        row(&measured, analytic, 1, 30.0),
        row(&measured, optimized, 4, 12.0),
        row(&measured, optimized, 1, 20.0),
    ]);
    let (kernel, split_k, choice) = chosen(t, &measured, &H100);
    assert_eq!((kernel.rust_name, split_k), (optimized.rust_name, 4));
    assert_eq!(choice.basis, select::Basis::Measured);
    assert_eq!(choice.estimate_us, 12.0);
    // The same extents at another padding, kind or batch: not this problem.
    for other in [
        f16_problem(ConvKind::Fprop, [64, 14, 14, 256], [256, 3, 3]),
        f16_problem(ConvKind::Dgrad, [64, 14, 14, 256], [256, 3, 3]).padding(1, 1),
        f16_problem(ConvKind::Fprop, [32, 14, 14, 256], [256, 3, 3]).padding(1, 1),
    ] {
        let (_, _, choice) = chosen(t, &other, &H100);
        assert_ne!(choice.basis, select::Basis::Measured, "{other:?}");
    }
    assert_eq!(t.problems_of("conv2d_fprop"), 1);
}

/// For a problem the table lacks, each way is the model's time ÷ the rate its kernel showed on the
/// table's rows: a kernel measured faster than the model thinks wins over one the bare model
/// prefers.
#[test]
fn dispatch_model_calibrated_on_the_table_prefers_kernels_measured_fast() {
    let unseen = f16_problem(ConvKind::Fprop, [32, 28, 28, 128], [128, 3, 3]).padding(1, 1);
    let measured = [
        f16_problem(ConvKind::Fprop, [64, 56, 56, 64], [64, 3, 3]).padding(1, 1),
        f16_problem(ConvKind::Fprop, [128, 14, 14, 256], [256, 3, 3]).padding(1, 1),
    ];
    // The bare model's choice, and another conv kernel that runs every problem here.
    let (preferred, _, _) = chosen(&NO_TABLE, &unseen, &H100);
    let hopper = |p: &Conv2dProblem| Conv2dProblem {
        compute_capability: Some(90),
        ..*p
    };
    let other = conv::ways::conv_options(&REGISTRY, &hopper(&unseen))
        .map(|(k, _)| k)
        .find(|k| k.name != preferred.name && measured.iter().all(|p| k.supports(&hopper(p)).is_ok()))
        .expect("a second kernel");
    // Measured: `other` runs at 10x the model's rate, `preferred` at 1x.
    let mut rows = Vec::new();
    for p in &measured {
        for (k, rate) in [(preferred, 1.0), (other, 10.0)] {
            rows.push(row(p, k, 1, model_us(k, p, 1) / rate));
        }
    }
    let t = table(rows);
    // `other`, or a kernel of its family without rows of its own (which takes the family's rate).
    let (kernel, split_k, choice) = chosen(t, &unseen, &H100);
    assert_ne!(kernel.name, preferred.name);
    // The model's time at the kernel's rate, unless one of two floors holds it up: its split's
    // partial sums at full bandwidth, or the fastest row its family measured at that split.
    let work = conv::ways::work_of(kernel, &unseen).unwrap();
    let split_floor = select::cost::split_floor_seconds(kernel, &work, split_k) * 1e6;
    let expected = (model_us(kernel, &unseen, split_k) / 10.0).max(split_floor);
    let family_floor = t
        .rows
        .iter()
        .filter(|r| r.split_k == split_k)
        .map(|r| r.us)
        .any(|us| (choice.estimate_us - us).abs() < 1e-6 * us && us > expected);
    // (The two rows of `other` are the kernel's own or its family's.)
    assert!(
        matches!(
            choice.basis,
            select::Basis::Calibrated(
                select::calibration::Fit::Kernel { rows: r } | select::calibration::Fit::Family { rows: r }
            ) if r == 2
        ),
        "{choice:?}"
    );
    assert!(
        (choice.estimate_us - expected).abs() < 1e-6 * expected || family_floor,
        "{choice:?} vs {expected}: {} split {split_k}",
        kernel.name
    );
    // A split-K measured on enough problems is fitted on its own rows (rows measured at exactly
    // 1/2 and 1/8 of the model's time give exactly those rates); a split the table lacks is fitted
    // over all of the kernel's rows, between the two.
    let p = &measured[0];
    let problems = [
        *p,
        measured[1],
        f16_problem(ConvKind::Fprop, [16, 28, 28, 128], [128, 3, 3]).padding(1, 1),
    ];
    let mut rows = Vec::new();
    for q in &problems {
        rows.push(row(q, other, 1, model_us(other, q, 1) / 2.0));
        rows.push(row(q, other, 4, model_us(other, q, 4) / 8.0));
    }
    let t = table(rows);
    let rates =
        select::calibration::Rates::fit(t.rows, H100.multiprocessors, &|r| conv::dispatch::row_work(r));
    // Deep enough that no split's partial sums floor the estimate.
    let deep = f16_problem(ConvKind::Fprop, [2, 7, 7, 2304], [64, 3, 3]).padding(1, 1);
    let key = conv::dispatch::key_of(&deep);
    let work = conv::ways::work_of(other, &deep).unwrap();
    let rate = |slices: usize| {
        let (seconds, _) = rates
            .estimate(other, &key, slices, &work, H100.multiprocessors, &[])
            .unwrap();
        assert!(seconds > select::cost::split_floor_seconds(other, &work, slices));
        model_us(other, &deep, slices) / (seconds * 1e6)
    };
    assert!(
        (rate(1) - 2.0).abs() < 1e-6 && (rate(4) - 8.0).abs() < 1e-6,
        "{} {}",
        rate(1),
        rate(4)
    );
    assert!(rate(2) > 2.0 && rate(2) < 8.0, "between 2 and 8: {}", rate(2));
    let key = conv::dispatch::key_of(p);
    let rates = select::calibration::Rates::fit(
        table(vec![row(p, other, 1, model_us(other, p, 1) / 2.0)]).rows,
        H100.multiprocessors,
        &|r| conv::dispatch::row_work(r),
    );
    // Left out, the table has no other rows of this kernel or its family: nothing to calibrate with.
    let work = conv::ways::work_of(other, p).unwrap();
    let (_, fit) = rates
        .estimate(other, &key, 1, &work, H100.multiprocessors, &[key])
        .map_or((0.0, None), |(s, f)| (s, Some(f)));
    assert_eq!(fit, None, "no other rows: nothing to calibrate with");
}

/// A GEMM kernel measured on 1x1 problems serves unseen 1x1 problems when its rate says so, and
/// never a 3x3 one (not a matrix product).
#[test]
fn dispatch_model_offers_gemm_kernels_for_matrix_products_only() {
    let seen = f16_problem(ConvKind::Fprop, [64, 14, 14, 256], [512, 1, 1]);
    let unseen = f16_problem(ConvKind::Fprop, [32, 28, 28, 256], [1024, 1, 1]);
    let hopper = |p: &Conv2dProblem| Conv2dProblem {
        compute_capability: Some(90),
        ..*p
    };
    let gemm = *conv::ways::gemm_candidates(&REGISTRY, &hopper(&seen), &operands(&seen), 1)
        .first()
        .expect("a GEMM kernel takes an f16 fprop 1x1 as a tn product");
    let conv_kernel = kernel("conv_fprop_f16_optimized_sm80");
    let t = table(vec![
        row(&seen, gemm, 1, model_us(gemm, &seen, 1) / 50.0),
        row(&seen, conv_kernel, 1, model_us(conv_kernel, &seen, 1)),
    ]);
    let (kernel, ..) = chosen(t, &unseen, &H100);
    assert_eq!(kernel.name, gemm.name);
    let three_by_three = f16_problem(ConvKind::Fprop, [32, 28, 28, 256], [1024, 3, 3]).padding(1, 1);
    let (kernel, ..) = chosen(t, &three_by_three, &H100);
    assert!(kernel.operation.conv().is_some(), "{}", kernel.name);
}

/// Nothing cuDNN runs is refused for its channel counts: any C and K, each kind, f16 and bf16, on
/// Hopper and Ampere (C = 3 is an RGB input, K = 1 a one-channel output head; a strided dgrad of
/// odd C or K runs as stride phases on the alignment-1 unit-stride kernel).
#[test]
fn dispatch_runs_every_channel_count() {
    for dtype in [DType::F16, DType::Bf16] {
        for kind in [ConvKind::Fprop, ConvKind::Dgrad, ConvKind::Wgrad] {
            for (c, k) in [(3, 64), (1, 1), (20, 30), (64, 1), (5, 7), (3, 3), (6, 10)] {
                for (stride, pad) in [(1, 1), (2, 3)] {
                    let problem = Conv2dProblem::new(kind, [2, 19, 23, c], [k, 7, 7], (dtype, dtype, dtype))
                        .padding(pad, pad)
                        .stride(stride, stride);
                    for device in [H100, A100] {
                        let decided = conv::dispatch::decide(
                            &REGISTRY,
                            &NO_TABLE,
                            &problem,
                            &operands(&problem),
                            &device,
                        );
                        let d = decided.unwrap_or_else(|e| {
                            panic!(
                                "{kind} {dtype} C={c} K={k} stride {stride} on {}: {e}",
                                device.name
                            )
                        });
                        assert!(d.kernel.is_plain(), "{}", d.kernel.name);
                        let runs = match d.way {
                            ConvWay::Padded(padding) => {
                                assert!(padding.c % 4 == 0 && padding.k % 4 == 0, "{padding:?}");
                                conv::padded::padded_problem(&problem, padding)
                            }
                            _ => problem,
                        };
                        assert!(d.kernel.supports(&runs).is_ok(), "{}", d.describe());
                    }
                }
            }
        }
    }
}

#[test]
fn dispatch_refuses_bad_requests_before_choosing() {
    use conv::dispatch::decide;
    // f64 dgrad: the manifest has no such kernel; the error says what to do.
    let f64_dgrad = Conv2dProblem::new(
        ConvKind::Dgrad,
        [2, 8, 8, 16],
        [32, 3, 3],
        (DType::F64, DType::F64, DType::F64),
    );
    let message = invalid(decide(
        &REGISTRY,
        &NO_TABLE,
        &f64_dgrad,
        &operands(&f64_dgrad),
        &H100,
    ));
    assert!(message.contains("no compiled dgrad kernel"), "{message}");
    eprintln!("{message}");
    assert!(message.contains("f64"), "{message}");
    // int8 channels no int8 kernel's alignment divides (f16 and bf16 run any count): each
    // candidate says why.
    let s8 = (DType::S8, DType::S8, DType::S8);
    let ragged = Conv2dProblem::new(ConvKind::Fprop, [2, 8, 8, 13], [32, 3, 3], s8).padding(1, 1);
    let message = invalid(decide(&REGISTRY, &NO_TABLE, &ragged, &operands(&ragged), &H100));
    assert!(message.contains("multiple"), "{message}");
    assert!(
        message.lines().count() <= 10,
        "an error a person can read: {message}"
    );
    eprintln!("{message}");
}

#[test]
fn the_embedded_h100_table_decides_resnet_layers_and_refers_to_compiled_kernels() {
    let table = select::table_for(cutlass_aot::kernels::TABLES, H100.name, 90).expect("an H100 table");
    assert!(
        table.problems_of("conv2d_fprop") > 20,
        "{} rows",
        table.rows.len()
    );
    // Every row names a kernel of the registry or one of the crate's own: the skinny GEMM
    // kernels and the direct conv, both timed in the tables.
    let skinny = |r: &select::Row| cutlass_aot::dispatch::skinny::skinny_of(r.kernel).is_some();
    let direct = |r: &select::Row| cutlass_aot::conv::small::cols_of(r.kernel).is_some();
    for r in table.rows {
        assert!(
            REGISTRY.by_name(r.kernel.name).is_some() || skinny(r) || direct(r),
            "{}",
            r.kernel.name
        );
    }
    assert!(table.rows.iter().any(skinny));
    assert!(table.rows.iter().any(|r| direct(r) && r.key.op == "conv2d_dgrad"));
    let layer = f16_problem(ConvKind::Fprop, [128, 28, 28, 128], [128, 3, 3]).padding(1, 1);
    let (kernel, _, choice) = chosen(table, &layer, &H100);
    assert_eq!(choice.basis, select::Basis::Measured, "{choice:?}");
    assert_eq!(kernel.api(), Api::Cutlass3x, "{}", kernel.rust_name);
    // A layer the table never measured: the model calibrated on the kernel's rows.
    let unseen = f16_problem(ConvKind::Fprop, [96, 20, 20, 96], [160, 3, 3]).padding(1, 1);
    let (kernel, _, choice) = chosen(table, &unseen, &H100);
    match choice.basis {
        select::Basis::Calibrated(select::calibration::Fit::Kernel { rows }) => {
            assert!(rows >= 20 && choice.estimate_us > 0.0, "{choice:?}")
        }
        other => panic!("{other:?}"),
    }
    let hopper = Conv2dProblem {
        compute_capability: Some(90),
        ..unseen
    };
    assert!(kernel.supports(&hopper).is_ok() || kernel.operation.conv().is_none());
}

/// The runtime's shared-memory rule for first_layer kernels is the glue's: the bytes each
/// kernel's `prepare` reports, over filters, strides and dilations; past the limit `supports`
/// refuses with the bytes it would take.
#[test]
fn first_layer_shared_memory_is_the_glues() {
    let mut checked = 0;
    for info in REGISTRY
        .all()
        .iter()
        .copied()
        .filter(|k| conv::first_layer::is_first_layer(k))
    {
        if !info.has_device_code() {
            continue; // built without nvcc: no host code either
        }
        let g = info.operation.conv().unwrap().gemm;
        let (c, elements) = (g.a.alignment as usize, (g.a.element, g.b.element, g.c.element));
        for ((r, s), stride, dilation) in [
            ((7, 7), [2, 2], [1, 1]),
            ((3, 5), [1, 2], [2, 1]),
            ((11, 11), [4, 4], [1, 1]),
            ((1, 1), [1, 1], [1, 1]),
            ((5, 3), [3, 1], [1, 3]),
        ] {
            let p = Conv2dProblem::new(ConvKind::Fprop, [2, 64, 70, c], [24, r, s], elements)
                .padding(r / 2, s / 2)
                .stride(stride[0], stride[1])
                .dilation(dilation[0], dilation[1]);
            let bytes = conv::first_layer::shared_bytes(info, &p);
            let planned = conv::plan(info, &operands(&p), &H100);
            if bytes > conv::first_layer::MAX_SHARED_BYTES {
                let why = invalid(planned);
                assert!(
                    why.contains(&format!("needs {bytes} bytes of shared memory")),
                    "{why}"
                );
                continue;
            }
            let mut args = planned.unwrap_or_else(|e| panic!("{}: {e}", info.name));
            args.workspace = 0x7e00_0000_0000_u64 as *mut std::ffi::c_void;
            args.workspace_capacity = 1 << 20;
            let prepared = info
                .prepare_conv(&args)
                .unwrap_or_else(|e| panic!("{} {r}x{s}: {e}", info.name));
            assert_eq!(
                prepared.launch.shared_mem_bytes as usize, bytes,
                "{} {r}x{s} stride {stride:?} dilation {dilation:?}",
                info.name
            );
            checked += 1;
        }
        // Tensors past 2^31 bytes (CUTLASS 2.x's 32-bit offsets): ours takes 64-bit offsets.
        let huge = Conv2dProblem::new(ConvKind::Fprop, [2048, 224, 224, c], [64, 7, 7], elements)
            .padding(3, 3)
            .stride(2, 2);
        assert!(
            info.supports(&huge).is_ok(),
            "{}: {:?}",
            info.name,
            info.supports(&huge)
        );
        let big = Conv2dProblem::new(ConvKind::Fprop, [1, 48, 48, c], [8, 41, 41], elements);
        let why = info.supports(&big).unwrap_err().reasons.join("; ");
        assert!(why.contains("bytes of shared memory"), "{}: {why}", info.name);
    }
    let stem = kernel("conv_fprop_f16_first_layer_4_sm80");
    if stem.has_device_code() {
        assert!(checked > 0);
        // The stem's figure as the glue printed it on the H100 (2026-11-24).
        let p = f16_problem(ConvKind::Fprop, [128, 224, 224, 4], [64, 7, 7])
            .padding(3, 3)
            .stride(2, 2);
        assert_eq!(conv::first_layer::shared_bytes(stem, &p), 85_776);
    }
}

/// The interleaved layouts put every element where CUTLASS's `TensorNCxHWx<32>` and
/// `TensorCxRSKx<32>` (their packed strides, written out here) do; pack and unpack are inverse
/// permutations; tensors off the 32-channel groups are refused with the rule.
#[test]
fn interleaved_layouts_store_elements_where_cutlass_does() {
    use conv::{pack, unpack, C32rsk32, ConvTensor, Nc32hw32, TensorLayout};
    use cutlass_aot::model::ConvLayout;
    // NC32HW32 over [n, h, w, c]: c%32 + 32·w + 32·W·h + 32·W·H·(c/32) + H·W·C·n.
    let [n, h, w, c] = [2, 3, 5, 96];
    let mut seen = vec![false; n * h * w * c];
    for index in (0..n * h * w * c).map(|i| [i / (h * w * c), i / (w * c) % h, i / c % w, i % c]) {
        let [ni, hi, wi, ci] = index;
        let cutlass = ci % 32 + 32 * wi + 32 * w * hi + 32 * w * h * (ci / 32) + h * w * c * ni;
        let ours = Nc32hw32::offset([n, h, w, c], index);
        assert_eq!(ours, cutlass, "NC32HW32 {index:?}");
        assert!(
            !std::mem::replace(&mut seen[ours], true),
            "two elements at {ours}"
        );
    }
    // C32RSK32 over [k, r, s, c]: c%32 + 32·k' + 32·K·s + 32·K·S·r + 32·K·S·R·(c/32), with the
    // output channel k' where CUTLASS's `reorder_convK<32>` (its `reorder_column<32>`) moves k.
    let reorder = |k: usize| (k / 32) * 32 + (k % 8 / 2) * 8 + (k % 32 / 8) * 2 + k % 2;
    let [k, r, s, c] = [64, 3, 2, 64];
    let mut seen = vec![false; k * r * s * c];
    for index in (0..k * r * s * c).map(|i| [i / (r * s * c), i / (s * c) % r, i / c % s, i % c]) {
        let [ki, ri, si, ci] = index;
        let cutlass = ci % 32 + 32 * reorder(ki) + 32 * k * si + 32 * k * s * ri + 32 * k * s * r * (ci / 32);
        let ours = C32rsk32::offset([k, r, s, c], index);
        assert_eq!(ours, cutlass, "C32RSK32 {index:?}");
        assert!(
            !std::mem::replace(&mut seen[ours], true),
            "two elements at {ours}"
        );
    }
    let logical: Vec<u32> = (0..(k * r * s * c) as u32).collect();
    let packed = pack::<C32rsk32, _>([k, r, s, c], &logical).unwrap();
    assert_ne!(packed, logical);
    assert_eq!(unpack::<C32rsk32, _>([k, r, s, c], &packed).unwrap(), logical);
    // Channels-last is the identity.
    assert_eq!(pack::<conv::Nhwc, _>([k, r, s, c], &logical).unwrap(), logical);
    // 48 channels are not whole groups; a filter's K of 40 neither; a wrong length is named.
    let bad = invalid(pack::<Nc32hw32, _>([1, 2, 2, 48], &[0u8; 192]));
    assert!(bad.contains("groups of 32"), "{bad}");
    let bad = invalid(conv::permute(
        ConvLayout::Interleaved32,
        ConvTensor::Filter,
        [40, 1, 1, 32],
        &[0u8; 1280],
        true,
    ));
    assert!(bad.contains("groups of 32"), "{bad}");
    let bad = invalid(pack::<Nc32hw32, _>([1, 2, 2, 32], &[0u8; 100]));
    assert!(
        bad.contains("100 values") && bad.contains("128 elements"),
        "{bad}"
    );
}

/// An interleaved int8 kernel describes its tensors, takes interleaved problems of whole channel
/// groups and refuses the rest saying why; dispatch (channels-last tensors) never picks one.
#[test]
fn interleaved_int8_kernels_take_interleaved_problems_only() {
    use cutlass_aot::model::{ConvLayout, Layout};
    let s8 = (DType::S8, DType::S8, DType::S8);
    for name in [
        "conv_fprop_s8_nc32hw32_optimized_sm80",
        "conv_fprop_s8_nc32hw32_analytic_sm80",
    ] {
        let info = kernel(name);
        let conv = info.operation.conv().unwrap();
        assert_eq!(conv.layout, ConvLayout::Interleaved32);
        let g = &conv.gemm;
        assert_eq!(
            [g.a.layout, g.b.layout, g.c.layout],
            [
                Layout::ColumnInterleaved32,
                Layout::RowInterleaved32,
                Layout::ColumnInterleaved32
            ]
        );
        assert_eq!([g.a.alignment, g.b.alignment, g.c.alignment], [16, 16, 8]);
        assert!(info.name.contains("_nc32hw32_"), "{}", info.name);
        let mut p = Conv2dProblem::new(ConvKind::Fprop, [2, 14, 14, 64], [96, 3, 3], s8)
            .padding(1, 1)
            .layout(ConvLayout::Interleaved32);
        p.compute_capability = Some(90);
        assert!(info.supports(&p).is_ok(), "{:?}", info.supports(&p));
        let reasons = |p: &Conv2dProblem| info.supports(p).unwrap_err().reasons.join("; ");
        let nhwc = reasons(&p.layout(ConvLayout::ChannelsLast));
        assert!(
            nhwc.contains("NHWC, KRSC, NPQK") && nhwc.contains("NC32HW32"),
            "{nhwc}"
        );
        let mut ragged_c = p;
        ragged_c.c = 48;
        assert!(reasons(&ragged_c).contains("multiples of 32"));
        let mut ragged_k = p;
        ragged_k.k = 40;
        assert!(reasons(&ragged_k).contains("multiples of 32"));
        // The launch path builds the problem in the kernel's layout: Params for a good one, the
        // 32-channel rule for a ragged one.
        assert!(conv::workspace_bytes(info, &operands(&p), &H100).is_ok());
        let ragged = invalid(conv::workspace_bytes(info, &operands(&ragged_c), &H100));
        assert!(ragged.contains("multiples of 32"), "{ragged}");
    }
    let nhwc = Conv2dProblem::new(ConvKind::Fprop, [2, 14, 14, 64], [96, 3, 3], s8).padding(1, 1);
    for device in [A100, H100] {
        let (kernel, _, _) = chosen(&NO_TABLE, &nhwc, &device);
        assert_eq!(
            kernel.operation.conv().unwrap().layout,
            ConvLayout::ChannelsLast,
            "{}",
            kernel.rust_name
        );
    }
}

/// Channels no 16-byte access divides: a large problem runs on a Hopper kernel with them padded
/// (the copies cost less than the narrow kernels lose); its workspace holds the padded tensors.
#[test]
fn dispatch_pads_ragged_channels_where_the_copies_pay() {
    let table = select::table_for(cutlass_aot::kernels::TABLES, H100.name, 90).expect("an H100 table");
    let large = f16_problem(ConvKind::Fprop, [32, 28, 28, 255], [255, 3, 3]).padding(1, 1);
    let ops = operands(&large);
    let d = conv::dispatch::decide(&REGISTRY, table, &large, &ops, &H100).expect("a kernel");
    let ConvWay::Padded(padding) = d.way else {
        panic!("{}", d.describe())
    };
    assert_eq!((padding.c, padding.k), (256, 256));
    assert_eq!(d.kernel.api(), Api::Cutlass3x, "{}", d.describe());
    assert!(
        d.describe().contains("channels padded to C = 256, K = 256"),
        "{}",
        d.describe()
    );
    let bytes = conv::dispatch::workspace_bytes(&d, &large, &ops, &H100).unwrap();
    // x and w staged (y's 255 channels are K: staged too).
    let staged = 2 * (32 * 28 * 28 * 256 + 256 * 9 * 256 + 32 * 28 * 28 * 256);
    assert!(bytes >= staged, "{bytes} bytes for {staged} of staged tensors");
}

/// How each kernel's split-K slices divide a conv's depth (CUTLASS's `implicit_gemm_k_iterations`):
/// a 2.x fprop slice runs every tap over its share of the channels, so 16 slices of 64 channels
/// at 32 a K tile cost no less than 2; a 3.x kernel splits the depth evenly; a fixed-channel
/// kernel's slices each run the whole depth and are not offered.
#[test]
fn split_k_slices_divide_the_depth_as_each_kernel_iterates() {
    let problem = f16_problem(ConvKind::Fprop, [8, 56, 56, 64], [64, 7, 7]).padding(3, 3);
    let analytic = kernel("conv_fprop_f16_analytic_sm80");
    let work = conv::ways::work_of(analytic, &problem).unwrap();
    assert_eq!(work.launches[0][0].slicing, select::Slicing::Channels(64));
    assert!(model_us(analytic, &problem, 16) >= model_us(analytic, &problem, 2));
    let hopper = kernel("conv_fprop_f16_128x32x32_streamk_sm90");
    let work = conv::ways::work_of(hopper, &problem).unwrap();
    let piece = work.launches[0][0];
    assert_eq!(piece.slicing, select::Slicing::Depth);
    // 49 taps x 64 channels over 2 or 16 slices, in whole tiles of 32.
    assert_eq!((piece.slice_depth(2, 32), piece.slice_depth(16, 32)), (1568, 224));
    let fixed = kernel("conv_fprop_f16_fixed_channels_8_sm80");
    assert_eq!(conv::ways::slice_candidates(fixed), &[1]);
}

/// A strided dgrad on a 2.x unit-stride kernel (staged stride phases) pays for its gather,
/// scatter and fill launches beside the kernel's; a strided kernel has none.
#[test]
fn staged_stride_phases_pay_for_their_copy_launches() {
    let problem = f16_problem(ConvKind::Dgrad, [8, 16, 16, 48], [8, 1, 1]).stride(2, 2);
    let unity = kernel("conv_dgrad_f16_unity_sm80");
    let work = conv::ways::work_of(unity, &problem).unwrap();
    // Gather, scatter, and the fill of the three phases a 1x1 filter never reaches.
    assert_eq!(work.extra_seconds, 3.0 * select::cost::STAGING_LAUNCH_SECONDS);
    let strided = kernel("conv_dgrad_f16_strided_sm80");
    assert_eq!(conv::ways::work_of(strided, &problem).unwrap().extra_seconds, 0.0);
}

/// Dispatch weighs the direct kernels only over a few reduction channels per pixel (their model's
/// range): a 567-channel 1×1 dgrad is left to the implicit-GEMM and GEMM kernels.
#[test]
fn direct_kernels_are_weighed_over_few_reduction_channels_only() {
    let deep = f16_problem(ConvKind::Dgrad, [12, 74, 74, 24], [567, 1, 1]);
    assert!(conv::small::candidates(&deep).is_empty());
    let few = f16_problem(ConvKind::Dgrad, [12, 74, 74, 24], [16, 1, 1]);
    assert!(!conv::small::candidates(&few).is_empty());
}
