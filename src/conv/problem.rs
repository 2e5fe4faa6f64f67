//! A conv2d problem as discovery sees it, and its rules against a kernel: element types, channel
//! counts against the kernel's alignments and iterator algorithm, strides the kernel handles,
//! split-K, tensor addresses.

use crate::kernel::{KernelInfo, Problem, Want};
use crate::model::{Api, ConvKind, ConvLayout, DType, IteratorAlgorithm, OperationKind, StrideSupport};

/// How the filter is applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConvMode {
    /// `y[p, q] = Σ x[p·stride − pad + r·dilation, …] · w[r, s]`: PyTorch's `conv2d`.
    #[default]
    CrossCorrelation,
    /// The same with the filter flipped: the mathematical convolution.
    Convolution,
}

/// One 2-D convolution: extents, padding, stride, dilation and mode, with the element types of its
/// A, B and C (in the roles of [`ConvKind`]). Built by the launch path from the tensors, or by hand
/// for discovery (`Registry::find`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dProblem {
    pub kind: ConvKind,
    /// Activation extents: images, rows, columns, channels.
    pub n: usize,
    pub h: usize,
    pub w: usize,
    pub c: usize,
    /// Filter extents: output channels, rows, columns.
    pub k: usize,
    pub r: usize,
    pub s: usize,
    /// Zero padding (rows, columns) on each side.
    pub pad: [usize; 2],
    pub stride: [usize; 2],
    pub dilation: [usize; 2],
    pub mode: ConvMode,
    /// The implicit GEMM's K split into this many slices (1: none).
    pub split_k_slices: usize,
    /// Element types of A, B and C/D.
    pub elements: (DType, DType, DType),
    /// How the tensors are stored (channels last unless said otherwise).
    pub layout: ConvLayout,
    /// The device's compute capability, when known.
    pub compute_capability: Option<u32>,
    /// Device addresses of A, B, C and D, when known (checked against the kernel's alignment).
    pub addresses: Option<[u64; 4]>,
}

impl Conv2dProblem {
    /// A problem of `kind` over an `[n, h, w, c]` activation and a `[k, r, s]` filter, with no
    /// padding, unit stride and dilation, cross-correlation, no split.
    pub fn new(
        kind: ConvKind,
        [n, h, w, c]: [usize; 4],
        [k, r, s]: [usize; 3],
        elements: (DType, DType, DType),
    ) -> Self {
        Conv2dProblem {
            kind,
            n,
            h,
            w,
            c,
            k,
            r,
            s,
            pad: [0, 0],
            stride: [1, 1],
            dilation: [1, 1],
            mode: ConvMode::CrossCorrelation,
            split_k_slices: 1,
            elements,
            layout: ConvLayout::ChannelsLast,
            compute_capability: None,
            addresses: None,
        }
    }

    pub fn padding(mut self, pad_h: usize, pad_w: usize) -> Self {
        self.pad = [pad_h, pad_w];
        self
    }

    pub fn stride(mut self, stride_h: usize, stride_w: usize) -> Self {
        self.stride = [stride_h, stride_w];
        self
    }

    pub fn dilation(mut self, dilation_h: usize, dilation_w: usize) -> Self {
        self.dilation = [dilation_h, dilation_w];
        self
    }

    /// Tensors stored in `layout` (the int8 interleaved layouts: [`ConvLayout::Interleaved32`]).
    pub fn layout(mut self, layout: ConvLayout) -> Self {
        self.layout = layout;
        self
    }

    /// The output's rows and columns (P, Q), as PyTorch computes them:
    /// `(H + 2·pad − dilation·(R − 1) − 1) / stride + 1`; an error when the filter does not fit.
    pub fn output_size(&self) -> Result<(usize, usize), String> {
        if self.stride.contains(&0) || self.dilation.contains(&0) {
            return Err(format!(
                "stride {:?} and dilation {:?} must be at least 1",
                self.stride, self.dilation
            ));
        }
        let one = |size: usize, pad: usize, filter: usize, stride: usize, dilation: usize, what: &str| {
            let span = dilation
                .saturating_mul(filter.saturating_sub(1))
                .saturating_add(1);
            let padded = size.saturating_add(pad.saturating_mul(2));
            if filter == 0 || size == 0 || padded < span {
                return Err(format!(
                    "the filter spans {span} {what} (size {filter}, dilation {dilation}) but the padded \
                     activation has {padded} ({size} + 2·{pad}); the output would be empty"
                ));
            }
            Ok((padded - span) / stride + 1)
        };
        let p = one(
            self.h,
            self.pad[0],
            self.r,
            self.stride[0],
            self.dilation[0],
            "rows",
        )?;
        let q = one(
            self.w,
            self.pad[1],
            self.s,
            self.stride[1],
            self.dilation[1],
            "columns",
        )?;
        Ok((p, q))
    }

