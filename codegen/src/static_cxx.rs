//! Linking the C++ runtime statically ([`crate::Builder::static_cxx_runtime`]), so that an
//! executable needs only the C library and the NVIDIA driver.
//!
//! The host code (CUTLASS's Params computation) needs libstdc++, and Rust's standard library on
//! `*-linux-gnu` links `-lgcc_s` for unwinding. Both are resolved from one directory of the build's
//! own, put on the link search path (a build script's `-L` comes before the C compiler's own
//! library directories, and it reaches every executable that links the crate):
//!
//! * `libstdc++.a`, a copy of the C++ compiler's, linked as `static:-bundle=stdc++`;
//! * `libgcc_eh.a`, a copy of the compiler's static unwinder;
//! * `libgcc_s.a`, a GNU ld script `INPUT(-lgcc_eh)`: the linker looks for `libgcc_s.so`, then
//!   `libgcc_s.a`, in each directory in turn, so every `-lgcc_s` (Rust's, the C compiler driver's)
//!   becomes the static unwinder instead of `libgcc_s.so.1`.
//!
//! Supported for Linux GNU targets with GNU libstdc++ (g++, or a clang that uses it).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fsutil::{copy_if_changed, write_if_changed};

/// The script that stands in for `libgcc_s`.
pub const GCC_S_SCRIPT: &str =
    "/* cutlass-aot static-cxx: the static unwinder instead of libgcc_s.so.1 */\nINPUT(-lgcc_eh)\n";

/// The metadata key the builder sets (`cargo:static_cxx=1`) when the crate has a `links` key:
/// crates that depend on it see `DEP_<LINKS>_STATIC_CXX` (`DEP_CUTLASS_AOT_STATIC_CXX` for the
/// core).
pub const METADATA_KEY: &str = "static_cxx";
/// Set for a crate's build script when its `cutlass-aot` dependency links the C++ runtime
/// statically; the builder's default then follows it.
pub const CORE_DEP_VAR: &str = "DEP_CUTLASS_AOT_STATIC_CXX";

/// The directory that holds the static runtime, ready to link.
#[derive(Clone, Debug)]
pub struct StaticRuntime {
    dir: PathBuf,
}

impl StaticRuntime {
    /// Prints the cargo directives that link the runtime: after the host code's own library.
    pub fn print_directives(&self) {
        println!("cargo:rustc-link-search=native={}", self.dir.display());
        println!("cargo:rustc-link-lib=static:-bundle=stdc++");
    }
}

/// Finds the static runtime of the C++ compiler the `cc` crate picks and copies it into `dir`
/// (created if needed). `env` reads the build script's environment.
pub fn prepare(dir: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<StaticRuntime, String> {
    let target = env("TARGET").unwrap_or_default();
    let (os, target_env) = (env("CARGO_CFG_TARGET_OS"), env("CARGO_CFG_TARGET_ENV"));
    if os.as_deref() != Some("linux") || target_env.as_deref() != Some("gnu") {
        return Err(format!(
            "the static C++ runtime (libstdc++ and libgcc_eh) is supported on Linux GNU targets \
             (such as x86_64-unknown-linux-gnu), not on {target:?}: build without it"
        ));
    }
    let compiler = cc::Build::new()
        .cpp(true)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_get_compiler()
        .map_err(|e| format!("cannot find the C++ compiler through the cc crate: {e}"))?;
    let compiler = compiler.path();
    let stdcxx = find_library(compiler, "libstdc++.a", "libstdc++-{V}-dev", "libstdc++-static")?;
    let gcc_eh = find_library(compiler, "libgcc_eh.a", "libgcc-{V}-dev", "gcc")?;
    for library in [&stdcxx, &gcc_eh] {
        println!("cargo:rerun-if-changed={}", library.display());
    }
    let io = |what: &str, e: std::io::Error| format!("{what} in {}: {e}", dir.display());
    copy_if_changed(&stdcxx, &dir.join("libstdc++.a")).map_err(|e| io("copying libstdc++.a", e))?;
    copy_if_changed(&gcc_eh, &dir.join("libgcc_eh.a")).map_err(|e| io("copying libgcc_eh.a", e))?;
    write_if_changed(&dir.join("libgcc_s.a"), GCC_S_SCRIPT.as_bytes())
        .map_err(|e| io("writing libgcc_s.a", e))?;
    Ok(StaticRuntime {
        dir: dir.to_path_buf(),
    })
}

/// The absolute path of `name` as `compiler -print-file-name` finds it, or the error that says
/// which package provides it (`{V}` in the Debian name is the compiler's major version).
fn find_library(compiler: &Path, name: &str, debian: &str, fedora: &str) -> Result<PathBuf, String> {
    let printed = Command::new(compiler)
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(path) = printed.as_deref().and_then(found) {
        return Ok(path);
    }
    let version = Command::new(compiler)
        .arg("-dumpversion")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .and_then(|v| v.split('.').next().map(str::to_string))
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or_else(|| "N".to_string());
    Err(format!(
        "the C++ compiler {} has no {name} (`{} -print-file-name={name}` printed {:?}), which \
         cutlass-aot's cargo feature `static-cxx` (or Builder::static_cxx_runtime) links. Install \
         the static library of that compiler (Debian/Ubuntu: `apt-get install {}`; Fedora/RHEL: \
         `dnf install {fedora}`), point CXX at a g++ that has it, or build without the feature.",
        compiler.display(),
        compiler.display(),
        printed.unwrap_or_default(),
        debian.replace("{V}", &version),
    ))
}

/// What `-print-file-name` printed, when it names a file: gcc and clang print the bare name when
/// they find none.
fn found(printed: &str) -> Option<PathBuf> {
    let path = PathBuf::from(printed);
    (path.is_absolute() && path.is_file()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_is_not_found() {
        assert_eq!(found("libstdc++.a"), None);
        assert_eq!(found(""), None);
        assert_eq!(found("/nonexistent/libstdc++.a"), None);
        let exe = std::env::current_exe().unwrap();
        assert_eq!(found(exe.to_str().unwrap()), Some(exe));
    }

    #[test]
    fn a_compiler_without_the_library_is_one_paragraph_naming_the_package() {
        // `echo` prints its argument back, as gcc prints the bare name of a file it lacks.
        let error = find_library(
            Path::new("echo"),
            "libstdc++.a",
            "libstdc++-{V}-dev",
            "libstdc++-static",
        )
        .unwrap_err();
        assert!(!error.contains('\n'), "{error}");
        for part in [
            "has no libstdc++.a",
            "apt-get install libstdc++-",
            "-dev",
            "libstdc++-static",
            "static-cxx",
        ] {
            assert!(error.contains(part), "{part:?} missing from: {error}");
        }
    }

    #[test]
    fn other_targets_are_refused_before_looking_for_a_compiler() {
        let env = |key: &str| match key {
            "TARGET" => Some("x86_64-pc-windows-msvc".to_string()),
            "CARGO_CFG_TARGET_OS" => Some("windows".to_string()),
            "CARGO_CFG_TARGET_ENV" => Some("msvc".to_string()),
            _ => None,
        };
        let error = prepare(Path::new("/nonexistent"), &env).unwrap_err();
        assert!(
            error.contains("Linux GNU targets") && error.contains("x86_64-pc-windows-msvc"),
            "{error}"
        );
    }
}
