//! The builder a `build.rs` calls (the prost-build / cxx-build pattern): manifest → validate →
//! emit C++ → compile → emit Rust, with cargo directives for exactly what the build reads.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::compile::{self, CompileStats, JobLimiter, NvccSetup};
use crate::emit_cpp;
use crate::emit_rust::{self, ElementwiseImage, UnitImage, UserImage};
use crate::fsutil::{copy_if_changed, write_if_changed};
use crate::manifest;
use crate::static_cxx;
use crate::table;
use crate::toolchain;

/// Environment variables that make the build skip nvcc: kernels get wrappers and registry
/// entries, and running one returns a clear error.
pub const NO_NVCC_VARS: &[&str] = &["CUTLASS_AOT_NO_NVCC", "DOCS_RS"];
/// Overrides the SASS targets, e.g. `80,90`.
pub const ARCHS_VAR: &str = "CUTLASS_AOT_ARCHS";

/// The glue headers the generated units include, embedded so a downstream crate's build needs no
/// path into this repository. Each unit names the ones it includes ([`emit_cpp::Unit::glue`]); only
/// those are part of its cache key, in this order.
/// Elementwise kernels per translation unit (they compile in well under a second each).
const ELEMENTWISE_PER_UNIT: usize = 24;

const GLUE_HEADERS: &[(&str, &str)] = &[
    (
        "cutlass_aot/elementwise.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/elementwise.cuh"),
    ),
    (
        "cutlass_aot/abi.h",
        include_str!("../cutlass_glue/include/cutlass_aot/abi.h"),
    ),
    (
        "cutlass_aot/gemm_2x.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/gemm_2x.cuh"),
    ),
    (
        "cutlass_aot/gemm_3x.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/gemm_3x.cuh"),
    ),
    (
        "cutlass_aot/abi_grouped.h",
        include_str!("../cutlass_glue/include/cutlass_aot/abi_grouped.h"),
    ),
    (
        "cutlass_aot/grouped_setup.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/grouped_setup.cuh"),
    ),
    (
        "cutlass_aot/grouped_2x.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/grouped_2x.cuh"),
    ),
    (
        "cutlass_aot/grouped_3x.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/grouped_3x.cuh"),
    ),
    (
        "cutlass_aot/abi_conv.h",
        include_str!("../cutlass_glue/include/cutlass_aot/abi_conv.h"),
    ),
    (
        "cutlass_aot/conv_2x.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/conv_2x.cuh"),
    ),
    (
        "cutlass_aot/conv_first_layer.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/conv_first_layer.cuh"),
    ),
    (
        "cutlass_aot/conv_3x.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/conv_3x.cuh"),
    ),
    (
        "cutlass_aot/conv_3x_cooperative.hpp",
        include_str!("../cutlass_glue/include/cutlass_aot/conv_3x_cooperative.hpp"),
    ),
    (
        "cutlass_aot/launch_shape.hpp",
        include_str!("../cutlass_glue/include/cutlass_aot/launch_shape.hpp"),
    ),
    (
        "cutlass_aot/custom.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/custom.cuh"),
    ),
    (
        "cutlass_aot/support.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/support.cuh"),
    ),
    (
        "cutlass_aot/skinny.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/skinny.cuh"),
    ),
    (
        "cutlass_aot/skinny_vector.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/skinny_vector.cuh"),
    ),
    (
        "cutlass_aot/narrow.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/narrow.cuh"),
    ),
    (
        "cutlass_aot/conv_small.cuh",
        include_str!("../cutlass_glue/include/cutlass_aot/conv_small.cuh"),
    ),
];

/// Builds the kernels of one manifest into a crate.
#[derive(Clone, Debug)]
pub struct Builder {
    manifest: PathBuf,
    out_dir: Option<PathBuf>,
    sass_archs: Vec<u32>,
    kernels_per_unit: usize,
    library_name: Option<String>,
    dispatch_tables: Vec<TableSource>,
    support_kernels: bool,
    /// `None`: as the crate's `cutlass-aot` dependency does.
    static_cxx: Option<bool>,
}

/// Where measured dispatch tables come from, in the order they were given.
#[derive(Clone, Debug)]
enum TableSource {
    /// One file.
    File(PathBuf),
    /// Every `*.tsv` file of a directory, sorted by name.
    Directory(PathBuf),
}

