//! Runs nvcc over the generated units: a fatbin (device pass) each and a host object (host pass) for
//! each batch of units (`host_batch`), in parallel under cargo's jobserver, cached by content hash
//! in the per-user cache.
//!
//! The cache key of an output is the SHA-256 of everything that determines it: the unit's source,
//! every glue header, the toolchain versions and the full nvcc argument list. So `cargo clean`, a
//! second profile or a second crate with the same kernels reuse the objects, and a no-change
//! rebuild runs no nvcc at all.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::emit_cpp::Unit;
use crate::model::Api;

/// Which output of a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Device code of every listed architecture, as one fatbin.
    Device,
    /// Host object holding the `prepare` functions.
    Host,
}

impl Pass {
    fn extension(self) -> &'static str {
        match self {
            Pass::Device => "fatbin",
            Pass::Host => "o",
        }
    }
}

/// How to invoke nvcc, shared by every unit.
#[derive(Clone, Debug)]
pub struct NvccSetup {
    /// nvcc plus the host-compiler flags the `cc` crate chose for this target (PIC, -m64, ...),
    /// used for the host pass.
    pub host_command: Vec<String>,
    /// nvcc alone, for the device pass.
    pub nvcc: PathBuf,
    /// `-I` directories: the glue headers first, then CUTLASS and CUDA.
    pub include_dirs: Vec<PathBuf>,
    /// SASS targets of CUTLASS 2.x units, e.g. `[80, 90]`: every 2.x kernel is compiled for each.
    /// CUTLASS 3.x units are always compiled for sm_90a only (their instructions exist nowhere else).
    pub sass_archs: Vec<u32>,
    /// Text that identifies the toolchain (nvcc and CUTLASS versions), part of every cache key.
    pub toolchain_id: String,
    /// Every glue header (name, text). The ones a unit includes are part of its cache key, so
    /// editing one header leaves the cached objects of units that do not include it valid.
    pub glue: &'static [(&'static str, &'static str)],
}

/// The compiled outputs of one unit.
#[derive(Clone, Debug)]
pub struct CompiledUnit {
    pub name: String,
    pub fatbin: PathBuf,
    pub host_object: PathBuf,
}

/// What a compile run did, for the one-line build report.
#[derive(Clone, Debug, Default)]
pub struct CompileStats {
    pub compiled: usize,
    pub from_cache: usize,
}

/// nvcc failed, or the cache could not be written.
#[derive(Debug)]
pub struct CompileError {
    pub unit: String,
    pub message: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "compiling unit `{}`: {}", self.unit, self.message)
    }
}

impl std::error::Error for CompileError {}

const COMMON_FLAGS: &[&str] = &[
    "-std=c++17",
    "--expt-relaxed-constexpr",
    // CUTLASS 3.x serialises wgmma without it; 2.x drops host-side asserts.
    "-DNDEBUG",
    "-O3",
    "-w",
];

impl NvccSetup {
    /// The full argument list (after the program) for `pass`, without input and output paths.
    fn arguments(&self, pass: Pass, unit: &Unit) -> Vec<String> {
        let (api, unit_dirs) = (unit.api, &unit.include_dirs);
        let mut args: Vec<String> = COMMON_FLAGS.iter().map(|s| s.to_string()).collect();
        for dir in unit_dirs.iter().chain(&self.include_dirs) {
            args.push(format!("-I{}", dir.display()));
        }
        match pass {
            Pass::Device => {
                args.push("-DCUTLASS_AOT_DEVICE_PASS".into());
                args.push("-fatbin".into());
                match api {
                    Api::Cutlass2x => {
                        // 2.x kernels are sm_80 code (f64 on arch 90: sm_90 code, Hopper's DMMA):
                        // that virtual ISA compiled to each SASS target from it on, so that no PTX
                        // is JIT-compiled at run time; native-ISA units compile each target from
                        // its own virtual ISA (Hopper's fp8 conversions where they exist).
                        let floor = unit.kernels.iter().map(|k| k.arch).min().unwrap_or(80);
                        let mut targets: Vec<u32> =
                            self.sass_archs.iter().copied().filter(|&a| a >= floor).collect();
                        if targets.is_empty() {
                            targets.push(floor);
                        }
                        for arch in targets {
                            let virtual_arch = if unit.native_isa { arch } else { floor };
                            args.push("-gencode".into());
                            args.push(format!("arch=compute_{virtual_arch},code=sm_{arch}"));
                        }
                    }
                    Api::Cutlass3x => {
                        // wgmma and setmaxnreg exist only in the sm_90a target.
                        args.push("-gencode".into());
                        args.push("arch=compute_90a,code=sm_90a".into());
                    }
                }
            }
            Pass::Host => {
                args.push("-DCUTLASS_AOT_HOST_PASS".into());
                args.push("-c".into());
                // The unit is empty in the device sub-pass; name one cheap target for it.
                args.push("-gencode".into());
                args.push(match api {
                    Api::Cutlass2x => "arch=compute_80,code=compute_80".into(),
                    Api::Cutlass3x => "arch=compute_90a,code=compute_90a".into(),
                });
            }
        }
        args.push("-x".into());
        args.push("cu".into());
        args
    }

