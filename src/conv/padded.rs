//! Convolutions whose channel counts no 16-byte access divides, run on kernels of 16-byte accesses
//! with the channels padded: C and K rounded up to whole 16 bytes (or 8, for the kernels that read
//! 4 channels of 16-bit elements), each operand whose extents change copied into the workspace with
//! zeros written in the padding, and an output whose extents change computed there and copied back. Zero channels add nothing to any sum, so the result is exact.
//! Dispatch weighs this way against the narrow-alignment kernels ([`super::ways`]): the kernel's
//! time on the padded problem plus the copies at their measured bandwidth.

use cudarc::driver::CudaStream;

use super::{Conv2dProblem, ConvOperands, TensorOperand};
use crate::device::DeviceProps;
use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::model::DType;
use crate::select::cost::{PADDING_BYTES_PER_SECOND, PADDING_LAUNCH_SECONDS};
use crate::support::{Copy4d, View4};
use crate::workspace::{Scratch, Workspace};

/// The channel counts a padded way runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Padding {
    /// Input channels (the activation's C).
    pub c: usize,
    /// Output channels (the filter's K).
    pub k: usize,
}

/// Where the support rules see a staged tensor (the workspace is 256-byte aligned).
const STAGED_ADDRESS: u64 = 1 << 40;

/// The paddings a padded way may run `problem` with: C and K each kept or rounded up to whole 16
/// or 8 bytes (the fixed/few-channel and first-layer kernels read 2 or 4 channels of 16-bit
/// elements, and write 16 bytes: C = 2 with K = 217 runs them with only K padded); none where the
/// channels are whole already or the elements are not f16, bf16 or f32.
pub fn paddings(problem: &Conv2dProblem) -> Vec<Padding> {
    let (a, b, c) = problem.elements;
    let floating = |e: DType| matches!(e, DType::F16 | DType::Bf16 | DType::F32);
    if !(floating(a) && floating(b) && floating(c)) {
        return Vec::new();
    }
    let narrowest = [a, b, c].iter().map(|e| e.bits() as usize / 8).min().unwrap_or(1);
    // Whole 16 bytes first (the common case), then 8, then as given.
    let rounded = |channels: usize| {
        let mut out: Vec<usize> = Vec::new();
        for bytes in [16, 8, 0] {
            let next = channels.next_multiple_of((bytes / narrowest).max(1));
            if !out.contains(&next) {
                out.push(next);
            }
        }
        out
    };
    let mut out: Vec<Padding> = Vec::new();
    for &c in &rounded(problem.c) {
        for &k in &rounded(problem.k) {
            let padding = Padding { c, k };
            if (c, k) != (problem.c, problem.k) && !out.contains(&padding) {
                out.push(padding);
            }
        }
    }
    out
}

/// `problem` as the kernel runs it: channels padded, staged tensors at a stand-in address.
pub fn padded_problem(problem: &Conv2dProblem, padding: Padding) -> Conv2dProblem {
    let mut padded = Conv2dProblem {
        c: padding.c,
        k: padding.k,
        ..*problem
    };
    if let (Some(addresses), Ok(staging)) = (problem.addresses, Staging::of(problem, padding)) {
        // Addresses are A, B, C, D; C is staged with D.
        padded.addresses = Some(std::array::from_fn(|i| match staging.at[i.min(2)] {
            Some(_) => STAGED_ADDRESS,
            None => addresses[i],
        }));
    }
    padded
}

/// The tensors (A, B, C/D) of a padded launch: their extents as given and as padded, and where
/// the staged ones lie in the workspace.
struct Staging {
    given: [[usize; 4]; 3],
    padded: [[usize; 4]; 3],
    /// Element sizes in bytes.
    bytes: [usize; 3],
    /// Byte offset of each staged tensor (the inputs first, then the output); `None`: as it lies.
    at: [Option<usize>; 3],
    /// Bytes of everything staged.
    staged_bytes: usize,
}

impl Staging {
    fn of(problem: &Conv2dProblem, padding: Padding) -> Result<Self, String> {
        let padded = Conv2dProblem {
            c: padding.c,
            k: padding.k,
            ..*problem
        };
        let (given, padded) = (problem.tensor_dims()?, padded.tensor_dims()?);
        let (a, b, c) = problem.elements;
        let bytes = [a, b, c].map(|e| e.bits() as usize / 8);
        let mut at = [None; 3];
        let mut offset = 0usize;
        for i in 0..3 {
            if given[i] != padded[i] {
                at[i] = Some(offset);
                offset += (padded[i].iter().product::<usize>() * bytes[i]).next_multiple_of(256);
            }
        }
        Ok(Staging {
            given,
            padded,
            bytes,
            at,
            staged_bytes: offset,
        })
    }

