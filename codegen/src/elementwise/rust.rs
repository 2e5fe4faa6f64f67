//! The Rust module of one elementwise kernel: its `INFO` (the shared kernel model: an elementwise
//! operation and design) and a typed `run` over `cutlass_aot::elementwise::Elementwise` arguments
//! of the kernel's element types.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::ElementwiseKernel;
use crate::emit_rust::{dtype, rust_type};

/// The module of `kernel`, whose image is the static `image`; `built`: compiled with nvcc.
pub fn kernel_module(kernel: &ElementwiseKernel, image: &Ident, built: bool) -> TokenStream {
    let module = format_ident!("{}", kernel.rust_name);
    let name = &kernel.rust_name;
    let origin = &kernel.origin;
    let arch = kernel.arch;
    let op = &kernel.operation;
    let vector_entry = std::ffi::CString::new(format!("{name}_vector")).expect("identifier");
    let scalar_entry = std::ffi::CString::new(format!("{name}_scalar")).expect("identifier");
    let x = dtype(op.x);
    let d = dtype(op.d);
    let y = match op.y {
        Some(t) => {
            let t = dtype(t);
            quote!(::core::option::Option::Some(#t))
        }
        None => quote!(::core::option::Option::None),
    };
    let combine = match op.combine {
        Some(c) => {
            let c = format_ident!("{}", format!("{c:?}"));
            quote!(::core::option::Option::Some(::cutlass_aot::model::elementwise::Combine::#c))
        }
        None => quote!(::core::option::Option::None),
    };
    let activation = format_ident!("{}", format!("{:?}", op.activation));
    let compute = dtype(op.compute());
    let design = kernel.design();
    let (threads, unroll, vector) = (design.threads, design.unroll, design.vector_elements);
    let scalar_unroll = design.scalar_unroll;
    let x_type = rust_type(op.x);
    let y_type = rust_type(op.y.unwrap_or(op.x));
    let d_type = rust_type(op.d);
    let formula = op.formula();
    let doc = format!("`{name}`: {formula}, from {origin}.");
    let run_doc = if op.y.is_some() {
        "Runs the kernel on `args` (x, y broadcast as given, d) on `stream`. Shapes, strides, \
         lengths and the broadcast are checked first; on error nothing is launched."
    } else {
        "Runs the kernel on `args` (x, d; a unary kernel reads no y) on `stream`. Shapes, strides \
         and lengths are checked first; on error nothing is launched."
    };
    quote! {
        #[doc = #doc]
        pub mod #module {
            /// The kernel's metadata (the shared kernel model).
            pub static INFO: ::cutlass_aot::KernelInfo = ::cutlass_aot::KernelInfo {
                name: #name,
                rust_name: #name,
                origin: #origin,
                min_compute_capability: #arch,
                operation: ::cutlass_aot::model::Operation::Elementwise(::cutlass_aot::model::elementwise::ElementwiseOperation {
                    x: #x,
                    y: #y,
                    d: #d,
                    combine: #combine,
                    activation: ::cutlass_aot::model::Activation::#activation,
                }),
                design: ::cutlass_aot::model::Design::Elementwise(::cutlass_aot::model::elementwise::ElementwiseDesign {
                    threads: #threads,
                    unroll: #unroll,
                    vector_elements: #vector,
                    scalar_unroll: #scalar_unroll,
                }),
                epilogue: ::cutlass_aot::model::EpilogueSpec {
                    kind: ::cutlass_aot::model::Epilogue::LinearCombination,
                    compute: #compute,
                    fusion: ::cutlass_aot::model::Fusion::NONE,
                },
                image: &super::#image,
                entry: #vector_entry,
                host: ::cutlass_aot::HostCode::Elementwise {
                    built: #built,
                    scalar_entry: #scalar_entry,
                },
            };
            /// The element types of x, y (x's for a unary kernel, which reads none) and d.
            pub type X = #x_type;
            pub type Y = #y_type;
            pub type D = #d_type;
            #[doc = #run_doc]
            pub fn run(
                stream: &::cutlass_aot::CudaStream,
                args: ::cutlass_aot::elementwise::Elementwise<'_, X, Y, D>,
            ) -> ::core::result::Result<(), ::cutlass_aot::Error> {
                ::cutlass_aot::elementwise::launch(&INFO, stream, args)
            }
        }
    }
}

/// `&<module>::INFO`, for the registry's list of elementwise kernels.
pub fn registry_entry(kernel: &ElementwiseKernel) -> TokenStream {
    let module = format_ident!("{}", kernel.rust_name);
    quote!(&#module::INFO)
}
