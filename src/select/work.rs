//! What one way of running a problem gives a kernel to do, as the cost model ([`super::cost`])
//! reads it: launches of GEMM-shaped pieces in the extents the kernel iterates over, how its
//! split-K slices divide their depth, the bytes it moves and the seconds of anything else.

/// A GEMM-shaped piece of work, in the extents the kernel iterates over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    /// How split-K slices divide `k`.
    pub slicing: Slicing,
}

/// How a kernel's split-K slices divide a piece's depth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Slicing {
    /// Each slice takes an equal share of `k` (GEMMs, CUTLASS 3.x convs, 2.x wgrad).
    #[default]
    Depth,
    /// Each slice runs every filter tap over its share of these channels, rounded up to whole
    /// K tiles (CUTLASS 2.x fprop and dgrad: `implicit_gemm_k_iterations`); `k` is the taps times
    /// the channels in whole K tiles.
    Channels(usize),
    /// Each slice runs the whole depth, its loads of the other slices' positions predicated off
    /// (CUTLASS 2.x fixed- and few-channel fprop iterators).
    Whole,
}

impl Piece {
    pub const fn new(m: usize, n: usize, k: usize, batch: usize) -> Self {
        Piece {
            m,
            n,
            k,
            batch,
            slicing: Slicing::Depth,
        }
    }

    /// This piece, its depth divided by split-K slices as `slicing` says.
    pub const fn sliced(self, slicing: Slicing) -> Self {
        Piece { slicing, ..self }
    }

    /// The depth one of `slices` split-K slices runs, in whole tiles of `tile_k`.
    pub fn slice_depth(&self, slices: usize, tile_k: usize) -> usize {
        let (s, tk) = (slices.max(1), tile_k.max(1));
        match self.slicing {
            Slicing::Depth => self.k.max(1).div_ceil(s).div_ceil(tk) * tk,
            Slicing::Channels(channels) => {
                let taps = (self.k / (channels.div_ceil(tk) * tk).max(1)).max(1);
                taps * channels.div_ceil(s).div_ceil(tk) * tk
            }
            Slicing::Whole => self.k.div_ceil(tk) * tk,
        }
    }
}

/// One way's work: what the model costs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Work {
    /// Launches of the kernel, one after another; each computes its pieces side by side.
    pub launches: Vec<Vec<Piece>>,
    /// Bytes the kernel reads and writes (each operand once): its memory floor.
    pub bytes: f64,
    /// Seconds of what the way runs besides the kernel (staging copies, fills), not calibrated.
    pub extra_seconds: f64,
    /// D column-major as the kernel computes it: a streaming kernel's output cost depends on it.
    pub output_column_major: bool,
    /// A and B contiguous along the depth as the kernel reads them: a tiny kernel's reads depend
    /// on it.
    pub depth_contiguous: [bool; 2],
    /// Elements of A a streaming kernel can load at once (`support::skinny::x_load_width`; 0 or 1:
    /// one at a time): its staging costs depend on it.
    pub a_load_width: u32,
}

impl Work {
    /// One launch of one piece moving `bytes`.
    pub fn single(piece: Piece, bytes: f64) -> Self {
        Work {
            launches: vec![vec![piece]],
            bytes,
            extra_seconds: 0.0,
            output_column_major: false,
            depth_contiguous: [false; 2],
            a_load_width: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CUTLASS 2.x conv slices share the channels at every tap (`implicit_gemm_k_iterations`):
    /// 64 channels over 16 slices still run one 32-deep tile at each of 49 taps.
    #[test]
    fn slices_divide_depth_channels_or_nothing() {
        let piece = Piece::new(1000, 64, 49 * 64, 1);
        assert_eq!(piece.slice_depth(16, 32), 224);
        assert_eq!(piece.sliced(Slicing::Channels(64)).slice_depth(16, 32), 49 * 32);
        assert_eq!(piece.sliced(Slicing::Channels(64)).slice_depth(2, 32), 49 * 32);
        assert_eq!(piece.sliced(Slicing::Channels(64)).slice_depth(1, 32), 49 * 64);
        assert_eq!(piece.sliced(Slicing::Whole).slice_depth(16, 32), 49 * 64);
        assert_eq!(Piece::new(1, 1, 0, 1).slice_depth(4, 32), 32);
    }
}