    fn program(&self, pass: Pass) -> (PathBuf, Vec<String>) {
        match pass {
            Pass::Device => (self.nvcc.clone(), Vec::new()),
            Pass::Host => {
                let mut parts = self.host_command.clone();
                let program = PathBuf::from(parts.remove(0));
                (program, parts)
            }
        }
    }

    /// The names and texts of the glue headers in `names`, concatenated in the order of
    /// [`NvccSetup::glue`].
    fn glue_fingerprint(&self, names: &[&str]) -> Vec<u8> {
        let mut fingerprint = Vec::new();
        for (name, text) in self.glue.iter().filter(|(name, _)| names.contains(name)) {
            fingerprint.extend_from_slice(name.as_bytes());
            fingerprint.extend_from_slice(text.as_bytes());
        }
        fingerprint
    }

    /// Content hash naming the output of `pass` for `unit_source` (of generation `api`, including
    /// the glue headers `glue`). Comment lines are left out: each kernel's comment names its
    /// manifest line, and inserting an entry must not recompile the units of the entries after it.
    pub fn cache_key(&self, unit: &Unit, pass: Pass) -> String {
        let (unit_source, glue) = (unit.source.as_str(), unit.glue);
        let (program, prefix) = self.program(pass);
        let code: String = unit_source
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .flat_map(|line| [line, "\n"])
            .collect();
        let mut hasher = Sha256::new();
        for part in [
            b"cutlass-aot-cache-v2".as_slice(),
            self.toolchain_id.as_bytes(),
            &self.glue_fingerprint(glue),
            code.as_bytes(),
            program
                .file_name()
                .map(|n| n.as_encoded_bytes())
                .unwrap_or_default(),
        ] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        // Only where there is some, so that the keys of every other unit stay what they were.
        if !unit.key_extra.is_empty() {
            hasher.update((unit.key_extra.len() as u64).to_le_bytes());
            hasher.update(unit.key_extra.as_bytes());
        }
        // The glue headers live in each build's OUT_DIR: their contents are fingerprinted above,
        // so their path must not split the cache between profiles, target dirs and crates.
        let glue_flag = self
            .include_dirs
            .first()
            .map(|dir| format!("-I{}", dir.display()));
        for arg in prefix.iter().chain(self.arguments(pass, unit).iter()) {
            let arg = if Some(arg) == glue_flag.as_ref() {
                "-I<glue>"
            } else {
                arg.as_str()
            };
            hasher.update((arg.len() as u64).to_le_bytes());
            hasher.update(arg.as_bytes());
        }
        hex(&hasher.finalize())
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Limits how many nvcc processes run at once: cargo's jobserver when there is one (the build
/// script already holds one implicit token), else the machine's parallelism.
pub struct JobLimiter {
    client: Option<jobserver::Client>,
    threads: usize,
}

impl JobLimiter {
    /// In a build script: cargo's jobserver (`-j`), falling back to the machine's parallelism.
    pub fn from_env() -> Self {
        // SAFETY: called once, early in the build script, before any file descriptors are opened
        // that could be confused with the jobserver's.
        let client = unsafe { jobserver::Client::from_env() };
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        JobLimiter { client, threads }
    }

    /// At most `threads` jobs at once, no jobserver (tests).
    pub fn fixed(threads: usize) -> Self {
        JobLimiter {
            client: None,
            threads: threads.max(1),
        }
    }
}

/// One nvcc run still to do.
struct Job<'a> {
    unit: &'a Unit,
    pass: Pass,
    source: PathBuf,
    output: PathBuf,
}

/// The cached output of `pass` over `unit` (`source` on disk), or a job making it.
fn job_or_cached<'a>(
    setup: &NvccSetup,
    objects: &Path,
    stats: &mut CompileStats,
    unit: &'a Unit,
    pass: Pass,
    source: &Path,
    jobs: &mut Vec<Job<'a>>,
) -> PathBuf {
    let key = setup.cache_key(unit, pass);
    let output = objects.join(format!("{key}.{}", pass.extension()));
    if output.is_file() {
        stats.from_cache += 1;
    } else {
        jobs.push(Job {
            unit,
            pass,
            source: source.to_path_buf(),
            output: output.clone(),
        });
    }
    output
}

