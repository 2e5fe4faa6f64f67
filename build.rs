//! Builds the kernels of `kernel_manifest.yaml` into this crate (see `codegen/` for the pipeline).
fn main() {
    let summary =
        cutlass_aot_build::run_build_script(&cutlass_aot_build::Builder::new("kernel_manifest.yaml"));
    println!(
        "cargo:rustc-env=CUTLASS_AOT_KERNELS_RS={}",
        summary.rust_file.display()
    );
}
