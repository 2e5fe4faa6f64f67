//! Device workspace for kernels that need one (stream-K tile schedulers, split-K), one
//! buffer per (context, stream), grown on demand and reused by every later launch on that stream.
//!
//! Kernels on one stream run in order, so one buffer per stream is never used by two kernels at
//! once. A buffer is replaced only while the cache lock is held, and callers keep the lock from
//! building Params (which embed the address) until the launch is enqueued: a growth on another
//! thread cannot free memory an earlier launch was handed without that launch being ordered first.
//! The old buffer is freed stream-ordered (`cuMemFreeAsync` on the same stream), after the kernels
//! already enqueued there. Buffers live until the process ends: a few MiB per stream for stream-K
//! and serial split-K, but parallel split-K keeps slices × m × n partial sums (64 MiB for 16 slices
//! of a 1024×1024 f32 problem).

use std::sync::{Mutex, MutexGuard};

use cudarc::driver::{result, sys, CudaStream};

use crate::error::Error;

struct StreamWorkspace {
    context: usize,
    stream: usize,
    address: sys::CUdeviceptr,
    bytes: usize,
}

static WORKSPACES: Mutex<Vec<StreamWorkspace>> = Mutex::new(Vec::new());

/// The workspace cache, locked for one launch.
pub(crate) struct Workspaces(MutexGuard<'static, Vec<StreamWorkspace>>);

/// Locks the cache (the guard must live until the kernel is enqueued).
pub(crate) fn lock() -> Workspaces {
    Workspaces(WORKSPACES.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
}

impl Workspaces {
    /// The current workspace of `stream`: (address, capacity in bytes); (0, 0) if it has none yet.
    pub(crate) fn current(&self, stream: &CudaStream) -> (sys::CUdeviceptr, usize) {
        let key = key(stream);
        self.0
            .iter()
            .find(|w| (w.context, w.stream) == key)
            .map_or((0, 0), |w| (w.address, w.bytes))
    }

    /// A workspace of at least `bytes` for `stream` (the context must be current on this thread).
    pub(crate) fn at_least(
        &mut self,
        stream: &CudaStream,
        bytes: usize,
    ) -> Result<(sys::CUdeviceptr, usize), Error> {
        let key = key(stream);
        let slot = self.0.iter().position(|w| (w.context, w.stream) == key);
        if let Some(index) = slot {
            if self.0[index].bytes >= bytes {
                return Ok((self.0[index].address, self.0[index].bytes));
            }
        }
        // Grow geometrically so that a sweep over problem sizes reallocates rarely.
        let bytes = bytes.next_power_of_two().max(1 << 20);
        // SAFETY: stream is a live stream of the current context.
        let address = unsafe { result::malloc_async(stream.cu_stream(), bytes) }
            .map_err(Error::driver("allocating the kernel's workspace"))?;
        let fresh = StreamWorkspace {
            context: key.0,
            stream: key.1,
            address,
            bytes,
        };
        match slot {
            Some(index) => {
                let old = std::mem::replace(&mut self.0[index], fresh);
                // SAFETY: stream-ordered free after every kernel already enqueued on this stream.
                unsafe { result::free_async(old.address, stream.cu_stream()) }
                    .map_err(Error::driver("freeing the previous workspace"))?;
            }
            None => self.0.push(fresh),
        }
        Ok((address, bytes))
    }
}

fn key(stream: &CudaStream) -> (usize, usize) {
    (stream.context().cu_ctx() as usize, stream.cu_stream() as usize)
}
