//! The GPU suites' trial: a test body run on the suite's context, reported **ignored with the
//! reason** where there is no GPU, or where a Hopper-only kernel meets another device.

use std::sync::Arc;

use cudarc::driver::CudaContext;
use cutlass_aot::device;
use libtest_mimic::{Completion, Failed, Trial};

/// A GPU test body.
pub type GpuTest = Box<dyn FnOnce(&Arc<CudaContext>) -> Result<(), Failed> + Send>;

/// The trial `name` running `body` on `gpu` (or ignored with why there is none).
pub fn trial(gpu: &Result<Arc<CudaContext>, String>, name: String, body: GpuTest) -> Trial {
    let gpu = gpu.clone();
    Trial::ignorable_test(name, move || match gpu {
        Err(reason) => Ok(Completion::ignored_with(format!("needs a GPU: {reason}"))),
        Ok(ctx) => {
            let cc = device::props(&ctx).map(|p| p.compute_capability).unwrap_or(0);
            body(&ctx).map(|()| Completion::Completed).or_else(|e| {
                // A kernel for another architecture is not a failure of this device.
                if cc != 90 && e.message().is_some_and(|m| m.contains("compute capability")) {
                    Ok(Completion::ignored_with(format!(
                        "needs compute capability 9.0 (this device: {cc})"
                    )))
                } else {
                    Err(e)
                }
            })
        }
    })
}
