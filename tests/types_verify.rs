//! CPU-only tests of the fp8 element types (`F8E4M3`, `F8E5M2`) and of the verification helpers
//! for every element type: conversions, device bytes, rounding, test data and tolerances.
//!
//! Expected values follow from the formats' definitions (e4m3: bias 7, 3 mantissa bits, only
//! S.1111.111 NaN; e5m2: bias 15, 2 mantissa bits, IEEE specials) and from conversions observed on
//! an H200 (`__nv_cvt_float_to_fp8(x, __NV_SATFINITE, ..)` and `cvt.rni.sat.s8.f32` over all 2^32
//! f32 bit patterns), not from running the code under test.

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use cutlass_aot::model::{DType, Design, EpilogueSpec, OpClass, Operation};
use cutlass_aot::verify;
use cutlass_aot::{kernels, Element, KernelInfo, Scalar, F8E4M3, F8E5M2};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// 2^n.
fn pow2(n: i32) -> f64 {
    2f64.powi(n)
}

/// The next f64 away from zero (for positive finite `v`).
fn up(v: f64) -> f64 {
    f64::from_bits(v.to_bits() + 1)
}

/// The next f64 towards zero (for positive `v`).
fn down(v: f64) -> f64 {
    f64::from_bits(v.to_bits() - 1)
}

/// Bits and values of every finite non-negative value of a format, ascending.
fn non_negative_finite(decode: impl Fn(u8) -> f64) -> Vec<(u8, f64)> {
    let mut all: Vec<(u8, f64)> = (0u8..0x80)
        .map(|b| (b, decode(b)))
        .filter(|(_, v)| v.is_finite())
        .collect();
    all.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap());
    all
}

/// Checks round-to-nearest-even at every decision boundary of a format: each midpoint of two
/// neighbours goes to the one with an even (low bit clear) pattern, and the f64 just beside the
/// midpoint to the nearer neighbour; the same mirrored for negative values and through f32.
fn check_boundaries(
    name: &str,
    decode: impl Fn(u8) -> f64,
    encode64: impl Fn(f64) -> u8,
    encode32: impl Fn(f32) -> u8,
) {
    let values = non_negative_finite(decode);
    assert_eq!(values[0], (0x00, 0.0), "{name}: smallest is +0");
    for pair in values.windows(2) {
        let ((lo_bits, lo), (hi_bits, hi)) = (pair[0], pair[1]);
        assert!(lo < hi, "{name}: values strictly increase");
        assert_eq!(
            hi_bits,
            lo_bits + 1,
            "{name}: bit patterns are ordered like values"
        );
        let mid = (lo + hi) / 2.0;
        let even = if lo_bits & 1 == 0 { lo_bits } else { hi_bits };
        for (v, want) in [
            (mid, even),
            (down(mid), lo_bits),
            (up(mid), hi_bits),
            (lo, lo_bits),
            (hi, hi_bits),
        ] {
            assert_eq!(encode64(v), want, "{name}: {v:e}");
            assert_eq!(encode64(-v), want | 0x80, "{name}: -{v:e}");
        }
        // The same through f32, with f32's neighbours of the midpoint (an f32, as every value
        // here has a few significant bits and a small exponent).
        let mid32 = mid as f32;
        assert_eq!(f64::from(mid32), mid);
        let (below, above) = (
            f32::from_bits(mid32.to_bits() - 1),
            f32::from_bits(mid32.to_bits() + 1),
        );
        for (v, want) in [(mid32, even), (below, lo_bits), (above, hi_bits)] {
            assert_eq!(encode32(v), want, "{name}: {v:e} as f32");
            assert_eq!(encode32(-v), want | 0x80, "{name}: -{v:e} as f32");
        }
    }
}

