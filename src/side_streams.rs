//! Streams of the crate's own beside a caller's: the independent launches of one call (a strided
//! dgrad's stride phases) run on them concurrently, fenced by events to the caller's stream before
//! and after, so that to the caller the call is ordered on its stream as any other.
//!
//! Raw driver streams, created once per context and kept for the process: a cudarc stream would
//! switch the caller's whole context to cudarc's multi-stream event tracking.

use std::sync::Mutex;

use cudarc::driver::{sys, CudaStream};

use crate::error::Error;

/// Side streams per context at most (the rest share them round-robin).
const MOST: usize = 3;

/// A context's side streams (raw handles; the driver's streams are thread-safe).
struct Pool {
    context: usize,
    streams: Vec<usize>,
}

static POOLS: Mutex<Vec<Pool>> = Mutex::new(Vec::new());

/// Work forked off `main`: stream 0 is `main` itself, the others side streams that start after
/// `main`'s work so far. [`Fork::join`] makes `main` wait for all of them.
pub(crate) struct Fork<'s> {
    main: &'s CudaStream,
    side: Vec<sys::CUstream>,
}

/// Forks `main` into up to `count` streams (itself included). The context must be current.
pub(crate) fn fork(main: &CudaStream, count: usize) -> Result<Fork<'_>, Error> {
    let wanted = count.saturating_sub(1).min(MOST);
    if wanted == 0 {
        return Ok(Fork {
            main,
            side: Vec::new(),
        });
    }
    let side = streams_of(main, wanted)?;
    let event = record(main.cu_stream())?;
    let waited = side.iter().try_for_each(|&s| wait(s, event));
    destroy(event);
    waited.map(|()| Fork { main, side })
}

impl Fork<'_> {
    /// The stream for launch `i`: `main` for 0, else a side stream (round-robin).
    pub(crate) fn stream(&self, i: usize) -> sys::CUstream {
        if i == 0 || self.side.is_empty() {
            self.main.cu_stream()
        } else {
            self.side[(i - 1) % self.side.len()]
        }
    }

    /// `main` waits for every side stream's work.
    pub(crate) fn join(self) -> Result<(), Error> {
        for &s in &self.side {
            let event = record(s)?;
            let waited = wait(self.main.cu_stream(), event);
            destroy(event);
            waited?;
        }
        Ok(())
    }
}

/// Creates the side streams of `main`'s context ahead of time (a plan does, so that a launch inside
/// CUDA-graph capture creates none).
pub(crate) fn reserve(main: &CudaStream) -> Result<(), Error> {
    streams_of(main, MOST).map(|_| ())
}

/// `count` side streams of `main`'s context, created on first use.
fn streams_of(main: &CudaStream, count: usize) -> Result<Vec<sys::CUstream>, Error> {
    let context = main.context().cu_ctx() as usize;
    let mut pools = POOLS.lock().unwrap_or_else(|p| p.into_inner());
    let index = match pools.iter().position(|p| p.context == context) {
        Some(i) => i,
        None => {
            pools.push(Pool {
                context,
                streams: Vec::new(),
            });
            pools.len() - 1
        }
    };
    let pool = &mut pools[index];
    while pool.streams.len() < count {
        let mut stream = std::ptr::null_mut();
        unsafe { sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) }
            .result()
            .map_err(Error::driver("creating a side stream"))?;
        pool.streams.push(stream as usize);
    }
    Ok(pool.streams[..count]
        .iter()
        .map(|&s| s as sys::CUstream)
        .collect())
}

fn record(stream: sys::CUstream) -> Result<sys::CUevent, Error> {
    let mut event = std::ptr::null_mut();
    unsafe { sys::cuEventCreate(&mut event, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32) }
        .result()
        .map_err(Error::driver("creating an event"))?;
    if let Err(e) = unsafe { sys::cuEventRecord(event, stream) }.result() {
        destroy(event);
        return Err(Error::driver("recording an event")(e));
    }
    Ok(event)
}

fn wait(stream: sys::CUstream, event: sys::CUevent) -> Result<(), Error> {
    unsafe { sys::cuStreamWaitEvent(stream, event, 0) }
        .result()
        .map_err(Error::driver("making a stream wait for an event"))
}

/// Destroys `event`; the driver keeps it until the work recorded in it completes.
fn destroy(event: sys::CUevent) {
    unsafe {
        let _ = sys::cuEventDestroy_v2(event);
    }
}
