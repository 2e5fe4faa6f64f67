//! The skinny kernels as the kernel model describes them: each form's design (the values the cost
//! model reads), one [`KernelInfo`] per form and element types, and the list dispatch offers.

use crate::kernel::{built_in_gemm, KernelInfo};
use crate::model::custom::{CustomDesign, DesignValue, Expr};
use crate::model::{Api, DType, Layout, Operation, Shape3};
use crate::support::skinny::{
    dot_rows_per_block, tiny_outputs_per_block, AXPY_ROWS_PER_BLOCK, GROUP_COLS, MAX_TENSOR_COLS,
    MIN_TENSOR_COLS, TENSOR_ROWS_PER_BLOCK, TINY_MAX_BLOCKS,
};
use crate::support::skinny::{Elements, Form, MAX_COLS};

const NO_EXPR: Expr = Expr { text: "", code: &[] };

/// The cost model's view of a streaming kernel (`select::cost::streaming_seconds`), fitted to
/// timings of random problems (`bench/skinny/fit.py`; the dot and axpy forms' also on the problems
/// of the tables' skinny rows) timed as the benchmarks time them (an event between launches) on an
/// H100, none of the held-out ones: per-element time at full occupancy (a base and a part per output
/// column), each block's fixed time, each staged chunk's and each output's.
macro_rules! design {
    ($rows:expr, $acc_bytes:literal, $blocks_per_sm:literal, $along:literal, $fit:expr $(, $extra:expr)*) => {
        CustomDesign {
            code: Api::Cutlass2x,
            tile: Shape3::new($rows as u32, MAX_COLS as u32, 1),
            values: &[
                ("rows_per_block", DesignValue::Int($rows as i64)),
                ("blocks_per_sm", DesignValue::Int($blocks_per_sm)),
                ("fs_per_element", DesignValue::Int($fit[0])),
                ("fs_per_element_column", DesignValue::Int($fit[1])),
                ("ns_per_block", DesignValue::Int($fit[2])),
                ("ns_per_chunk", DesignValue::Int($fit[3])),
                ("fs_per_output", DesignValue::Int($fit[4])),
                ("fs_per_output_across", DesignValue::Int($fit[5])),
                ("output_along", DesignValue::Word($along)),
                ("chunk_entries", DesignValue::Int(32768 / $acc_bytes)),
                ("partial_bytes", DesignValue::Int($acc_bytes)),
                ("max_columns", DesignValue::Int(MAX_COLS as i64)),
                ("group_columns", DesignValue::Int(GROUP_COLS as i64)),
                $($extra,)*
            ],
            grid: [NO_EXPR; 3],
            block: [NO_EXPR; 3],
            shared_memory: NO_EXPR,
            requires: &[],
        }
    };
}

