//! Compiles this crate's kernel_manifest.yaml (two CUTLASS GEMMs and an RMSNorm kernel of our
//! own) into this crate, exactly as cutlass-aot builds its own: cached by content outside
//! `target/`, embedded as fatbins, one typed Rust module per kernel plus a `REGISTRY`.
fn main() {
    let summary =
        cutlass_aot_build::run_build_script(&cutlass_aot_build::Builder::new("kernel_manifest.yaml"));
    // The generated Rust, included by src/lib.rs.
    println!(
        "cargo:rustc-env=DOWNSTREAM_KERNELS_RS={}",
        summary.rust_file.display()
    );
}
