//! Elementwise operations (`kind: elementwise` kernels): `d = scale·act(alpha·x ⊕ beta·y)` or, unary,
//! `d = scale·act(alpha·x)` — activations, scaling, conversion between element types (8-bit floats
//! with a scale), add / sub / mul / min / max of two tensors or of a tensor and a broadcast row
//! vector, column vector or scalar, and `a·X + b·Y`.
//!
//! Operands are `[batch, rows, cols]` views ([`Tensor`], [`TensorMut`]) with unit column stride
//! and any row and batch strides; y is a [`Broadcast`] whose strides may be 0. Each kernel fixes
//! its types, ⊕ and activation; run it by name (`kernels::<name>::run`), or let [`run`] find the
//! kernel of an [`Op`] and the arguments' types. Discovery is as for every operation:
//! `REGISTRY.get_kernels(&ElementwiseProblem::…, filter)`.
//!
//! Contiguous operands are merged into one row and read 16 bytes at a time, whatever its length
//! (the last partial vector is done element by element in the same launch); padded rows that are
//! not whole vectors, and misaligned addresses, run the kernel's scalar entry. Conversions round to nearest; 8-bit floats saturate to
//! their largest finite value; integers are clamped to their range.

mod plan;

pub use plan::{FastDiv, Operand, Params, Plan, Scalars, PARAMS_BYTES};

use std::ffi::c_void;

use cudarc::driver::{result, CudaStream, DevicePtr, DevicePtrMut};

use crate::device;
use crate::error::Error;
use crate::kernel::{HostCode, KernelInfo, Problem, Want};
use crate::model::elementwise::{Combine, ElementwiseOperation};
use crate::model::{Activation, DType, OperationKind};
use crate::registry::Registry;
use crate::types::Element;

/// Extents of a view: `batch` matrices of `rows × cols`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub batch: usize,
    pub rows: usize,
    pub cols: usize,
}

impl Shape {
    pub fn new(batch: usize, rows: usize, cols: usize) -> Self {
        Shape { batch, rows, cols }
    }

    fn array(self) -> [usize; 3] {
        [self.batch, self.rows, self.cols]
    }
}

/// A `[batch, rows, cols]` view of device memory read by a kernel; contiguous unless
/// [`Tensor::with_strides`] says otherwise. Columns are adjacent elements.
pub struct Tensor<'a, T> {
    buffer: &'a dyn DevicePtr<T>,
    shape: Shape,
    /// Batch and row strides, in elements.
    strides: [usize; 2],
}

impl<'a, T> Tensor<'a, T> {
    /// A contiguous view of `shape` at the start of `buffer`.
    pub fn new(buffer: &'a dyn DevicePtr<T>, shape: Shape) -> Self {
        Tensor {
            buffer,
            shape,
            strides: [shape.rows * shape.cols, shape.cols],
        }
    }

    /// The whole buffer as one row.
    pub fn flat(buffer: &'a dyn DevicePtr<T>) -> Self {
        Tensor::new(buffer, Shape::new(1, 1, buffer.len()))
    }

    /// A contiguous `rows × cols` matrix.
    pub fn matrix(buffer: &'a dyn DevicePtr<T>, rows: usize, cols: usize) -> Self {
        Tensor::new(buffer, Shape::new(1, rows, cols))
    }

    /// Batch and row strides in elements (a row stride above `cols` skips padding; a batch stride
    /// of 0 reads one matrix for every batch).
    pub fn with_strides(mut self, batch_stride: usize, row_stride: usize) -> Self {
        self.strides = [batch_stride, row_stride];
        self
    }
}

/// A `[batch, rows, cols]` view of device memory a kernel writes.
pub struct TensorMut<'a, T> {
    buffer: &'a mut dyn DevicePtrMut<T>,
    shape: Shape,
    strides: [usize; 2],
}

impl<'a, T> TensorMut<'a, T> {
    pub fn new(buffer: &'a mut dyn DevicePtrMut<T>, shape: Shape) -> Self {
        TensorMut {
            buffer,
            shape,
            strides: [shape.rows * shape.cols, shape.cols],
        }
    }

    pub fn flat(buffer: &'a mut dyn DevicePtrMut<T>) -> Self {
        let len = buffer.len();
        TensorMut::new(buffer, Shape::new(1, 1, len))
    }

    pub fn matrix(buffer: &'a mut dyn DevicePtrMut<T>, rows: usize, cols: usize) -> Self {
        TensorMut::new(buffer, Shape::new(1, rows, cols))
    }