/// A kernel description with the given types, everything else taken from an existing kernel.
fn info(opclass: OpClass, a: DType, c: DType, accumulator: DType, epilogue: DType) -> KernelInfo {
    let base = kernels::REGISTRY
        .by_name("gemm_f16_tn")
        .expect("gemm_f16_tn is in the registry");
    let mut operation = *base.gemm();
    operation.a.element = a;
    operation.b.element = a;
    operation.c.element = c;
    operation.accumulator = accumulator;
    let mut design = *base.design.as_2x().expect("gemm_f16_tn is a 2.x kernel");
    design.opclass = opclass;
    KernelInfo {
        operation: Operation::Gemm(operation),
        design: Design::Cutlass2x(design),
        epilogue: EpilogueSpec {
            compute: epilogue,
            ..base.epilogue
        },
        ..*base
    }
}

// ---------------------------------------------------------------------------------------------
// 1. The fp8 types
// ---------------------------------------------------------------------------------------------

#[test]
fn fp8_types_are_one_byte_device_values() {
    assert_eq!(std::mem::size_of::<F8E4M3>(), 1);
    assert_eq!(std::mem::align_of::<F8E4M3>(), 1);
    assert_eq!(std::mem::size_of::<F8E5M2>(), 1);
    assert_eq!(std::mem::align_of::<F8E5M2>(), 1);
    fn device_element<T: Element + DeviceRepr + ValidAsZeroBits>() -> DType {
        T::DTYPE
    }
    assert_eq!(device_element::<F8E4M3>(), DType::E4m3);
    assert_eq!(device_element::<F8E5M2>(), DType::E5m2);
    assert_eq!(device_element::<i8>(), DType::S8);
    assert_eq!(device_element::<i32>(), DType::S32);
    // All-zero bits are +0.
    assert_eq!(F8E4M3::default(), F8E4M3::ZERO);
    assert_eq!(F8E4M3::default().to_f64().to_bits(), 0f64.to_bits());
    assert_eq!(F8E5M2::default().to_f64().to_bits(), 0f64.to_bits());
    // s32 epilogues take i32 scalars.
    assert_eq!(<i32 as Scalar>::ZERO, 0);
    assert_eq!(Into::<f64>::into(-7i32), -7.0);
    // Bits in and out.
    assert_eq!(F8E4M3::from_bits(0x38).to_bits(), 0x38);
    assert_eq!(F8E5M2::from_bits(0x3c), F8E5M2(0x3c));
    assert_eq!(f32::from(F8E4M3(0x38)), 1.0);
    assert_eq!(f64::from(F8E5M2(0xbc)), -1.0);
}

#[test]
fn e4m3_every_bit_pattern_round_trips() {
    for bits in 0..=255u8 {
        let x = F8E4M3::from_bits(bits);
        let v = x.to_f64();
        if bits & 0x7f == 0x7f {
            assert!(v.is_nan() && x.is_nan(), "{bits:#04x} is NaN");
            assert!(F8E4M3::from_f64(v).is_nan());
            assert!(F8E4M3::from_f32(x.to_f32()).is_nan());
        } else {
            // No infinities in e4m3: every other pattern is finite.
            assert!(v.is_finite() && !x.is_nan(), "{bits:#04x} is finite");
            assert_eq!(x.to_f32() as f64, v);
            assert_eq!(F8E4M3::from_f64(v).to_bits(), bits, "{bits:#04x} = {v:e}");
            assert_eq!(
                F8E4M3::from_f32(x.to_f32()).to_bits(),
                bits,
                "{bits:#04x} = {v:e}"
            );
            assert_eq!(v.is_sign_negative(), bits & 0x80 != 0, "{bits:#04x}: sign");
        }
    }
}

