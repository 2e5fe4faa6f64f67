//! The Rust module of one user kernel: its `INFO` (the shared kernel model: a custom operation
//! with its parameters, a custom design with its values and expressions) and a typed `run` whose
//! arguments are the entry's parameters, each buffer typed by its element and access.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::{CustomKernel, ExprSpec, ParamSpec, Value};
use crate::model::custom::Op;
use crate::model::Layout;

fn expr(e: &ExprSpec) -> TokenStream {
    let text = &e.text;
    let ops = e.code.iter().map(|op| {
        let name = format!("{op:?}");
        match op {
            Op::Const(v) => quote!(::cutlass_aot::model::custom::Op::Const(#v)),
            Op::Arg(i) => quote!(::cutlass_aot::model::custom::Op::Arg(#i)),
            _ => {
                let ident = format_ident!("{}", name);
                quote!(::cutlass_aot::model::custom::Op::#ident)
            }
        }
    });
    quote!(::cutlass_aot::model::custom::Expr { text: #text, code: &[#(#ops),*] })
}

fn param_value(p: &ParamSpec) -> TokenStream {
    match p {
        ParamSpec::Scalar { name, ty } => {
            let ty = format_ident!("{}", format!("{:?}", ty));
            quote!(::cutlass_aot::model::custom::Param::Scalar { name: #name, ty: ::cutlass_aot::model::custom::ScalarType::#ty })
        }
        ParamSpec::Buffer {
            name,
            element,
            access,
            layout,
            len,
        } => {
            let element = crate::emit_rust::dtype(*element);
            let access = format_ident!("{}", format!("{:?}", access));
            let layout = match layout {
                Some(l) => {
                    let l = crate::emit_rust::layout_value(*l);
                    quote!(::core::option::Option::Some(#l))
                }
                None => quote!(::core::option::Option::None),
            };
            let len = expr(len);
            quote!(::cutlass_aot::model::custom::Param::Buffer {
                name: #name,
                element: #element,
                access: ::cutlass_aot::model::custom::Access::#access,
                layout: #layout,
                len: #len,
            })
        }
    }
}

/// The module of `kernel`, whose image is `image` (`built`: compiled with nvcc).
pub fn kernel_module(kernel: &CustomKernel, image: &Ident, built: bool) -> TokenStream {
    let module = format_ident!("{}", kernel.rust_name);
    let name = &kernel.rust_name;
    let origin = &kernel.origin;
    let arch = kernel.arch;
    let operation = &kernel.operation;
    let entry_name = std::ffi::CString::new(kernel.entry.clone()).unwrap_or_default();
    let entry = proc_macro2::Literal::c_string(&entry_name);
    let params = kernel.params.iter().map(param_value);
    let tile = {
        let (m, n, k) = (kernel.tile.m, kernel.tile.n, kernel.tile.k);
        quote!(::cutlass_aot::model::Shape3 { m: #m, n: #n, k: #k })
    };
    let values = kernel.values.iter().map(|(key, value)| match value {
        Value::Int(v) => quote!((#key, ::cutlass_aot::model::custom::DesignValue::Int(#v))),
        Value::Word(w) => quote!((#key, ::cutlass_aot::model::custom::DesignValue::Word(#w))),
    });
    let grid = kernel.grid.iter().map(expr);
    let block = kernel.block.iter().map(expr);
    let shared = expr(&kernel.shared_memory);
    let requires = kernel.requires.iter().map(|(holds, reason)| {
        let holds = expr(holds);
        quote!(::cutlass_aot::model::custom::Requirement { holds: #holds, reason: #reason })
    });
    let code = format_ident!("{}", format!("{:?}", kernel.api()));
    let fn_args = kernel.params.iter().map(|p| {
        let ident = format_ident!("{}", p.name());
        match p {
            ParamSpec::Scalar { ty, .. } => {
                let ty = format_ident!("{}", ty.manifest_name());
                quote!(#ident: #ty)
            }
            ParamSpec::Buffer { element, access, .. } => {
                let t = crate::emit_rust::rust_type(*element);
                if access.writes() {
                    quote!(#ident: &mut dyn ::cutlass_aot::cudarc::driver::DevicePtrMut<#t>)
                } else {
                    quote!(#ident: &dyn ::cutlass_aot::cudarc::driver::DevicePtr<#t>)
                }
            }
        }
    });
    let binds = kernel.params.iter().map(|p| {
        let ident = format_ident!("{}", p.name());
        let key = p.name();
        match p {
            ParamSpec::Scalar { .. } => quote!(.scalar(#key, #ident)),
            ParamSpec::Buffer { access, .. } if access.writes() => quote!(.output(#key, #ident)),
            ParamSpec::Buffer { .. } => quote!(.input(#key, #ident)),
        }
    });
    let doc_params: Vec<String> = kernel
        .params
        .iter()
        .map(|p| match p {
            ParamSpec::Scalar { name, ty } => format!("`{name}`: {ty}"),
            ParamSpec::Buffer {
                name,
                element,
                access,
                layout,
                len,
            } => format!(
                "`{name}`: {element} buffer ({access}{}), at least `{}` elements",
                layout.map_or(String::new(), |l: Layout| format!(", {l}")),
                len.text
            ),
        })
        .collect();
    let doc = format!(
        "User kernel `{}` of `{}` ({}), `{}`. Parameters: {}.",
        kernel.entry,
        kernel.source,
        kernel.origin,
        kernel
            .values
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        doc_params.join("; ")
    );
    quote! {
        #[doc = #doc]
        pub mod #module {
            /// The kernel's metadata (the shared kernel model).
            pub static INFO: ::cutlass_aot::KernelInfo = ::cutlass_aot::KernelInfo {
                name: #name,
                rust_name: #name,
                origin: #origin,
                min_compute_capability: #arch,
                operation: ::cutlass_aot::model::Operation::Custom(::cutlass_aot::model::custom::CustomOperation {
                    operation: #operation,
                    params: &[#(#params),*],
                }),
                design: ::cutlass_aot::model::Design::Custom(&::cutlass_aot::model::custom::CustomDesign {
                    code: ::cutlass_aot::model::Api::#code,
                    tile: #tile,
                    values: &[#(#values),*],
                    grid: [#(#grid),*],
                    block: [#(#block),*],
                    shared_memory: #shared,
                    requires: &[#(#requires),*],
                }),
                epilogue: ::cutlass_aot::custom::NO_EPILOGUE,
                image: &super::#image,
                entry: #entry,
                host: ::cutlass_aot::HostCode::Custom { built: #built },
            };

            /// Checks every argument (types, requirements, buffer lengths, launch shape) and
            /// launches the kernel on `stream`.
            #[allow(clippy::too_many_arguments)]
            pub fn run(
                stream: &::std::sync::Arc<::cutlass_aot::CudaStream>,
                #(#fn_args),*
            ) -> ::core::result::Result<(), ::cutlass_aot::Error> {
                let mut args = ::cutlass_aot::custom::Args::new(stream)#(#binds)*;
                ::cutlass_aot::custom::launch(&INFO, &mut args)
            }
        }
    }
}

/// `&module::INFO`, for the registry's list of user kernels.
pub fn registry_entry(kernel: &CustomKernel) -> TokenStream {
    let module = format_ident!("{}", kernel.rust_name);
    quote!(&#module::INFO)
}