    /// Dimensions of A, B and C/D, in their layouts' orders (see [`ConvKind`]).
    pub fn tensor_dims(&self) -> Result<[[usize; 4]; 3], String> {
        let (p, q) = self.output_size()?;
        let activation = [self.n, self.h, self.w, self.c];
        let filter = [self.k, self.r, self.s, self.c];
        let output = [self.n, p, q, self.k];
        Ok(match self.kind {
            ConvKind::Fprop => [activation, filter, output],
            ConvKind::Dgrad => [output, filter, activation],
            ConvKind::Wgrad => [output, activation, filter],
        })
    }

    /// The implicit GEMM's (M, N, K).
    pub fn gemm_extent(&self) -> Result<(usize, usize, usize), String> {
        let (p, q) = self.output_size()?;
        let (npq, rsc) = (self.n * p * q, self.r * self.s * self.c);
        Ok(match self.kind {
            ConvKind::Fprop => (npq, self.k, rsc),
            ConvKind::Dgrad => (self.n * self.h * self.w, self.c, self.k * self.r * self.s),
            ConvKind::Wgrad => (self.k, rsc, npq),
        })
    }

    /// The channels each filter tap reduces over: fprop's C, dgrad's K; `None` for wgrad (its
    /// reduction is N·P·Q).
    pub fn tap_channels(&self) -> Option<usize> {
        match self.kind {
            ConvKind::Fprop => Some(self.c),
            ConvKind::Dgrad => Some(self.k),
            ConvKind::Wgrad => None,
        }
    }

    /// K tiles of `tile_k` a CUTLASS 3.x conv kernel walks per output tile: its K mode is
    /// hierarchical, BLK_K tiles of the first (channel) extent times the filter positions (fprop:
    /// ⌈C/BLK_K⌉·R·S; dgrad: ⌈K/BLK_K⌉·R·S), or the flat N·P·Q for wgrad.
    /// A strided dgrad runs as stride phases: the fewest any phase with taps has.
    pub fn k_tiles_3x(&self, tile_k: usize) -> usize {
        let tile_k = tile_k.max(1);
        match self.kind {
            ConvKind::Fprop => self.c.div_ceil(tile_k) * self.r * self.s,
            ConvKind::Dgrad if self.stride != [1, 1] => {
                let phases = super::stride_phases::phases(self).unwrap_or_default();
                let taps = phases
                    .iter()
                    .filter(|ph| ph.has_taps())
                    .map(|ph| ph.rows.taps * ph.cols.taps)
                    .min()
                    .unwrap_or(0);
                self.k.div_ceil(tile_k) * taps
            }
            ConvKind::Dgrad => self.k.div_ceil(tile_k) * self.r * self.s,
            ConvKind::Wgrad => {
                let (p, q) = self.output_size().unwrap_or((0, 0));
                (self.n * p * q).div_ceil(tile_k)
            }
        }
    }

    /// Flops of the convolution (2 per multiply-add).
    pub fn flops(&self) -> f64 {
        let (m, n, k) = self.gemm_extent().unwrap_or((0, 0, 0));
        2.0 * m as f64 * n as f64 * k as f64
    }
}

/// The rules of a strided dgrad run as its stride phases on a unit-stride dgrad kernel: a 3.x
/// kernel writes each phase into dx in place (so every phase's pixels must lie inside some filter
/// window), a 2.x one computes it into scratch memory (`staged`, one slice).
fn phased_rules(problem: &Conv2dProblem, kernel: &KernelInfo, staged: bool, want: &mut impl Want) {
    let phases = if staged {
        super::stride_phases::split(problem)
    } else {
        super::stride_phases::phases(problem)
    };
    if let Err(why) = phases {
        want(false, &|| why.clone());
    }
    want(kernel.is_plain(), &|| {
        format!(
            "stride {:?}: this unit-stride dgrad kernel runs a strided dgrad as stride phases, and the pixels no \
             filter tap reaches get beta·C without this kernel's fused epilogue; use a plain kernel",
            problem.stride
        )
    });
    want(!staged || problem.split_k_slices == 1, &|| {
        format!(
            "{} split-K slices at stride {:?}: this unit-stride kernel runs a strided dgrad as stride phases, \
             which it does not split; use 1 slice",
            problem.split_k_slices, problem.stride
        )
    });
}

