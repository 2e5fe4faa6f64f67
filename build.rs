//! Builds the kernels of `kernel_manifest.yaml` into this crate (see `codegen/` for the pipeline),
//! with the selection tables the sweeps measured (every `bench/dispatch/*.tsv`, see
//! `cutlass_aot::select`).
fn main() {
    let summary = cutlass_aot_build::run_build_script(
        cutlass_aot_build::Builder::new("kernel_manifest.yaml")
            .kernels_per_unit(8)
            .support_kernels(true)
            .dispatch_tables_in("bench/dispatch")
            // Cargo feature `static-cxx`: executables need only libc and the driver.
            .static_cxx_runtime(std::env::var_os("CARGO_FEATURE_STATIC_CXX").is_some()),
    );
    println!(
        "cargo:rustc-env=CUTLASS_AOT_KERNELS_RS={}",
        summary.rust_file.display()
    );
}
