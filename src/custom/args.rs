//! A user kernel's arguments by name: the problem discovery checks and the values a launch binds
//! to the kernel's parameter list.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use super::Bound;
use crate::model::custom::{CustomOperation, Param, ScalarType};
use crate::model::DType;
use crate::types::Element;

/// One argument.
pub enum Value<'a> {
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    Buffer(Buffer<'a>),
}

/// A device buffer argument, its element type and length known.
pub struct Buffer<'a> {
    pub(crate) element: DType,
    pub(crate) len: usize,
    memory: Memory<'a>,
}

enum Memory<'a> {
    Read(Box<dyn ErasedRead + 'a>),
    Write(Box<dyn ErasedWrite + 'a>),
}

/// `DevicePtr<T>` with `T` erased.
trait ErasedRead {
    fn pointer<'s>(&'s self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>);
}

/// `DevicePtrMut<T>` with `T` erased.
trait ErasedWrite {
    fn pointer<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>);
}

struct ReadOf<'a, T>(&'a dyn DevicePtr<T>);
struct WriteOf<'a, T>(&'a mut dyn DevicePtrMut<T>);

impl<T> ErasedRead for ReadOf<'_, T> {
    fn pointer<'s>(&'s self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        self.0.device_ptr(stream)
    }
}

impl<T> ErasedWrite for WriteOf<'_, T> {
    fn pointer<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        self.0.device_ptr_mut(stream)
    }
}

impl Buffer<'_> {
    /// Whether it was given with `output` (the kernel may write it).
    pub(crate) fn writable(&self) -> bool {
        matches!(self.memory, Memory::Write(_))
    }

    /// The device address, with cudarc's guard that orders the stream after the buffer's last use
    /// (a reading or a writing one, as the buffer was given).
    pub(crate) fn pointer<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        match &mut self.memory {
            Memory::Read(read) => read.pointer(stream),
            Memory::Write(write) => write.pointer(stream),
        }
    }
}

impl Value<'_> {
    /// The type the manifest would spell, for messages.
    fn describe(&self) -> String {
        match self {
            Value::I32(_) => "an i32".into(),
            Value::I64(_) => "an i64".into(),
            Value::U32(_) => "a u32".into(),
            Value::U64(_) => "a u64".into(),
            Value::F32(_) => "an f32".into(),
            Value::F64(_) => "an f64".into(),
            Value::Buffer(b) => format!(
                "a{} buffer of {}",
                if b.writable() { " writable" } else { " read-only" },
                b.element
            ),
        }
    }

    fn scalar_type(&self) -> Option<ScalarType> {
        Some(match self {
            Value::I32(_) => ScalarType::I32,
            Value::I64(_) => ScalarType::I64,
            Value::U32(_) => ScalarType::U32,
            Value::U64(_) => ScalarType::U64,
            Value::F32(_) => ScalarType::F32,
            Value::F64(_) => ScalarType::F64,
            Value::Buffer(_) => return None,
        })
    }

    /// The value as expressions see it (integers only).
    fn integer(&self) -> i64 {
        match *self {
            Value::I32(v) => v as i64,
            Value::I64(v) => v,
            Value::U32(v) => v as i64,
            // Above i64::MAX saturates: an expression then sees a huge value and refuses it.
            Value::U64(v) => i64::try_from(v).unwrap_or(i64::MAX),
            _ => 0,
        }
    }

    /// A scalar's bytes, little-endian in the low bytes of a u64 (the launch copies its size).
    pub(crate) fn bits(&self) -> u64 {
        match *self {
            Value::I32(v) => v as u32 as u64,
            Value::I64(v) => v as u64,
            Value::U32(v) => v as u64,
            Value::U64(v) => v,
            Value::F32(v) => v.to_bits() as u64,
            Value::F64(v) => v.to_bits(),
            Value::Buffer(_) => 0,
        }
    }
}

/// A scalar argument type.
pub trait ScalarArg: Copy {
    fn value<'a>(self) -> Value<'a>;
}

macro_rules! scalar_arg {
    ($($t:ty => $variant:ident),*) => {$(
        impl ScalarArg for $t {
            fn value<'a>(self) -> Value<'a> {
                Value::$variant(self)
            }
        }
    )*};
}
scalar_arg!(i32 => I32, i64 => I64, u32 => U32, u64 => U64, f32 => F32, f64 => F64);

/// Named arguments of a user kernel, for one stream: the problem discovery checks
/// ([`crate::Registry::get_user_kernels`]) and what [`super::launch`] binds.
pub struct Args<'a> {
    pub(crate) stream: &'a Arc<CudaStream>,
    pub(crate) compute_capability: Option<u32>,
    values: Vec<(&'a str, Value<'a>)>,
}