/// Names of A, B and C/D of `kind`, for messages.
pub(crate) fn role_names(kind: ConvKind) -> [&'static str; 3] {
    match kind {
        ConvKind::Fprop => ["the activation (A)", "the filter (B)", "the output (C/D)"],
        ConvKind::Dgrad => [
            "the output gradient (A)",
            "the filter (B)",
            "the activation gradient (C/D)",
        ],
        ConvKind::Wgrad => [
            "the output gradient (A)",
            "the activation (B)",
            "the filter gradient (C/D)",
        ],
    }
}

/// CUTLASS's 2.x conv kernels refuse tensors of 2^31 bytes or more (32-bit offsets).
const MAX_TENSOR_BYTES: u64 = 1 << 31;

impl Problem for Conv2dProblem {
    fn operation(&self) -> OperationKind {
        match self.kind {
            ConvKind::Fprop => OperationKind::Conv2dFprop,
            ConvKind::Dgrad => OperationKind::Conv2dDgrad,
            ConvKind::Wgrad => OperationKind::Conv2dWgrad,
        }
    }

    fn compute_capability(&self) -> Option<u32> {
        self.compute_capability
    }

    fn rules(&self, kernel: &KernelInfo, want: &mut impl Want) {
        let Some(conv) = kernel.operation.conv() else {
            return;
        };
        let g = &conv.gemm;
        let (ea, eb, ec) = self.elements;
        want((ea, eb, ec) == (g.a.element, g.b.element, g.c.element), &|| {
            format!(
                "element types are A {ea}, B {eb}, C {ec}; the kernel takes A {}, B {}, C {}",
                g.a.element, g.b.element, g.c.element
            )
        });
        want(self.layout == conv.layout, &|| {
            let [x, w, y] = self.layout.tensor_names();
            let [kx, kw, ky] = conv.layout.tensor_names();
            format!(
                "the tensors are {x}, {w}, {y} but this kernel reads {kx}, {kw}, {ky}; use a kernel of tensor_layout {}",
                self.layout
            )
        });
        if let Some(group) = conv.layout.interleave() {
            let group = group as usize;
            let [x, w, _] = conv.layout.tensor_names();
            want(self.c % group == 0 && self.k % group == 0, &|| {
                format!(
                    "{} input and {} output channels: {x} and {w} tensors hold channels in groups of {group}, so both \
                     must be multiples of {group}; pad the channels with zeros",
                    self.c, self.k
                )
            });
        }
        let dims = match self.tensor_dims() {
            Ok(dims) => dims,
            Err(message) => return want(false, &|| message.clone()),
        };
        let names = role_names(self.kind);
        // Channels are contiguous: each tensor's channel count must be a multiple of its
        // operand's alignment (vector accesses never straddle a pixel).
        for ((tensor, alignment), name) in dims
            .iter()
            .zip([g.a.alignment, g.b.alignment, g.c.alignment])
            .zip(names)
        {
            let channels = tensor[3];
            want(channels % alignment as usize == 0, &|| {
                format!(
                    "{name} has {channels} channels, not a multiple of the kernel's alignment {alignment}; pad the \
                     channels to a multiple of {alignment} or use a kernel of smaller alignment"
                )
            });
        }
        let is_2x = kernel.api() == Api::Cutlass2x;
        if is_2x && conv.iterator.fixed_channel_count() {
            want(self.c == g.a.alignment as usize, &|| {
                format!(
                    "this {} kernel reads exactly {} channels per pixel but the activation has {}; pad the \
                     channels to {} (zeros in the activation and the filter)",
                    conv.iterator, g.a.alignment, self.c, g.a.alignment
                )
            });
        }
        if is_2x && conv.iterator == IteratorAlgorithm::FirstLayer {
            want(self.split_k_slices == 1, &|| {
                format!(
                    "{} split-K slices: a first_layer kernel computes each output whole; use 1 slice",
                    self.split_k_slices
                )
            });
            let bytes = super::first_layer::shared_bytes(kernel, self);
            want(bytes <= super::first_layer::MAX_SHARED_BYTES, &|| {
                format!(
                    "a {}x{} filter at stride {:?} and dilation {:?} needs {bytes} bytes of shared memory in this \
                     first_layer kernel (its input patch and filter slice), more than the {} any GPU gives one \
                     block; use a smaller filter, or an implicit-GEMM kernel (fixed_channels, few_channels)",
                    self.r,
                    self.s,
                    self.stride,
                    self.dilation,
                    super::first_layer::MAX_SHARED_BYTES
                )
            });
        }
        let strided = self.stride != [1, 1];
        if is_2x && conv.stride_support == StrideSupport::Unity && strided {
            // A strided dgrad runs as its stride phases, each a packed unit-stride dgrad.
            let phased = self.kind == ConvKind::Dgrad;
            want(phased, &|| {
                format!(
                    "stride {:?}: this kernel supports unit stride only (stride_support: unity); use a strided kernel",
                    self.stride
                )
            });
            if phased {
                phased_rules(self, kernel, true, want);
            }
        }
        if is_2x && self.kind == ConvKind::Dgrad && conv.stride_support == StrideSupport::Strided {
            want(self.dilation == [1, 1], &|| {
                format!(
                    "dilation {:?}: CUTLASS's strided dgrad kernels take no dilation; use a unity-stride dgrad \
                     kernel (stride 1) for a dilated filter",
                    self.dilation
                )
            });
            want(!(strided && self.split_k_slices > 1), &|| {
                format!(
                    "{} split-K slices at stride {:?}: CUTLASS's strided dgrad cannot split K; use 1 slice",
                    self.split_k_slices, self.stride
                )
            });
        }
        want(self.split_k_slices >= 1, &|| {
            "split_k_slices must be at least 1".to_string()
        });
        // Serial split-K adds each slice into D in D's type: an s8 output would saturate the
        // running sums.
        let serial = kernel.design.split_k() == crate::model::SplitK::Serial;
        want(
            !(serial && self.split_k_slices > 1 && g.c.element == DType::S8),
            &|| {
                format!(
                "{} split-K slices: serial split-K keeps the running sums in D's type, and an s8 output would \
                 saturate them; use 1 slice, or a parallel split-K kernel",
                self.split_k_slices
            )
            },
        );
        if !is_2x {
            // A strided dgrad runs as unit-stride dgrads over the stride phases of dx.
            if self.kind == ConvKind::Dgrad && strided {
                phased_rules(self, kernel, false, want);
            }
            if kernel.design.split_k() == crate::model::SplitK::StreamK {
                let tiles = self.k_tiles_3x(kernel.tile().k as usize);
                want(self.split_k_slices <= tiles.max(1), &|| {
                    format!(
                        "{} split-K slices but the implicit GEMM's K has only {tiles} tile(s) of {} (a slice must \
                         hold at least one); use at most {tiles}",
                        self.split_k_slices,
                        kernel.tile().k
                    )
                });
            } else {
                want(self.split_k_slices == 1, &|| {
                    format!(
                        "{} split-K slices: this CUTLASS 3.x conv kernel does not split K; use 1 slice, a stream-K \
                         kernel (`schedule: cooperative`, `tile_scheduler: stream_k`) or an arch 80 kernel",
                        self.split_k_slices
                    )
                });
            }
            want(self.mode == ConvMode::CrossCorrelation, &|| {
                "convolution mode: CUTLASS 3.x conv kernels compute cross-correlation only (PyTorch's conv2d); \
                 flip the filter, or use an arch 80 kernel"
                    .to_string()
            });
        } else if let Ok((_, _, gemm_k)) = self.gemm_extent() {
            let tiles = kernel.k_tiles(gemm_k);
            want(self.split_k_slices <= tiles.max(1), &|| {
                format!(
                    "{} split-K slices but the implicit GEMM's K ({gemm_k}) has only {tiles} tile(s) of {}; use at \
                     most {tiles}",
                    self.split_k_slices,
                    kernel.tile().k
                )
            });
        }
        for ((tensor, element), name) in dims.iter().zip([ea, eb, ec]).zip(names) {
            let bytes = tensor
                .iter()
                .fold(u64::from(element.bits()) / 8, |b, &d| b.saturating_mul(d as u64));
            // Our first_layer kernels address tensors with 64-bit offsets.
            let limited = is_2x && conv.iterator != IteratorAlgorithm::FirstLayer;
            want(!limited || bytes < MAX_TENSOR_BYTES, &|| {
                format!("{name} is {bytes} bytes; CUTLASS 2.x conv kernels address at most 2^31 − 1 bytes per tensor")
            });
        }
        if let Some(addresses) = self.addresses {
            let roles = [names[0], names[1], names[2], names[2]];
            let alignments = [g.a.alignment, g.b.alignment, g.c.alignment, g.c.alignment];
            let elements = [ea, eb, ec, ec];
            for i in 0..4 {
                let bytes = u64::from(alignments[i]) * u64::from(elements[i].bits()) / 8;
                // 3.x kernels read every tensor with TMA: 16-byte aligned addresses.
                let bytes = if is_2x { bytes.max(1) } else { bytes.max(16) };
                want(addresses[i] % bytes == 0, &|| {
                    format!(
                        "{} starts at 0x{:x}, not a multiple of {bytes} bytes (the kernel's {}-element accesses)",
                        roles[i], addresses[i], alignments[i]
                    )
                });
            }
        }
    }
}
