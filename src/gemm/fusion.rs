//! Fused epilogues: the extra operands a kernel's fusion takes (bias, scale vectors, aux output,
//! leaky_relu's slope), typed for the generated functions and untyped for the checks, and the
//! rules that check them against the kernel.
//!
//! What a kernel computes is its [`Fusion`] (in `KernelInfo::epilogue.fusion`); the operands here only
//! feed it. Every operand is checked before a launch: a missing or extra one, a wrong length or a
//! misaligned address is an error that says what the kernel expects.

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use super::Operand;
use crate::kernel::{KernelInfo, Want};
use crate::matrix::{MatrixMut, MatrixRef};
use crate::model::{AuxInput, AuxOutput, Broadcast, Fusion, Reduction};
use crate::GemmKernel;

/// A vector operand of a fused epilogue (bias, alpha or beta vector), untyped: its length in
/// elements and its device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorOperand {
    pub len: usize,
    pub address: u64,
}

/// The operands of a fused epilogue, untyped (the registry-driven path; the typed path builds one
/// too). `Default` is "none": what a kernel without fusion takes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FusionOperands {
    /// Bias of C's type: m elements for a per-row bias, n for a per-column one.
    pub bias: Option<VectorOperand>,
    /// Per-row (m) or per-column (n) alpha of the epilogue's compute type; without it the scalar
    /// alpha is used.
    pub alpha_vector: Option<VectorOperand>,
    /// Per-row or per-column beta, as `alpha_vector`.
    pub beta_vector: Option<VectorOperand>,
    /// The aux output (the pre-activation value), or a backward kernel's aux input (the forward
    /// pass's pre-activation value): m×n in C's type and layout, batched as D.
    pub aux: Option<Operand>,
    /// Receives the row sums of D: m values of the compute type.
    pub reduction: Option<VectorOperand>,
    /// leaky_relu's slope (ignored by other activations).
    pub activation_arg: f64,
}

/// The fused operands of a launch of kernel `K`, typed: a bias and the aux output have C's type
/// (and the aux output C's layout), scale vectors the type of alpha and beta. The generated
/// `run` of a fused kernel fills this from its own `Fused` struct, whose fields are exactly the
/// kernel's operands.
pub struct FusedArgs<'a, K: GemmKernel> {
    pub bias: Option<&'a dyn DevicePtr<K::C>>,
    pub alpha_vector: Option<&'a dyn DevicePtr<K::Scalar>>,
    pub beta_vector: Option<&'a dyn DevicePtr<K::Scalar>>,
    pub aux: Option<MatrixMut<'a, K::C, K::LayoutC>>,
    /// A backward kernel's aux input.
    pub aux_input: Option<MatrixRef<'a, K::C, K::LayoutC>>,
    pub reduction: Option<&'a mut dyn DevicePtrMut<K::Scalar>>,
    pub activation_arg: f64,
}

impl<K: GemmKernel> Default for FusedArgs<'_, K> {
    fn default() -> Self {
        FusedArgs {
            bias: None,
            alpha_vector: None,
            beta_vector: None,
            aux: None,
            aux_input: None,
            reduction: None,
            activation_arg: 0.0,
        }
    }
}

/// Device addresses of typed fused operands, taken for `stream` (so that cudarc orders the launch
/// after earlier work on the buffers); the guards record completion events when dropped, after the
/// launch.
pub(crate) struct HeldFusion<'s> {
    pub(crate) operands: FusionOperands,
    _guards: Vec<SyncOnDrop<'s>>,
}

