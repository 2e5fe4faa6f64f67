//! Elementwise kernels (`kind: elementwise`): `d = convert_d(scale · act(alpha·x ⊕ beta·y))`, or
//! without y `d = convert_d(scale · act(alpha·x))`, over a `[batch, rows, cols]` view whose y may
//! be broadcast (see the runtime's `elementwise` module). What a kernel computes is fixed at build
//! time (types, ⊕, activation); shapes, strides, broadcasting and the scalars are run-time.

use alloc::format;
use alloc::string::String;
use core::fmt;

use crate::{Activation, DType};

spelled_enum! {
    /// How y enters a binary elementwise kernel: `alpha·x ⊕ beta·y`.
    Combine {
        Add = "add",
        Sub = "sub",
        Mul = "mul",
        Min = "min",
        Max = "max",
    }
}

impl Combine {
    /// The glue's `cutlass_aot::elementwise::Combine` enumerator.
    pub fn cpp(self) -> &'static str {
        match self {
            Combine::Add => "Add",
            Combine::Sub => "Sub",
            Combine::Mul => "Mul",
            Combine::Min => "Min",
            Combine::Max => "Max",
        }
    }
}

/// What an elementwise kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElementwiseOperation {
    pub x: DType,
    /// y's element type; `None` for a unary kernel.
    pub y: Option<DType>,
    pub d: DType,
    /// `None`: unary.
    pub combine: Option<Combine>,
    pub activation: Activation,
}

impl ElementwiseOperation {
    /// The type arithmetic runs in: f64 where an operand is f64 or s32 (whose values f32 cannot
    /// hold exactly), else f32.
    pub fn compute(&self) -> DType {
        let wide = |t: DType| matches!(t, DType::F64 | DType::S32);
        if wide(self.x) || self.y.is_some_and(wide) || wide(self.d) {
            DType::F64
        } else {
            DType::F32
        }
    }

    /// Elements per access of the vector entry: 16 bytes of the widest operand.
    pub fn vector_elements(&self) -> u32 {
        let widest = [Some(self.x), self.y, Some(self.d)]
            .into_iter()
            .flatten()
            .map(DType::bits)
            .max()
            .unwrap_or(8);
        128 / widest
    }

    /// The formula, for documentation and messages: `d(f16) = relu(alpha·x(f16) + beta·y(f16))`.
    pub fn formula(&self) -> String {
        let inner = match (self.combine, self.y) {
            (Some(c), Some(y)) => {
                let op = match c {
                    Combine::Add => format!("alpha·x({}) + beta·y({y})", self.x),
                    Combine::Sub => format!("alpha·x({}) - beta·y({y})", self.x),
                    Combine::Mul => format!("alpha·x({}) · beta·y({y})", self.x),
                    Combine::Min => format!("min(alpha·x({}), beta·y({y}))", self.x),
                    Combine::Max => format!("max(alpha·x({}), beta·y({y}))", self.x),
                };
                op
            }
            _ => format!("alpha·x({})", self.x),
        };
        let activated = if self.activation == Activation::Identity {
            inner
        } else {
            format!("{}({inner})", self.activation)
        };
        format!("d({}) = scale·{activated}", self.d)
    }
}

impl fmt::Display for ElementwiseOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.formula())
    }
}

/// How an elementwise kernel is launched: `threads` per block, each moving `unroll` accesses of
/// `vector_elements` elements per step of a grid-stride loop, or in the scalar entry
/// `scalar_unroll` accesses of one element (one access where it walks narrow ragged rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElementwiseDesign {
    pub threads: u32,
    pub unroll: u32,
    pub vector_elements: u32,
    pub scalar_unroll: u32,
}
