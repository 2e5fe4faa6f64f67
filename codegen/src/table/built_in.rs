//! The crate's own kernels a table may time beside the manifest's (built into the runtime's
//! support image, not generated from the manifest): the skinny GEMM forms
//! (`cutlass_aot_skinny_{dot,dotv,axpy,tensor,tiny_thread,tiny_warp}_{types}`,
//! `cutlass_aot::dispatch::skinny`) and the direct conv
//! (`cutlass_aot_conv_small_{fprop,dgrad}_{f16,bf16,f32}_kt{8,16,32}`, `cutlass_aot::conv::small`).

use crate::model::{DType, Layout};

/// A built-in kernel as table rows name it.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltIn {
    /// Its static, as a path under `cutlass_aot` (`dispatch::skinny::TENSOR_BF16`).
    pub path: String,
    /// The Rust name it reports (`skinny_tensor_bf16`).
    pub rust_name: String,
    /// The operation its rows time.
    pub op: &'static str,
    /// The element type of A and B, and of C.
    pub ab: DType,
    pub c: DType,
    /// The layout its A must have (the skinny dot form reads rows, the axpy form columns).
    pub layout_a: Option<Layout>,
    /// Whether its rows may split K.
    pub splits: bool,
}

/// The built-in kernel called `name`, if one is.
pub fn built_in_kernel(name: &str) -> Option<BuiltIn> {
    skinny(name).or_else(|| direct_conv(name))
}

/// The element types a name's `{types}` part spells: one type, or A/B's then C's.
fn types(spelled: &str) -> Option<(DType, DType)> {
    Some(match spelled {
        "f16" => (DType::F16, DType::F16),
        "bf16" => (DType::Bf16, DType::Bf16),
        "f32" => (DType::F32, DType::F32),
        "f64" => (DType::F64, DType::F64),
        "f16_f32" => (DType::F16, DType::F32),
        "bf16_f32" => (DType::Bf16, DType::F32),
        _ => return None,
    })
}

fn skinny(name: &str) -> Option<BuiltIn> {
    let rest = name.strip_prefix("cutlass_aot_skinny_")?;
    let (form, spelled) = ["tiny_thread", "tiny_warp"]
        .iter()
        .find_map(|tiny| Some((*tiny, rest.strip_prefix(tiny)?.strip_prefix('_')?)))
        .or_else(|| rest.split_once('_'))?;
    let (ab, c) = types(spelled)?;
    let layout_a = match form {
        "dot" | "dotv" => Some(Layout::Row),
        "axpy" => Some(Layout::Column),
        "tensor" if ab.bits() == 16 => None,
        "tiny_thread" | "tiny_warp" => None,
        _ => return None,
    };
    Some(BuiltIn {
        path: format!("dispatch::skinny::{}", rest.to_uppercase()),
        rust_name: format!("skinny_{rest}"),
        op: "gemm",
        ab,
        c,
        layout_a,
        splits: true,
    })
}

fn direct_conv(name: &str) -> Option<BuiltIn> {
    let rest = name.strip_prefix("cutlass_aot_conv_small_")?;
    let (kind, rest) = rest.split_once('_')?;
    let (spelled, columns) = rest.rsplit_once("_kt")?;
    let (ab, c) = types(spelled).filter(|(ab, c)| ab == c && *ab != DType::F64)?;
    let (op, prefix) = match kind {
        "fprop" => ("conv2d_fprop", ""),
        "dgrad" => ("conv2d_dgrad", "DGRAD_"),
        _ => return None,
    };
    ["8", "16", "32"].contains(&columns).then(|| BuiltIn {
        path: format!("conv::small::{prefix}{}_{columns}", spelled.to_uppercase()),
        rust_name: format!("conv_small_{kind}_{spelled}_kt{columns}"),
        op,
        ab,
        c,
        layout_a: None,
        splits: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_their_statics() {
        let tensor = built_in_kernel("cutlass_aot_skinny_tensor_bf16").unwrap();
        assert_eq!(
            (tensor.path.as_str(), tensor.op),
            ("dispatch::skinny::TENSOR_BF16", "gemm")
        );
        let warp = built_in_kernel("cutlass_aot_skinny_tiny_warp_f16_f32").unwrap();
        assert_eq!(
            (warp.path.as_str(), warp.c),
            ("dispatch::skinny::TINY_WARP_F16_F32", DType::F32)
        );
        let vector = built_in_kernel("cutlass_aot_skinny_dotv_bf16_f32").unwrap();
        assert_eq!(
            (vector.path.as_str(), vector.layout_a),
            ("dispatch::skinny::DOTV_BF16_F32", Some(Layout::Row))
        );
        let fprop = built_in_kernel("cutlass_aot_conv_small_fprop_bf16_kt16").unwrap();
        assert_eq!(
            (fprop.path.as_str(), fprop.rust_name.as_str(), fprop.op),
            (
                "conv::small::BF16_16",
                "conv_small_fprop_bf16_kt16",
                "conv2d_fprop"
            )
        );
        let dgrad = built_in_kernel("cutlass_aot_conv_small_dgrad_f32_kt8").unwrap();
        assert_eq!(
            (dgrad.path.as_str(), dgrad.op),
            ("conv::small::DGRAD_F32_8", "conv2d_dgrad")
        );
        for unknown in [
            "cutlass_aot_skinny_tensor_f32",
            "cutlass_aot_conv_small_wgrad_f16_kt8",
            "cutlass_aot_conv_small_fprop_f16_kt64",
            "cutlass_aot_conv_small_fprop_f64_kt8",
            "cutlass_aot_conv_small_fprop_f16_f32_kt8",
        ] {
            assert_eq!(built_in_kernel(unknown), None, "{unknown}");
        }
    }
}