    /// Batch and row strides in elements; rows and batches must not overlap.
    pub fn with_strides(mut self, batch_stride: usize, row_stride: usize) -> Self {
        self.strides = [batch_stride, row_stride];
        self
    }
}

/// The second operand, read over d's shape with its own strides, any of which may be 0.
pub struct Broadcast<'a, T> {
    buffer: &'a dyn DevicePtr<T>,
    /// Batch, row, column strides in elements.
    strides: [usize; 3],
    /// A full tensor's own shape, which must be d's.
    shape: Option<Shape>,
}

impl<'a, T> Broadcast<'a, T> {
    /// A tensor of d's shape.
    pub fn tensor(t: Tensor<'a, T>) -> Self {
        Broadcast {
            buffer: t.buffer,
            strides: [t.strides[0], t.strides[1], 1],
            shape: Some(t.shape),
        }
    }

    /// A row vector of `cols` elements, the same for every row and batch (a bias).
    pub fn row(buffer: &'a dyn DevicePtr<T>) -> Self {
        Broadcast::strided(buffer, [0, 0, 1])
    }

    /// A column vector of `rows` elements, one per row, the same for every batch.
    pub fn column(buffer: &'a dyn DevicePtr<T>) -> Self {
        Broadcast::strided(buffer, [0, 1, 0])
    }

    /// One element for the whole view (the first of `buffer`).
    pub fn scalar(buffer: &'a dyn DevicePtr<T>) -> Self {
        Broadcast::strided(buffer, [0, 0, 0])
    }

    /// Any strides (batch, row, column), 0 where y is broadcast along that dimension.
    pub fn strided(buffer: &'a dyn DevicePtr<T>, strides: [usize; 3]) -> Self {
        Broadcast {
            buffer,
            strides,
            shape: None,
        }
    }
}

/// The arguments of one elementwise kernel: `d = scale·act(alpha·x ⊕ beta·y)`.
pub struct Elementwise<'a, X, Y, D> {
    pub x: Tensor<'a, X>,
    /// None for a unary kernel.
    pub y: Option<Broadcast<'a, Y>>,
    pub d: TensorMut<'a, D>,
    pub alpha: f64,
    pub beta: f64,
    pub scale: f64,
    /// leaky_relu's slope (unused by the other activations).
    pub activation_arg: f64,
}

impl<'a, X, D> Elementwise<'a, X, X, D> {
    /// `d = act(x)` (alpha = scale = 1). A unary kernel reads no y; its y type is x's.
    pub fn unary(x: Tensor<'a, X>, d: TensorMut<'a, D>) -> Self {
        Elementwise {
            x,
            y: None,
            d,
            alpha: 1.0,
            beta: 1.0,
            scale: 1.0,
            activation_arg: 0.0,
        }
    }
}

impl<'a, X, Y, D> Elementwise<'a, X, Y, D> {
    /// `d = act(x ⊕ y)` (alpha = beta = scale = 1).
    pub fn binary(x: Tensor<'a, X>, y: Broadcast<'a, Y>, d: TensorMut<'a, D>) -> Self {
        Elementwise {
            x,
            y: Some(y),
            d,
            alpha: 1.0,
            beta: 1.0,
            scale: 1.0,
            activation_arg: 0.0,
        }
    }

    pub fn alpha(mut self, alpha: f64) -> Self {
        self.alpha = alpha;
        self
    }

    pub fn beta(mut self, beta: f64) -> Self {
        self.beta = beta;
        self
    }

    /// Multiplies the result before it is stored (an 8-bit float output's quantisation scale).
    pub fn scale(mut self, scale: f64) -> Self {
        self.scale = scale;
        self
    }

    /// leaky_relu's slope.
    pub fn slope(mut self, slope: f64) -> Self {
        self.activation_arg = slope;
        self
    }
}

/// What an elementwise kernel computes: ⊕ (none: unary) and the activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op {
    pub combine: Option<Combine>,
    pub activation: Activation,
}

impl Op {
    /// `act(alpha·x)`; [`Activation::Identity`] scales and converts.
    pub fn unary(activation: Activation) -> Self {
        Op {
            combine: None,
            activation,
        }
    }

    /// `alpha·x ⊕ beta·y`.
    pub fn binary(combine: Combine) -> Self {
        Op {
            combine: Some(combine),
            activation: Activation::Identity,
        }
    }

    /// Applies `activation` after ⊕.
    pub fn then(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }
}

/// An elementwise problem as discovery sees it: the operation and the operands' types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElementwiseProblem {
    pub op: Op,
    pub x: DType,
    /// None for a unary problem.
    pub y: Option<DType>,
    pub d: DType,
    pub compute_capability: Option<u32>,
}

