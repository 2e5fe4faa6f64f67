//! Builds the kernels of `kernel_manifest.yaml` into this crate (see `codegen/` for the pipeline),
//! with the dispatch table the profiler measured (`bench/dispatch/`, see `cutlass_aot::dispatch`).
fn main() {
    let summary = cutlass_aot_build::run_build_script(
        cutlass_aot_build::Builder::new("kernel_manifest.yaml")
            .kernels_per_unit(8)
            .dispatch_table("bench/dispatch/nvidia_h200.tsv"),
    );
    println!(
        "cargo:rustc-env=CUTLASS_AOT_KERNELS_RS={}",
        summary.rust_file.display()
    );
}
