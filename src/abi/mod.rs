//! The C ABI shared with the generated host code (`cutlass_glue/include/cutlass_aot/abi.h`, `abi_grouped.h` and `abi_conv.h`).
#![allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    missing_docs
)]

include!("bindings.rs");
