//! The pinned PyPI set (CUDA 13.0 nvcc + runtime + CCCL, CUTLASS 4.2) and its pip install into
//! the per-user cache.
//!
//! The install goes to [`install_dir`] `= <cache_root>/toolchain/cuda13.0.88-cutlass4.2.0-<hash>`
//! (the hash: first 12 hex digits of the SHA-256 of [`requirements_text`]). pip writes into
//! `<dir>.partial`; after pip succeeded and the installed nvcc ran, a `.complete` marker is written
//! and `<dir>.partial` is renamed to `<dir>`, so an interrupted install is never reused. Concurrent
//! builds serialise on the lock file `<dir>.lock`. The requirements file is `<dir>.requirements.txt`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::lock::{self, LockFile};
use super::probe::{self, find_on_path, tail};
use super::var;

/// One pinned wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The PyPI project name.
    pub name: &'static str,
    /// The exact version.
    pub version: &'static str,
    /// SHA-256 of the wheel file (hex).
    pub sha256: &'static str,
    /// The wheel file name the hash belongs to (manylinux x86_64, or `any` for CUTLASS).
    pub wheel: &'static str,
}

/// The CUDA version of the pinned nvcc.
pub const CUDA_VERSION: &str = "13.0.88";
/// The pinned CUTLASS version.
pub const CUTLASS_VERSION: &str = "4.2.0";

/// The pinned set: exact versions and hashes, installed together with `--no-deps`.
pub const PINNED: &[Pin] = &[
    Pin {
        name: "nvidia-cuda-nvcc",
        version: "13.0.88",
        sha256: "56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03",
        wheel: "nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    },
    Pin {
        name: "nvidia-nvvm",
        version: "13.0.88",
        sha256: "c5f41ffeb6466944a026dfa5317d7d85355c119bbec279205d22f1869d1054e0",
        wheel: "nvidia_nvvm-13.0.88-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
    },
    Pin {
        name: "nvidia-cuda-crt",
        version: "13.0.88",
        sha256: "2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4",
        wheel: "nvidia_cuda_crt-13.0.88-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    },
    Pin {
        name: "nvidia-cuda-runtime",
        version: "13.0.96",
        sha256: "7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548",
        wheel: "nvidia_cuda_runtime-13.0.96-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    },
    Pin {
        name: "nvidia-cuda-cccl",
        version: "13.0.85",
        sha256: "e0da7ad981f3a8aff08241b5bfc1af868742a63e2762f53a5171c492ef242649",
        wheel: "nvidia_cuda_cccl-13.0.85-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    },
    Pin {
        name: "nvidia-cutlass",
        version: "4.2.0.0",
        sha256: "f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6",
        wheel: "nvidia_cutlass-4.2.0.0-py3-none-any.whl",
    },
];

/// nvcc inside the install.
pub const NVCC_IN_INSTALL: &str = "nvidia/cu13/bin/nvcc";
/// The CUTLASS source tree inside the install (`include`, `tools/util/include`).
pub const CUTLASS_IN_INSTALL: &str = "cutlass_library/source";
/// The marker written once an install is complete.
pub const COMPLETE_MARKER: &str = ".complete";

/// The pip requirements file: one `NAME==VERSION --hash=sha256:HEX` line per pinned wheel.
pub fn requirements_text() -> String {
    PINNED
        .iter()
        .map(|p| format!("{}=={} --hash=sha256:{}\n", p.name, p.version, p.sha256))
        .collect()
}

/// `<cache_root>/toolchain/cuda13.0.88-cutlass4.2.0-<first 12 hex of sha256(requirements)>`.
pub fn install_dir(cache_root: &Path) -> PathBuf {
    let hash = Sha256::digest(requirements_text().as_bytes());
    let hex: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
    cache_root
        .join("toolchain")
        .join(format!("cuda{CUDA_VERSION}-cutlass{CUTLASS_VERSION}-{hex}"))
}

/// Whether the pinned wheels can run on this build host (x86_64 Linux).
pub fn platform_supported() -> bool {
    std::env::consts::OS == "linux" && std::env::consts::ARCH == "x86_64"
}

/// A complete install.
pub(crate) struct Installed {
    pub dir: PathBuf,
    pub nvcc: PathBuf,
    pub cutlass: PathBuf,
    /// Installed by this call (else reused).
    pub fresh: bool,
    /// Seconds pip ran, when `fresh`.
    pub secs: f64,
}

fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    dir.with_file_name(name)
}

fn installed(dir: PathBuf, fresh: bool, secs: f64) -> Installed {
    Installed {
        nvcc: dir.join(NVCC_IN_INSTALL),
        cutlass: dir.join(CUTLASS_IN_INSTALL),
        dir,
        fresh,
        secs,
    }
}

/// Installs the pinned set under `cache_root` unless a complete install is there already.
pub(crate) fn ensure_installed(
    env: &dyn Fn(&str) -> Option<String>,
    cache_root: &Path,
) -> Result<Installed, String> {
    let dir = install_dir(cache_root);
    if dir.join(COMPLETE_MARKER).is_file() {
        return Ok(installed(dir, false, 0.0));
    }
    let parent = dir.parent().expect("install_dir has a parent");
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let lock = LockFile::acquire(&sibling(&dir, ".lock"))?;
    // Another build may have finished it while we waited.
    if dir.join(COMPLETE_MARKER).is_file() {
        return Ok(installed(dir, false, 0.0));
    }
    for leftover in [&dir, &sibling(&dir, ".partial")] {
        if leftover.exists() {
            std::fs::remove_dir_all(leftover)
                .map_err(|e| format!("cannot remove the incomplete install {}: {e}", leftover.display()))?;
        }
    }
    let partial = sibling(&dir, ".partial");
    let reqs_path = sibling(&dir, ".requirements.txt");
    let reqs = requirements_text();
    std::fs::write(&reqs_path, &reqs).map_err(|e| format!("cannot write {}: {e}", reqs_path.display()))?;
    let python = python(env)?;

    eprintln!(
        "cutlass-aot: installing the pinned CUDA {CUDA_VERSION} + CUTLASS {CUTLASS_VERSION} wheels \
         with pip into {}",
        dir.display()
    );
    let start = Instant::now();
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "pip", "install", "--disable-pip-version-check", "-q"])
        .args(["--no-deps", "--require-hashes", "--only-binary=:all:"])
        .arg("--target")
        .arg(&partial)
        .arg("-r")
        .arg(&reqs_path)
        .env("PIP_NO_INPUT", "1")
        .stdin(Stdio::null());
    let shown = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let out = run_with_heartbeat(&mut cmd, &lock)
        .map_err(|e| format!("cannot run {} (set CUTLASS_AOT_PYTHON): {e}", python.display()))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "`{shown}` failed ({}); pip said:\n{}",
            out.status,
            tail(&out.stderr, 25)
        ));
    }

    let nvcc = partial.join(NVCC_IN_INSTALL);
    let version = probe::nvcc_version(&nvcc)
        .map_err(|why| format!("pip succeeded but the installed nvcc is unusable: {why}"))?;
    let cutlass_h = partial.join(CUTLASS_IN_INSTALL).join("include/cutlass/cutlass.h");
    if !cutlass_h.is_file() {
        return Err(format!("pip succeeded but {} is missing", cutlass_h.display()));
    }
    std::fs::write(
        partial.join(COMPLETE_MARKER),
        format!("{reqs}# {version}\n# pip took {secs:.1} s\n"),
    )
    .map_err(|e| format!("cannot write the completion marker in {}: {e}", partial.display()))?;
    std::fs::rename(&partial, &dir)
        .map_err(|e| format!("cannot rename {} to {}: {e}", partial.display(), dir.display()))?;
    drop(lock);
    Ok(installed(dir, true, secs))
}