impl<'s> HeldFusion<'s> {
    pub(crate) fn hold<'b: 's, K: GemmKernel>(stream: &'s CudaStream, args: FusedArgs<'b, K>) -> Self {
        let mut guards = Vec::new();
        let bias = vector_of(stream, args.bias, &mut guards);
        let alpha_vector = vector_of(stream, args.alpha_vector, &mut guards);
        let beta_vector = vector_of(stream, args.beta_vector, &mut guards);
        let aux = args.aux.map(|aux| {
            let (len, shape, buffer) = (aux.buffer.len(), aux.shape, aux.buffer);
            let (address, guard) = buffer.device_ptr_mut(stream);
            guards.push(guard);
            Operand { shape, len, address }
        });
        let aux_input = args.aux_input.map(|aux| {
            let (len, shape, buffer) = (aux.buffer.len(), aux.shape, aux.buffer);
            let (address, guard) = buffer.device_ptr(stream);
            guards.push(guard);
            Operand { shape, len, address }
        });
        let reduction = args.reduction.map(|buffer| {
            let len = buffer.len();
            let (address, guard) = buffer.device_ptr_mut(stream);
            guards.push(guard);
            VectorOperand { len, address }
        });
        HeldFusion {
            operands: FusionOperands {
                bias,
                alpha_vector,
                beta_vector,
                aux: aux.or(aux_input),
                reduction,
                activation_arg: args.activation_arg,
            },
            _guards: guards,
        }
    }
}

/// The address of an optional vector, held for `stream`.
fn vector_of<'s, T>(
    stream: &'s CudaStream,
    buffer: Option<&'s dyn DevicePtr<T>>,
    guards: &mut Vec<SyncOnDrop<'s>>,
) -> Option<VectorOperand> {
    buffer.map(|buffer| {
        let (address, guard) = buffer.device_ptr(stream);
        guards.push(guard);
        VectorOperand {
            len: buffer.len(),
            address,
        }
    })
}

/// Checks the fused operands `given` against `info`'s fusion for an m×n D, calling `want` with
/// each rule (`want(ok, reason)`), as [`KernelInfo::supports`] does. The aux output's own extent,
/// leading dimension and buffer are checked with C and D by the launch path.
pub(crate) fn operand_rules(
    info: &KernelInfo,
    given: &FusionOperands,
    (m, n): (usize, usize),
    want: &mut impl Want,
) {
    let fusion = &info.epilogue.fusion;
    let c_bytes = info.gemm().c.element.bits() as usize / 8;
    let scalar_bytes = info.epilogue.compute.bits() as usize / 8;
    // Bias vectors are read in vectors of C's alignment, scale vectors in 128-bit vectors.
    let bias_align = info.gemm().c.alignment as usize;
    let scale_align = (16 / scalar_bytes.max(1)).max(1);
    let vectors = [
        (
            "bias",
            "a bias",
            fusion.bias,
            given.bias,
            bias_align,
            c_bytes,
            info.gemm().c.element.to_string(),
        ),
        (
            "alpha vector",
            "an alpha vector",
            fusion.scale,
            given.alpha_vector,
            scale_align,
            scalar_bytes,
            info.epilogue.compute.to_string(),
        ),
        (
            "beta vector",
            "a beta vector",
            fusion.scale,
            given.beta_vector,
            scale_align,
            scalar_bytes,
            info.epilogue.compute.to_string(),
        ),
    ];
    for (what, a_what, broadcast, vector, align, bytes, element) in vectors {
        let optional = what != "bias";
        match (broadcast.length(m, n), vector) {
            (None, Some(_)) => want(false, &|| {
                format!(
                    "{a_what} was given but this kernel takes none ({})",
                    fusion.label()
                )
            }),
            (Some(len), None) if !optional => want(false, &|| {
                format!(
                    "missing {what}: this kernel adds a {} of {} = {len} elements ({element}); pass one",
                    describe(broadcast),
                    extent_name(broadcast)
                )
            }),
            (Some(len), Some(v)) => {
                want(v.len >= len, &|| {
                    format!(
                        "the {what} has {} elements but this kernel's {} needs {} = {len}",
                        v.len,
                        describe(broadcast),
                        extent_name(broadcast)
                    )
                });
                want(len % align == 0, &|| {
                    format!(
                        "the {what} is read in vectors of {align} elements, so {} = {len} must be a multiple of {align}",
                        extent_name(broadcast)
                    )
                });
                let need = (align * bytes) as u64;
                want(v.address % need == 0, &|| {
                    format!(
                        "the {what} starts at address {:#x}, which is not {need}-byte aligned as the kernel requires",
                        v.address
                    )
                });
            }
            _ => {}
        }
    }
    match (fusion.aux_output, fusion.aux_input, given.aux.is_some()) {
        (AuxOutput::None, AuxInput::None, true) => want(false, &|| {
            format!(
                "an aux matrix was given but this kernel reads or writes none ({})",
                fusion.label()
            )
        }),
        (AuxOutput::PreActivation, _, false) => want(false, &|| {
            format!(
                "missing aux output: this kernel also writes its pre-activation value, an {m}×{n} matrix of \
                 {} ({}-major); pass one",
                info.gemm().c.element,
                info.gemm().c.layout
            )
        }),
        (_, AuxInput::PreActivation, false) => want(false, &|| {
            format!(
                "missing aux input: this backward kernel reads the forward pass's pre-activation value, an \
                 {m}×{n} matrix of {} ({}-major); pass it",
                info.gemm().c.element,
                info.gemm().c.layout
            )
        }),
        _ => {}
    }
    let row_sums = fusion.reduction == Reduction::RowSum;
    match given.reduction {
        None => want(!row_sums, &|| {
            format!(
                "missing reduction output: this kernel writes the row sums of D, m = {m} values of {}; pass a \
                 buffer for them",
                info.epilogue.compute
            )
        }),
        Some(_) if !row_sums => want(false, &|| {
            format!(
                "a reduction output was given but this kernel writes none ({})",
                fusion.label()
            )
        }),
        Some(v) => {
            want(v.len >= m, &|| {
                format!(
                    "the reduction output has {} elements but this kernel writes m = {m} row sums",
                    v.len
                )
            });
            want(v.address % 16 == 0, &|| {
                format!(
                    "the reduction output starts at address {:#x}, which is not 16-byte aligned as the kernel requires",
                    v.address
                )
            });
        }
    }
}

