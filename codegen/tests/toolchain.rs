//! Toolchain discovery with faked environments.
//!
//! Most tests build a fake CUDA toolkit (an `nvcc` shell script printing a release line, an empty
//! `cuda_runtime.h` and `libcudart_static.a`), a fake CUTLASS tree and a fake `python` that acts
//! like `pip install --target`, so they run anywhere (Unix). Tests against the real pinned install
//! use `$CUTLASS_AOT_TEST_INSTALL` (default `/tmp/tc/inst`) and are skipped, with a printed reason,
//! when it is missing. `real_pip_install` (ignored) runs the real pip install end to end.

#![cfg(unix)]

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use cutlass_aot_build::toolchain::{self, pinned, Toolchain, ToolchainError};

// ---------------------------------------------------------------------------------------------
// helpers

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "cutlass-aot-tc-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn write_exec(path: &Path, text: &str) {
    write(path, text);
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// `root/bin/nvcc` (prints `release`), `root/include/cuda_runtime.h`, `root/<lib>/libcudart_static.a`.
fn fake_toolkit(root: &Path, lib: &str, release: &str) -> PathBuf {
    let nvcc = root.join("bin/nvcc");
    write_exec(
        &nvcc,
        &format!(
            "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n\
             echo 'Cuda compilation tools, release {release}, V{release}.1'\n"
        ),
    );
    write(&root.join("include/cuda_runtime.h"), "");
    write(&root.join(lib).join("libcudart_static.a"), "");
    nvcc
}

fn fake_cutlass(root: &Path, with_util: bool) {
    write(&root.join("include/cutlass/cutlass.h"), "#pragma once\n");
    write(
        &root.join("include/cutlass/version.h"),
        "#pragma once\n#define CUTLASS_MAJOR 3\n#define CUTLASS_MINOR 9\n#define CUTLASS_PATCH 2 \n",
    );
    if with_util {
        write(
            &root.join("tools/util/include/cutlass/util/packed_stride.hpp"),
            "",
        );
    }
}

/// A fake `python` acting like `python -m pip install … --target T -r R`: logs its arguments
/// (one line per run) to `log`, sleeps `sleep_s`, then either fails like pip or lays out the
/// pinned install's files in `T`.
fn fake_python(dir: &Path, log: &Path, sleep_s: u32, fail: bool) -> PathBuf {
    let python = dir.join("fake-python");
    let fail = if fail {
        "echo 'Collecting nvidia-cuda-nvcc==13.0.88' >&2\n\
         echo 'ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.' >&2\n\
         exit 1\n"
    } else {
        ""
    };
    write_exec(
        &python,
        &format!(
            r#"#!/bin/sh
echo "$@" >> '{log}'
sleep {sleep_s}
T=""; R=""
while [ $# -gt 0 ]; do
  case "$1" in
    --target) T="$2"; shift ;;
    -r) R="$2"; shift ;;
  esac
  shift
done
{fail}
C="$T/nvidia/cu13"; S="$T/cutlass_library/source"
mkdir -p "$C/bin" "$C/include" "$C/lib" "$S/include/cutlass" "$S/tools/util/include/cutlass/util"
cp "$R" "$T/requirements-seen.txt"
printf '#!/bin/sh\necho "Cuda compilation tools, release 13.0, V13.0.88"\n' > "$C/bin/nvcc"
chmod +x "$C/bin/nvcc"
: > "$C/include/cuda_runtime.h"; : > "$C/lib/libcudart_static.a"; : > "$S/include/cutlass/cutlass.h"
printf '#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n' > "$S/include/cutlass/version.h"
"#,
            log = log.display()
        ),
    );
    python
}

fn runs(log: &Path) -> usize {
    fs::read_to_string(log).map(|t| t.lines().count()).unwrap_or(0)
}

type Vars = HashMap<&'static str, String>;