/// `$CUTLASS_AOT_PYTHON`, else `python3`, else `python` on `$PATH`.
fn python(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, String> {
    let path = var(env, "PATH");
    if let Some(p) = var(env, "CUTLASS_AOT_PYTHON") {
        if !p.contains(std::path::is_separator) {
            if let Some(found) = path.as_deref().and_then(|list| find_on_path(list, &p)) {
                return Ok(found);
            }
        }
        return Ok(PathBuf::from(p));
    }
    ["python3", "python"]
        .iter()
        .find_map(|name| path.as_deref().and_then(|list| find_on_path(list, name)))
        .ok_or_else(|| {
            "no python3 or python on PATH (set CUTLASS_AOT_PYTHON to a Python that has pip)".to_string()
        })
}

/// Runs `cmd` to completion, touching `lock` every [`lock::HEARTBEAT`] meanwhile.
fn run_with_heartbeat(cmd: &mut Command, lock: &LockFile) -> std::io::Result<std::process::Output> {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut last = Instant::now();
            while !done.load(Ordering::Relaxed) {
                std::thread::park_timeout(Duration::from_millis(500));
                if last.elapsed() >= lock::HEARTBEAT {
                    lock.touch();
                    last = Instant::now();
                }
            }
        });
        let out = probe::output_retrying(cmd);
        done.store(true, Ordering::Relaxed);
        out
    })
}