impl<'a> Args<'a> {
    /// Arguments for a launch on `stream` (discovery also checks its device's compute capability).
    pub fn new(stream: &'a Arc<CudaStream>) -> Self {
        let compute_capability = crate::device::props(stream.context())
            .ok()
            .map(|p| p.compute_capability);
        Args {
            stream,
            compute_capability,
            values: Vec::new(),
        }
    }

    /// Adds or replaces argument `name`.
    pub fn value(mut self, name: &'a str, value: Value<'a>) -> Self {
        self.values.retain(|(n, _)| *n != name);
        self.values.push((name, value));
        self
    }

    /// A scalar argument (`i32`, `i64`, `u32`, `u64`, `f32`, `f64`).
    pub fn scalar(self, name: &'a str, value: impl ScalarArg) -> Self {
        self.value(name, value.value())
    }

    /// A buffer the kernel reads.
    pub fn input<T: Element>(self, name: &'a str, buffer: &'a dyn DevicePtr<T>) -> Self {
        let len = buffer.len();
        self.value(
            name,
            Value::Buffer(Buffer {
                element: T::DTYPE,
                len,
                memory: Memory::Read(Box::new(ReadOf(buffer))),
            }),
        )
    }

    /// A buffer the kernel writes (or reads and writes).
    pub fn output<T: Element>(self, name: &'a str, buffer: &'a mut dyn DevicePtrMut<T>) -> Self {
        let len = buffer.len();
        self.value(
            name,
            Value::Buffer(Buffer {
                element: T::DTYPE,
                len,
                memory: Memory::Write(Box::new(WriteOf(buffer))),
            }),
        )
    }

    /// Matches the arguments to `operation`'s parameters by name; `Err` lists every argument that
    /// is missing, of the wrong type or unknown.
    pub(crate) fn bind(&self, operation: &CustomOperation) -> Result<Bound, Vec<String>> {
        let mut reasons = Vec::new();
        let mut order = Vec::with_capacity(operation.params.len());
        let mut lens = Vec::with_capacity(operation.params.len());
        let mut integers = Vec::with_capacity(operation.params.len());
        for param in operation.params {
            let name = param.name();
            let Some((index, (_, value))) = self.values.iter().enumerate().find(|(_, (n, _))| *n == name)
            else {
                reasons.push(format!("argument `{name}` is missing ({})", expected(param)));
                continue;
            };
            let fits = match (param, value) {
                (Param::Scalar { ty, .. }, v) => v.scalar_type() == Some(*ty),
                (Param::Buffer { element, access, .. }, Value::Buffer(b)) => {
                    b.element == *element && (b.writable() || !access.writes())
                }
                _ => false,
            };
            if !fits {
                reasons.push(format!(
                    "argument `{name}` is {} but the kernel takes {}",
                    value.describe(),
                    expected(param)
                ));
                continue;
            }
            order.push(index);
            lens.push(match value {
                Value::Buffer(b) => b.len,
                _ => 0,
            });
            integers.push(value.integer());
        }
        for (name, _) in &self.values {
            if operation.param(name).is_none() {
                let names: Vec<&str> = operation.params.iter().map(|p| p.name()).collect();
                reasons.push(format!(
                    "the kernel has no parameter `{name}` (its parameters: {})",
                    names.join(", ")
                ));
            }
        }
        if reasons.is_empty() {
            Ok(Bound {
                order,
                lens,
                integers,
            })
        } else {
            Err(reasons)
        }
    }

    /// Each argument's launch word (a scalar's bytes, a buffer's address) in the order of
    /// `bound`, with the guards that must live until the kernel is enqueued.
    pub(crate) fn launch_words(&mut self, bound: &Bound) -> (Vec<u64>, Vec<SyncOnDrop<'_>>) {
        let stream: &CudaStream = self.stream;
        let mut by_index = vec![0u64; self.values.len()];
        let mut guards = Vec::new();
        for (index, (_, value)) in self.values.iter_mut().enumerate() {
            by_index[index] = match value {
                Value::Buffer(buffer) => {
                    let (ptr, guard) = buffer.pointer(stream);
                    guards.push(guard);
                    ptr
                }
                scalar => scalar.bits(),
            };
        }
        (bound.order.iter().map(|&i| by_index[i]).collect(), guards)
    }
}

/// What a parameter takes, for messages.
fn expected(param: &Param) -> String {
    match param {
        Param::Scalar { ty, .. } => format!("an {ty}"),
        Param::Buffer { element, access, .. } => match access {
            crate::model::custom::Access::Read => format!("a buffer of {element} (read)"),
            a => format!("a writable buffer of {element} ({a}; pass it with `output`)"),
        },
    }
}