/// What a build did.
#[derive(Clone, Debug)]
pub struct BuildSummary {
    pub kernels: usize,
    pub units: usize,
    pub stats: CompileStats,
    pub seconds: f64,
    /// False when built without nvcc (`CUTLASS_AOT_NO_NVCC`, `DOCS_RS`).
    pub with_kernels: bool,
    /// The generated Rust file, to `include!` from the crate.
    pub rust_file: PathBuf,
}

impl fmt::Display for BuildSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.with_kernels {
            return write!(
                f,
                "{} kernels registered WITHOUT device code (nvcc disabled by {}); launching one returns an error",
                self.kernels,
                NO_NVCC_VARS.join(" or ")
            );
        }
        write!(
            f,
            "{} kernels in {} units: {} nvcc runs, {} outputs from cache, {:.1}s",
            self.kernels, self.units, self.stats.compiled, self.stats.from_cache, self.seconds
        )
    }
}

/// Any failure of the build, printed as a readable chain by [`run_build_script`].
#[derive(Debug)]
pub enum BuildError {
    Manifest(manifest::ManifestError),
    Toolchain(toolchain::ToolchainError),
    Compile(compile::CompileError),
    Io(String),
    Generate(String),
    StaticCxx(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Manifest(e) => write!(f, "invalid kernel manifest:\n{e}"),
            BuildError::Toolchain(e) => write!(f, "no usable CUDA/CUTLASS toolchain:\n{e}"),
            BuildError::Compile(e) => write!(f, "kernel compilation failed:\n{e}"),
            BuildError::Io(e) => write!(f, "{e}"),
            BuildError::Generate(e) => write!(f, "internal error generating Rust wrappers: {e}"),
            BuildError::StaticCxx(e) => write!(f, "cannot link the C++ runtime statically: {e}"),
        }
    }
}

impl std::error::Error for BuildError {}

impl Builder {
    /// A builder for `manifest` (relative paths are relative to the crate root, like cargo's).
    pub fn new(manifest: impl AsRef<Path>) -> Self {
        Builder {
            manifest: manifest.as_ref().to_path_buf(),
            out_dir: None,
            sass_archs: vec![80, 90],
            kernels_per_unit: 4,
            library_name: None,
            dispatch_tables: Vec::new(),
            support_kernels: false,
            static_cxx: None,
        }
    }

    /// A measured selection table to embed (`cutlass_aot::select`, format in
    /// [`crate::table`]): the TSV the sweeps write (relative paths are relative to the crate
    /// root). May be called several times: tables of one device are merged, every device's is
    /// embedded (`TABLES`) and the runtime picks the one measured on the device it runs on.
    /// Without one, selection uses the bare cost model.
    pub fn dispatch_table(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.dispatch_tables
            .push(TableSource::File(path.as_ref().to_path_buf()));
        self
    }

    /// Every `*.tsv` file of `dir` as a table ([`Builder::dispatch_table`]), sorted by
    /// file name; read when the build runs, so that a table added to the directory is picked up
    /// (the build reruns when the directory or one of its tables changes). The directory must
    /// exist; it may be empty.
    pub fn dispatch_tables_in(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.dispatch_tables
            .push(TableSource::Directory(dir.as_ref().to_path_buf()));
        self
    }

    /// Also builds the runtime's support kernels (`IMAGE_SUPPORT`: staging copies and the 3xTF32
    /// split). Only the `cutlass-aot` crate itself needs them; a downstream crate's kernels use the
    /// runtime's.
    pub fn support_kernels(&mut self, yes: bool) -> &mut Self {
        self.support_kernels = yes;
        self
    }

    /// Links the C++ runtime of the host code statically (libstdc++, and libgcc_eh for every
    /// `-lgcc_s`, Rust's own included), so that executables need only the C library and the
    /// NVIDIA driver (`ldd` lists libc, libm, ld-linux; [`static_cxx`] says how). Linux GNU
    /// targets with GNU libstdc++; a compiler without `libstdc++.a` or `libgcc_eh.a` fails the
    /// build, before nvcc runs, with the package to install. Default: on when the crate's
    /// `cutlass-aot` dependency has its cargo feature `static-cxx` on
    /// (`DEP_CUTLASS_AOT_STATIC_CXX`), so that the feature alone makes the whole executable
    /// static. Without nvcc (`CUTLASS_AOT_NO_NVCC`) no host code is linked and it does nothing.
    pub fn static_cxx_runtime(&mut self, yes: bool) -> &mut Self {
        self.static_cxx = Some(yes);
        self
    }

