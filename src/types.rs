//! Element types and layout tags: the type-level half of a kernel's signature.
//!
//! A kernel's operand types and layouts are associated types of [`crate::GemmKernel`], so passing
//! an `f32` matrix to an f16 kernel, or a row-major view to a column-major operand, does not
//! compile.
//!
//! The 8-bit floats [`F8E4M3`] and [`F8E5M2`] are plain bit containers with host conversions; all
//! fp8 arithmetic happens on the device.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

use crate::model::{DType, Layout};

/// A Rust type that is the storage of a kernel operand.
pub trait Element: DeviceRepr + Copy + Send + Sync + 'static {
    const DTYPE: DType;
}

impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Element for half::bf16 {
    const DTYPE: DType = DType::Bf16;
}
impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for f64 {
    const DTYPE: DType = DType::F64;
}
impl Element for F8E4M3 {
    const DTYPE: DType = DType::E4m3;
}
impl Element for F8E5M2 {
    const DTYPE: DType = DType::E5m2;
}
impl Element for i8 {
    const DTYPE: DType = DType::S8;
}
impl Element for i32 {
    const DTYPE: DType = DType::S32;
}

/// A Rust type for the epilogue's `alpha` and `beta`: one per epilogue compute type (f16, f32, f64,
/// s32). bf16 and the fp8 types are storage types only, never a compute type, so they have none.
pub trait Scalar: Copy + Into<f64> + Send + Sync + 'static {
    const ZERO: Self;
}
impl Scalar for half::f16 {
    const ZERO: Self = half::f16::ZERO;
}
impl Scalar for f32 {
    const ZERO: Self = 0.0;
}
impl Scalar for f64 {
    const ZERO: Self = 0.0;
}
impl Scalar for i32 {
    const ZERO: Self = 0;
}

/// A layout as a type.
pub trait LayoutTag: Copy + Send + Sync + 'static {
    const LAYOUT: Layout;
}

/// Row-major: element (r, c) at `r * ld + c` (`t` in BLAS naming).
#[derive(Clone, Copy, Debug, Default)]
pub struct RowMajor;
/// Column-major: element (r, c) at `c * ld + r` (`n` in BLAS naming).
#[derive(Clone, Copy, Debug, Default)]
pub struct ColumnMajor;

impl LayoutTag for RowMajor {
    const LAYOUT: Layout = Layout::Row;
}
impl LayoutTag for ColumnMajor {
    const LAYOUT: Layout = Layout::Column;
}

/// CUTLASS's `ColumnMajorInterleaved<32>`: element (r, c) at `(c / 32) * ld + r * 32 + c % 32`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ColumnInterleaved32;
/// CUTLASS's `RowMajorInterleaved<32>` as its interleaved int8 GEMMs read B: element (r, c) at
/// `(r / 32) * ld + p(c) * 32 + r % 32`, where `p` reorders the columns of each group of 32
/// ([`crate::verify::reordered_column`], CUTLASS's `reorder_column<32>`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RowInterleaved32;

impl LayoutTag for ColumnInterleaved32 {
    const LAYOUT: Layout = Layout::ColumnInterleaved32;
}
impl LayoutTag for RowInterleaved32 {
    const LAYOUT: Layout = Layout::RowInterleaved32;
}

// ---------------------------------------------------------------------------------------------
// 8-bit floats
// ---------------------------------------------------------------------------------------------

/// An 8-bit float format: 1 sign bit, then exponent, then `mantissa_bits` bits.
struct Minifloat {
    mantissa_bits: u32,
    bias: i32,
    /// Bits of the largest finite magnitude.
    max_bits: u8,
    /// IEEE-style specials: the all-ones exponent holds ±infinity and NaNs (e5m2). Without them
    /// (e4m3) that exponent holds finite values and only S.1111.111 is NaN.
    ieee_specials: bool,
}

/// The canonical NaN of both formats (what `cvt` and CUTLASS produce).
const CANONICAL_NAN: u8 = 0x7f;

const E4M3: Minifloat = Minifloat {
    mantissa_bits: 3,
    bias: 7,
    max_bits: 0x7e,
    ieee_specials: false,
};

const E5M2: Minifloat = Minifloat {
    mantissa_bits: 2,
    bias: 15,
    max_bits: 0x7b,
    ieee_specials: true,
};

/// 2^n for n in f64's normal exponent range, exactly.
fn exp2i(n: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&n));
    f64::from_bits(((n + 1023) as u64) << 52)
}

impl Minifloat {
    fn decode(&self, bits: u8) -> f64 {
        let m = self.mantissa_bits;
        let magnitude = bits & 0x7f;
        let exponent = i32::from(magnitude >> m);
        let mantissa = f64::from(magnitude & ((1 << m) - 1));
        let all_ones = i32::from(0x7f_u8 >> m);
        let value = if self.ieee_specials && exponent == all_ones {
            if mantissa == 0.0 {
                f64::INFINITY
            } else {
                return f64::NAN;
            }
        } else if !self.ieee_specials && magnitude == 0x7f {
            return f64::NAN;
        } else if exponent == 0 {
            // Subnormal (or zero): mantissa · 2^(1 − bias − m).
            mantissa * exp2i(1 - self.bias - m as i32)
        } else {
            (mantissa + f64::from(1u8 << m)) * exp2i(exponent - self.bias - m as i32)
        };
        if bits & 0x80 != 0 {
            -value
        } else {
            value
        }
    }