/// Compiles every unit (both passes), taking outputs from `cache_dir` where their key is present.
/// Sources are written into `source_dir` first (rewritten only when changed).
pub fn compile_units(
    units: &[Unit],
    setup: &NvccSetup,
    source_dir: &Path,
    cache_dir: &Path,
    limiter: &JobLimiter,
) -> Result<(Vec<CompiledUnit>, CompileStats), CompileError> {
    let objects = cache_dir.join("objects");
    fs::create_dir_all(&objects).map_err(|e| CompileError {
        unit: "(all)".into(),
        message: format!("cannot create cache directory {}: {e}", objects.display()),
    })?;

    let write_source = |unit: &Unit| {
        let source = source_dir.join(format!("{}.cu", unit.name));
        crate::fsutil::write_if_changed(&source, unit.source.as_bytes()).map_err(|e| CompileError {
            unit: unit.name.clone(),
            message: format!("cannot write {}: {e}", source.display()),
        })?;
        Ok::<PathBuf, CompileError>(source)
    };
    let mut stats = CompileStats::default();
    let mut jobs = Vec::new();
    let mut compiled = Vec::new();
    for unit in units {
        let source = write_source(unit)?;
        compiled.push(CompiledUnit {
            name: unit.name.clone(),
            fatbin: job_or_cached(
                setup,
                &objects,
                &mut stats,
                unit,
                Pass::Device,
                &source,
                &mut jobs,
            ),
            host_object: PathBuf::new(),
        });
    }
    let batches = crate::host_batch::host_batches(units);
    let host_units: Vec<Unit> = batches
        .iter()
        .map(|members| crate::host_batch::host_unit(units, members))
        .collect();
    for (members, host_unit) in batches.iter().zip(&host_units) {
        let source = write_source(host_unit)?;
        let object = job_or_cached(
            setup,
            &objects,
            &mut stats,
            host_unit,
            Pass::Host,
            &source,
            &mut jobs,
        );
        for &member in members {
            compiled[member].host_object = object.clone();
        }
    }
    stats.compiled = jobs.len();

    // Longest first, so that no long job starts last. Rough seconds per kernel: a 3.x kernel's
    // device code ~8, a 2.x kernel's ~3; host code ~0.6 a kernel after ~10 s of headers.
    let weight = |job: &Job| {
        let kernels = job.unit.kernels.len() as u64;
        match (job.pass, job.unit.api) {
            (Pass::Device, Api::Cutlass3x) => 80 * kernels + 10,
            (Pass::Device, Api::Cutlass2x) => 30 * kernels + 10,
            (Pass::Host, _) => 6 * kernels + 100,
        }
    };
    jobs.sort_by_key(|job| std::cmp::Reverse(weight(job)));
    run_jobs(&jobs, setup, limiter)?;
    Ok((compiled, stats))
}

