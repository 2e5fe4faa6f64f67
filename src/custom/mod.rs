//! User kernels ("bring your own kernel"): kernels of the user's own CUDA source that the manifest
//! describes (`kind: custom`: entry, typed parameters, launch shape, buffer lengths and
//! requirements as expressions, design values). The build compiles and embeds them like CUTLASS
//! kernels and generates a typed `run` per kernel; the registry lists them
//! ([`crate::Registry::user_kernels`]) and discovery finds them with the same contract as every
//! other kernel: an [`Args`] is the problem, [`crate::KernelInfo::supports`] says every reason a
//! kernel cannot run it, and [`launch`] runs the one chosen.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cutlass_aot::custom::Args;
//! let ctx = cutlass_aot::device::context(0)?;
//! let stream = ctx.default_stream();
//! let (m, n, k) = (64, 48, 32);
//! let a = stream.alloc_zeros::<f64>(m * k)?;
//! let b = stream.alloc_zeros::<f64>(k * n)?;
//! let mut d = stream.alloc_zeros::<f64>(m * n)?;
//! let mut args = Args::new(&stream)
//!     .scalar("m", m as i32).scalar("n", n as i32).scalar("k", k as i32)
//!     .input("a", &a).input("b", &b).output("d", &mut d);
//! let registry = &cutlass_aot::kernels::REGISTRY;
//! // Every user GEMM kernel with a 32-row tile that can run these arguments.
//! let kernel = registry
//!     .get_user_kernels(&args, |k| k.tile().m == 32)
//!     .next()
//!     .ok_or("no kernel")?;
//! cutlass_aot::custom::launch(kernel, &mut args)?;
//! # Ok(()) }
//! ```

mod args;

use std::ffi::c_void;

use cudarc::driver::result;

use crate::device;
use crate::error::Error;
use crate::kernel::{KernelInfo, Problem, Want};
use crate::model::custom::{CustomDesign, CustomOperation, Param};
use crate::model::OperationKind;

pub use args::{Args, Buffer, ScalarArg, Value};

/// The epilogue part of a user kernel's [`KernelInfo`]: its own code computes what it computes,
/// so this is a placeholder (the plain linear combination, no fusion) that discovery of user
/// kernels never reads.
pub const NO_EPILOGUE: crate::model::EpilogueSpec = crate::model::EpilogueSpec {
    kind: crate::model::Epilogue::LinearCombination,
    compute: crate::model::DType::F32,
    fusion: crate::model::Fusion::NONE,
};

impl Problem for Args<'_> {
    fn operation(&self) -> OperationKind {
        OperationKind::Custom
    }

    fn compute_capability(&self) -> Option<u32> {
        self.compute_capability
    }

    fn rules(&self, kernel: &KernelInfo, want: &mut impl Want) {
        let Some((operation, design)) = parts(kernel) else {
            return;
        };
        match self.bind(operation) {
            Err(reasons) => {
                for reason in reasons {
                    want(false, &|| reason.clone());
                }
            }
            Ok(bound) => {
                for reason in argument_problems(operation, design, &bound) {
                    want(false, &|| reason.clone());
                }
            }
        }
    }
}

/// A user kernel's operation and design.
fn parts(kernel: &KernelInfo) -> Option<(&CustomOperation, &CustomDesign)> {
    Some((kernel.operation.custom()?, kernel.design.as_custom()?))
}

/// Arguments matched to the kernel's parameter list, in its order.
pub(crate) struct Bound {
    /// Per parameter: the index of its argument in the [`Args`].
    order: Vec<usize>,
    /// Per parameter: a buffer's length in elements (0 for scalars).
    lens: Vec<usize>,
    /// Per parameter: the integer value of an integer scalar (0 for the rest), for expressions.
    integers: Vec<i64>,
}

/// Everything wrong with bound arguments: requirements that fail, buffers shorter than their
/// length expression. Every reason, not just the first.
fn argument_problems(operation: &CustomOperation, design: &CustomDesign, bound: &Bound) -> Vec<String> {
    let mut reasons = Vec::new();
    for requirement in design.requires {
        match requirement.holds.eval(&bound.integers) {
            Ok(0) => reasons.push(format!(
                "{} (`{}` does not hold{})",
                requirement.reason,
                requirement.holds.text,
                with_values(operation, requirement.holds.text, &bound.integers)
            )),
            Ok(_) => {}
            Err(e) => reasons.push(format!("`{}` {e}", requirement.holds.text)),
        }
    }
    for (param, &held) in operation.params.iter().zip(&bound.lens) {
        let Param::Buffer { name, len, .. } = param else {
            continue;
        };
        match len.eval(&bound.integers) {
            Ok(need) if need < 0 => reasons.push(format!(
                "buffer `{name}` would need {need} elements (`{}`); the arguments make it negative",
                len.text
            )),
            Ok(need) if (held as u64) < need as u64 => reasons.push(format!(
                "buffer `{name}` holds {held} elements but the kernel reads or writes {need} (`{}`{})",
                len.text,
                with_values(operation, len.text, &bound.integers)
            )),
            Ok(_) => {}
            Err(e) => reasons.push(format!("the length of `{name}`, `{}`, {e}", len.text)),
        }
    }
    reasons
}

