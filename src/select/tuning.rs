//! Run-time launch tuning of CUTLASS 3.x persistent kernels (tile order and swizzle), which a
//! measured row records with its time.

use crate::error::Error;
use crate::kernel::KernelInfo;
use crate::model::Api;

/// The order in which a CUTLASS 3.x persistent kernel's CTAs walk the output tiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Raster {
    /// CUTLASS's choice (along the longer of M and N).
    #[default]
    Heuristic,
    AlongM,
    AlongN,
}

/// Run-time rasterisation of CUTLASS 3.x kernels: results are identical, only speed (L2 reuse)
/// changes. CUTLASS 2.x kernels have theirs compiled in (the manifest's `swizzle`) and ignore this.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    pub raster: Raster,
    /// Width of a swizzled band of tiles: 1, 2, 4 or 8; 0 = automatic (8 for problems of many
    /// waves of tiles, where it measured 2–5 % faster on an H200 at 8192³; else CUTLASS's 1).
    pub max_swizzle: u32,
}

impl Raster {
    /// The ABI's `raster_order`: 0 CUTLASS's heuristic, 1 along M, 2 along N.
    pub(crate) fn abi(self) -> i32 {
        match self {
            Raster::Heuristic => 0,
            Raster::AlongM => 1,
            Raster::AlongN => 2,
        }
    }
}

impl Tuning {
    /// Refuses a swizzle CUTLASS's schedulers do not have (`who` names the error's source).
    pub(crate) fn check(&self, who: &'static str) -> Result<(), Error> {
        if [0, 1, 2, 4, 8].contains(&self.max_swizzle) {
            return Ok(());
        }
        Err(Error::invalid(
            who,
            format!(
                "max_swizzle {} is not supported; allowed: 0 (default), 1, 2, 4, 8",
                self.max_swizzle
            ),
        ))
    }

    /// The swizzle band used for `problem` on `multiprocessors` SMs: the explicit one, or the
    /// automatic choice.
    pub fn swizzle_for(
        &self,
        info: &KernelInfo,
        m: usize,
        n: usize,
        batch: usize,
        multiprocessors: u32,
    ) -> u32 {
        if self.max_swizzle != 0 || info.api() != Api::Cutlass3x {
            return self.max_swizzle;
        }
        let tiles =
            m.div_ceil(info.tile().m.max(1) as usize) * n.div_ceil(info.tile().n.max(1) as usize) * batch;
        if tiles >= 4 * multiprocessors as usize {
            8
        } else {
            0
        }
    }
}