#[test]
fn e5m2_every_bit_pattern_round_trips() {
    for bits in 0..=255u8 {
        let x = F8E5M2::from_bits(bits);
        let v = x.to_f64();
        let magnitude = bits & 0x7f;
        if magnitude > 0x7c {
            assert!(v.is_nan() && x.is_nan(), "{bits:#04x} is NaN");
            assert!(F8E5M2::from_f64(v).is_nan());
            assert!(F8E5M2::from_f32(x.to_f32()).is_nan());
        } else if magnitude == 0x7c {
            // ±infinity decodes as such but converts back saturated, like the device's
            // `cvt.rn.satfinite`.
            assert_eq!(
                v,
                if bits & 0x80 == 0 {
                    f64::INFINITY
                } else {
                    f64::NEG_INFINITY
                }
            );
            assert_eq!(F8E5M2::from_f64(v).to_bits(), (bits & 0x80) | 0x7b, "{bits:#04x}");
            assert_eq!(F8E5M2::from_f32(x.to_f32()).to_bits(), (bits & 0x80) | 0x7b);
        } else {
            assert!(v.is_finite() && !x.is_nan(), "{bits:#04x} is finite");
            assert_eq!(x.to_f32() as f64, v);
            assert_eq!(F8E5M2::from_f64(v).to_bits(), bits, "{bits:#04x} = {v:e}");
            assert_eq!(
                F8E5M2::from_f32(x.to_f32()).to_bits(),
                bits,
                "{bits:#04x} = {v:e}"
            );
            assert_eq!(v.is_sign_negative(), bits & 0x80 != 0, "{bits:#04x}: sign");
        }
    }
    assert_eq!(F8E5M2::INFINITY.to_f64(), f64::INFINITY);
    assert_eq!(F8E5M2::NEG_INFINITY.to_f64(), f64::NEG_INFINITY);
}

#[test]
fn e4m3_known_values() {
    let cases: &[(u8, f64)] = &[
        (0x00, 0.0),
        (0x38, 1.0),
        (0xb8, -1.0),
        (0x40, 2.0),
        (0x30, 0.5),
        (0x39, 1.125),
        (0x3f, 1.875),
        (0x7e, 448.0),
        (0xfe, -448.0),
        (0x78, 256.0),
        (0x77, 240.0),
        (0x08, pow2(-6)), // smallest normal
        (0x07, 7.0 * pow2(-9)),
        (0x01, pow2(-9)), // smallest subnormal
        (0x81, -pow2(-9)),
    ];
    for &(bits, v) in cases {
        assert_eq!(F8E4M3(bits).to_f64(), v, "{bits:#04x}");
        assert_eq!(F8E4M3::from_f64(v).to_bits(), bits, "{v:e}");
    }
    assert_eq!(F8E4M3::MAX.to_f64(), 448.0);
    assert_eq!(F8E4M3::MIN.to_f64(), -448.0);
    assert_eq!(F8E4M3::NAN.to_bits(), 0x7f);
    assert!(F8E4M3::NAN.is_nan());
    assert_eq!(F8E4M3::from_f64(-0.0).to_bits(), 0x80);
    assert!(F8E4M3(0x80).to_f64().is_sign_negative());
}

#[test]
fn e5m2_known_values() {
    let cases: &[(u8, f64)] = &[
        (0x00, 0.0),
        (0x3c, 1.0),
        (0xbc, -1.0),
        (0x40, 2.0),
        (0x3d, 1.25),
        (0x3f, 1.75),
        (0x7b, 57344.0),
        (0xfb, -57344.0),
        (0x78, 32768.0),
        (0x04, pow2(-14)), // smallest normal
        (0x03, 3.0 * pow2(-16)),
        (0x01, pow2(-16)), // smallest subnormal
    ];
    for &(bits, v) in cases {
        assert_eq!(F8E5M2(bits).to_f64(), v, "{bits:#04x}");
        assert_eq!(F8E5M2::from_f64(v).to_bits(), bits, "{v:e}");
    }
    assert_eq!(F8E5M2::MAX.to_f64(), 57344.0);
    assert_eq!(F8E5M2::MIN.to_f64(), -57344.0);
    assert!(F8E5M2::NAN.is_nan());
    assert_eq!(F8E5M2::from_f64(-0.0).to_bits(), 0x80);
}

