//! Looking at candidate directories and running `nvcc --version`.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::var;

/// A usable nvcc with its CUDA headers and runtime library.
pub(crate) struct NvccFound {
    pub nvcc: PathBuf,
    pub include: PathBuf,
    pub lib: PathBuf,
    pub version: String,
    pub origin: String,
}

/// A usable CUTLASS.
pub(crate) struct CutlassFound {
    pub include: Vec<PathBuf>,
    pub version: String,
    pub origin: String,
}

fn exe(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Looks for nvcc: `$NVCC`, `$CUDA_HOME/bin/nvcc`, `$CUDA_PATH/bin/nvcc`, `nvcc` on `$PATH`.
/// Appends each attempt to `tried`, and each set-but-unusable soft candidate to `skipped`.
/// `Err` only when `NVCC` is set and unusable.
pub(crate) fn find_nvcc(
    env: &dyn Fn(&str) -> Option<String>,
    tried: &mut Vec<String>,
    skipped: &mut Vec<String>,
) -> Result<Option<NvccFound>, String> {
    let path_var = var(env, "PATH");
    match var(env, "NVCC") {
        Some(v) => {
            let path = if v.contains(std::path::is_separator) {
                absolute(Path::new(&v))
            } else {
                path_var
                    .as_deref()
                    .and_then(|p| find_on_path(p, &v))
                    .unwrap_or_else(|| absolute(Path::new(&v)))
            };
            return match nvcc_at(&path, "from $NVCC".to_string()) {
                Ok(found) => Ok(Some(found)),
                Err(why) => {
                    tried.push(format!("NVCC={v}: {why}"));
                    Err(format!("NVCC={v} is not a usable nvcc (see below)"))
                }
            };
        }
        None => tried.push("NVCC not set".to_string()),
    }
    for key in ["CUDA_HOME", "CUDA_PATH"] {
        let Some(v) = var(env, key) else {
            tried.push(format!("{key} not set"));
            continue;
        };
        let path = absolute(&Path::new(&v).join("bin").join(exe("nvcc")));
        if !path.is_file() {
            let why = format!("{key}={v}: no {}", path.display());
            tried.push(why.clone());
            skipped.push(why);
            continue;
        }
        match nvcc_at(&path, format!("from ${key}")) {
            Ok(found) => return Ok(Some(found)),
            Err(why) => {
                let why = format!("{key}={v}: {why}");
                tried.push(why.clone());
                skipped.push(why);
            }
        }
    }
    match path_var {
        None => tried.push("no nvcc on PATH (PATH is empty or not set)".to_string()),
        Some(p) => match find_on_path(&p, "nvcc") {
            None => tried.push("no nvcc on PATH".to_string()),
            Some(path) => match nvcc_at(&path, "from PATH".to_string()) {
                Ok(found) => return Ok(Some(found)),
                Err(why) => {
                    let why = format!("nvcc on PATH ({}): {why}", path.display());
                    tried.push(why.clone());
                    skipped.push(why);
                }
            },
        },
    }
    Ok(None)
}

/// The first executable file named `name` in a `PATH`-style list.
pub(crate) fn find_on_path(path_list: &str, name: &str) -> Option<PathBuf> {
    let file = exe(name);
    std::env::split_paths(path_list)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(&file))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// Checks the nvcc at `path`: the CUDA headers and static runtime next to it, and that it runs.
pub(crate) fn nvcc_at(path: &Path, origin: String) -> Result<NvccFound, String> {
    if !path.is_file() {
        return Err(format!("{} does not exist", path.display()));
    }
    // Both the path as given and with symlinks resolved (e.g. /usr/local/bin/nvcc -> the toolkit).
    let mut roots: Vec<PathBuf> = Vec::new();
    for p in [Some(path.to_path_buf()), path.canonicalize().ok()]
        .into_iter()
        .flatten()
    {
        if let Some(root) = p.parent().and_then(Path::parent) {
            if !roots.iter().any(|r| r == root) {
                roots.push(root.to_path_buf());
            }
        }
    }
    let target = match std::env::consts::ARCH {
        "aarch64" => "sbsa-linux",
        "x86_64" => "x86_64-linux",
        other => other,
    };
    let multiarch = format!("lib/{}-linux-gnu", std::env::consts::ARCH);
    let include_dirs: Vec<PathBuf> = roots
        .iter()
        .flat_map(|r| [r.join("include"), r.join("targets").join(target).join("include")])
        .collect();
    let lib_dirs: Vec<PathBuf> = roots
        .iter()
        .flat_map(|r| {
            [
                r.join("lib64"),
                r.join("lib"),
                r.join("targets").join(target).join("lib"),
                r.join(&multiarch),
                r.join("lib").join("x64"),
            ]
        })
        .collect();
    let static_lib = if cfg!(windows) {
        "cudart_static.lib"
    } else {
        "libcudart_static.a"
    };
    let include = first_holding(&include_dirs, "cuda_runtime.h")?;
    let lib = first_holding(&lib_dirs, static_lib)?;
    let version = nvcc_version(path)?;
    Ok(NvccFound {
        nvcc: path.to_path_buf(),
        include,
        lib,
        version,
        origin,
    })
}

fn first_holding(dirs: &[PathBuf], file: &str) -> Result<PathBuf, String> {
    dirs.iter()
        .find(|d| d.join(file).is_file())
        .cloned()
        .ok_or_else(|| {
            let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            format!("no {file} next to it (looked in {})", list.join(", "))
        })
}

/// The `release X.Y, VX.Y.Z` line of `nvcc --version`.
pub(crate) fn nvcc_version(nvcc: &Path) -> Result<String, String> {
    let out = output_retrying(Command::new(nvcc).arg("--version"))
        .map_err(|e| format!("cannot run `{} --version`: {e}", nvcc.display()))?;
    if !out.status.success() {
        return Err(format!(
            "`{} --version` failed ({}): {}",
            nvcc.display(),
            out.status,
            tail(&out.stderr, 10)
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .map(str::trim)
        .find(|l| l.contains("release ") && l.contains(", V"))
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "`{} --version` printed no `release X.Y, VX.Y.Z` line (is it nvcc?): {}",
                nvcc.display(),
                tail(&out.stdout, 5)
            )
        })
}

/// `Command::output`, retried a few times on ETXTBSY ("text file busy": the executable was just
/// written, and another thread's fork still holds it open for a moment).
pub(crate) fn output_retrying(cmd: &mut Command) -> io::Result<Output> {
    let mut attempt = 0;
    loop {
        match cmd.output() {
            Err(e) if e.raw_os_error() == Some(26) && attempt < 20 && cfg!(unix) => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(25 * attempt));
            }
            other => return other,
        }
    }
}