fn vars(pairs: &[(&'static str, &str)]) -> Vars {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

fn discover(v: &Vars) -> Result<Toolchain, ToolchainError> {
    toolchain::discover(&|k: &str| v.get(k).cloned())
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn real_install() -> Option<PathBuf> {
    let p = PathBuf::from(
        std::env::var("CUTLASS_AOT_TEST_INSTALL").unwrap_or_else(|_| "/tmp/tc/inst".to_string()),
    );
    if p.join(pinned::NVCC_IN_INSTALL).is_file() {
        Some(p)
    } else {
        println!(
            "SKIPPED: no pinned install at {} (set CUTLASS_AOT_TEST_INSTALL)",
            p.display()
        );
        None
    }
}

// ---------------------------------------------------------------------------------------------
// explicit variables, fake toolkit

#[test]
fn nvcc_and_cutlass_dir_from_env() {
    let t = TempDir::new("explicit");
    let nvcc = fake_toolkit(&t.path().join("cuda"), "lib64", "12.8");
    fake_cutlass(&t.path().join("cutlass"), true);
    let tc = discover(&vars(&[
        ("NVCC", &s(&nvcc)),
        ("CUTLASS_DIR", &s(&t.path().join("cutlass"))),
        ("CUTLASS_AOT_NO_DOWNLOAD", "1"),
        ("PATH", ""),
    ]))
    .unwrap();
    assert_eq!(tc.nvcc, nvcc);
    assert_eq!(tc.cuda_include, t.path().join("cuda/include"));
    assert_eq!(tc.cuda_lib, t.path().join("cuda/lib64"));
    assert_eq!(
        tc.cutlass_include,
        vec![
            t.path().join("cutlass/include"),
            t.path().join("cutlass/tools/util/include")
        ]
    );
    assert_eq!(tc.nvcc_version, "Cuda compilation tools, release 12.8, V12.8.1");
    assert_eq!(tc.cutlass_version, "3.9.2");
    assert!(tc.origin.contains("from $NVCC"), "{}", tc.origin);
    assert!(tc.origin.contains("from $CUTLASS_DIR"), "{}", tc.origin);
}

#[test]
fn cuda_home_then_cuda_path_then_path() {
    let t = TempDir::new("order");
    let home_nvcc = fake_toolkit(&t.path().join("home"), "lib", "13.0");
    let cpath_nvcc = fake_toolkit(&t.path().join("cpath"), "lib64", "12.9");
    let path_nvcc = fake_toolkit(&t.path().join("onpath"), "lib64", "12.6");
    fake_cutlass(&t.path().join("cutlass"), false);
    let cutlass = s(&t.path().join("cutlass"));
    let path = format!("/nonexistent/bin:{}", s(&t.path().join("onpath/bin")));
    let base = [
        ("CUTLASS_DIR", cutlass.as_str()),
        ("CUTLASS_AOT_NO_DOWNLOAD", "1"),
        ("PATH", path.as_str()),
    ];

    let mut v = vars(&base);
    v.insert("CUDA_HOME", s(&t.path().join("home")));
    v.insert("CUDA_PATH", s(&t.path().join("cpath")));
    let tc = discover(&v).unwrap();
    assert_eq!(tc.nvcc, home_nvcc);
    assert_eq!(
        tc.cuda_lib,
        t.path().join("home/lib"),
        "lib holds the static runtime"
    );
    assert!(tc.origin.contains("from $CUDA_HOME"), "{}", tc.origin);
    assert_eq!(tc.cutlass_include, vec![t.path().join("cutlass/include")]);

    v.remove("CUDA_HOME");
    let tc = discover(&v).unwrap();
    assert_eq!(tc.nvcc, cpath_nvcc);
    assert!(tc.nvcc_version.contains("release 12.9"));

    // CUDA_HOME without bin/nvcc is skipped (and said so), PATH is used.
    v.remove("CUDA_PATH");
    v.insert("CUDA_HOME", s(&t.path().join("cutlass")));
    let tc = discover(&v).unwrap();
    assert_eq!(tc.nvcc, path_nvcc);
    assert!(tc.origin.contains("from PATH"), "{}", tc.origin);
    assert!(tc.origin.contains("skipped: CUDA_HOME="), "{}", tc.origin);
}

#[test]
fn nvcc_without_runtime_next_to_it_is_skipped_on_path() {
    let t = TempDir::new("noruntime");
    let nvcc = fake_toolkit(&t.path().join("cuda"), "lib64", "12.8");
    fs::remove_file(t.path().join("cuda/lib64/libcudart_static.a")).unwrap();
    fake_cutlass(&t.path().join("cutlass"), true);
    let err = discover(&vars(&[
        ("PATH", &s(nvcc.parent().unwrap())),
        ("CUTLASS_DIR", &s(&t.path().join("cutlass"))),
        ("CUTLASS_AOT_NO_DOWNLOAD", "1"),
    ]))
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("nvcc on PATH ("), "{text}");
    assert!(text.contains("no libcudart_static.a next to it"), "{text}");
    assert!(text.contains("nvcc was not found"), "{text}");
}

#[test]
fn cutlass_dir_may_be_the_include_dir() {
    let t = TempDir::new("incdir");
    let nvcc = fake_toolkit(&t.path().join("cuda"), "lib64", "12.8");
    fake_cutlass(&t.path().join("cutlass"), true);
    let tc = discover(&vars(&[
        ("NVCC", &s(&nvcc)),
        ("CUTLASS_DIR", &s(&t.path().join("cutlass/include"))),
        ("CUTLASS_AOT_NO_DOWNLOAD", "1"),
    ]))
    .unwrap();
    assert_eq!(
        tc.cutlass_include,
        vec![
            t.path().join("cutlass/include"),
            t.path().join("cutlass/tools/util/include")
        ]
    );
}

#[test]
fn cutlass_dir_without_headers_is_a_clear_error() {
    let t = TempDir::new("badcutlass");
    let empty = t.path().join("not-cutlass");
    fs::create_dir_all(&empty).unwrap();
    // Downloads allowed, yet an explicit CUTLASS_DIR that is wrong must not fall back to pip.
    let log = t.path().join("pip.log");
    let python = fake_python(t.path(), &log, 0, false);
    let err = discover(&vars(&[
        ("CUTLASS_DIR", &s(&empty)),
        ("CUTLASS_AOT_PYTHON", &s(&python)),
        ("CUTLASS_AOT_CACHE_DIR", &s(&t.path().join("cache"))),
        ("PATH", ""),
    ]))
    .unwrap_err();
    let text = err.to_string();
    println!("{text}");
    assert_eq!(
        err.problem(),
        format!("CUTLASS_DIR={} is not a usable CUTLASS (see below)", s(&empty))
    );
    assert!(
        text.contains(&format!("{}/include/cutlass/cutlass.h", s(&empty))),
        "{text}"
    );
    assert!(text.contains("expected a CUTLASS checkout or install"), "{text}");
    assert!(text.contains("point CUTLASS_DIR at"), "{text}");
    assert_eq!(runs(&log), 0, "pip must not run");

    let err = discover(&vars(&[
        ("CUTLASS_DIR", &s(&t.path().join("missing"))),
        ("CUTLASS_AOT_NO_DOWNLOAD", "1"),
    ]))
    .unwrap_err();
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

#[test]
fn bad_nvcc_variable_is_an_error() {
    let t = TempDir::new("badnvcc");
    fake_cutlass(&t.path().join("cutlass"), true);
    let cutlass = s(&t.path().join("cutlass"));
    let err = discover(&vars(&[("NVCC", "/nonexistent/nvcc"), ("CUTLASS_DIR", &cutlass)])).unwrap_err();
    assert_eq!(
        err.problem(),
        "NVCC=/nonexistent/nvcc is not a usable nvcc (see below)"
    );
    assert!(err.to_string().contains("does not exist"), "{err}");

    // Something that runs but is not nvcc.
    let nvcc = fake_toolkit(&t.path().join("cuda"), "lib64", "12.8");
    write_exec(&nvcc, "#!/bin/sh\necho hello\n");
    let err = discover(&vars(&[("NVCC", &s(&nvcc)), ("CUTLASS_DIR", &cutlass)])).unwrap_err();
    assert!(
        err.to_string().contains("printed no `release X.Y, VX.Y.Z` line"),
        "{err}"
    );

    // An nvcc that fails.
    write_exec(&nvcc, "#!/bin/sh\necho 'broken install' >&2\nexit 3\n");
    let err = discover(&vars(&[("NVCC", &s(&nvcc)), ("CUTLASS_DIR", &cutlass)])).unwrap_err();
    assert!(err.to_string().contains("broken install"), "{err}");
}

#[test]
fn nothing_found_and_no_download_lists_what_was_tried() {
    let err = discover(&vars(&[("CUTLASS_AOT_NO_DOWNLOAD", "1"), ("PATH", "")])).unwrap_err();
    let text = err.to_string();
    println!("{text}");
    assert_eq!(err.problem(), "nvcc and CUTLASS were not found");
    assert_eq!(
        err.tried(),
        [
            "NVCC not set",
            "CUDA_HOME not set",
            "CUDA_PATH not set",
            "no nvcc on PATH (PATH is empty or not set)",
            "CUTLASS_DIR not set",
            "PyPI install skipped because CUTLASS_AOT_NO_DOWNLOAD=1",
        ]
    );
    for fix in [
        "set NVCC=",
        "CUDA_HOME=",
        "set CUTLASS_DIR=",
        "unset CUTLASS_AOT_NO_DOWNLOAD",
        "CUTLASS_AOT_NO_NVCC=1",
    ] {
        assert!(text.contains(fix), "missing {fix:?} in:\n{text}");
    }

    // "0" means downloads are allowed; without a cache directory that is said too.
    let err = discover(&vars(&[("CUTLASS_AOT_NO_DOWNLOAD", "0")])).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("PyPI install not possible: no per-user cache directory"),
        "{text}"
    );
    assert!(text.contains("set CUTLASS_AOT_CACHE_DIR"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// cache root

#[test]
fn cache_root_precedence() {
    let root = |pairs: &[(&'static str, &str)]| {
        let v = vars(pairs);
        toolchain::cache_root(&|k: &str| v.get(k).cloned())
    };
    let all = [
        ("CUTLASS_AOT_CACHE_DIR", "/c/aot"),
        ("XDG_CACHE_HOME", "/c/xdg"),
        ("HOME", "/home/u"),
    ];
    assert_eq!(root(&all).unwrap(), PathBuf::from("/c/aot"));
    assert_eq!(root(&all[1..]).unwrap(), PathBuf::from("/c/xdg/cutlass-aot"));
    assert_eq!(
        root(&all[2..]).unwrap(),
        PathBuf::from("/home/u/.cache/cutlass-aot")
    );
    // Empty counts as unset; a relative XDG_CACHE_HOME is ignored (XDG spec).
    assert_eq!(
        root(&[
            ("CUTLASS_AOT_CACHE_DIR", ""),
            ("XDG_CACHE_HOME", "rel"),
            ("HOME", "/h")
        ])
        .unwrap(),
        PathBuf::from("/h/.cache/cutlass-aot")
    );
    // Never the working directory.
    let err = root(&[("CUTLASS_AOT_CACHE_DIR", "cache"), ("HOME", "/h")]).unwrap_err();
    assert!(err.to_string().contains("not an absolute path"), "{err}");
    let err = root(&[("HOME", "relative")]).unwrap_err();
    assert_eq!(err.problem(), "no per-user cache directory");
    assert_eq!(
        err.tried(),
        [
            "CUTLASS_AOT_CACHE_DIR not set",
            "XDG_CACHE_HOME not set",
            "HOME=relative ignored: not an absolute path"
        ]
    );
    assert!(err.to_string().contains("set CUTLASS_AOT_CACHE_DIR"), "{err}");
}

#[test]
fn reads_only_the_listed_variables() {
    let t = TempDir::new("envlist");
    let log = t.path().join("pip.log");
    let python = fake_python(t.path(), &log, 0, false);
    let cache = s(&t.path().join("cache"));
    let listed: BTreeSet<&str> = toolchain::env_vars_read().iter().copied().collect();
    for v in [
        vars(&[("CUTLASS_AOT_NO_DOWNLOAD", "1")]),
        vars(&[("CUTLASS_AOT_PYTHON", &s(&python)), ("XDG_CACHE_HOME", &cache)]),
        vars(&[("HOME", "/nonexistent-home"), ("CUDA_HOME", "/x"), ("PATH", "/y")]),
    ] {
        let seen = RefCell::new(BTreeSet::new());
        let env = |k: &str| {
            seen.borrow_mut().insert(k.to_string());
            v.get(k).cloned()
        };
        let _ = toolchain::discover(&env);
        let _ = toolchain::cache_root(&env);
        for k in seen.borrow().iter() {
            assert!(listed.contains(k.as_str()), "{k} read but not in env_vars_read()");
        }
    }
    for k in [
        "NVCC",
        "CUDA_HOME",
        "CUDA_PATH",
        "PATH",
        "CUTLASS_DIR",
        "CUTLASS_AOT_NO_DOWNLOAD",
    ] {
        assert!(listed.contains(k), "{k}");
    }
}

// ---------------------------------------------------------------------------------------------
// the pinned install, with a fake pip

#[test]
fn requirements_and_install_dir() {
    let reqs = pinned::requirements_text();
    assert_eq!(reqs.lines().count(), 6);
    assert!(reqs.starts_with(
        "nvidia-cuda-nvcc==13.0.88 --hash=sha256:\
         56fe502eb77625a12f25172caa3cdddb4e4c8ba2c8c17dba44b164761b380f03\n"
    ));
    assert!(reqs.contains("nvidia-cutlass==4.2.0.0 --hash=sha256:f9599ada"));
    let dir = pinned::install_dir(Path::new("/c"));
    let name = dir.file_name().unwrap().to_str().unwrap();
    assert_eq!(dir.parent().unwrap(), Path::new("/c/toolchain"));
    assert!(name.starts_with("cuda13.0.88-cutlass4.2.0-"), "{name}");
    let hash = &name["cuda13.0.88-cutlass4.2.0-".len()..];
    assert_eq!(hash.len(), 12);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
}

#[test]
fn installs_once_then_reuses_without_pip() {
    let t = TempDir::new("install");
    let cache = t.path().join("cache");
    let log = t.path().join("pip.log");
    let python = fake_python(t.path(), &log, 0, false);
    let dir = pinned::install_dir(&cache);
    // Leftovers of an interrupted install are thrown away.
    write(
        &dir.with_file_name(format!(
            "{}.partial/junk",
            dir.file_name().unwrap().to_str().unwrap()
        )),
        "x",
    );

    let v = vars(&[
        ("CUTLASS_AOT_PYTHON", &s(&python)),
        ("CUTLASS_AOT_CACHE_DIR", &s(&cache)),
        ("PATH", "/nonexistent"),
    ]);
    let tc = discover(&v).unwrap();
    assert_eq!(runs(&log), 1);
    let args = fs::read_to_string(&log).unwrap();
    assert!(
        args.starts_with(
            "-m pip install --disable-pip-version-check -q --no-deps --require-hashes \
             --only-binary=:all: --target "
        ),
        "{args}"
    );
    assert!(args.contains(&format!("{}.partial -r ", s(&dir))), "{args}");
    assert_eq!(
        fs::read_to_string(dir.join("requirements-seen.txt")).unwrap(),
        pinned::requirements_text()
    );
    assert!(dir.join(pinned::COMPLETE_MARKER).is_file());
    assert!(!dir.join("junk").exists());
    assert!(!Path::new(&format!("{}.partial", s(&dir))).exists());
    assert!(!Path::new(&format!("{}.lock", s(&dir))).exists());
    assert_eq!(tc.nvcc, dir.join("nvidia/cu13/bin/nvcc"));
    assert_eq!(tc.cuda_include, dir.join("nvidia/cu13/include"));
    assert_eq!(tc.cuda_lib, dir.join("nvidia/cu13/lib"));
    assert_eq!(
        tc.cutlass_include,
        vec![
            dir.join("cutlass_library/source/include"),
            dir.join("cutlass_library/source/tools/util/include")
        ]
    );
    assert_eq!(tc.nvcc_version, "Cuda compilation tools, release 13.0, V13.0.88");
    assert_eq!(tc.cutlass_version, "4.2.0");
    assert!(tc.origin.contains("from the pinned PyPI set"), "{}", tc.origin);
    assert!(tc.origin.contains("installed now"), "{}", tc.origin);

    // Second time: no pip (even a broken python would do).
    let mut v2 = v.clone();
    v2.insert("CUTLASS_AOT_PYTHON", "/nonexistent/python".to_string());
    let again = discover(&v2).unwrap();
    assert_eq!(runs(&log), 1);
    assert!(again.origin.contains("reused"), "{}", again.origin);
    assert_eq!(again.nvcc, tc.nvcc);
}

#[test]
fn only_the_missing_part_comes_from_the_install() {
    let t = TempDir::new("partial-use");
    let cache = t.path().join("cache");
    let log = t.path().join("pip.log");
    let python = fake_python(t.path(), &log, 0, false);
    let nvcc = fake_toolkit(&t.path().join("cuda"), "lib64", "12.8");
    let tc = discover(&vars(&[
        ("NVCC", &s(&nvcc)),
        ("CUTLASS_AOT_PYTHON", &s(&python)),
        ("CUTLASS_AOT_CACHE_DIR", &s(&cache)),
    ]))
    .unwrap();
    assert_eq!(tc.nvcc, nvcc, "the user's nvcc wins");
    assert!(tc.nvcc_version.contains("12.8"));
    assert_eq!(tc.cutlass_version, "4.2.0");
    assert!(tc.cutlass_include[0].starts_with(pinned::install_dir(&cache)));
    assert_eq!(runs(&log), 1);
}

#[test]
fn incomplete_install_dir_is_redone() {
    let t = TempDir::new("incomplete");
    let cache = t.path().join("cache");
    let log = t.path().join("pip.log");
    let python = fake_python(t.path(), &log, 0, false);
    let dir = pinned::install_dir(&cache);
    write(&dir.join("stale-file"), "");
    let tc = discover(&vars(&[
        ("CUTLASS_AOT_PYTHON", &s(&python)),
        ("CUTLASS_AOT_CACHE_DIR", &s(&cache)),
    ]))
    .unwrap();
    assert_eq!(runs(&log), 1);
    assert!(!dir.join("stale-file").exists());
    assert!(tc.nvcc.starts_with(&dir));
}

#[test]
fn pip_failure_reports_its_stderr() {
    let t = TempDir::new("pipfail");
    let cache = t.path().join("cache");
    let log = t.path().join("pip.log");
    let python = fake_python(t.path(), &log, 0, true);
    let err = discover(&vars(&[
        ("CUTLASS_AOT_PYTHON", &s(&python)),
        ("CUTLASS_AOT_CACHE_DIR", &s(&cache)),
        ("PATH", ""),
    ]))
    .unwrap_err();
    let text = err.to_string();
    println!("{text}");
    assert!(err.problem().contains("installing the pinned PyPI set"), "{text}");
    assert!(text.contains("DO NOT MATCH THE HASHES"), "{text}");
    assert!(text.contains("CUTLASS_AOT_NO_NVCC=1"), "{text}");
    let dir = pinned::install_dir(&cache);
    assert!(!dir.exists(), "a failed install must not look installed");
    assert!(!Path::new(&format!("{}.lock", s(&dir))).exists());

    let err = discover(&vars(&[("CUTLASS_AOT_CACHE_DIR", &s(&cache)), ("PATH", "")])).unwrap_err();
    assert!(err.to_string().contains("no python3 or python on PATH"), "{err}");
}

#[test]
fn concurrent_installs_run_pip_once() {
    let t = TempDir::new("concurrent");
    let cache = t.path().join("cache");
    let log = t.path().join("pip.log");
    let python = fake_python(t.path(), &log, 1, false);
    let v = vars(&[
        ("CUTLASS_AOT_PYTHON", &s(&python)),
        ("CUTLASS_AOT_CACHE_DIR", &s(&cache)),
    ]);
    let results: Vec<_> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..3).map(|_| sc.spawn(|| discover(&v))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in &results {
        assert_eq!(r.as_ref().unwrap().cutlass_version, "4.2.0");
    }
    assert_eq!(runs(&log), 1, "pip ran more than once");
    assert_eq!(
        results
            .iter()
            .filter(|r| r.as_ref().unwrap().origin.contains("installed now"))
            .count(),
        1
    );
}

#[test]
fn waits_for_a_live_lock_holder() {
    let t = TempDir::new("lockwait");
    let cache = t.path().join("cache");
    let log = t.path().join("pip.log");
    let python = fake_python(t.path(), &log, 0, false);
    let dir = pinned::install_dir(&cache);
    let lock = PathBuf::from(format!("{}.lock", s(&dir)));
    write(&lock, "pid 999999\n");
    let v = vars(&[
        ("CUTLASS_AOT_PYTHON", &s(&python)),
        ("CUTLASS_AOT_CACHE_DIR", &s(&cache)),
    ]);
    let start = Instant::now();
    std::thread::scope(|sc| {
        let h = sc.spawn(|| discover(&v));
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!h.is_finished(), "did not wait for the lock");
        assert_eq!(runs(&log), 0);
        fs::remove_file(&lock).unwrap();
        h.join().unwrap().unwrap();
    });
    assert!(start.elapsed() >= Duration::from_millis(1500));
    assert_eq!(runs(&log), 1);
}

// ---------------------------------------------------------------------------------------------
// the real pinned install (skipped when absent)

#[test]
fn real_install_via_nvcc_and_cutlass_dir() {
    let Some(inst) = real_install() else { return };
    let tc = discover(&vars(&[
        ("NVCC", &s(&inst.join(pinned::NVCC_IN_INSTALL))),
        ("CUTLASS_DIR", &s(&inst.join(pinned::CUTLASS_IN_INSTALL))),
        ("CUTLASS_AOT_NO_DOWNLOAD", "1"),
        ("PATH", ""),
    ]))
    .unwrap();
    println!("{tc:#?}");
    assert_eq!(tc.nvcc_version, "Cuda compilation tools, release 13.0, V13.0.88");
    assert_eq!(tc.cutlass_version, "4.2.0");
    assert!(tc.cuda_include.join("cuda_runtime.h").is_file());
    assert_eq!(tc.cuda_lib, inst.join("nvidia/cu13/lib"));
    assert!(tc.cuda_lib.join("libcudart_static.a").is_file());
    assert_eq!(tc.cutlass_include.len(), 2);
    assert!(tc.cutlass_include[1].join("cutlass/util").is_dir());
}

#[test]
fn real_install_via_cuda_home() {
    let Some(inst) = real_install() else { return };
    let tc = discover(&vars(&[
        ("CUDA_HOME", &s(&inst.join("nvidia/cu13"))),
        ("CUTLASS_DIR", &s(&inst.join("cutlass_library/source/include"))),
        ("CUTLASS_AOT_NO_DOWNLOAD", "1"),
    ]))
    .unwrap();
    assert_eq!(tc.nvcc, inst.join(pinned::NVCC_IN_INSTALL));
    assert_eq!(tc.cutlass_include.len(), 2);
    assert!(tc.origin.contains("from $CUDA_HOME"), "{}", tc.origin);
}

/// The real thing: pip installs the pinned set from the package index into a fresh cache, then a
/// second discovery reuses it without pip. Needs network; run with
/// `cargo test -p cutlass-aot-build --test toolchain -- --ignored --nocapture real_pip_install`.
/// `CUTLASS_AOT_TEST_CACHE` picks the cache directory (default: a fresh temp dir, removed after).
#[test]
#[ignore = "downloads ~200 MB of wheels with pip"]
fn real_pip_install() {
    let keep = std::env::var("CUTLASS_AOT_TEST_CACHE").ok();
    let temp = TempDir::new("realpip");
    let cache = keep
        .as_ref()
        .map(PathBuf::from)
        .unwrap_or_else(|| temp.path().to_path_buf());
    let mut v: Vars = vars(&[("CUTLASS_AOT_CACHE_DIR", &s(&cache))]);
    for k in ["PATH", "HOME", "CUTLASS_AOT_PYTHON"] {
        if let Ok(x) = std::env::var(k) {
            v.insert(k, x);
        }
    }
    let start = Instant::now();
    let tc = discover(&v).unwrap_or_else(|e| panic!("{e}"));
    let first = start.elapsed();
    println!("{tc:#?}");
    assert_eq!(tc.nvcc_version, "Cuda compilation tools, release 13.0, V13.0.88");
    assert_eq!(tc.cutlass_version, "4.2.0");
    assert!(tc.origin.contains("installed now"), "{}", tc.origin);

    v.insert("CUTLASS_AOT_PYTHON", "/nonexistent/python".to_string());
    let start = Instant::now();
    let again = discover(&v).unwrap_or_else(|e| panic!("{e}"));
    let second = start.elapsed();
    assert!(again.origin.contains("reused"), "{}", again.origin);
    assert_eq!(
        again,
        Toolchain {
            origin: again.origin.clone(),
            ..tc
        }
    );
    println!(
        "first discover (pip install): {:.1} s; second (reuse): {:.3} s",
        first.as_secs_f64(),
        second.as_secs_f64()
    );
}