/// Runs `jobs` in order on up to `limiter`'s threads; the first failure stops the rest.
fn run_jobs(jobs: &[Job<'_>], setup: &NvccSetup, limiter: &JobLimiter) -> Result<(), CompileError> {
    let next = AtomicUsize::new(0);
    let first_error: Mutex<Option<CompileError>> = Mutex::new(None);
    let workers = limiter.threads.min(jobs.len());
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let (jobs, next, first_error) = (&jobs, &next, &first_error);
            scope.spawn(move || loop {
                // Worker 0 runs on the build script's implicit token; the others need one each.
                let token = match (&limiter.client, worker) {
                    (Some(client), w) if w > 0 => match client.acquire() {
                        Ok(token) => Some(token),
                        Err(_) => return,
                    },
                    _ => None,
                };
                let index = next.fetch_add(1, Ordering::SeqCst);
                if index >= jobs.len() || first_error.lock().unwrap().is_some() {
                    drop(token);
                    return;
                }
                let job = &jobs[index];
                let result = run_nvcc(setup, job.pass, job.unit, &job.source, &job.output);
                drop(token);
                if let Err(message) = result {
                    let mut slot = first_error.lock().unwrap();
                    if slot.is_none() {
                        *slot = Some(CompileError {
                            unit: job.unit.name.clone(),
                            message,
                        });
                    }
                }
            });
        }
    });
    match first_error.into_inner().unwrap() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Runs one nvcc pass into a temporary file, then renames it into the cache (atomic: a crashed or
/// concurrent build never leaves a half-written object under a valid key).
fn run_nvcc(setup: &NvccSetup, pass: Pass, unit: &Unit, source: &Path, output: &Path) -> Result<(), String> {
    let (program, prefix) = setup.program(pass);
    let temp = output.with_extension(format!("{}.tmp{}", pass.extension(), std::process::id()));
    let mut command = Command::new(&program);
    command
        .args(&prefix)
        .args(setup.arguments(pass, unit))
        .arg(source)
        .arg("-o")
        .arg(&temp);
    let started = Instant::now();
    let result = command
        .output()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    if !result.status.success() {
        let _ = fs::remove_file(&temp);
        let stderr = String::from_utf8_lossy(&result.stderr);
        let stdout = String::from_utf8_lossy(&result.stdout);
        return Err(format!(
            "nvcc ({:?} pass) failed with {}.\ncommand: {:?}\n{}",
            pass,
            result.status,
            command,
            tail_lines(&format!("{stdout}{stderr}"), 60)
        ));
    }
    fs::rename(&temp, output).map_err(|e| format!("cannot move {} into the cache: {e}", temp.display()))?;
    // Not a cargo directive: visible with `cargo build -vv` and in the build script's output file.
    println!(
        "cutlass-aot: compiled {} ({:?} pass) in {:.1}s",
        source.file_name().unwrap_or_default().to_string_lossy(),
        pass,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = String::new();
    if start > 0 {
        out.push_str(&format!("... ({start} earlier lines omitted)\n"));
    }
    out.push_str(&lines[start..].join("\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> NvccSetup {
        NvccSetup {
            host_command: vec!["nvcc".into()],
            nvcc: "nvcc".into(),
            include_dirs: vec!["/glue".into(), "/cutlass".into()],
            sass_archs: vec![80, 90],
            toolchain_id: "test".into(),
            glue: &[("cutlass_aot/abi.h", "A"), ("cutlass_aot/gemm_2x.cuh", "B")],
        }
    }

    /// The first unit of the manifest `entries`.
    fn unit_of(entries: &str) -> Unit {
        let text = format!("version: 1\noperations:\n{entries}");
        let kernels = crate::manifest::parse(&text, "m.yaml").expect("a valid manifest");
        crate::emit_cpp::plan_units(&kernels, 8).swap_remove(0)
    }

    /// The device pass's `-gencode` values of `unit`.
    fn device_targets(unit: &Unit) -> Vec<String> {
        let args = setup().arguments(Pass::Device, unit);
        args.windows(2)
            .filter(|w| w[0] == "-gencode")
            .map(|w| w[1].clone())
            .collect()
    }

    #[test]
    fn units_compile_for_their_kernels_architecture() {
        let gemm = |arch: u32, a: &str| {
            format!(
                "  - {{kind: gemm, arch: {arch}, a: {a}, layout_a: row, layout_b: column, \
                 tile: [64, 64, 16], warps: [2, 2, 1], stages: 4}}\n"
            )
        };
        // 2.x kernels: sm_80 code for every SASS target; f64 on arch 90 (Hopper's DMMA): sm_90 code
        // for sm_90 only.
        assert_eq!(
            device_targets(&unit_of(&gemm(80, "f64"))),
            ["arch=compute_80,code=sm_80", "arch=compute_80,code=sm_90"]
        );
        let hopper = unit_of(&gemm(90, "f64"));
        assert_eq!(device_targets(&hopper), ["arch=compute_90,code=sm_90"]);
        // Its C++ is CUTLASS's Sm90 specialisation with Hopper's instruction.
        assert!(
            hopper.source.contains("cutlass::arch::Sm90")
                && hopper.source.contains("cutlass::gemm::GemmShape<16, 8, 4>")
        );
    }

    #[test]
    fn cache_keys_ignore_comments_but_not_code_or_glue() {
        let s = setup();
        let unit = |source: &str, glue: &[&'static str], api| Unit {
            native_isa: false,
            name: "u".into(),
            api,
            glue: Box::leak(glue.to_vec().into_boxed_slice()),
            kernels: Vec::new(),
            source: source.into(),
            include_dirs: Vec::new(),
            key_extra: String::new(),
        };
        let key = |source: &str, glue: &[&'static str]| {
            s.cache_key(&unit(source, glue, Api::Cutlass2x), Pass::Device)
        };
        let glue = ["cutlass_aot/abi.h", "cutlass_aot/gemm_2x.cuh"];
        let base = key("// kernel_manifest.yaml:10\nusing K = int;\n", &glue);
        // The manifest line moved (an entry was inserted above): same object.
        assert_eq!(base, key("// kernel_manifest.yaml:42\nusing K = int;\n", &glue));
        assert_ne!(base, key("// kernel_manifest.yaml:10\nusing K = long;\n", &glue));
        // Only the glue a unit includes counts.
        assert_ne!(base, key("using K = int;\n", &["cutlass_aot/abi.h"]));
        assert_ne!(
            base,
            s.cache_key(&unit("using K = int;\n", &glue, Api::Cutlass2x), Pass::Host),
            "each pass has its own object"
        );
    }
}