    /// Where generated files go (default: `$OUT_DIR`).
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// SASS targets every kernel is compiled for (default `[80, 90]`; `CUTLASS_AOT_ARCHS` overrides).
    pub fn sass_archs(&mut self, archs: &[u32]) -> &mut Self {
        self.sass_archs = archs.to_vec();
        self
    }

    /// At most this many kernels share one translation unit (default 4).
    pub fn kernels_per_unit(&mut self, n: usize) -> &mut Self {
        self.kernels_per_unit = n.max(1);
        self
    }

    /// Name of the static library of host code (default: from `CARGO_PKG_NAME`, so that two crates
    /// with their own manifests link side by side).
    pub fn library_name(&mut self, name: &str) -> &mut Self {
        self.library_name = Some(name.to_string());
        self
    }

    /// The table files to read, in order: given files, then each directory's `*.tsv` files
    /// sorted by name. Prints the cargo directives for what it reads.
    fn dispatch_table_files(&self) -> Result<Vec<PathBuf>, BuildError> {
        let mut files = Vec::new();
        for source in &self.dispatch_tables {
            match source {
                TableSource::File(path) => files.push(path.clone()),
                TableSource::Directory(dir) => {
                    println!("cargo:rerun-if-changed={}", dir.display());
                    files.extend(tsv_files_in(dir)?);
                }
            }
        }
        Ok(files)
    }