impl ElementwiseProblem {
    pub fn new(op: Op, x: DType, y: Option<DType>, d: DType) -> Self {
        ElementwiseProblem {
            op,
            x,
            y,
            d,
            compute_capability: None,
        }
    }

    pub fn on_compute_capability(mut self, cc: u32) -> Self {
        self.compute_capability = Some(cc);
        self
    }
}

impl Problem for ElementwiseProblem {
    fn operation(&self) -> OperationKind {
        OperationKind::Elementwise
    }

    fn compute_capability(&self) -> Option<u32> {
        self.compute_capability
    }

    fn rules(&self, kernel: &KernelInfo, want: &mut impl Want) {
        let Some(k) = kernel.operation.elementwise() else {
            want(false, &|| "not an elementwise kernel".into());
            return;
        };
        let op_name = |c: Option<Combine>| c.map_or("none (unary)", Combine::manifest_name);
        want(k.combine == self.op.combine, &|| {
            format!(
                "it computes ⊕ = {}, not {}",
                op_name(k.combine),
                op_name(self.op.combine)
            )
        });
        want(k.activation == self.op.activation, &|| {
            format!("its activation is {}, not {}", k.activation, self.op.activation)
        });
        want(k.x == self.x, &|| {
            format!("x is {} but the kernel reads {}", self.x, k.x)
        });
        if self.op.combine.is_some() {
            want(k.y == self.y, &|| {
                format!(
                    "y is {} but the kernel reads {}",
                    self.y.map_or("absent".into(), |t| t.to_string()),
                    k.y.map_or("none".into(), |t| t.to_string())
                )
            });
        }
        want(k.d == self.d, &|| {
            format!("d is {} but the kernel writes {}", self.d, k.d)
        });
    }
}

fn operation_of(
    kernel: &'static KernelInfo,
) -> Result<(&'static ElementwiseOperation, &'static std::ffi::CStr), Error> {
    match (&kernel.operation, kernel.host) {
        (crate::model::Operation::Elementwise(op), HostCode::Elementwise { scalar_entry, .. }) => {
            Ok((op, scalar_entry))
        }
        _ => Err(Error::invalid(
            kernel.name,
            format!(
                "this is a {} kernel, not an elementwise one; run it through its operation's API",
                kernel.operation.kind()
            ),
        )),
    }
}