/// Fitted constants: fs per element, fs per element and column, ns per block, ns per chunk, fs per
/// output where D lies along the form's threads (the dot form's lanes hold a row's columns, the
/// axpy form's threads rows) and across them, and ps per entry of Y a block stages (RMS log error
/// 0.17 dot, 0.22 axpy, 0.13 tensor).
const DOT_FIT: [i64; 6] = [192, 114, 2590, 850, 1, 1];
const DOT_STAGED: (&str, DesignValue) = ("ps_per_staged_entry", DesignValue::Int(667));
const AXPY_FIT: [i64; 6] = [487, 30, 3551, 1, 5991, 13219];
const AXPY_STAGED: (&str, DesignValue) = ("ps_per_staged_entry", DesignValue::Int(1450));
/// The axpy form's threads split the depth where a block has fewer rows (2 a thread).
const AXPY_SPLIT: (&str, DesignValue) = ("split_rows_per_thread", DesignValue::Int(2));
static DOT: CustomDesign = design!(dot_rows_per_block(4), 4, 2, "columns", DOT_FIT, DOT_STAGED);
static DOT_WIDE: CustomDesign = design!(dot_rows_per_block(8), 8, 2, "columns", DOT_FIT, DOT_STAGED);
static AXPY: CustomDesign = design!(
    AXPY_ROWS_PER_BLOCK,
    4,
    4,
    "rows",
    AXPY_FIT,
    AXPY_SPLIT,
    AXPY_STAGED
);
static AXPY_WIDE: CustomDesign = design!(
    AXPY_ROWS_PER_BLOCK,
    8,
    4,
    "rows",
    AXPY_FIT,
    AXPY_SPLIT,
    AXPY_STAGED
);
/// The vector dot form (`dot_vector`: no staged chunks of Y, which comes through L1) per element
/// size: fs per element (X's bytes set it: the form streams X) and per element and column, ns per
/// block; fitted to an H200's timings of one-column products from 2048² to 8192×28672
/// (`bench/floor/gemv.cu`); f64's cost per column raised to its many-column rows (FMA-bound). Its blocks share
/// the bandwidth (`min_concurrency` 1): a partial wave runs no slower per block. Calibrated
/// apart: its rows correct the model locally.
macro_rules! dot_vector_design {
    ($acc_bytes:literal, $fs:literal, $fs_col:literal) => {
        design!(
            dot_rows_per_block($acc_bytes),
            $acc_bytes,
            2,
            "columns",
            [$fs, $fs_col, 2600, 0, 1, 1],
            ("min_concurrency", DesignValue::Int(1)),
            ("family", DesignValue::Word("dot_vector"))
        )
    };
}
static DOT_VECTOR_2: CustomDesign = dot_vector_design!(4, 420, 60);
static DOT_VECTOR_4: CustomDesign = dot_vector_design!(4, 970, 60);
static DOT_VECTOR_8: CustomDesign = dot_vector_design!(8, 1400, 300);
static TENSOR: CustomDesign = CustomDesign {
    tile: Shape3::new(TENSOR_ROWS_PER_BLOCK as u32, MAX_TENSOR_COLS as u32, 64),
    values: &[
        ("rows_per_block", DesignValue::Int(TENSOR_ROWS_PER_BLOCK as i64)),
        ("blocks_per_sm", DesignValue::Int(3)),
        ("fs_per_element", DesignValue::Int(249)),
        ("fs_per_element_column", DesignValue::Int(17)),
        ("ns_per_block", DesignValue::Int(2928)),
        ("ns_per_chunk", DesignValue::Int(1866)),
        ("fs_per_output", DesignValue::Int(3822)),
        // Few blocks run no faster than 73 would (fitted; RMS 0.20 without it).
        ("min_concurrency", DesignValue::Int(73)),
        // Staging X with 4- and 8-byte loads scales the per-element and per-chunk costs (fitted
        // by bench/skinny/fit.py on the 16-bit fit problems).
        ("staging_permille_width2", DesignValue::Int(700)),
        ("staging_permille_width4", DesignValue::Int(660)),
        ("chunk_depth", DesignValue::Int(64)),
        ("partial_bytes", DesignValue::Int(4)),
        ("min_columns", DesignValue::Int(MIN_TENSOR_COLS as i64)),
        ("max_columns", DesignValue::Int(MAX_TENSOR_COLS as i64)),
    ],
    ..AXPY
};

/// The tiny forms' view for the cost model (`select::cost::tiny_seconds`): a fixed time, a time
/// per step along depth of each pass over the outputs (a thread's step is one element, a warp's
/// 32), the sectors of X and Y its warps' steps touch, a time per output and a bandwidth; fitted
/// (`bench/skinny/fit.py`) on harness timings of the fit problems and the tables' skinny problems,
/// RMS log error 0.150 (thread, 975 timings) and 0.248 (warp, 1,722). Calibrated apart (`family`):
/// on their own rows where the device's table has them, else by this model alone.
macro_rules! tiny_design {
    ($per_block:expr, $lanes:literal, $fit:expr, $family:literal) => {
        CustomDesign {
            tile: Shape3::new(1, 1, 1),
            values: &[
                ("tiny_outputs_per_block", DesignValue::Int($per_block as i64)),
                ("tiny_lanes", DesignValue::Int($lanes)),
                ("tiny_max_blocks", DesignValue::Int(TINY_MAX_BLOCKS as i64)),
                ("ns_fixed", DesignValue::Int($fit[0])),
                ("ps_per_step", DesignValue::Int($fit[1])),
                ("f64_step_permille", DesignValue::Int($fit[2])),
                ("fs_per_sector_x", DesignValue::Int($fit[3])),
                ("fs_per_sector_y", DesignValue::Int($fit[4])),
                ("fs_per_output", DesignValue::Int($fit[5])),
                ("mb_per_second", DesignValue::Int($fit[6])),
                ("family", DesignValue::Word($family)),
            ],
            ..AXPY
        }
    };
}
static TINY_THREAD: CustomDesign = tiny_design!(
    tiny_outputs_per_block(Form::TinyThread),
    1,
    [4281, 50311, 3006, 591, 961, 9311, 1_816_000],
    "tiny_thread"
);
static TINY_WARP: CustomDesign = tiny_design!(
    tiny_outputs_per_block(Form::TinyWarp),
    32,
    [4407, 49193, 3616, 4984, 1625, 207566, 1_517_000],
    "tiny_warp"
);