    /// Every table file, parsed against `kernels`; tables of one device are merged into one (rows
    /// in the order read), in the order their devices first appear.
    fn read_tables(
        &self,
        kernels: &[crate::model::GemmKernel],
        switched_off: &HashSet<&str>,
    ) -> Result<Vec<table::Table>, BuildError> {
        let mut tables: Vec<table::Table> = Vec::new();
        let mut errors = Vec::new();
        for path in self.dispatch_table_files()? {
            println!("cargo:rerun-if-changed={}", path.display());
            let text = std::fs::read_to_string(&path)
                .map_err(|e| BuildError::Io(format!("reading the table {}: {e}", path.display())))?;
            if text.lines().next().map(str::trim_end) != Some(table::HEADER) {
                errors.push(format!(
                    "{}: the first line must be {:?} (a selection table, written by the sweeps: `examples/select_sweep.rs`, `conv_bench --dispatch-out`)",
                    path.display(),
                    table::HEADER
                ));
                continue;
            }
            let parsed = match table::parse(&text, &path.display().to_string(), kernels) {
                Ok(parsed) => parsed,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            warn_unknown_kernels(&path, &parsed.unknown_kernels, switched_off, "the sweep");
            if parsed.device.is_empty() {
                println!(
                    "cargo:warning=cutlass-aot: the table {} has no `# device:` line; the runtime picks tables by device name, so it is never used",
                    path.display()
                );
                continue;
            }
            match tables.iter_mut().find(|t| t.device == parsed.device) {
                Some(same_device) => same_device.rows.extend(parsed.rows),
                None => tables.push(parsed),
            }
        }
        if errors.is_empty() {
            Ok(tables)
        } else {
            Err(BuildError::Io(format!("invalid table:\n{}", errors.join("\n"))))
        }
    }

    /// The unit of user kernel `kernel`: its source (relative to the manifest's directory) read,
    /// and it and its local headers watched by cargo.
    fn user_unit(&self, kernel: &crate::custom::CustomKernel) -> Result<emit_cpp::Unit, BuildError> {
        let dir = self.manifest.parent().unwrap_or(Path::new(""));
        let path = dir.join(&kernel.source);
        let source = std::fs::read_to_string(&path).map_err(|e| {
            BuildError::Io(format!(
                "{}: the user kernel `{}` names the source `{}`, which cannot be read as {}: {e}",
                kernel.origin,
                kernel.rust_name,
                kernel.source,
                path.display()
            ))
        })?;
        let source_dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let headers = crate::custom::local_headers(&source_dir, &source);
        println!("cargo:rerun-if-changed={}", path.display());
        for (header, _) in &headers {
            println!("cargo:rerun-if-changed={}", header.display());
        }
        // nvcc runs in another directory: give it an absolute path to the source's directory.
        let absolute = std::fs::canonicalize(&path).unwrap_or(path);
        Ok(crate::custom::cpp_unit(kernel, &absolute, &source, &headers))
    }

    /// Runs the whole pipeline. Prints cargo directives; call from a build script.
    pub fn compile(&self) -> Result<BuildSummary, BuildError> {
        let started = Instant::now();
        let env = |key: &str| std::env::var(key).ok();
        println!("cargo:rerun-if-changed={}", self.manifest.display());
        for var in toolchain::env_vars_read()
            .iter()
            .chain(NO_NVCC_VARS)
            .chain(&[ARCHS_VAR])
        {
            println!("cargo:rerun-if-env-changed={var}");
        }

        let manifest = manifest::load_manifest(&self.manifest).map_err(BuildError::Manifest)?;
        let kernels = manifest.kernels;
        // Entries that name a cargo feature are built only with it (cargo sets
        // CARGO_FEATURE_<NAME> for the crate whose build script this is, and reruns the script
        // when its features change).
        let enabled = |feature: Option<&str>| feature.map_or(true, |f| env(&feature_var(f)).is_some());
        let (kernels, switched_off): (Vec<_>, Vec<_>) =
            kernels.into_iter().partition(|k| enabled(k.feature.as_deref()));
        // Dispatch-table rows naming these are dropped without a warning: the table is right,
        // the crate was built without their feature.
        let switched_off: HashSet<&str> = switched_off.iter().map(|k| k.name.as_str()).collect();
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => PathBuf::from(env("OUT_DIR").ok_or_else(|| {
                BuildError::Io(
                    "OUT_DIR is not set: call Builder::compile from a build script, or set out_dir()".into(),
                )
            })?),
        };
        let work = out_dir.join("cutlass_aot");
        let io = |what: &str, e: std::io::Error| BuildError::Io(format!("{what}: {e}"));

        let user_kernels: Vec<_> = manifest
            .user_kernels
            .into_iter()
            .filter(|k| enabled(k.feature.as_deref()))
            .collect();
        let elementwise: Vec<_> = manifest
            .elementwise
            .into_iter()
            .filter(|k| enabled(k.feature.as_deref()))
            .collect();
        let mut units = emit_cpp::plan_units(&kernels, self.kernels_per_unit);
        if self.support_kernels {
            units.push(emit_cpp::support_unit());
        }
        let first_elementwise_unit = units.len();
        units.extend(crate::elementwise::units(&elementwise, ELEMENTWISE_PER_UNIT));
        let first_user_unit = units.len();
        for kernel in &user_kernels {
            units.push(self.user_unit(kernel)?);
        }
        let with_kernels = !NO_NVCC_VARS
            .iter()
            .any(|v| env(v).is_some_and(|s| !s.is_empty() && s != "0"));
        let mut stats = CompileStats::default();
        let mut fatbins: Vec<Option<PathBuf>> = vec![None; units.len()];
        if with_kernels {
            let toolchain = toolchain::discover(&env).map_err(BuildError::Toolchain)?;
            // Before nvcc runs, so that a missing static library fails the build at once.
            let static_runtime = if self
                .static_cxx
                .unwrap_or_else(|| env(static_cxx::CORE_DEP_VAR).is_some())
            {
                Some(static_cxx::prepare(&work.join("static-cxx"), &env).map_err(BuildError::StaticCxx)?)
            } else {
                None
            };
            let glue_include = work.join("glue");
            for (name, text) in GLUE_HEADERS {
                write_if_changed(&glue_include.join(name), text.as_bytes())
                    .map_err(|e| io("writing glue headers", e))?;
            }
            let archs = match env(ARCHS_VAR) {
                Some(list) => parse_archs(&list)?,
                None => self.sass_archs.clone(),
            };
            let setup = NvccSetup {
                host_command: host_command(&toolchain)?,
                nvcc: toolchain.nvcc.clone(),
                include_dirs: std::iter::once(glue_include)
                    .chain(toolchain.cutlass_include.iter().cloned())
                    .chain(std::iter::once(toolchain.cuda_include.clone()))
                    .collect(),
                sass_archs: archs,
                toolchain_id: format!(
                    "{} / CUTLASS {}",
                    toolchain.nvcc_version, toolchain.cutlass_version
                ),
                glue: GLUE_HEADERS,
            };
            let cache = toolchain::cache_root(&env).map_err(BuildError::Toolchain)?;
            let (compiled, compile_stats) = compile::compile_units(
                &units,
                &setup,
                &work.join("units"),
                &cache,
                &JobLimiter::from_env(),
            )
            .map_err(|mut error| {
                // A user kernel's failure names the manifest entry and the file it came from.
                if let Some(kernel) = user_kernels
                    .iter()
                    .find(|k| format!("user_{}", k.rust_name) == error.unit)
                {
                    error.message = format!(
                        "{}: user kernel `{}` (source {}, entry {}) does not compile; nvcc says:\n{}",
                        kernel.origin, kernel.rust_name, kernel.source, kernel.entry, error.message
                    );
                }
                BuildError::Compile(error)
            })?;
            stats = compile_stats;
            let mut archive = cc::Build::new();
            if static_runtime.is_some() {
                // Linked below, from the build's own directory.
                archive.cpp_link_stdlib(None);
            }
            let mut archived = std::collections::HashSet::new();
            for (slot, unit) in compiled.iter().enumerate() {
                let local = work.join(format!("{}.fatbin", unit.name));
                copy_if_changed(&unit.fatbin, &local).map_err(|e| io("copying fatbin", e))?;
                fatbins[slot] = Some(local);
                // Units whose host code compiled together share one object.
                if archived.insert(&unit.host_object) {
                    archive.object(&unit.host_object);
                }
            }
            let library = self.library_name.clone().unwrap_or_else(|| {
                format!(
                    "cutlass_aot_kernels_{}",
                    env("CARGO_PKG_NAME").unwrap_or_default().replace('-', "_")
                )
            });
            archive
                .cpp(true)
                .cargo_warnings(false)
                .try_compile(&library)
                .map_err(|e| BuildError::Io(format!("archiving host objects: {e}")))?;
            println!("cargo:rustc-link-search=native={}", toolchain.cuda_lib.display());
            println!("cargo:rustc-link-lib=static=cudart_static");
            for lib in ["dl", "rt", "pthread"] {
                println!("cargo:rustc-link-lib=dylib={lib}");
            }
            if let Some(runtime) = &static_runtime {
                runtime.print_directives();
                if env("CARGO_MANIFEST_LINKS").is_some() {
                    println!("cargo:{}=1", static_cxx::METADATA_KEY);
                }
            }
        }

        let user_images: Vec<UserImage<'_>> = user_kernels
            .iter()
            .zip(&units[first_user_unit..])
            .zip(&fatbins[first_user_unit..])
            .map(|((kernel, unit), fatbin)| UserImage {
                kernel,
                unit_name: &unit.name,
                fatbin: fatbin.as_deref(),
            })
            .collect();
        let elementwise_images: Vec<ElementwiseImage<'_>> = units[first_elementwise_unit..first_user_unit]
            .iter()
            .zip(&fatbins[first_elementwise_unit..first_user_unit])
            .zip(elementwise.chunks(ELEMENTWISE_PER_UNIT))
            .map(|((unit, fatbin), kernels)| ElementwiseImage {
                unit_name: &unit.name,
                fatbin: fatbin.as_deref(),
                kernels,
            })
            .collect();
        let images: Vec<UnitImage<'_>> = units[..first_elementwise_unit]
            .iter()
            .zip(&fatbins)
            .map(|(unit, fatbin)| UnitImage {
                unit_name: &unit.name,
                fatbin: fatbin.as_deref(),
                kernels: &unit.kernels,
            })
            .collect();
        let label = self
            .manifest
            .file_name()
            .map_or_else(|| "manifest".into(), |n| n.to_string_lossy().into_owned());
        let tables = self.read_tables(&kernels, &switched_off)?;
        let generated = emit_rust::Generated {
            units: &images,
            manifest_order: &kernels,
            elementwise: &elementwise_images,
            user_kernels: &user_images,
            tables: &tables,
        };
        let rust =
            emit_rust::generate(&label, &generated).map_err(|e| BuildError::Generate(e.to_string()))?;
        let rust_file = work.join("kernels.rs");
        write_if_changed(&rust_file, rust.as_bytes()).map_err(|e| io("writing kernels.rs", e))?;

        let summary = BuildSummary {
            kernels: kernels.len() + elementwise.len() + user_kernels.len(),
            units: units.len(),
            stats,
            seconds: started.elapsed().as_secs_f64(),
            with_kernels,
            rust_file,
        };
        println!("cargo:warning=cutlass-aot: {summary}");
        Ok(summary)
    }
}