/// The last `lines` lines of a process output, at most ~4000 characters.
pub(crate) fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.trim_end().lines().collect();
    let mut out = all[all.len().saturating_sub(lines)..].join("\n");
    if out.len() > 4000 {
        let mut cut = out.len() - 4000;
        while !out.is_char_boundary(cut) {
            cut += 1;
        }
        out = format!("…{}", &out[cut..]);
    }
    if out.is_empty() {
        "(no output)".to_string()
    } else {
        out
    }
}

/// Looks at `$CUTLASS_DIR`. `Err` when it is set and unusable.
pub(crate) fn find_cutlass(
    env: &dyn Fn(&str) -> Option<String>,
    tried: &mut Vec<String>,
) -> Result<Option<CutlassFound>, String> {
    let Some(v) = var(env, "CUTLASS_DIR") else {
        tried.push("CUTLASS_DIR not set".to_string());
        return Ok(None);
    };
    match cutlass_at(&absolute(Path::new(&v)), "from $CUTLASS_DIR".to_string()) {
        Ok(found) => Ok(Some(found)),
        Err(why) => {
            tried.push(format!("CUTLASS_DIR={v}: {why}"));
            Err(format!("CUTLASS_DIR={v} is not a usable CUTLASS (see below)"))
        }
    }
}

/// A CUTLASS checkout or install (`dir/include/cutlass/cutlass.h`), or its `include` directory
/// (`dir/cutlass/cutlass.h`).
pub(crate) fn cutlass_at(dir: &Path, origin: String) -> Result<CutlassFound, String> {
    let mut include = Vec::new();
    if dir.join("include/cutlass/cutlass.h").is_file() {
        include.push(dir.join("include"));
        let util = dir.join("tools/util/include");
        if util.is_dir() {
            include.push(util);
        }
    } else if dir.join("cutlass/cutlass.h").is_file() {
        include.push(dir.to_path_buf());
        if dir.file_name().is_some_and(|n| n == "include") {
            if let Some(util) = dir.parent().map(|p| p.join("tools/util/include")) {
                if util.is_dir() {
                    include.push(util);
                }
            }
        }
    } else if !dir.is_dir() {
        return Err(format!(
            "{} is not a directory (expected a CUTLASS checkout or install holding \
             include/cutlass/cutlass.h)",
            dir.display()
        ));
    } else {
        return Err(format!(
            "neither {0}/include/cutlass/cutlass.h nor {0}/cutlass/cutlass.h exists (expected a \
             CUTLASS checkout or install: the directory holding include/cutlass/cutlass.h and \
             tools/util/include, or an include directory holding cutlass/cutlass.h)",
            dir.display()
        ));
    }
    let version_h = include[0].join("cutlass/version.h");
    let text = std::fs::read_to_string(&version_h)
        .map_err(|e| format!("cannot read {}: {e}", version_h.display()))?;
    let version = parse_cutlass_version(&text).ok_or_else(|| {
        format!(
            "{} defines no CUTLASS_MAJOR/CUTLASS_MINOR/CUTLASS_PATCH",
            version_h.display()
        )
    })?;
    Ok(CutlassFound {
        include,
        version,
        origin,
    })
}

/// `MAJOR.MINOR.PATCH` from the `#define CUTLASS_MAJOR 4` … lines of `cutlass/version.h`.
pub(crate) fn parse_cutlass_version(text: &str) -> Option<String> {
    let (mut major, mut minor, mut patch) = (None, None, None);
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("define") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(value) = value.parse::<u32>() else {
            continue;
        };
        match name {
            "CUTLASS_MAJOR" => major = major.or(Some(value)),
            "CUTLASS_MINOR" => minor = minor.or(Some(value)),
            "CUTLASS_PATCH" => patch = patch.or(Some(value)),
            _ => {}
        }
    }
    Some(format!("{}.{}.{}", major?, minor?, patch?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cutlass_version() {
        let text = "#pragma once\n#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n\
                    #define CUTLASS_PATCH 0 \n#define CUTLASS_VERSION ((CUTLASS_MAJOR)*100)\n";
        assert_eq!(parse_cutlass_version(text).as_deref(), Some("4.2.0"));
        assert_eq!(
            parse_cutlass_version("# define CUTLASS_MAJOR 3\n#define CUTLASS_MINOR 9\n").as_deref(),
            None
        );
    }

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail(b"a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail(b"", 2), "(no output)");
    }
}