macro_rules! kernel {
    ($static:ident, $name:literal, $design:ident, $a:ident, $c:ident, $acc:ident, $layout_a:ident) => {
        #[doc = concat!("The skinny kernel `cutlass_aot_skinny_", $name, "` (selection tables' rows name it).")]
        pub static $static: KernelInfo = KernelInfo::built_in(
            concat!("cutlass_aot_skinny_", $name),
            concat!("skinny_", $name),
            "built in (cutlass_aot/skinny.cuh)",
            Operation::Gemm(built_in_gemm(
                DType::$a,
                (Layout::$layout_a, Layout::Row),
                DType::$c,
                DType::$acc,
            )),
            &$design,
            DType::$acc,
            c"cutlass_aot_skinny",
        );
    };
}

kernel!(DOT_F16, "dot_f16", DOT, F16, F16, F32, Row);
kernel!(DOT_BF16, "dot_bf16", DOT, Bf16, Bf16, F32, Row);
kernel!(DOT_F32, "dot_f32", DOT, F32, F32, F32, Row);
kernel!(DOT_F64, "dot_f64", DOT_WIDE, F64, F64, F64, Row);
kernel!(DOT_F16_F32, "dot_f16_f32", DOT, F16, F32, F32, Row);
kernel!(DOT_BF16_F32, "dot_bf16_f32", DOT, Bf16, F32, F32, Row);
kernel!(DOTV_F16, "dotv_f16", DOT_VECTOR_2, F16, F16, F32, Row);
kernel!(DOTV_BF16, "dotv_bf16", DOT_VECTOR_2, Bf16, Bf16, F32, Row);
kernel!(DOTV_F32, "dotv_f32", DOT_VECTOR_4, F32, F32, F32, Row);
kernel!(DOTV_F64, "dotv_f64", DOT_VECTOR_8, F64, F64, F64, Row);
kernel!(DOTV_F16_F32, "dotv_f16_f32", DOT_VECTOR_2, F16, F32, F32, Row);
kernel!(DOTV_BF16_F32, "dotv_bf16_f32", DOT_VECTOR_2, Bf16, F32, F32, Row);
kernel!(AXPY_F16, "axpy_f16", AXPY, F16, F16, F32, Column);
kernel!(AXPY_BF16, "axpy_bf16", AXPY, Bf16, Bf16, F32, Column);
kernel!(AXPY_F32, "axpy_f32", AXPY, F32, F32, F32, Column);
kernel!(AXPY_F64, "axpy_f64", AXPY_WIDE, F64, F64, F64, Column);
kernel!(AXPY_F16_F32, "axpy_f16_f32", AXPY, F16, F32, F32, Column);
kernel!(AXPY_BF16_F32, "axpy_bf16_f32", AXPY, Bf16, F32, F32, Column);
kernel!(TENSOR_F16, "tensor_f16", TENSOR, F16, F16, F32, Row);
kernel!(TENSOR_BF16, "tensor_bf16", TENSOR, Bf16, Bf16, F32, Row);
kernel!(TENSOR_F16_F32, "tensor_f16_f32", TENSOR, F16, F32, F32, Row);
kernel!(TENSOR_BF16_F32, "tensor_bf16_f32", TENSOR, Bf16, F32, F32, Row);
kernel!(
    TINY_THREAD_F16,
    "tiny_thread_f16",
    TINY_THREAD,
    F16,
    F16,
    F32,
    Row
);
kernel!(
    TINY_THREAD_BF16,
    "tiny_thread_bf16",
    TINY_THREAD,
    Bf16,
    Bf16,
    F32,
    Row
);
kernel!(
    TINY_THREAD_F32,
    "tiny_thread_f32",
    TINY_THREAD,
    F32,
    F32,
    F32,
    Row
);
kernel!(
    TINY_THREAD_F64,
    "tiny_thread_f64",
    TINY_THREAD,
    F64,
    F64,
    F64,
    Row
);
kernel!(
    TINY_THREAD_F16_F32,
    "tiny_thread_f16_f32",
    TINY_THREAD,
    F16,
    F32,
    F32,
    Row
);
kernel!(
    TINY_THREAD_BF16_F32,
    "tiny_thread_bf16_f32",
    TINY_THREAD,
    Bf16,
    F32,
    F32,
    Row
);
kernel!(TINY_WARP_F16, "tiny_warp_f16", TINY_WARP, F16, F16, F32, Row);
kernel!(TINY_WARP_BF16, "tiny_warp_bf16", TINY_WARP, Bf16, Bf16, F32, Row);
kernel!(TINY_WARP_F32, "tiny_warp_f32", TINY_WARP, F32, F32, F32, Row);
kernel!(TINY_WARP_F64, "tiny_warp_f64", TINY_WARP, F64, F64, F64, Row);
kernel!(
    TINY_WARP_F16_F32,
    "tiny_warp_f16_f32",
    TINY_WARP,
    F16,
    F32,
    F32,
    Row
);
kernel!(
    TINY_WARP_BF16_F32,
    "tiny_warp_bf16_f32",
    TINY_WARP,
    Bf16,
    F32,
    F32,
    Row
);