/// The `*.tsv` files of `dir`, sorted by file name.
fn tsv_files_in(dir: &Path) -> Result<Vec<PathBuf>, BuildError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        BuildError::Io(format!(
            "reading the directory of dispatch tables {}: {e}",
            dir.display()
        ))
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| {
            BuildError::Io(format!(
                "reading the directory of dispatch tables {}: {e}",
                dir.display()
            ))
        })?;
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "tsv") && path.is_file() {
            files.push(path);
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// Warns (one line) about dispatch-table rows that name kernels the manifest does not have at all:
/// the table is stale. Rows of kernels switched off by a cargo feature are expected and silent.
fn warn_unknown_kernels(path: &Path, unknown: &[String], switched_off: &HashSet<&str>, remeasure_with: &str) {
    let mut stale: Vec<&str> = unknown
        .iter()
        .map(String::as_str)
        .filter(|name| !switched_off.contains(name))
        .collect();
    let rows = stale.len();
    stale.sort_unstable();
    stale.dedup();
    if rows == 0 {
        return;
    }
    const SHOWN: usize = 3;
    let more = stale.len().saturating_sub(SHOWN);
    let mut names = stale[..stale.len().min(SHOWN)].join(", ");
    if more > 0 {
        names.push_str(&format!(" and {more} more"));
    }
    println!(
        "cargo:warning=cutlass-aot: {rows} row(s) of {} name {} kernel(s) the manifest does not have and were dropped (re-run {remeasure_with}): {names}",
        path.display(),
        stale.len()
    );
}

/// The variable cargo sets for an enabled feature: `CARGO_FEATURE_` and the name in upper case,
/// `-` as `_`.
pub fn feature_var(feature: &str) -> String {
    format!("CARGO_FEATURE_{}", feature.to_uppercase().replace('-', "_"))
}

fn parse_archs(list: &str) -> Result<Vec<u32>, BuildError> {
    let archs: Result<Vec<u32>, _> = list.split(',').map(|s| s.trim().parse::<u32>()).collect();
    match archs {
        Ok(a) if !a.is_empty() && a.iter().all(|&x| x >= 80) => Ok(a),
        _ => Err(BuildError::Io(format!(
            "{ARCHS_VAR}={list:?} is not a comma-separated list of SASS targets of sm_80 or newer (e.g. \"80,90\")"
        ))),
    }
}

/// nvcc with the host-compiler flags the `cc` crate picks for this target (PIC, -m64, ...).
fn host_command(toolchain: &toolchain::Toolchain) -> Result<Vec<String>, BuildError> {
    // cc finds nvcc through the NVCC variable (`.compiler()` would not apply to CUDA).
    std::env::set_var("NVCC", &toolchain.nvcc);
    let tool = cc::Build::new()
        .cuda(true)
        .cpp(true)
        .debug(false)
        .warnings(false)
        .extra_warnings(false)
        .cargo_metadata(false)
        .try_get_compiler()
        .map_err(|e| BuildError::Io(format!("cannot configure nvcc through the cc crate: {e}")))?;
    let command = tool.to_command();
    let mut parts = vec![command.get_program().to_string_lossy().into_owned()];
    parts.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    Ok(parts)
}

/// Runs the builder from a build script: on error, prints the readable chain and exits non-zero
/// instead of panicking with a backtrace.
pub fn run_build_script(builder: &Builder) -> BuildSummary {
    match builder.compile() {
        Ok(summary) => summary,
        Err(error) => {
            eprintln!("error: cutlass-aot build failed\n\n{error}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cutlass-aot-builder-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn kernels() -> Vec<crate::model::GemmKernel> {
        let yaml = "version: 1
operations:
  - kind: gemm
    name: bf16_sm90_tn
    arch: 90
    a: bf16
    layout_a: row
    layout_b: column
    tile: [128, 256, 64]
    cluster: [2, 1, 1]
    schedule: cooperative
    epilogue_schedule: tma
";
        manifest::parse(yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn table_text(device: &str, kernel: &str, m: usize) -> String {
        format!(
            "{}\n# device: {device}\n# date: 2026-11-24\n{}\n\
             gemm\tbf16\tbf16\tbf16\ttnt\t{m},4096,4096,1\t{kernel}\t1\tm\t8\t100.5\n",
            table::HEADER,
            table::COLUMNS
        )
    }

    #[test]
    fn tables_accumulate_files_then_directories_sorted_by_name() {
        let dir = scratch("tables");
        let ks = kernels();
        let name = &ks[0].name;
        std::fs::write(dir.join("nvidia_h200.tsv"), table_text("NVIDIA H200", name, 2)).unwrap();
        std::fs::write(
            dir.join("nvidia_h100.tsv"),
            table_text("NVIDIA H100 80GB HBM3", name, 1),
        )
        .unwrap();
        // Not tables: other extensions and directories named *.tsv.
        std::fs::write(dir.join("README.md"), "not a table").unwrap();
        std::fs::write(dir.join("nvidia_a100.tsv.orig"), "not a table").unwrap();
        std::fs::create_dir_all(dir.join("old.tsv")).unwrap();
        let single = dir.join("single.table");
        std::fs::write(&single, table_text("NVIDIA A100-SXM4-80GB", name, 3)).unwrap();

        let mut builder = Builder::new("kernel_manifest.yaml");
        builder.dispatch_table(&single).dispatch_tables_in(&dir);
        let files = builder.dispatch_table_files().unwrap();
        assert_eq!(
            files,
            [
                single.clone(),
                dir.join("nvidia_h100.tsv"),
                dir.join("nvidia_h200.tsv")
            ]
        );
        let tables = builder.read_tables(&ks, &HashSet::new()).unwrap();
        let devices: Vec<&str> = tables.iter().map(|t| t.device.as_str()).collect();
        assert_eq!(
            devices,
            ["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200"]
        );
        let firsts: Vec<usize> = tables.iter().map(|t| t.rows[0].dims[0]).collect();
        assert_eq!(firsts, [3, 1, 2]);
        assert_eq!(tables[1].rows[0].raster, table::Raster::AlongM);
        assert_eq!(tables[1].rows[0].swizzle, 8);

        // No tables: none embedded.
        assert!(Builder::new("m.yaml")
            .read_tables(&ks, &HashSet::new())
            .unwrap()
            .is_empty());
        // An empty directory is fine.
        let empty = scratch("tables-empty");
        let mut builder = Builder::new("m.yaml");
        builder.dispatch_tables_in(&empty);
        assert!(builder.read_tables(&ks, &HashSet::new()).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&empty);

        // A missing directory is an error naming it.
        let mut builder = Builder::new("m.yaml");
        builder.dispatch_tables_in(dir.join("missing"));
        let error = builder.read_tables(&ks, &HashSet::new()).unwrap_err().to_string();
        assert!(
            error.contains("missing") && error.contains("dispatch tables"),
            "{error}"
        );

        // Malformed rows of every table are reported, each with its file and line.
        std::fs::write(
            dir.join("nvidia_h100.tsv"),
            table_text("NVIDIA H100 80GB HBM3", name, 1).replace("\tm\t8\t", "\tx\t8\t"),
        )
        .unwrap();
        std::fs::write(
            dir.join("nvidia_h200.tsv"),
            table_text("NVIDIA H200", name, 2).replace("\tm\t8\t", "\tm\t3\t"),
        )
        .unwrap();
        let mut builder = Builder::new("m.yaml");
        builder.dispatch_tables_in(&dir);
        let error = builder.read_tables(&ks, &HashSet::new()).unwrap_err().to_string();
        assert!(error.contains("nvidia_h100.tsv:5: raster \"x\""), "{error}");
        assert!(error.contains("nvidia_h200.tsv:5: swizzle \"3\""), "{error}");

        // Two files of one device merge; a file of another format is an error naming the header.
        std::fs::write(
            dir.join("nvidia_h100.tsv"),
            table_text("NVIDIA H100 80GB HBM3", name, 1),
        )
        .unwrap();
        std::fs::write(
            dir.join("nvidia_h200.tsv"),
            table_text("NVIDIA H100 80GB HBM3", name, 2),
        )
        .unwrap();
        let mut builder = Builder::new("m.yaml");
        builder.dispatch_tables_in(&dir);
        let tables = builder.read_tables(&ks, &HashSet::new()).unwrap();
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].rows.len(), 2);
        std::fs::write(dir.join("old.txt.tsv"), "# cutlass-aot dispatch table\n").unwrap();
        let error = builder.read_tables(&ks, &HashSet::new()).unwrap_err().to_string();
        assert!(error.contains("old.txt.tsv: the first line must be"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
