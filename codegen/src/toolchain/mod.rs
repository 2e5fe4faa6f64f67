//! Finds, or installs, the CUDA compiler and the CUTLASS headers that the build needs.
//!
//! [`discover`] looks, in order:
//!
//! 1. for nvcc: `$NVCC` (the executable), `$CUDA_HOME/bin/nvcc`, `$CUDA_PATH/bin/nvcc`, then `nvcc`
//!    on `$PATH`; the CUDA headers and `libcudart_static.a` are taken from next to it
//!    (`<bin>/../include`, `<bin>/../lib64` or `<bin>/../lib`, …);
//! 2. for CUTLASS: `$CUTLASS_DIR` (a checkout or install holding `include/cutlass/cutlass.h`, or an
//!    `include` directory holding `cutlass/cutlass.h`);
//! 3. for whatever is still missing: the pinned PyPI set ([`pinned::PINNED`]: CUDA 13.0 nvcc,
//!    runtime, CCCL and CUTLASS 4.2), installed once with pip into the per-user cache
//!    ([`cache_root`]) unless `CUTLASS_AOT_NO_DOWNLOAD` is set to anything but `0`.
//!
//! A variable that names one thing explicitly (`NVCC`, `CUTLASS_DIR`) and points at something
//! unusable is an error. `CUDA_HOME`, `CUDA_PATH` and `PATH` are often set for other reasons, so a
//! toolkit there that is incomplete is noted and skipped. Empty variables count as unset.
//!
//! Every variable read goes through the injected `env` function (build.rs passes
//! `|k| std::env::var(k).ok()`); [`env_vars_read`] lists them all for `cargo:rerun-if-env-changed`.
//! Relative paths in variables are taken relative to the current directory (in a build script: the
//! package's directory) and made absolute.

use std::fmt;
use std::path::{Path, PathBuf};

mod lock;
pub mod pinned;
mod probe;

/// Where the compiler, the CUDA headers/libraries and CUTLASS are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    /// The nvcc executable.
    pub nvcc: PathBuf,
    /// The directory holding `cuda_runtime.h`.
    pub cuda_include: PathBuf,
    /// The directory holding `libcudart_static.a`.
    pub cuda_lib: PathBuf,
    /// CUTLASS include directories: `include`, then `tools/util/include` where there is one.
    pub cutlass_include: Vec<PathBuf>,
    /// The `Cuda compilation tools, release X.Y, VX.Y.Z` line of `nvcc --version`.
    pub nvcc_version: String,
    /// `MAJOR.MINOR.PATCH` from `cutlass/version.h`, e.g. `4.2.0`.
    pub cutlass_version: String,
    /// Human text: where each part was found.
    pub origin: String,
}

/// Why no usable toolchain was found: what was tried, in order, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolchainError {
    problem: String,
    tried: Vec<String>,
    fixes: Vec<String>,
}

impl ToolchainError {
    /// One line: what went wrong.
    pub fn problem(&self) -> &str {
        &self.problem
    }

    /// Each thing tried, in order, with why it did not work.
    pub fn tried(&self) -> &[String] {
        &self.tried
    }

    /// Ways to fix it.
    pub fn fixes(&self) -> &[String] {
        &self.fixes
    }
}