/// Every skinny kernel with its element types and form.
pub static KERNELS: [(&KernelInfo, Elements, Form); 34] = [
    (&DOT_F16, Elements::F16, Form::Dot),
    (&DOT_BF16, Elements::Bf16, Form::Dot),
    (&DOT_F32, Elements::F32, Form::Dot),
    (&DOT_F64, Elements::F64, Form::Dot),
    (&DOT_F16_F32, Elements::F16F32, Form::Dot),
    (&DOT_BF16_F32, Elements::Bf16F32, Form::Dot),
    (&DOTV_F16, Elements::F16, Form::DotVector),
    (&DOTV_BF16, Elements::Bf16, Form::DotVector),
    (&DOTV_F32, Elements::F32, Form::DotVector),
    (&DOTV_F64, Elements::F64, Form::DotVector),
    (&DOTV_F16_F32, Elements::F16F32, Form::DotVector),
    (&DOTV_BF16_F32, Elements::Bf16F32, Form::DotVector),
    (&AXPY_F16, Elements::F16, Form::Axpy),
    (&AXPY_BF16, Elements::Bf16, Form::Axpy),
    (&AXPY_F32, Elements::F32, Form::Axpy),
    (&AXPY_F64, Elements::F64, Form::Axpy),
    (&AXPY_F16_F32, Elements::F16F32, Form::Axpy),
    (&AXPY_BF16_F32, Elements::Bf16F32, Form::Axpy),
    (&TENSOR_F16, Elements::F16, Form::Tensor),
    (&TENSOR_BF16, Elements::Bf16, Form::Tensor),
    (&TENSOR_F16_F32, Elements::F16F32, Form::Tensor),
    (&TENSOR_BF16_F32, Elements::Bf16F32, Form::Tensor),
    (&TINY_THREAD_F16, Elements::F16, Form::TinyThread),
    (&TINY_THREAD_BF16, Elements::Bf16, Form::TinyThread),
    (&TINY_THREAD_F32, Elements::F32, Form::TinyThread),
    (&TINY_THREAD_F64, Elements::F64, Form::TinyThread),
    (&TINY_THREAD_F16_F32, Elements::F16F32, Form::TinyThread),
    (&TINY_THREAD_BF16_F32, Elements::Bf16F32, Form::TinyThread),
    (&TINY_WARP_F16, Elements::F16, Form::TinyWarp),
    (&TINY_WARP_BF16, Elements::Bf16, Form::TinyWarp),
    (&TINY_WARP_F32, Elements::F32, Form::TinyWarp),
    (&TINY_WARP_F64, Elements::F64, Form::TinyWarp),
    (&TINY_WARP_F16_F32, Elements::F16F32, Form::TinyWarp),
    (&TINY_WARP_BF16_F32, Elements::Bf16F32, Form::TinyWarp),
];

/// The skinny kernel's element types and form, if `kernel` is one.
pub fn skinny_of(kernel: &KernelInfo) -> Option<(Elements, Form)> {
    KERNELS
        .iter()
        .find(|(k, ..)| std::ptr::eq(*k, kernel))
        .map(|(_, elements, form)| (*elements, *form))
}

/// The skinny kernel's element types, if `kernel` is one.
pub fn elements_of(kernel: &KernelInfo) -> Option<Elements> {
    skinny_of(kernel).map(|(elements, _)| elements)
}

pub(super) fn kernel_for(a: DType, b: DType, c: DType, form: Form) -> Option<&'static KernelInfo> {
    if a != b {
        return None;
    }
    KERNELS
        .iter()
        .find(|(k, _, f)| *f == form && k.gemm().a.element == a && k.gemm().c.element == c)
        .map(|(k, ..)| *k)
}
