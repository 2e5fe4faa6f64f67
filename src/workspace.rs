//! Device workspace for launches that need scratch memory (stream-K tile schedulers, split-K,
//! operands staged by dispatch, the 3xTF32 split).
//!
//! Two sources:
//! * **A caller's [`Workspace`]**: device memory the caller owns and lends to one launch at a time
//!   (the CUTLASS API's explicit workspace); `dispatch::workspace_bytes` says how much a problem
//!   needs. Nothing is cached.
//! * **The per-stream cache** (the default): one buffer per (context, stream), grown on demand and
//!   reused by every later launch on that stream. Kernels on one stream run in order, so one buffer
//!   per stream is never used by two kernels at once. A buffer is replaced only while the cache
//!   lock is held, and callers keep the lock from building Params (which embed the address) until
//!   the launch is enqueued: a growth on another thread cannot free memory an earlier launch was
//!   handed without that launch being ordered first. Old buffers are freed stream-ordered
//!   (`cuMemFreeAsync` on their stream, after the kernels already enqueued there).
//!
//! The cache is bounded: a buffer larger than [`cache_limit`] (default 256 MiB, see
//! [`set_cache_limit`]) is freed, stream-ordered, as soon as the launch that needed it is enqueued,
//! so one huge launch does not pin its memory for the life of the process. [`release`] frees a
//! stream's buffer (call it before destroying a stream that ran kernels needing a workspace) and
//! [`release_all`] every buffer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use cudarc::driver::{result, sys, CudaSlice, CudaStream, DevicePtr};

use crate::error::Error;

struct StreamWorkspace {
    context: usize,
    stream: usize,
    address: sys::CUdeviceptr,
    bytes: usize,
}

static WORKSPACES: Mutex<Vec<StreamWorkspace>> = Mutex::new(Vec::new());

static CACHE_LIMIT: AtomicUsize = AtomicUsize::new(256 << 20);

/// The largest buffer the per-stream cache keeps after a launch, in bytes.
pub fn cache_limit() -> usize {
    CACHE_LIMIT.load(Ordering::Relaxed)
}

/// Sets [`cache_limit`]. Buffers above it are freed (stream-ordered) after the next launch that
/// uses the cache; 0 keeps nothing.
pub fn set_cache_limit(bytes: usize) {
    CACHE_LIMIT.store(bytes, Ordering::Relaxed);
}

/// Bytes held by the cache now (all streams), for monitoring.
pub fn cached_bytes() -> usize {
    WORKSPACES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .map(|w| w.bytes)
        .sum()
}

/// Frees `stream`'s cached workspace, stream-ordered (after the kernels enqueued on it). Call it
/// before destroying a stream that ran kernels needing a workspace: the cache cannot tell that a
/// stream is gone.
pub fn release(stream: &CudaStream) -> Result<(), Error> {
    let key = key(stream);
    let mut cache = lock();
    let Some(index) = cache.0.iter().position(|w| (w.context, w.stream) == key) else {
        return Ok(());
    };
    let old = cache.0.swap_remove(index);
    stream
        .context()
        .bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    // SAFETY: the buffer was allocated on this stream; the free is ordered after its kernels.
    unsafe { result::free_async(old.address, stream.cu_stream()) }
        .map_err(Error::driver("freeing a cached workspace"))
}

/// Frees every cached workspace, stream-ordered (each on its own stream, whose context must still
/// exist).
pub fn release_all() -> Result<(), Error> {
    let mut cache = lock();
    cache.free_where(|_| true)
}

/// Device memory a caller lends to launches (see the module docs): owned by the caller, reused
/// across launches on one stream, freed when dropped.
#[derive(Debug)]
pub struct Workspace {
    memory: Memory,
}

#[derive(Debug)]
enum Memory {
    /// A cudarc buffer: each launch orders itself after the buffer's earlier uses.
    Tracked(CudaSlice<u8>),
    /// Plain device memory: no events recorded or waited for (what CUDA-graph capture needs).
    Untracked(Untracked),
    /// Part of other scratch memory, owned elsewhere: (address, bytes).
    Borrowed(u64, usize),
}