    /// The kernel's operands: staged tensors at `base` + their offset.
    fn operands(&self, operands: &ConvOperands, base: u64) -> ConvOperands {
        let tensor = |i: usize, given: &TensorOperand| match self.at[i] {
            Some(offset) => TensorOperand {
                dims: self.padded[i],
                len: self.padded[i].iter().product(),
                address: base + offset as u64,
            },
            None => *given,
        };
        let d = tensor(2, &operands.d);
        // A staged output reads C where D is computed (C is copied there first).
        let c = match self.at[2] {
            Some(_) => operands.c.map(|_| d),
            None => operands.c,
        };
        ConvOperands {
            a: tensor(0, &operands.a),
            b: tensor(1, &operands.b),
            c,
            d,
            ..*operands
        }
    }

    /// Bytes of workspace `kernel` with `slices` split-K slices needs of its own on the staged
    /// operands (after the staged tensors).
    fn kernel_bytes(
        &self,
        kernel: &'static KernelInfo,
        slices: usize,
        operands: &ConvOperands,
        device: &DeviceProps,
    ) -> Result<usize, Error> {
        let ops = ConvOperands {
            split_k_slices: slices,
            ..self.operands(operands, STAGED_ADDRESS)
        };
        super::workspace_bytes(kernel, &ops, device)
    }

    /// Seconds the copies take: inputs copied in (padding written as zeros), the output out.
    fn seconds(&self) -> f64 {
        let size =
            |i: usize, dims: &[[usize; 4]; 3]| (dims[i].iter().product::<usize>() * self.bytes[i]) as f64;
        let staged: Vec<usize> = (0..3).filter(|&i| self.at[i].is_some()).collect();
        let bytes: f64 = staged
            .iter()
            .map(|&i| size(i, &self.given) + size(i, &self.padded))
            .sum();
        // A batch of copies in, a copy out.
        let launches = 1 + usize::from(self.at[2].is_some());
        bytes / PADDING_BYTES_PER_SECOND + launches as f64 * PADDING_LAUNCH_SECONDS
    }
}

/// A packed 4-D tensor of `dims` at `base`.
fn packed(base: u64, dims: [usize; 4]) -> View4 {
    let [_, d1, d2, d3] = dims.map(|d| d as i64);
    View4 {
        base,
        strides: [d1 * d2 * d3, d2 * d3, d3, 1],
    }
}

/// Seconds the copies of `problem`'s padded way take beside its kernel (C's copy where beta reads
/// it is not counted: decisions do not depend on beta).
pub fn staging_seconds(problem: &Conv2dProblem, padding: Padding) -> f64 {
    Staging::of(problem, padding).map_or(f64::INFINITY, |s| s.seconds())
}

/// Bytes of workspace `kernel` with `slices` split-K slices needs to run `operands` padded: the
/// staged tensors, then the kernel's own.
pub(crate) fn workspace_bytes(
    kernel: &'static KernelInfo,
    slices: usize,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    padding: Padding,
    device: &DeviceProps,
) -> Result<usize, Error> {
    let staging = Staging::of(problem, padding).map_err(|m| Error::invalid(kernel.name, m))?;
    Ok(staging.staged_bytes + staging.kernel_bytes(kernel, slices, operands, device)?)
}