fn describe(b: Broadcast) -> &'static str {
    match b {
        Broadcast::PerRow => "per-row vector",
        Broadcast::PerCol => "per-column vector",
        Broadcast::None => "no vector",
    }
}

fn extent_name(b: Broadcast) -> &'static str {
    match b {
        Broadcast::PerRow => "m",
        _ => "n",
    }
}

/// How the kernel's fusion differs from the one a problem asks for, one reason per difference.
pub(crate) fn fusion_rules(kernel: &Fusion, wanted: &Fusion, want: &mut impl Want) {
    want(kernel.activation == wanted.activation, &|| {
        format!(
            "the kernel applies {} but the problem asks for {}",
            kernel.activation, wanted.activation
        )
    });
    for (what, have, need) in [
        ("bias", kernel.bias, wanted.bias),
        ("scale", kernel.scale, wanted.scale),
    ] {
        want(have == need, &|| {
            format!("the kernel's {what} is {have} but the problem asks for {need}")
        });
    }
    want(kernel.aux_output == wanted.aux_output, &|| {
        format!(
            "the kernel's aux output is {} but the problem asks for {}",
            kernel.aux_output, wanted.aux_output
        )
    });
    want(kernel.residual == wanted.residual, &|| {
        format!(
            "the kernel's residual is {} but the problem asks for {}",
            kernel.residual, wanted.residual
        )
    });
    want(kernel.aux_input == wanted.aux_input, &|| {
        format!(
            "the kernel's aux input is {} but the problem asks for {}",
            kernel.aux_input, wanted.aux_input
        )
    });
    want(kernel.reduction == wanted.reduction, &|| {
        format!(
            "the kernel's reduction is {} but the problem asks for {}",
            kernel.reduction, wanted.reduction
        )
    });
}