impl Workspace {
    /// A workspace of `bytes` bytes on `stream`'s device.
    pub fn new(stream: &std::sync::Arc<CudaStream>, bytes: usize) -> Result<Self, Error> {
        // SAFETY: the memory is only handed to kernels as scratch space; nothing reads it first.
        let buffer =
            unsafe { stream.alloc::<u8>(bytes.max(1)) }.map_err(Error::driver("allocating a workspace"))?;
        Ok(Workspace {
            memory: Memory::Tracked(buffer),
        })
    }

    /// A workspace of `bytes` bytes on `stream`'s device that cudarc does not track: launches using
    /// it record and wait for no events, so they can be captured into a CUDA graph whatever the
    /// context's event tracking. The caller orders its uses: launches on one stream are ordered;
    /// across streams, make them wait. Dropping it waits for the device to finish its work.
    pub fn untracked(stream: &CudaStream, bytes: usize) -> Result<Self, Error> {
        Ok(Workspace {
            memory: Memory::Untracked(Untracked::new(stream, bytes)?),
        })
    }

    /// `bytes` of scratch memory at `address` that the caller holds for as long as launches use
    /// it (a launch that stages operands lends the rest of its scratch to the kernel it runs).
    pub(crate) fn borrowed(address: u64, bytes: usize) -> Self {
        Workspace {
            memory: Memory::Borrowed(address, bytes),
        }
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> usize {
        match &self.memory {
            Memory::Tracked(buffer) => buffer.len(),
            Memory::Untracked(u) => u.bytes,
            Memory::Borrowed(_, bytes) => *bytes,
        }
    }

    /// (device address, bytes) for a launch on `stream` (a tracked buffer orders the launch after
    /// its earlier uses through cudarc's events).
    pub(crate) fn lend(&mut self, stream: &CudaStream) -> (u64, usize) {
        match &mut self.memory {
            Memory::Tracked(buffer) => {
                let (address, _guard) = buffer.device_ptr(stream);
                (address, buffer.len())
            }
            Memory::Untracked(u) => (u.address, u.bytes),
            Memory::Borrowed(address, bytes) => (*address, *bytes),
        }
    }
}

/// Device memory allocated with the driver, freed (after the context's work) when dropped.
#[derive(Debug)]
struct Untracked {
    context: std::sync::Arc<cudarc::driver::CudaContext>,
    address: sys::CUdeviceptr,
    bytes: usize,
}

impl Untracked {
    fn new(stream: &CudaStream, bytes: usize) -> Result<Self, Error> {
        let context = stream.context().clone();
        context
            .bind_to_thread()
            .map_err(Error::driver("binding the context"))?;
        // SAFETY: a plain allocation in the current context.
        let address =
            unsafe { result::malloc_sync(bytes.max(1)) }.map_err(Error::driver("allocating a workspace"))?;
        Ok(Untracked {
            context,
            address,
            bytes: bytes.max(1),
        })
    }
}

impl Drop for Untracked {
    fn drop(&mut self) {
        // Kernels enqueued with this memory (directly or through a graph) may still run: wait for
        // them. Errors cannot be reported from here; the memory is then leaked.
        if self.context.bind_to_thread().is_ok() && self.context.synchronize().is_ok() {
            // SAFETY: allocated by malloc_sync in this context; nothing uses it any more.
            let _ = unsafe { result::free_sync(self.address) };
        }
    }
}

/// Where a launch's scratch memory comes from.
pub(crate) enum Scratch<'w> {
    /// The per-stream cache, locked for the launch.
    Cached(Workspaces),
    /// A caller's workspace: (address, bytes); never grown.
    Lent(u64, usize, std::marker::PhantomData<&'w mut Workspace>),
}

impl<'w> Scratch<'w> {
    /// The caller's workspace if one is given, else the locked cache — except while `stream` is
    /// being captured into a CUDA graph: the cache would allocate inside the graph (an allocation a
    /// replayed graph cannot hold) or hand it a buffer a later launch may free.
    pub(crate) fn of(stream: &CudaStream, lent: Option<&'w mut Workspace>) -> Result<Self, Error> {
        match lent {
            Some(w) => {
                let (address, bytes) = w.lend(stream);
                Ok(Scratch::Lent(address, bytes, std::marker::PhantomData))
            }
            None if capturing(stream) => Err(Error::invalid(
                "workspace",
                "the stream is being captured into a CUDA graph and this launch needs scratch memory: \
                 make a plan first (dispatch::plan, conv::dispatch::plan, ...: it owns its workspace), \
                 or pass a Workspace of your own",
            )),
            None => Ok(Scratch::Cached(lock())),
        }
    }