/// Runs elementwise kernel `kernel` on `args` on `stream` (stream-ordered, no synchronisation).
/// The types of `args` must be the kernel's (`kernels::<name>::run` makes sure); shapes, strides,
/// lengths and the broadcast are checked first; on error nothing is launched. An empty view
/// launches nothing.
pub fn launch<X: Element, Y: Element, D: Element>(
    kernel: &'static KernelInfo,
    stream: &CudaStream,
    args: Elementwise<'_, X, Y, D>,
) -> Result<(), Error> {
    let (op, scalar_entry) = operation_of(kernel)?;
    let mut wrong = Vec::new();
    if op.x != X::DTYPE {
        wrong.push(format!("x is {} but the kernel reads {}", X::DTYPE, op.x));
    }
    if op.d != D::DTYPE {
        wrong.push(format!("d is {} but the kernel writes {}", D::DTYPE, op.d));
    }
    match (op.y, &args.y) {
        (Some(t), Some(_)) if t != Y::DTYPE => {
            wrong.push(format!("y is {} but the kernel reads {t}", Y::DTYPE))
        }
        (Some(_), None) => wrong.push(format!(
            "the kernel computes {}: give y (Elementwise::binary)",
            op.formula()
        )),
        (None, Some(_)) => wrong.push("the kernel is unary (it reads no y): use Elementwise::unary".into()),
        _ => {}
    }
    let shape = args.d.shape;
    if args.x.shape != shape {
        wrong.push(format!("x's shape {:?} is not d's {:?}", args.x.shape, shape));
    }
    if let Some(Broadcast { shape: Some(s), .. }) = &args.y {
        if *s != shape {
            wrong.push(format!("y's shape {s:?} is not d's {shape:?}"));
        }
    }
    if !wrong.is_empty() {
        return Err(Error::invalid(kernel.name, wrong.join("; ")));
    }
    let props = device::props(stream.context())?;
    kernel.check_runnable(&props)?;
    let design = kernel
        .design
        .as_elementwise()
        .ok_or_else(|| Error::invalid(kernel.name, "the kernel has no elementwise design"))?;
    let (x_address, _x_guard) = args.x.buffer.device_ptr(stream);
    let x = Operand {
        address: x_address,
        len: args.x.buffer.len(),
        bytes: std::mem::size_of::<X>(),
        strides: [args.x.strides[0], args.x.strides[1], 1],
    };
    let y_guard;
    let y = match &args.y {
        Some(b) => {
            let (address, guard) = b.buffer.device_ptr(stream);
            y_guard = Some(guard);
            Some(Operand {
                address,
                len: b.buffer.len(),
                bytes: std::mem::size_of::<Y>(),
                strides: b.strides,
            })
        }
        None => {
            y_guard = None;
            None
        }
    };
    let d_strides = [args.d.strides[0], args.d.strides[1], 1];
    let d_len = args.d.buffer.len();
    let (d_address, _d_guard) = args.d.buffer.device_ptr_mut(stream);
    let d = Operand {
        address: d_address,
        len: d_len,
        bytes: std::mem::size_of::<D>(),
        strides: d_strides,
    };
    let scalars = Scalars {
        alpha: args.alpha,
        beta: args.beta,
        scale: args.scale,
        activation_arg: args.activation_arg,
    };
    let plan = plan::plan(shape.array(), x, y, d, scalars, design)
        .map_err(|message| Error::invalid(kernel.name, message))?;
    let Some(plan) = plan else {
        return Ok(());
    };
    let ctx = stream.context();
    ctx.bind_to_thread()
        .map_err(Error::driver("binding the context"))?;
    let entry = if plan.vector { kernel.entry } else { scalar_entry };
    let function = kernel.image.function(ctx, entry, kernel.name, 0)?;
    if function.params.first().map(|p| p.1) != Some(PARAMS_BYTES) {
        return Err(Error::AbiMismatch {
            kernel: kernel.name,
            message: format!(
                "the entry takes {:?} (offset, bytes); the runtime's Params are {PARAMS_BYTES} bytes",
                function.params
            ),
        });
    }
    let mut params = plan.params;
    let mut pointers = [&mut params as *mut Params as *mut c_void];
    // SAFETY: the entry takes one parameter of PARAMS_BYTES bytes (checked), laid out as Params
    // (the glue's static_assert and this crate's fix the same size); every address comes from a
    // live buffer held for `stream` whose length covers the view (plan::plan checked).
    unsafe {
        result::launch_kernel(
            function.function.cu_function(),
            (plan.grid[0], plan.grid[1], 1),
            (design.threads, 1, 1),
            0,
            stream.cu_stream(),
            &mut pointers,
        )
    }
    .map_err(Error::driver("launching the elementwise kernel"))?;
    drop(y_guard);
    Ok(())
}

/// Runs `op` on `args` with the kernel of this crate whose types are the arguments' (see
/// [`run_in`]).
pub fn run<X: Element, Y: Element, D: Element>(
    stream: &CudaStream,
    op: Op,
    args: Elementwise<'_, X, Y, D>,
) -> Result<&'static KernelInfo, Error> {
    run_in(&crate::kernels::REGISTRY, stream, op, args)
}

/// Runs `op` on `args` with the kernel of `registry` (a downstream crate's own) that computes it
/// for the arguments' types; returns it. Without one, the error lists the kernels of `op` there are.
pub fn run_in<X: Element, Y: Element, D: Element>(
    registry: &Registry,
    stream: &CudaStream,
    op: Op,
    args: Elementwise<'_, X, Y, D>,
) -> Result<&'static KernelInfo, Error> {
    let y = args.y.as_ref().map(|_| Y::DTYPE);
    let problem = ElementwiseProblem::new(op, X::DTYPE, y, D::DTYPE);
    let Some(kernel) = registry.get_kernels(&problem, |_| true).next() else {
        let same_op: Vec<String> = registry
            .elementwise()
            .iter()
            .filter_map(|k| k.operation.elementwise())
            .filter(|k| k.combine == op.combine && k.activation == op.activation)
            .map(|k| k.formula())
            .collect();
        let wanted = ElementwiseOperation {
            x: X::DTYPE,
            y,
            d: D::DTYPE,
            combine: op.combine,
            activation: op.activation,
        };
        return Err(Error::invalid(
            "elementwise",
            format!(
                "no compiled kernel computes {}; add a `kind: elementwise` entry to the manifest. Of this \
                 operation there are: {}",
                wanted.formula(),
                if same_op.is_empty() {
                    "none".into()
                } else {
                    same_op.join(", ")
                }
            ),
        ));
    };
    launch(kernel, stream, args)?;
    Ok(kernel)
}