    /// Round to nearest, ties to even; magnitudes beyond the largest finite value (infinities
    /// included) saturate to it; NaN gives the canonical NaN. This is `cvt.rn.satfinite`.
    fn encode(&self, v: f64) -> u8 {
        if v.is_nan() {
            return CANONICAL_NAN;
        }
        let sign = if v.is_sign_negative() { 0x80 } else { 0 };
        let a = v.abs();
        if a >= self.decode(self.max_bits) {
            return sign | self.max_bits;
        }
        let m = self.mantissa_bits as i32;
        let min_normal_exponent = 1 - self.bias;
        // The binade of `a` (subnormals share the lowest normal binade's quantum).
        let exponent = if a < exp2i(min_normal_exponent) {
            min_normal_exponent
        } else {
            ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
        };
        // Integer significand in units of the binade's quantum: 0 ..= 2^(m+1). Scaling by a power
        // of two is exact, so this is the one rounding.
        let significand = (a / exp2i(exponent - m)).round_ties_even() as u32;
        // (exponent + bias − 1) · 2^m + significand: a subnormal for the lowest binade's
        // significands below 2^m, and a carry into the next binade for 2^(m+1). Never beyond the
        // largest finite value, as `a` is below it and every binade ends on a representable value.
        let magnitude = (((exponent + self.bias - 1) as u32) << m) + significand;
        sign | magnitude as u8
    }
}

macro_rules! float8 {
    ($(#[$doc:meta])* $name:ident, $format:ident, $dtype:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
        pub struct $name(pub u8);

        impl $name {
            /// +0.
            pub const ZERO: Self = Self(0);
            /// The canonical NaN, `0x7f` (what conversions of a NaN give).
            pub const NAN: Self = Self(CANONICAL_NAN);
            /// The largest finite value.
            pub const MAX: Self = Self($format.max_bits);
            /// The most negative finite value.
            pub const MIN: Self = Self(0x80 | $format.max_bits);

            /// The value with these bits.
            pub const fn from_bits(bits: u8) -> Self {
                Self(bits)
            }

            /// The bits of the value.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            #[doc = concat!("The nearest ", $dtype, " to `v`, as NVIDIA's conversion with saturation")]
            /// (`__nv_cvt_float_to_fp8(v, __NV_SATFINITE, ..)`, PTX `cvt.rn.satfinite`, which CUTLASS
            /// uses to store fp8 results) does it: round to nearest, ties to even; magnitudes beyond
            /// [`Self::MAX`], infinities included, saturate to ±`MAX`; NaN gives [`Self::NAN`].
            /// `v` is rounded once (no detour through a narrower type).
            pub fn from_f64(v: f64) -> Self {
                Self($format.encode(v))
            }

            /// As [`Self::from_f64`] (f32 to f64 is exact, so this rounds once too).
            pub fn from_f32(v: f32) -> Self {
                Self::from_f64(f64::from(v))
            }

            /// The value, exactly.
            pub fn to_f64(self) -> f64 {
                $format.decode(self.0)
            }

            /// The value, exactly (every fp8 value is an f32).
            pub fn to_f32(self) -> f32 {
                self.to_f64() as f32
            }

            /// True for the NaN bit patterns.
            pub fn is_nan(self) -> bool {
                self.to_f64().is_nan()
            }
        }

        impl From<$name> for f32 {
            fn from(v: $name) -> f32 {
                v.to_f32()
            }
        }

        impl From<$name> for f64 {
            fn from(v: $name) -> f64 {
                v.to_f64()
            }
        }

        // SAFETY: `repr(transparent)` over `u8`: one byte, no padding, any bit pattern is a valid
        // value, so the device's bytes can be read as it and it can be copied to the device as is.
        unsafe impl DeviceRepr for $name {}
        // SAFETY: all-zero bits are a valid value (+0).
        unsafe impl ValidAsZeroBits for $name {}
    };
}

float8!(
    /// fp8 e4m3 ("e4m3fn"; CUTLASS's `float_e4m3_t`, CUDA's `__nv_fp8_e4m3`): 1 sign, 4 exponent
    /// bits (bias 7), 3 mantissa bits. No infinities: the only NaNs are S.1111.111 (`0x7f`,
    /// `0xff`), so the largest finite value is S.1111.110 = ±448. Smallest subnormal 2^-9.
    ///
    /// Equality is bitwise: `NAN == NAN`, and +0 differs from −0.
    F8E4M3,
    E4M3,
    "e4m3"
);

float8!(
    /// fp8 e5m2 (CUTLASS's `float_e5m2_t`, CUDA's `__nv_fp8_e5m2`): 1 sign, 5 exponent bits
    /// (bias 15), 2 mantissa bits, IEEE-like: S.11111.00 is ±infinity and S.11111.xx (xx ≠ 0) NaN;
    /// the largest finite value is ±57344. Smallest subnormal 2^-16.
    ///
    /// Conversions saturate like the device's (see [`F8E5M2::from_f64`]), so no conversion gives
    /// an infinity, though [`F8E5M2::INFINITY`] decodes to one. Equality is bitwise.
    F8E5M2,
    E5M2,
    "e5m2"
);

impl F8E5M2 {
    /// +infinity (`0x7c`).
    pub const INFINITY: Self = Self(0x7c);
    /// −infinity (`0xfc`).
    pub const NEG_INFINITY: Self = Self(0xfc);
}