/// Runs `operands` on `kernel` with `slices` split-K slices and the channels padded to `padding`:
/// staged inputs copied in with zeros in the padding, C copied where D is computed (where beta
/// reads it), the kernel, the output copied out — all on `stream`, scratch memory from
/// `workspace` when given, else the per-stream cache.
///
/// # Safety
/// As [`super::launch_raw`].
pub(crate) unsafe fn launch(
    kernel: &'static KernelInfo,
    slices: usize,
    stream: &CudaStream,
    problem: &Conv2dProblem,
    operands: &ConvOperands,
    padding: Padding,
    workspace: Option<&mut Workspace>,
) -> Result<(), Error> {
    let device = crate::device::props(stream.context())?;
    let staging = Staging::of(problem, padding).map_err(|m| Error::invalid(kernel.name, m))?;
    // Exactly what `workspace_bytes` says: a plan's workspace is that size.
    let kernel_bytes = staging.kernel_bytes(kernel, slices, operands, &device)?;
    let mut scratch = Scratch::of(stream, workspace)?;
    let (base, _) = scratch.at_least(stream, staging.staged_bytes + kernel_bytes)?;
    let ops = ConvOperands {
        split_k_slices: slices,
        ..staging.operands(operands, base)
    };
    let (given, padded) = (staging.given, staging.padded);
    // Tensor i from `src` (of `src_dims`) to `dst` (of `dst_dims`): the padding written as zeros.
    let copy = |i: usize, src: u64, src_dims: [usize; 4], dst: u64, dst_dims: [usize; 4]| Copy4d {
        src_extent: given[i],
        ..Copy4d::new(
            staging.bytes[i],
            packed(src, src_dims),
            packed(dst, dst_dims),
            dst_dims,
        )
    };
    let mut copies_in = Vec::new();
    for (i, from, to) in [(0, operands.a, ops.a), (1, operands.b, ops.b)] {
        if staging.at[i].is_some() {
            copies_in.push(copy(i, from.address, given[i], to.address, padded[i]));
        }
    }
    let mut copies_out = Vec::new();
    if staging.at[2].is_some() {
        if let Some(c) = operands.c.filter(|_| operands.beta != 0.0) {
            copies_in.push(copy(2, c.address, given[2], ops.d.address, padded[2]));
        }
        copies_out.push(copy(2, ops.d.address, padded[2], operands.d.address, given[2]));
    }
    // SAFETY: the staged tensors lie in the scratch just sized for them, the caller's in its
    // buffers (checked by the kernel's plan below before the kernel is enqueued; the copies only
    // read and write what the checked extents name).
    unsafe {
        crate::support::copy4_batch(stream, &copies_in)?;
        let mut lent = Workspace::borrowed(base + staging.staged_bytes as u64, kernel_bytes);
        super::launch_raw(kernel, stream, &ops, Some(&mut lent))?;
        crate::support::copy4_batch(stream, &copies_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ConvKind;

    fn problem(kind: ConvKind, c: usize, k: usize, elements: DType) -> Conv2dProblem {
        Conv2dProblem::new(kind, [2, 9, 9, c], [k, 3, 3], (elements, elements, elements)).padding(1, 1)
    }

    #[test]
    fn pads_c_and_k_each_to_whole_16_or_8_bytes_and_stages_what_changes() {
        let padded = |p: &Conv2dProblem| paddings(p).iter().map(|p| (p.c, p.k)).collect::<Vec<_>>();
        assert_eq!(padded(&problem(ConvKind::Fprop, 16, 32, DType::F16)), []);
        assert_eq!(
            padded(&problem(ConvKind::Fprop, 3, 64, DType::F16)),
            [(8, 64), (4, 64)]
        );
        assert_eq!(padded(&problem(ConvKind::Fprop, 4, 64, DType::F16)), [(8, 64)]);
        assert_eq!(
            padded(&problem(ConvKind::Dgrad, 6, 1, DType::F32)),
            [(8, 4), (8, 2), (8, 1), (6, 4), (6, 2)]
        );
        // C = 2 runs the few-channel kernels as it is, with only K padded for their output.
        assert_eq!(
            padded(&problem(ConvKind::Fprop, 2, 217, DType::F16)),
            [
                (8, 224),
                (8, 220),
                (8, 217),
                (4, 224),
                (4, 220),
                (4, 217),
                (2, 224),
                (2, 220)
            ]
        );
        assert_eq!(padded(&problem(ConvKind::Fprop, 3, 5, DType::F64)), []);
        let padding_for = |p: &Conv2dProblem| paddings(p).first().copied();
        // fprop with C = 3: x and w staged, y written in place; dgrad with K = 1: dy, w staged.
        let fprop = problem(ConvKind::Fprop, 3, 64, DType::F16);
        let s = Staging::of(&fprop, padding_for(&fprop).unwrap()).unwrap();
        assert!(s.at[0].is_some() && s.at[1].is_some() && s.at[2].is_none());
        assert_eq!(s.padded[0], [2, 9, 9, 8]);
        assert_eq!(
            s.at,
            [
                Some(0),
                Some((2 * 9 * 9 * 8 * 2usize).next_multiple_of(256)),
                None
            ]
        );
        let dgrad = problem(ConvKind::Dgrad, 64, 1, DType::Bf16);
        let s = Staging::of(&dgrad, padding_for(&dgrad).unwrap()).unwrap();
        assert_eq!(s.padded[1], [8, 3, 3, 64]);
        assert!(s.at[2].is_none());
        // wgrad of C = 5: x and dw staged, dy as it lies.
        let wgrad = problem(ConvKind::Wgrad, 5, 16, DType::F16);
        let s = Staging::of(&wgrad, padding_for(&wgrad).unwrap()).unwrap();
        assert_eq!(s.at.map(|a| a.is_some()), [false, true, true]);
        assert_eq!(s.at[2], Some((2 * 9 * 9 * 8 * 2usize).next_multiple_of(256)));
        assert_eq!(s.padded[2], [16, 3, 3, 8]);
    }

    #[test]
    fn support_rules_see_staged_tensors_aligned_and_the_rest_where_they_lie() {
        let mut p = problem(ConvKind::Fprop, 3, 64, DType::F16);
        p.addresses = Some([0x1002, 0x2002, 0x3002, 0x4002]);
        let padded = padded_problem(&p, paddings(&p)[0]);
        assert_eq!((padded.c, padded.k), (8, 64));
        assert_eq!(
            padded.addresses,
            Some([STAGED_ADDRESS, STAGED_ADDRESS, 0x3002, 0x4002])
        );
    }
}