/// `" with m = 3, n = 4"`: the integer arguments an expression names, for messages.
fn with_values(operation: &CustomOperation, text: &str, integers: &[i64]) -> String {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let named: Vec<String> = operation
        .params
        .iter()
        .zip(integers)
        .filter(|(p, _)| {
            matches!(p, Param::Scalar { ty, .. } if ty.is_integer()) && words.contains(&p.name())
        })
        .map(|(p, v)| format!("{} = {v}", p.name()))
        .collect();
    if named.is_empty() {
        String::new()
    } else {
        format!(" with {}", named.join(", "))
    }
}

/// The launch shape of `design` for `integers`: grid, block, dynamic shared memory.
fn launch_shape(
    kernel: &'static KernelInfo,
    design: &CustomDesign,
    integers: &[i64],
) -> Result<([u32; 3], [u32; 3], u32), Error> {
    let eval = |what: &str, expr: &crate::model::custom::Expr, max: i64| -> Result<u32, Error> {
        let value = expr
            .eval(integers)
            .map_err(|e| Error::invalid(kernel.name, format!("the {what}, `{}`, {e}", expr.text)))?;
        if value < 0 || value > max {
            return Err(Error::invalid(
                kernel.name,
                format!(
                    "the {what}, `{}`, is {value}; it must be between 0 and {max}",
                    expr.text
                ),
            ));
        }
        Ok(value as u32)
    };
    let grid_max = [i32::MAX as i64, 65535, 65535];
    let block_max = [1024, 1024, 64];
    let axes = ["x", "y", "z"];
    let mut grid = [0u32; 3];
    let mut block = [0u32; 3];
    for i in 0..3 {
        grid[i] = eval(&format!("grid {}", axes[i]), &design.grid[i], grid_max[i])?;
        block[i] = eval(&format!("block {}", axes[i]), &design.block[i], block_max[i])?;
    }
    let threads = block.iter().map(|&b| b as u64).product::<u64>();
    if threads > 1024 {
        return Err(Error::invalid(
            kernel.name,
            format!("the block has {threads} threads ({block:?}); a block holds at most 1024"),
        ));
    }
    let shared = eval("dynamic shared memory", &design.shared_memory, u32::MAX as i64)?;
    Ok((grid, block, shared))
}

/// Runs user kernel `kernel` on `args` (on the stream `args` were made for): binds the arguments
/// to its parameters by name, checks every requirement and buffer length, computes the launch
/// shape and launches. An empty grid (a dimension of 0) launches nothing.
pub fn launch(kernel: &'static KernelInfo, args: &mut Args<'_>) -> Result<(), Error> {
    let Some((operation, design)) = parts(kernel) else {
        return Err(Error::invalid(
            kernel.name,
            format!(
                "this is a {} kernel, not a user kernel; run it through its operation's API",
                kernel.operation.kind()
            ),
        ));
    };
    let stream = args.stream.clone();
    let props = device::props(stream.context())?;
    kernel.check_runnable(&props)?;
    let bound = args
        .bind(operation)
        .map_err(|reasons| Error::invalid(kernel.name, reasons.join("; ")))?;
    let problems = argument_problems(operation, design, &bound);
    if !problems.is_empty() {
        return Err(Error::invalid(kernel.name, problems.join("; ")));
    }
    let (grid, block, shared) = launch_shape(kernel, design, &bound.integers)?;
    if shared > props.max_shared_memory_per_block_optin {
        return Err(Error::UnsupportedDevice {
            kernel: kernel.name,
            message: format!(
                "needs {shared} bytes of dynamic shared memory per block; this device allows {}",
                props.max_shared_memory_per_block_optin
            ),
        });
    }
    if grid.contains(&0) || block.contains(&0) {
        return Ok(());
    }
    let function = kernel
        .image
        .any_function(stream.context(), kernel.entry, kernel.name, shared)?;
    check_signature(kernel, operation, &function.params)?;
    let (mut words, guards) = args.launch_words(&bound);
    // Each parameter's bytes start its own u64: little-endian, so a 4-byte scalar's bytes come
    // first, as the driver copies `size` bytes from each pointer.
    let mut pointers: Vec<*mut c_void> = words.iter_mut().map(|w| w as *mut u64 as *mut c_void).collect();
    // SAFETY: the function's parameters match the manifest's list in count and size
    // (check_signature); every pointer points at a live u64 holding that parameter's bytes; every
    // buffer holds at least the elements its length expression says the kernel touches.
    unsafe {
        result::launch_kernel(
            function.function.cu_function(),
            (grid[0], grid[1], grid[2]),
            (block[0], block[1], block[2]),
            shared,
            stream.cu_stream(),
            &mut pointers,
        )
    }
    .map_err(Error::driver("launching the user kernel"))?;
    drop(guards);
    Ok(())
}

/// Checks the driver's view of the entry's parameters against the manifest's list (the build's
/// `static_assert` already did; this catches an image that is not the one the build made).
fn check_signature(
    kernel: &'static KernelInfo,
    operation: &CustomOperation,
    params: &[(usize, usize)],
) -> Result<(), Error> {
    let sizes: Vec<usize> = operation.params.iter().map(param_bytes).collect();
    let found: Vec<usize> = params.iter().map(|(_, size)| *size).collect();
    if sizes != found {
        return Err(Error::AbiMismatch {
            kernel: kernel.name,
            message: format!(
                "the manifest lists parameters of {sizes:?} bytes but the entry `{}` takes {found:?}",
                kernel.entry.to_string_lossy()
            ),
        });
    }
    Ok(())
}

fn param_bytes(param: &Param) -> usize {
    match param {
        Param::Scalar { ty, .. } => ty.bytes(),
        Param::Buffer { .. } => 8,
    }
}