    /// The current (address, bytes); (0, 0) when the cache has nothing for `stream` yet.
    pub(crate) fn current(&self, stream: &CudaStream) -> (sys::CUdeviceptr, usize) {
        match self {
            Scratch::Cached(cache) => cache.current(stream),
            Scratch::Lent(address, bytes, _) => (*address, *bytes),
        }
    }

    /// At least `bytes` of scratch: the cache grows; a caller's workspace that is too small is an
    /// error saying how much is needed.
    pub(crate) fn at_least(
        &mut self,
        stream: &CudaStream,
        bytes: usize,
    ) -> Result<(sys::CUdeviceptr, usize), Error> {
        match self {
            Scratch::Cached(cache) => cache.at_least(stream, bytes),
            Scratch::Lent(address, have, _) if *have >= bytes => Ok((*address, *have)),
            Scratch::Lent(_, have, _) => Err(Error::invalid(
                "workspace",
                format!(
                    "this launch needs {bytes} bytes of workspace but the Workspace given has {have}; \
                     create one of at least {bytes} bytes (dispatch::workspace_bytes tells in advance)"
                ),
            )),
        }
    }
}

impl Scratch<'_> {
    /// Runs `prepare(address, capacity)` with this scratch, growing it to what `prepare` reports
    /// it needs (`Ok(Err(bytes))`) until the Params fit: the Params, and the (address, capacity)
    /// they were built with. A `prepare` that asks for less than it was given is a build defect
    /// of `kernel`.
    pub(crate) fn fit(
        &mut self,
        stream: &CudaStream,
        kernel: &'static str,
        mut prepare: impl FnMut(u64, usize) -> Result<Result<crate::params::Prepared, u64>, Error>,
    ) -> Result<(crate::params::Prepared, (sys::CUdeviceptr, usize)), Error> {
        let (mut address, mut capacity) = self.current(stream);
        loop {
            match prepare(address, capacity)? {
                Ok(prepared) => return Ok((prepared, (address, capacity))),
                Err(needed) if (needed as usize) > capacity => {
                    (address, capacity) = self.at_least(stream, needed as usize)?;
                }
                Err(needed) => {
                    return Err(Error::AbiMismatch {
                        kernel,
                        message: format!(
                            "prepare asked for {needed} bytes of workspace with {capacity} given"
                        ),
                    })
                }
            }
        }
    }
}

/// The workspace cache, locked for one launch; on drop, buffers over [`cache_limit`] are freed
/// (stream-ordered, after the launch just enqueued).
pub(crate) struct Workspaces(MutexGuard<'static, Vec<StreamWorkspace>>);

impl Drop for Workspaces {
    fn drop(&mut self) {
        let limit = cache_limit();
        // A failure to free leaks the buffer; it cannot be reported from here.
        let _ = self.free_where(|w| w.bytes > limit);
    }
}

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

impl Workspaces {
    /// Frees (stream-ordered) and forgets every buffer `which` selects.
    fn free_where(&mut self, which: impl Fn(&StreamWorkspace) -> bool) -> Result<(), Error> {
        let mut first_error = Ok(());
        let mut index = 0;
        while index < self.0.len() {
            if !which(&self.0[index]) {
                index += 1;
                continue;
            }
            let old = self.0.swap_remove(index);
            // SAFETY: the buffer was allocated on this stream; the free is ordered after the
            // kernels enqueued there. The stream handle is the one the buffer was cached under.
            let freed = unsafe { result::free_async(old.address, old.stream as sys::CUstream) };
            if let (Err(e), Ok(())) = (freed, &first_error) {
                first_error = Err(Error::driver("freeing a cached workspace")(e));
            }
        }
        first_error
    }
}

/// Whether `stream` is being captured into a CUDA graph (a query that fails counts as not).
pub fn capturing(stream: &CudaStream) -> bool {
    // SAFETY: a status query on a live stream.
    let status = unsafe { result::stream::is_capturing(stream.cu_stream()) };
    status.is_ok_and(|s| s != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

fn key(stream: &CudaStream) -> (usize, usize) {
    (stream.context().cu_ctx() as usize, stream.cu_stream() as usize)
}