#[test]
fn fp8_round_to_nearest_even_at_every_boundary() {
    check_boundaries(
        "e4m3",
        |b| F8E4M3(b).to_f64(),
        |v| F8E4M3::from_f64(v).0,
        |v| F8E4M3::from_f32(v).0,
    );
    check_boundaries(
        "e5m2",
        |b| F8E5M2(b).to_f64(),
        |v| F8E5M2::from_f64(v).0,
        |v| F8E5M2::from_f32(v).0,
    );
}

#[test]
fn fp8_ties_to_even_examples() {
    // e4m3 steps of 1/8 in [1, 2): 1.0625 lies between 1.0 (0x38, even) and 1.125 (0x39).
    assert_eq!(F8E4M3::from_f64(1.0625).0, 0x38);
    // 1.1875 between 1.125 (0x39) and 1.25 (0x3a, even).
    assert_eq!(F8E4M3::from_f64(1.1875).0, 0x3a);
    assert_eq!(F8E4M3::from_f64(-1.1875).0, 0xba);
    // Just beside a tie goes to the nearer value.
    assert_eq!(F8E4M3::from_f64(up(1.0625)).0, 0x39);
    // Half the smallest subnormal ties to +0 (even); a hair more gives the subnormal.
    assert_eq!(F8E4M3::from_f64(pow2(-10)).0, 0x00);
    assert_eq!(F8E4M3::from_f64(-pow2(-10)).0, 0x80);
    assert_eq!(F8E4M3::from_f64(up(pow2(-10))).0, 0x01);
    // 1.5 · 2^-9 between subnormals 1 and 2 (even): 0x02.
    assert_eq!(F8E4M3::from_f64(1.5 * pow2(-9)).0, 0x02);
    // Rounding up out of the subnormals into the smallest normal: 7.5 · 2^-9 → 2^-6.
    assert_eq!(F8E4M3::from_f64(7.5 * pow2(-9)).0, 0x08);
    // Carry into the next binade: 1.9375 (between 1.875 and 2.0, even 0x40).
    assert_eq!(F8E4M3::from_f64(1.9375).0, 0x40);
    // e5m2 steps of 1/4 in [1, 2): 1.125 between 1.0 (0x3c, even) and 1.25; 1.375 → 1.5 (0x3e).
    assert_eq!(F8E5M2::from_f64(1.125).0, 0x3c);
    assert_eq!(F8E5M2::from_f64(1.375).0, 0x3e);
    assert_eq!(F8E5M2::from_f64(pow2(-17)).0, 0x00);
    assert_eq!(F8E5M2::from_f64(up(pow2(-17))).0, 0x01);
    // 1/3 rounds once: e4m3 0.34375 (1.375 · 2^-2), e5m2 0.3125 (1.25 · 2^-2).
    assert_eq!(F8E4M3::from_f64(1.0 / 3.0).to_f64(), 0.34375);
    assert_eq!(F8E5M2::from_f64(1.0 / 3.0).to_f64(), 0.3125);
}

#[test]
fn fp8_saturates_like_satfinite() {
    // e4m3: 464 is the midpoint of 448 and the 480 e4m3 would have next; everything beyond 448,
    // infinities included, saturates to ±448.
    for v in [448.0, 449.0, 463.9, 464.0, 480.0, 1e6, f64::MAX, f64::INFINITY] {
        assert_eq!(F8E4M3::from_f64(v).0, 0x7e, "{v:e}");
        assert_eq!(F8E4M3::from_f64(-v).0, 0xfe, "-{v:e}");
    }
    assert_eq!(F8E4M3::from_f32(f32::INFINITY).0, 0x7e);
    assert_eq!(F8E4M3::from_f32(f32::NEG_INFINITY).0, 0xfe);
    // Below 448 ordinary rounding: 432 ties between 416 (0x7d) and 448 (0x7e, even).
    assert_eq!(F8E4M3::from_f64(432.0).0, 0x7e);
    assert_eq!(F8E4M3::from_f64(down(432.0)).0, 0x7d);
    // e5m2: beyond 57344 (IEEE rounding would give infinity from 61440 up) saturates too.
    for v in [57344.0, 60000.0, 61440.0, 65536.0, 1e30, f64::INFINITY] {
        assert_eq!(F8E5M2::from_f64(v).0, 0x7b, "{v:e}");
        assert_eq!(F8E5M2::from_f64(-v).0, 0xfb, "-{v:e}");
    }
    // NaN of either sign gives the canonical NaN 0x7f, as on the device.
    for nan in [f64::NAN, -f64::NAN] {
        assert_eq!(F8E4M3::from_f64(nan).0, 0x7f);
        assert_eq!(F8E5M2::from_f64(nan).0, 0x7f);
    }
    assert_eq!(F8E4M3::from_f32(-f32::NAN).0, 0x7f);
    assert_eq!(F8E5M2::from_f32(f32::NAN).0, 0x7f);
}

