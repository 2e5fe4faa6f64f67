//! The `static-cxx` build, on the CPU: no shared C++ runtime or libgcc_s is loaded into the
//! process, CUTLASS's host code (on the static libstdc++) still builds a kernel's Params, and Rust
//! panics still unwind, now through the static libgcc_eh that stands in for libgcc_s.

mod common;
use common::*;

use cutlass_aot::gemm::plan;

#[test]
fn no_shared_cxx_runtime_is_loaded() {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mut shared: Vec<&str> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|path| path.contains("libstdc++") || path.contains("libgcc_s"))
        .collect();
    shared.dedup();
    assert!(shared.is_empty(), "loaded: {shared:?}");
}

#[test]
fn host_code_builds_params() {
    let info = kernel("gemm_f16_tn");
    let args = plan(info, &operands(info, 1000, 1000, 512), &H100).unwrap();
    let prepared = info.prepare(&args).unwrap();
    assert!(!prepared.params().is_empty());
}

#[test]
fn panics_unwind_run_destructors_and_are_caught() {
    struct Flag<'a>(&'a std::cell::Cell<bool>);
    impl Drop for Flag<'_> {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }
    let dropped = std::cell::Cell::new(false);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _flag = Flag(&dropped);
        panic!("unwinding through libgcc_eh");
    }));
    let message = caught.unwrap_err();
    assert_eq!(
        message.downcast_ref::<&str>(),
        Some(&"unwinding through libgcc_eh")
    );
    assert!(dropped.get(), "the destructor did not run during unwinding");
    let joined = std::thread::spawn(|| panic!("in a thread")).join();
    assert!(joined.is_err());
}