impl fmt::Display for ToolchainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cutlass-aot: {}", self.problem)?;
        if !self.tried.is_empty() {
            write!(f, "\ntried, in order:")?;
            for (i, t) in self.tried.iter().enumerate() {
                write!(f, "\n  {}. {}", i + 1, t.replace('\n', "\n     "))?;
            }
        }
        if !self.fixes.is_empty() {
            write!(f, "\nto fix:")?;
            for x in &self.fixes {
                write!(f, "\n  - {x}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ToolchainError {}

/// Every environment variable [`discover`] and [`cache_root`] may read.
pub fn env_vars_read() -> &'static [&'static str] {
    &[
        "NVCC",
        "CUDA_HOME",
        "CUDA_PATH",
        "PATH",
        "CUTLASS_DIR",
        "CUTLASS_AOT_NO_DOWNLOAD",
        "CUTLASS_AOT_PYTHON",
        "CUTLASS_AOT_CACHE_DIR",
        "XDG_CACHE_HOME",
        "HOME",
    ]
}

/// A variable's value; empty counts as unset.
fn var(env: &dyn Fn(&str) -> Option<String>, key: &str) -> Option<String> {
    debug_assert!(env_vars_read().contains(&key), "{key} missing from env_vars_read");
    env(key).filter(|v| !v.is_empty())
}

/// The per-user cache directory: `$CUTLASS_AOT_CACHE_DIR`, else `$XDG_CACHE_HOME/cutlass-aot`,
/// else `$HOME/.cache/cutlass-aot`. Never the working directory: relative values are refused
/// (`CUTLASS_AOT_CACHE_DIR`) or ignored (`XDG_CACHE_HOME`, `HOME`). The directory may not exist yet.
pub fn cache_root(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, ToolchainError> {
    let fixes = || vec!["set CUTLASS_AOT_CACHE_DIR to an absolute path of a writable directory".to_string()];
    let mut tried = Vec::new();
    match var(env, "CUTLASS_AOT_CACHE_DIR") {
        Some(v) if Path::new(&v).is_absolute() => return Ok(PathBuf::from(v)),
        Some(v) => {
            tried.push(format!("CUTLASS_AOT_CACHE_DIR={v}: not an absolute path"));
            return Err(ToolchainError {
                problem: format!(
                    "CUTLASS_AOT_CACHE_DIR={v} is not an absolute path (the cache is never put \
                     under the working directory)"
                ),
                tried,
                fixes: fixes(),
            });
        }
        None => tried.push("CUTLASS_AOT_CACHE_DIR not set".to_string()),
    }
    match var(env, "XDG_CACHE_HOME") {
        Some(v) if Path::new(&v).is_absolute() => return Ok(Path::new(&v).join("cutlass-aot")),
        Some(v) => tried.push(format!("XDG_CACHE_HOME={v} ignored: not an absolute path")),
        None => tried.push("XDG_CACHE_HOME not set".to_string()),
    }
    match var(env, "HOME") {
        Some(v) if Path::new(&v).is_absolute() => {
            return Ok(Path::new(&v).join(".cache").join("cutlass-aot"))
        }
        Some(v) => tried.push(format!("HOME={v} ignored: not an absolute path")),
        None => tried.push("HOME not set".to_string()),
    }
    Err(ToolchainError {
        problem: "no per-user cache directory".to_string(),
        tried,
        fixes: fixes(),
    })
}

/// Finds nvcc, the CUDA runtime and CUTLASS (see the module docs for the order), installing the
/// pinned PyPI set with pip into the per-user cache for whatever is missing.
///
/// This may run pip (once per cache directory, under a lock shared by concurrent builds) and runs
/// `nvcc --version`.
pub fn discover(env: &dyn Fn(&str) -> Option<String>) -> Result<Toolchain, ToolchainError> {
    let mut tried = Vec::new();
    let mut skipped = Vec::new();
    let mut problems = Vec::new();

    let nvcc = match probe::find_nvcc(env, &mut tried, &mut skipped) {
        Ok(found) => found,
        Err(problem) => {
            problems.push(problem);
            None
        }
    };
    let cutlass = match probe::find_cutlass(env, &mut tried) {
        Ok(found) => found,
        Err(problem) => {
            problems.push(problem);
            None
        }
    };
    let missing = Missing {
        nvcc: nvcc.is_none(),
        cutlass: cutlass.is_none(),
    };
    if !problems.is_empty() {
        let mut fixes = Vec::new();
        if problems.iter().any(|p| p.starts_with("NVCC")) {
            fixes
                .push("point NVCC at an nvcc executable of a complete CUDA toolkit, or unset it".to_string());
        }
        if problems.iter().any(|p| p.starts_with("CUTLASS_DIR")) {
            fixes.push(
                "point CUTLASS_DIR at a CUTLASS checkout or install (the directory holding \
                 include/cutlass/cutlass.h), or unset it"
                    .to_string(),
            );
        }
        fixes.push(NO_NVCC_FIX.to_string());
        return Err(ToolchainError {
            problem: problems.join("; "),
            tried,
            fixes,
        });
    }

    let mut pypi_note = None;
    let (nvcc, cutlass) = match (nvcc, cutlass) {
        (Some(n), Some(c)) => (n, c),
        (nvcc, cutlass) => {
            let installed = install_pinned(env, &mut tried, missing)?;
            let how = if installed.fresh {
                format!("installed now, pip took {:.0} s", installed.secs)
            } else {
                "reused".to_string()
            };
            pypi_note = Some(format!("pinned PyPI set in {} ({how})", installed.dir.display()));
            let from_pypi = "from the pinned PyPI set".to_string();
            let nvcc = match nvcc {
                Some(n) => n,
                None => probe::nvcc_at(&installed.nvcc, from_pypi.clone())
                    .map_err(|why| install_broken(tried.clone(), &installed.nvcc, &why))?,
            };
            let cutlass = match cutlass {
                Some(c) => c,
                None => probe::cutlass_at(&installed.cutlass, from_pypi)
                    .map_err(|why| install_broken(tried.clone(), &installed.cutlass, &why))?,
            };
            (nvcc, cutlass)
        }
    };

    let mut origin = format!(
        "nvcc {} {}; CUTLASS {} {} {}",
        nvcc.nvcc.display(),
        nvcc.origin,
        cutlass.version,
        cutlass.include[0].display(),
        cutlass.origin
    );
    if let Some(note) = pypi_note {
        origin.push_str("; ");
        origin.push_str(&note);
    }
    if !skipped.is_empty() {
        origin.push_str("; skipped: ");
        origin.push_str(&skipped.join("; "));
    }
    Ok(Toolchain {
        nvcc: nvcc.nvcc,
        cuda_include: nvcc.include,
        cuda_lib: nvcc.lib,
        cutlass_include: cutlass.include,
        nvcc_version: nvcc.version,
        cutlass_version: cutlass.version,
        origin,
    })
}

const NO_NVCC_FIX: &str = "or set CUTLASS_AOT_NO_NVCC=1 to build without kernels";

#[derive(Clone, Copy)]
struct Missing {
    nvcc: bool,
    cutlass: bool,
}

impl Missing {
    fn what(self) -> &'static str {
        match (self.nvcc, self.cutlass) {
            (true, true) => "nvcc and CUTLASS were not found",
            (true, false) => "nvcc was not found",
            _ => "CUTLASS was not found",
        }
    }

    fn fixes(self) -> Vec<String> {
        let mut fixes = Vec::new();
        if self.nvcc {
            fixes.push(
                "set NVCC=/path/to/nvcc or CUDA_HOME=/path/to/cuda (a CUDA toolkit with bin/nvcc, \
                 include/cuda_runtime.h and lib64/libcudart_static.a)"
                    .to_string(),
            );
        }
        if self.cutlass {
            fixes.push(
                "set CUTLASS_DIR=/path/to/cutlass (a CUTLASS checkout or install holding \
                 include/cutlass/cutlass.h)"
                    .to_string(),
            );
        }
        fixes
    }
}

fn install_pinned(
    env: &dyn Fn(&str) -> Option<String>,
    tried: &mut Vec<String>,
    missing: Missing,
) -> Result<pinned::Installed, ToolchainError> {
    let set = format!(
        "the pinned PyPI set (CUDA {} + CUTLASS {})",
        pinned::CUDA_VERSION,
        pinned::CUTLASS_VERSION
    );
    if let Some(v) = var(env, "CUTLASS_AOT_NO_DOWNLOAD").filter(|v| v != "0") {
        tried.push(format!(
            "PyPI install skipped because CUTLASS_AOT_NO_DOWNLOAD={v}"
        ));
        let mut fixes = missing.fixes();
        fixes.push(format!(
            "or unset CUTLASS_AOT_NO_DOWNLOAD (or set it to 0) to let the build install {set} \
             with pip into the per-user cache"
        ));
        fixes.push(NO_NVCC_FIX.to_string());
        return Err(ToolchainError {
            problem: missing.what().to_string(),
            tried: tried.clone(),
            fixes,
        });
    }
    if !pinned::platform_supported() {
        tried.push(format!(
            "PyPI install not possible: only x86_64 Linux wheels are pinned, and this build host \
             is {}/{}",
            std::env::consts::OS,
            std::env::consts::ARCH
        ));
        let mut fixes = missing.fixes();
        fixes.push(NO_NVCC_FIX.to_string());
        return Err(ToolchainError {
            problem: missing.what().to_string(),
            tried: tried.clone(),
            fixes,
        });
    }
    let root = match cache_root(env) {
        Ok(root) => root,
        Err(e) => {
            tried.push(format!(
                "PyPI install not possible: {} ({})",
                e.problem,
                e.tried.join("; ")
            ));
            let mut fixes = e.fixes;
            fixes.extend(missing.fixes());
            fixes.push(NO_NVCC_FIX.to_string());
            return Err(ToolchainError {
                problem: missing.what().to_string(),
                tried: tried.clone(),
                fixes,
            });
        }
    };
    match pinned::ensure_installed(env, &root) {
        Ok(installed) => Ok(installed),
        Err(why) => {
            tried.push(format!(
                "installing {set} into {} failed: {why}",
                pinned::install_dir(&root).display()
            ));
            let mut fixes = vec![
                "check that pip can reach the package index (pip's own configuration, e.g. \
                 PIP_INDEX_URL or a proxy, is honoured), or set CUTLASS_AOT_PYTHON to a Python \
                 that has pip"
                    .to_string(),
            ];
            fixes.extend(missing.fixes());
            fixes.push(NO_NVCC_FIX.to_string());
            Err(ToolchainError {
                problem: format!("{}, and installing {set} failed", missing.what()),
                tried: tried.clone(),
                fixes,
            })
        }
    }
}

fn install_broken(mut tried: Vec<String>, path: &Path, why: &str) -> ToolchainError {
    tried.push(format!("the pinned PyPI install: {}: {why}", path.display()));
    ToolchainError {
        problem: "the pinned PyPI install is unusable".to_string(),
        tried,
        fixes: vec![
            "remove the install directory named above so that the next build reinstalls it".to_string(),
            "or set NVCC/CUDA_HOME and CUTLASS_DIR".to_string(),
            NO_NVCC_FIX.to_string(),
        ],
    }
}