/// Transitions of the device's conversions, read on an H200: the f32 bit pattern at which the
/// result changes and the result from there on (`__nv_cvt_float_to_fp8(x, __NV_SATFINITE, ..)`,
/// `cvt.rni.sat.s8.f32`).
#[test]
fn matches_device_conversions() {
    let e4m3: &[(u32, u8)] = &[
        (0x3a80_0001, 0x01),
        (0x3b40_0000, 0x02),
        (0x3ba0_0001, 0x03),
        (0x43c8_0001, 0x7d),
        (0x43d8_0000, 0x7e),
        (0x7f80_0001, 0x7f),
        (0x8000_0000, 0x80),
        (0xba80_0001, 0x81),
        (0xc3d8_0000, 0xfe),
        (0xff80_0001, 0x7f),
    ];
    for &(bits, want) in e4m3 {
        let (here, before) = (f32::from_bits(bits), f32::from_bits(bits - 1));
        assert_eq!(F8E4M3::from_f32(here).0, want, "{bits:#010x}");
        assert_ne!(F8E4M3::from_f32(before).0, want, "{:#010x}", bits - 1);
    }
    let e5m2: &[(u32, u8)] = &[
        (0x7f80_0001, 0x7f),
        (0x8000_0000, 0x80),
        (0xc710_0001, 0xf9),
        (0xc730_0000, 0xfa),
        (0xc750_0001, 0xfb),
        (0xff80_0001, 0x7f),
    ];
    for &(bits, want) in e5m2 {
        let (here, before) = (f32::from_bits(bits), f32::from_bits(bits - 1));
        assert_eq!(F8E5M2::from_f32(here).0, want, "{bits:#010x}");
        assert_ne!(F8E5M2::from_f32(before).0, want, "{:#010x}", bits - 1);
    }
    let s8: &[(u32, i8)] = &[
        (0x3f00_0001, 1),
        (0x3fc0_0000, 2),
        (0x7f80_0001, 0),
        (0xbf00_0001, -1),
        (0xbfc0_0000, -2),
        (0xc2fd_0001, -127),
        (0xc2ff_0000, -128),
        (0xff80_0001, 0),
    ];
    for &(bits, want) in s8 {
        let (here, before) = (f32::from_bits(bits), f32::from_bits(bits - 1));
        assert_eq!(
            verify::round_to(DType::S8, here.into()),
            f64::from(want),
            "{bits:#010x}"
        );
        assert_ne!(
            verify::round_to(DType::S8, before.into()),
            f64::from(want),
            "{:#010x}",
            bits - 1
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Verification helpers for every type
// ---------------------------------------------------------------------------------------------

#[test]
fn element_bytes_every_dtype() {
    for &dtype in DType::ALL {
        assert_eq!(verify::element_bytes(dtype) * 8, dtype.bits() as usize, "{dtype}");
    }
    assert_eq!(verify::element_bytes(DType::E4m3), 1);
    assert_eq!(verify::element_bytes(DType::E5m2), 1);
    assert_eq!(verify::element_bytes(DType::S8), 1);
    assert_eq!(verify::element_bytes(DType::S32), 4);
}

#[test]
fn encode_decode_every_dtype() {
    // Values every type holds exactly.
    let common = [0.0, 1.0, -2.0, 3.0, -4.0, 16.0];
    for &dtype in DType::ALL {
        let bytes = verify::encode(dtype, &common);
        assert_eq!(
            bytes.len(),
            common.len() * verify::element_bytes(dtype),
            "{dtype}"
        );
        assert_eq!(verify::decode(dtype, &bytes), common, "{dtype}");
    }
    // Little-endian device bytes.
    assert_eq!(
        verify::encode(DType::E4m3, &[1.0, -1.0, 448.0]),
        [0x38, 0xb8, 0x7e]
    );
    assert_eq!(
        verify::encode(DType::E5m2, &[1.0, -1.0, 57344.0]),
        [0x3c, 0xbc, 0x7b]
    );
    assert_eq!(
        verify::encode(DType::S8, &[1.0, -1.0, 127.0, -128.0]),
        [0x01, 0xff, 0x7f, 0x80]
    );
    assert_eq!(verify::encode(DType::S32, &[1.0]), [1, 0, 0, 0]);
    assert_eq!(verify::encode(DType::S32, &[-2.0]), [0xfe, 0xff, 0xff, 0xff]);
    assert_eq!(
        verify::encode(DType::S32, &[2147483647.0]),
        i32::MAX.to_le_bytes()
    );
    assert_eq!(
        verify::decode(DType::S32, &(-123_456_789i32).to_le_bytes()),
        [-123_456_789.0]
    );
    assert_eq!(verify::decode(DType::S8, &[0x80, 0x7f]), [-128.0, 127.0]);
    assert_eq!(verify::decode(DType::E4m3, &[0x01, 0x7e]), [pow2(-9), 448.0]);
    assert_eq!(
        verify::decode(DType::E5m2, &[0x01, 0x7c]),
        [pow2(-16), f64::INFINITY]
    );
    assert!(verify::decode(DType::E4m3, &[0xff])[0].is_nan());
    // Values that are not representable come back as round_to gives them, for every type.
    let awkward = [
        1.0 / 3.0,
        -2.5,
        3.5,
        0.15625,
        -0.0078125,
        1024.0,
        1e6,
        -1e12,
        2.0e-9,
        f64::INFINITY,
    ];
    for &dtype in DType::ALL {
        let want: Vec<f64> = awkward.iter().map(|&v| verify::round_to(dtype, v)).collect();
        assert_eq!(
            verify::decode(dtype, &verify::encode(dtype, &awkward)),
            want,
            "{dtype}"
        );
    }
    // NaN: stays NaN in the float types, 0 in the integer ones (as the device converts it).
    for &dtype in DType::ALL {
        let back = verify::decode(dtype, &verify::encode(dtype, &[f64::NAN]))[0];
        if dtype.is_integer() {
            assert_eq!(back, 0.0, "{dtype}");
        } else {
            assert!(back.is_nan(), "{dtype}");
        }
    }
}

#[test]
fn round_to_new_dtypes() {
    // fp8: nearest, ties to even, saturating.
    assert_eq!(verify::round_to(DType::E4m3, 1.0 / 3.0), 0.34375);
    assert_eq!(verify::round_to(DType::E5m2, 1.0 / 3.0), 0.3125);
    assert_eq!(verify::round_to(DType::E4m3, 1.0625), 1.0);
    assert_eq!(verify::round_to(DType::E4m3, 500.0), 448.0);
    assert_eq!(verify::round_to(DType::E4m3, -500.0), -448.0);
    assert_eq!(verify::round_to(DType::E5m2, 1e6), 57344.0);
    assert!(verify::round_to(DType::E4m3, f64::NAN).is_nan());
    // s8: nearest, ties to even, saturating to [-128, 127]; NaN gives 0.
    let s8 = [
        (2.5, 2.0),
        (3.5, 4.0),
        (-2.5, -2.0),
        (-3.5, -4.0),
        (0.49, 0.0),
        (0.51, 1.0),
        (126.6, 127.0),
        (127.5, 127.0),
        (1000.0, 127.0),
        (-128.4, -128.0),
        (-1e9, -128.0),
        (f64::INFINITY, 127.0),
        (f64::NEG_INFINITY, -128.0),
        (f64::NAN, 0.0),
    ];
    for (v, want) in s8 {
        assert_eq!(verify::round_to(DType::S8, v), want, "s8 {v}");
    }
    // Never −0 (an integer type has none).
    assert!(verify::round_to(DType::S8, -0.4).is_sign_positive());
    assert!(verify::round_to(DType::S32, -0.0).is_sign_positive());
    // s32: the same, saturating to i32's range.
    let s32 = [
        (0.5, 0.0),
        (1.5, 2.0),
        (-1.5, -2.0),
        (1000.0, 1000.0),
        (1e12, 2147483647.0),
        (-1e12, -2147483648.0),
        (2147483647.4, 2147483647.0),
        (f64::NAN, 0.0),
    ];
    for (v, want) in s32 {
        assert_eq!(verify::round_to(DType::S32, v), want, "s32 {v}");
    }
    for &dtype in DType::ALL {
        for v in [0.1, -7.3, 300.7, 1e7 + 0.5] {
            let once = verify::round_to(dtype, v);
            assert_eq!(verify::round_to(dtype, once), once, "idempotent in {dtype}: {v}");
        }
    }
}

#[test]
fn random_values_per_dtype() {
    let n = 20_000;
    for &dtype in DType::ALL {
        let values = verify::random_values(dtype, n, 7);
        assert_eq!(values.len(), n);
        assert_eq!(
            values,
            verify::random_values(dtype, n, 7),
            "{dtype}: deterministic"
        );
        assert_ne!(values, verify::random_values(dtype, n, 8), "{dtype}: seeded");
        for &v in &values {
            assert_eq!(verify::round_to(dtype, v), v, "{dtype}: {v} is representable");
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let mut distinct: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if dtype.is_integer() {
            // Integers uniform in [-4, 4]: each of the nine appears about n / 9 times.
            for want in -4..=4 {
                let count = values.iter().filter(|&&v| v == f64::from(want)).count();
                assert!(
                    (n / 9 - 400..n / 9 + 400).contains(&count),
                    "{dtype}: {want} {count} times"
                );
            }
            assert_eq!(distinct.len(), 9, "{dtype}");
            assert_eq!(verify::RANDOM_INTEGER_MAX, 4);
        } else {
            assert!(
                values.iter().all(|v| (-1.0..=1.0).contains(v)),
                "{dtype}: in [-1, 1]"
            );
            // Spread over the interval, not clustered.
            let max = values.iter().cloned().fold(f64::MIN, f64::max);
            let min = values.iter().cloned().fold(f64::MAX, f64::min);
            assert!(max > 0.9 && min < -0.9, "{dtype}: [{min}, {max}]");
            // fp8 keeps a few dozen values in [-1, 1]; the wider types thousands.
            let at_least = if dtype.bits() == 8 { 40 } else { 1000 };
            assert!(
                distinct.len() >= at_least,
                "{dtype}: {} distinct values",
                distinct.len()
            );
        }
        assert!(mean.abs() < 0.1, "{dtype}: mean {mean}");
    }
}

#[test]
fn integer_test_data_cannot_overflow_s32() {
    // The largest |dot product| of k values from random_values is 16 k: far inside i32 for k up
    // to 2^27, so an s32 accumulator is exact and tolerance 0 is fair.
    let bound = verify::RANDOM_INTEGER_MAX * verify::RANDOM_INTEGER_MAX;
    assert!(i64::from(bound) * (1 << 27) <= i64::from(i32::MAX) + 1);
}

#[test]
fn tolerances_for_new_types() {
    use DType::*;
    use OpClass::TensorOp;
    // fp8 in: reduced-precision tensor-core sums (2e-3) unless the output's rounding is larger.
    assert_eq!(verify::tolerance(&info(TensorOp, E4m3, Bf16, F32, F32)), 1e-2);
    assert_eq!(verify::tolerance(&info(TensorOp, E4m3, F16, F32, F32)), 2e-3);
    assert_eq!(verify::tolerance(&info(TensorOp, E4m3, F32, F32, F32)), 2e-3);
    assert_eq!(verify::tolerance(&info(TensorOp, E5m2, F32, F32, F32)), 2e-3);
    // fp8 out: the rounding of 3 and 2 mantissa bits.
    assert_eq!(verify::tolerance(&info(TensorOp, E4m3, E4m3, F32, F32)), 5e-2);
    assert_eq!(verify::tolerance(&info(TensorOp, E4m3, E5m2, F32, F32)), 1e-1);
    // Integer: exact with an integer epilogue, s8 and s32 outputs alike.
    assert_eq!(verify::tolerance(&info(TensorOp, S8, S32, S32, S32)), 0.0);
    assert_eq!(verify::tolerance(&info(TensorOp, S8, S8, S32, S32)), 0.0);
    // An f32 epilogue may round a result near a half-integer the other way.
    assert_eq!(verify::tolerance(&info(TensorOp, S8, S8, S32, F32)), 1e-3);
    assert_eq!(verify::tolerance(&info(TensorOp, S8, S32, S32, F32)), 1e-3);
    // s8 in, float out: exact accumulation, the output's rounding.
    assert_eq!(verify::tolerance(&info(TensorOp, S8, F32, S32, F32)), 1e-5);
    // The existing types are unchanged.
    assert_eq!(verify::tolerance(&info(TensorOp, F16, F16, F32, F32)), 2e-3);
    assert_eq!(verify::tolerance(&info(TensorOp, F32, F32, F32, F32)), 5e-3);
    assert_eq!(verify::tolerance(&info(OpClass::Simt, F32, F32, F32, F32)), 1e-5);
    assert_eq!(verify::tolerance(&info(TensorOp, F16, F16, F16, F16)), 1e-2);
}

/// An s8 output is compared with the reference rounded like the device rounds it, so a correct
/// kernel's error is exactly 0, saturated elements included.
#[test]
fn s8_reference_rounding_is_exact() {
    let reference = [300.0, -300.0, 126.5, 127.5, -3.5, 0.25, 12.0];
    let device: Vec<f64> = verify::decode(DType::S8, &verify::encode(DType::S8, &reference));
    let rounded: Vec<f64> = reference
        .iter()
        .map(|&v| verify::round_to(DType::S8, v))
        .collect();
    assert_eq!(device, [127.0, -128.0, 126.0, 127.0, -4.0, 0.0, 12.0]);
    assert_eq!(verify::relative_error(&device, &rounded), 0.0);
}

#[test]
fn interleaved_offsets_follow_cutlass() {
    use cutlass_aot::model::Layout;
    use cutlass_aot::verify::{offset, reordered_column};
    use cutlass_aot::MatrixShape;
    // reorder_column<32> is a permutation of each group of 32.
    let mut seen: Vec<usize> = (0..64).map(reordered_column).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..64).collect::<Vec<_>>());
    assert_eq!(
        (reordered_column(1), reordered_column(2), reordered_column(8)),
        (1, 8, 2)
    );
    let a = MatrixShape::packed(4, 64, Layout::ColumnInterleaved32);
    assert_eq!(a.ld, 128);
    assert_eq!(offset(&a, Layout::ColumnInterleaved32, 0, 1, 33), 128 + 32 + 1);
    let b = MatrixShape::packed(64, 4, Layout::RowInterleaved32);
    assert_eq!(offset(&b, Layout::RowInterleaved32, 0, 33, 2), 128 + 8 * 32 + 1);
}
