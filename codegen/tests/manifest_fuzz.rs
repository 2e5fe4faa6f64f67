//! Scale and fuzz tests of the manifest reader.
//!
//! * Scale: 10,000-entry manifests (all valid, or all duplicates of one kernel) are read in well
//!   under two seconds, every duplicate reported once with its `file:line`.
//! * Fuzz: random manifests and mutations of the real `kernel_manifest.yaml`, of the error corpus
//!   (`tests/manifest_errors`) and of generated manifests (lines deleted, duplicated, swapped;
//!   values replaced by random tokens; truncation; garbage bytes, unicode and tabs; deep nesting;
//!   huge numbers; anchors and aliases; several documents ...). Every case must return without a
//!   panic, in bounded time, and every problem must name its file and a line within the text.
//!
//! The fuzz run is deterministic: `CUTLASS_AOT_FUZZ_SEED` (default below) and
//! `CUTLASS_AOT_FUZZ_CASES` (default: a few seconds' worth) choose the cases; a failing case is
//! written to the temporary directory and reported with its seed and number. A longer run:
//!
//! ```text
//! CUTLASS_AOT_FUZZ_CASES=200000 cargo test --release -p cutlass-aot-build --test manifest_fuzz \
//!     fuzz_parse -- --nocapture
//! ```

use cutlass_aot_build::manifest::{self, ManifestError, Problem};
use cutlass_aot_build::model::GemmKernel;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The fuzz seed unless `CUTLASS_AOT_FUZZ_SEED` says otherwise.
const DEFAULT_SEED: u64 = 0x5eed_1212_c0de_f00d;

/// Cases of the default run: a few seconds in release mode on a 2-core CI machine.
const DEFAULT_CASES: usize = if cfg!(debug_assertions) { 150 } else { 1500 };

/// The longest one case may take (fuzz cases are at most a few hundred KiB of YAML).
const CASE_LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 60 } else { 5 });

/// A case that has not returned after this long is a hang: the test fails, showing the case.
const HANG_LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 300 } else { 60 });

// ---------------------------------------------------------------------------------------------
// Generated manifests
// ---------------------------------------------------------------------------------------------

/// A valid manifest of `n` distinct kernels (n <= 13,440), one block-style entry each.
fn valid_manifest(n: usize) -> String {
    let mut text = String::from("version: 1\noperations:\n");
    let mut count = 0;
    'out: for a in ["f16", "bf16"] {
        for (la, lb) in [
            ("row", "column"),
            ("row", "row"),
            ("column", "column"),
            ("column", "row"),
        ] {
            for lc in ["row", "column"] {
                for align in [8, 4, 2] {
                    for i in 1..=20u32 {
                        for j in 1..=14u32 {
                            if count == n {
                                break 'out;
                            }
                            count += 1;
                            text.push_str(&format!(
                                "  - kind: gemm\n    arch: 80\n    a: {a}\n    layout_a: {la}\n    layout_b: {lb}\n    \
                                 layout_c: {lc}\n    alignment: {align}\n    tile: [{}, {}, 32]\n    warps: [2, 2, 1]\n",
                                32 * i,
                                16 * j
                            ));
                        }
                    }
                }
            }
        }
    }
    assert_eq!(count, n, "valid_manifest makes at most 13,440 distinct kernels");
    text
}

/// The same entry `n` times: `n - 1` duplicate kernels.
fn duplicate_manifest(n: usize) -> String {
    format!("version: 1\noperations:\n{}", DUPLICATE_ENTRY.repeat(n))
}

const DUPLICATE_ENTRY: &str =
    "  - kind: gemm\n    arch: 80\n    a: f16\n    layout_a: row\n    layout_b: column\n    \
                               tile: [128, 128, 32]\n    warps: [2, 2, 1]\n";

/// `n` entries, each with three mistakes (a bad value, a rule broken, an unknown placeholder).
fn bad_manifest(n: usize) -> String {
    let entry = "  - kind: gemm\n    name: k_{nope}\n    arch: 80\n    a: f16\n    layout_a: row\n    \
                 layout_b: column\n    tile: [128, 128, 32]\n    warps: [2, 2, 1]\n    stages: 1\n    \
                 swizzle: spiral\n";
    format!("version: 1\noperations:\n{}", entry.repeat(n))
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

// ---------------------------------------------------------------------------------------------
// Scale
// ---------------------------------------------------------------------------------------------

/// The bound of the issue, generous for a slow 2-core CI machine in release mode (measured: well
/// under a second); debug builds are slower and only get a sanity bound.
const SCALE_LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 30 } else { 2 });

#[test]
fn ten_thousand_valid_entries_in_under_two_seconds() {
    let text = valid_manifest(10_000);
    let (kernels, time) = timed(|| manifest::parse(&text, "scale.yaml"));
    let kernels = kernels.unwrap_or_else(|e| panic!("{}", e.problems[0]));
    assert_eq!(kernels.len(), 10_000);
    assert_eq!(kernels[9_999].origin, format!("scale.yaml:{}", 3 + 9 * 9_999));
    assert!(time < SCALE_LIMIT, "10,000 valid entries took {time:?}");
}

#[test]
fn ten_thousand_duplicate_entries_in_under_two_seconds() {
    let text = duplicate_manifest(10_000);
    let (result, time) = timed(|| manifest::parse(&text, "dup.yaml"));
    let err = result.expect_err("duplicates are errors");
    assert!(time < SCALE_LIMIT, "10,000 duplicate entries took {time:?}");
    // Every later entry is reported once, at its own line, naming the first.
    assert_eq!(err.problems.len(), 9_999);
    for (i, p) in err.problems.iter().enumerate() {
        let line = 3 + 7 * (i + 1);
        assert_eq!((p.file.as_str(), p.line), ("dup.yaml", Some(line)));
        assert_eq!(p.field, format!("operations[{}]", i + 1));
        assert!(p
            .message
            .ends_with("is the same kernel as dup.yaml:3; remove one of them"));
        assert!(p
            .to_string()
            .starts_with(&format!("dup.yaml:{line}: operations[{}]: ", i + 1)));
    }
}

#[test]
fn ten_thousand_entries_with_three_problems_each_in_under_two_seconds() {
    let text = bad_manifest(10_000);
    let (result, time) = timed(|| manifest::parse(&text, "bad.yaml"));
    let err = result.expect_err("every entry is wrong");
    assert!(time < SCALE_LIMIT, "took {time:?}");
    assert_eq!(err.problems.len(), 30_000);
    let last = &err.problems[29_999];
    assert_eq!(
        (last.line, last.field.as_str()),
        (Some(2 + 10 * 9_999 + 10), "operations[9999].swizzle")
    );
}

/// Flow lists nested 300,000 deep (libyaml alone would take minutes over them) are refused at
/// once, at the line of the first list too deep.
#[test]
fn deeply_nested_lists_are_refused_fast() {
    for open in ["[", "{a: ", "[\n"] {
        let text = format!("version: 1\noperations:\n  - {}", open.repeat(300_000));
        let (result, time) = timed(|| manifest::parse(&text, "deep.yaml"));
        let err = result.expect_err("too deep");
        assert!(time < SCALE_LIMIT, "took {time:?}");
        let line = if open.ends_with('\n') { 129 } else { 3 };
        assert_eq!(
            err.to_string(),
            format!(
                "deep.yaml:{line}: invalid YAML: recursion limit exceeded: lists and mappings nested more \
                 than 128 deep"
            )
        );
    }
}

/// A family that repeats one mistake thousands of times says it once, fast.
#[test]
fn a_family_of_thousands_of_duplicates_says_so_once() {
    let stages = vec!["3"; 4000].join(", ");
    let text = format!(
        "version: 1\noperations:\n  - kind: gemm\n    arch: 80\n    a: f16\n    layout_a: row\n    \
         layout_b: column\n    tile: [128, 128, 32]\n    warps: [2, 2, 1]\n    stages: [{stages}]\n"
    );
    let (result, time) = timed(|| manifest::parse(&text, "family.yaml"));
    let err = result.expect_err("a repeated value is a duplicate");
    assert!(time < SCALE_LIMIT, "took {time:?}");
    assert_eq!(err.problems.len(), 1, "{err}");
    assert!(err.problems[0]
        .message
        .contains("one of its lists repeats a value"));
}

/// A name of many braces is read in linear time and each brace problem said once.
#[test]
fn a_name_of_many_braces_is_one_problem() {
    for name in ["{".repeat(100_000), "}".repeat(100_000), "{x}".repeat(30_000)] {
        let text = format!(
            "version: 1\noperations:\n  - kind: gemm\n    arch: 80\n    name: \"{name}\"\n    a: f16\n    \
             layout_a: row\n    layout_b: column\n    tile: [128, 128, 32]\n    warps: [2, 2, 1]\n"
        );
        let (result, time) = timed(|| manifest::parse(&text, "braces.yaml"));
        let err = result.expect_err("bad braces");
        assert!(time < SCALE_LIMIT, "took {time:?}");
        assert_eq!(err.problems.len(), 1, "{}", err.problems.len());
        assert_eq!(err.problems[0].line, Some(5));
    }
}

/// Prints parse times of generated manifests:
///
/// ```text
/// CUTLASS_AOT_SCALE=dup:1000,dup:2000,dup:10000,valid:10000 cargo test --release \
///     -p cutlass-aot-build --test manifest_fuzz scale_report -- --ignored --nocapture
/// ```
#[test]
#[ignore = "a measurement tool, not a test: run with --ignored to print parse times"]
fn scale_report() {
    let spec = std::env::var("CUTLASS_AOT_SCALE").unwrap_or_else(|_| "dup:1000,valid:1000".to_string());
    for item in spec.split(',') {
        let (kind, n) = item.split_once(':').expect("KIND:N");
        let n: usize = n.parse().expect("a count");
        let text = match kind {
            "dup" => duplicate_manifest(n),
            "valid" => valid_manifest(n),
            "bad" => bad_manifest(n),
            _ => panic!("unknown kind {kind}"),
        };
        let (result, time) = timed(|| manifest::parse(&text, "scale.yaml"));
        let outcome = match &result {
            Ok(kernels) => format!("{} kernels", kernels.len()),
            Err(err) => format!("{} problems", err.problems.len()),
        };
        println!(
            "{kind} {n}: {:.3} s ({} lines, {outcome})",
            time.as_secs_f64(),
            text.lines().count()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Fuzzing
// ---------------------------------------------------------------------------------------------

/// xorshift64*: small, fast and deterministic.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so that neighbouring seeds give unrelated streams (never 0).
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}

/// Values a field might hold: valid spellings of every field, and tokens that are not.
#[rustfmt::skip]
const WORDS: &[&str] = &[
    "gemm", "gemm_grouped", "f16", "bf16", "f32", "f64", "s8", "s32", "e4m3", "e5m2", "row", "column",
    "column_interleaved_32", "row_interleaved_32", "tensorop", "simt", "multiply_add",
    "multiply_add_saturate", "multiply_add_fast_f32", "multiply_add_fast_f16", "multiply_add_fast_bf16",
    "identity1", "identity2", "identity4", "identity8", "batched", "horizontal", "linear_combination",
    "linear_combination_clamp", "fast_linear_combination_clamp", "identity", "relu", "leaky_relu", "tanh",
    "sigmoid", "silu", "hardswish", "gelu", "gelu_taylor", "none", "per_row", "per_col", "pre_activation",
    "row_sum", "after_activation", "serial", "parallel", "stream_k", "auto", "warpspecialized",
    "cooperative", "pingpong", "no_smem", "tma", "persistent", "device", "host", "strided", "array",
];

/// Tokens that are not what any field wants: numbers, YAML specials, collections, unicode.
#[rustfmt::skip]
const JUNK: &[&str] = &[
    "0", "1", "-1", "2", "3", "4", "8", "16", "80", "90", "75", "100", "1.5", "-0", "0x10", "0o17", "1e3",
    "1e309", "-1e309", ".inf", "-.inf", ".nan", "1_000", "4294967296", "18446744073709551616",
    "99999999999999999999999999999999999999", "null", "~", "true", "false", "yes", "no", "on", "\"\"", "''",
    "\"1\"", "'f16'", "\"f16\\u0000\"", "[]", "{}", "[1, 2, 3]", "[0, 0, 0]", "[[1, 2, 3], []]",
    "[128, 128]", "[128, 128, 32, 1]", "[[128, 128, 32], [64, 64, 32]]", "{a: 1}", "[f16, bf16]",
    "[row, column]", "[80, 90]", "[auto, 4]", "!!str 1", "!!int f16", "!foo bar", "!!binary aGk=",
    "&anchor f16", "*anchor", "*undefined", "|\n  block", ">-\n  folded", "é", "日本語", "\u{202e}f16", "🦀",
    "f16\t", "\tf16", "f16 # comment", "'it''s'", "\"\\x41\\t\"", "{x}", "{{", "}}", "-", "?", ":", "@",
    "`", "%", "name_{layout}_{tile}", "k_{warps}_{cluster}", "{nope}", "{layout", "ok}",
];

/// The manifest's keys, and some that are not.
#[rustfmt::skip]
const KEYS: &[&str] = &[
    "kind", "name", "arch", "opclass", "a", "b", "c", "accumulator", "epilogue_compute", "layout_a",
    "layout_b", "layout_c", "alignment", "alignment_c", "tile", "cluster", "warps", "instruction", "stages",
    "schedule", "epilogue_schedule", "tile_scheduler", "math", "swizzle", "split_k", "epilogue",
    "activation", "bias", "scale", "aux_output", "residual", "aux_input", "reduction", "group_schedule",
    "batch_mode", "feature", "version", "operations", "unknown_key", "Tile", "\"tile\"", "? tile", "<<",
];

/// Characters that YAML (or a reader of it) may trip on.
#[rustfmt::skip]
const GARBAGE: &[&str] = &[
    "\t", "\r", "\r\n", "\n", "\0", "\u{1}", "\u{7f}", "\u{85}", "\u{a0}", "\u{2028}", "\u{2029}",
    "\u{feff}", "\u{fffd}", "\u{10ffff}", "\u{202e}", "é", "ß", "日", "🦀", "{", "}", "[", "]", ":", ": ",
    "-", "- ", "#", "&", "*", "!", "|", ">", "'", "\"", "%", "@", "`", ",", "?", "\\", "---", "...", "  ",
    "    ", "<<: ", "&a ", "*a",
];

/// A random value: a valid word, junk, a list (family) or a shape.
fn random_value(rng: &mut Rng) -> String {
    match rng.below(10) {
        0..=3 => rng.pick(WORDS).to_string(),
        4..=5 => rng.pick(JUNK).to_string(),
        6 => {
            let n = 1 + rng.below(4);
            let items: Vec<&str> = (0..n).map(|_| rng.pick(WORDS)).collect();
            format!("[{}]", items.join(", "))
        }
        7 => random_shape(rng),
        8 => {
            let n = 1 + rng.below(3);
            let items: Vec<String> = (0..n).map(|_| random_shape(rng)).collect();
            format!("[{}]", items.join(", "))
        }
        _ => rng
            .pick(&["80", "90", "[80, 90]", "3", "4", "[3, 4]", "auto", "8", "[4, 8]"])
            .to_string(),
    }
}

fn random_shape(rng: &mut Rng) -> String {
    let dims = [
        "0",
        "1",
        "2",
        "4",
        "8",
        "16",
        "32",
        "64",
        "128",
        "192",
        "256",
        "3",
        "4096",
        "4294967296",
        "-1",
    ];
    let n = if rng.chance(85) { 3 } else { rng.below(5) };
    let items: Vec<&str> = (0..n).map(|_| rng.pick(&dims)).collect();
    format!("[{}]", items.join(", "))
}

/// A manifest from scratch: plausible entries (so that expansion, the rules and duplicate
/// detection run), in block or flow style; "clean" manifests use only values that can be valid
/// (many are accepted, or fail on duplicates and rules only), the others add random mistakes.
fn random_manifest(rng: &mut Rng) -> String {
    let clean = rng.chance(40);
    let mut text = String::new();
    if rng.chance(10) {
        text.push_str("# a random manifest\n");
    }
    match rng.below(10) {
        0 if !clean => {}
        1 if !clean => text.push_str(&format!("version: {}\n", rng.pick(JUNK))),
        _ => text.push_str("version: 1\n"),
    }
    if !clean && rng.chance(3) {
        return text;
    }
    text.push_str("operations:\n");
    let entries = match rng.below(20) {
        0 if !clean => 0,
        1 => 20 + rng.below(60),
        _ => 1 + rng.below(6),
    };
    for _ in 0..entries {
        let sm80 = rng.chance(50);
        let (kind, arch) = if clean || rng.chance(90) {
            ("gemm".to_string(), if sm80 { "80" } else { "90" }.to_string())
        } else {
            (random_value(rng), random_value(rng))
        };
        let a = if clean {
            &["f16", "bf16", "[f16, bf16]"][..]
        } else {
            &["f16", "bf16", "f32", "f64", "s8", "e4m3", "[f16, bf16]"]
        };
        let layouts = ["row", "column", "[row, column]"];
        let tiles: &[&str] = if sm80 {
            &[
                "[128, 128, 32]",
                "[64, 64, 32]",
                "[128, 256, 32]",
                "[[128, 128, 32], [64, 128, 32]]",
            ]
        } else {
            &[
                "[128, 128, 64]",
                "[64, 128, 64]",
                "[128, 256, 64]",
                "[[128, 128, 64], [64, 128, 64]]",
            ]
        };
        let mut fields: Vec<(String, String)> = vec![
            ("kind".into(), kind),
            ("arch".into(), arch),
            ("a".into(), rng.pick(a).into()),
            ("layout_a".into(), rng.pick(&layouts).into()),
            ("layout_b".into(), rng.pick(&layouts).into()),
            ("tile".into(), rng.pick(tiles).into()),
        ];
        if sm80 {
            fields.push((
                "warps".into(),
                rng.pick(&["[2, 2, 1]", "[2, 4, 1]", "[[2, 2, 1], [4, 2, 1]]"])
                    .into(),
            ));
        }
        // Optional fields with values that can be valid for the arch.
        let optional: &[(&str, &[&str])] = if sm80 {
            &[
                ("layout_c", &["row", "column", "[row, column]"]),
                ("stages", &["3", "4", "[3, 4]"]),
                ("swizzle", &["identity1", "identity4", "identity8"]),
                ("alignment", &["8", "4", "[8, 4, 2]"]),
                ("activation", &["identity", "relu", "[relu, gelu]"]),
            ]
        } else {
            &[
                ("layout_c", &["row", "column"]),
                ("cluster", &["[1, 1, 1]", "[2, 1, 1]", "[[1, 1, 1], [1, 2, 1]]"]),
                ("stages", &["auto", "4", "[auto, 3]"]),
                (
                    "schedule",
                    &["auto", "cooperative", "pingpong", "[cooperative, pingpong]"],
                ),
                ("epilogue_schedule", &["auto", "tma"]),
                ("tile_scheduler", &["persistent", "stream_k"]),
            ]
        };
        for (key, values) in optional {
            if rng.chance(30) {
                fields.push((key.to_string(), rng.pick(values).to_string()));
            }
        }
        if !clean {
            // Drop a required field now and then, add random ones.
            if rng.chance(10) {
                fields.remove(rng.below(fields.len()));
            }
            for _ in 0..rng.below(5) {
                let key = rng.pick(KEYS).to_string();
                fields.push((key, random_value(rng)));
            }
        }
        if rng.chance(30) {
            let names = [
                "k_{layout}_{tile}",
                "k_{a}_{layout}_{tile}_{stages}_{layout_c}",
                "gemm_one",
                "k_{warps}",
                "{a}",
            ];
            fields.push(("name".into(), rng.pick(&names).into()));
        }
        if rng.chance(20) {
            let i = rng.below(fields.len());
            let j = rng.below(fields.len());
            fields.swap(i, j);
        }
        if rng.chance(25) {
            let items: Vec<String> = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            text.push_str(&format!("  - {{{}}}\n", items.join(", ")));
        } else {
            for (i, (k, v)) in fields.iter().enumerate() {
                let lead = if i == 0 { "  - " } else { "    " };
                text.push_str(&format!("{lead}{k}: {v}\n"));
            }
        }
    }
    text
}

/// Lines of `text`, each with its line break.
fn split_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

/// A random char boundary of `text`.
fn boundary(rng: &mut Rng, text: &str) -> usize {
    let mut at = rng.below(text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// One random mutation of `text`.
fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut lines = split_lines(text);
    let n = lines.len();
    let line = |rng: &mut Rng| rng.below(n.max(1));
    match rng.below(22) {
        // Lines: delete, duplicate, swap, move, duplicate a block.
        0 if n > 0 => {
            lines.remove(line(rng));
        }
        1 if n > 0 => {
            let i = line(rng);
            lines.insert(i, lines[i].clone());
        }
        2 if n > 1 => {
            let (i, j) = (line(rng), line(rng));
            lines.swap(i, j);
        }
        3 if n > 1 => {
            let l = lines.remove(line(rng));
            let at = rng.below(lines.len() + 1);
            lines.insert(at, l);
        }
        4 if n > 0 => {
            let i = line(rng);
            let len = 1 + rng.below(12.min(n - i));
            let block: Vec<String> = lines[i..i + len].to_vec();
            let at = rng.below(lines.len() + 1);
            for _ in 0..1 + rng.below(3) {
                lines.splice(at..at, block.iter().cloned());
            }
        }
        // A value (after `: ` or `- `) replaced by a random token.
        5..=8 if n > 0 => {
            let i = line(rng);
            let l = &lines[i];
            let value = random_value(rng);
            let replaced = match l.find(": ").or_else(|| l.find("- ")) {
                Some(at) => format!("{}{value}\n", &l[..at + 2]),
                None => format!("{}{value}\n", l.trim_end_matches('\n')),
            };
            lines[i] = replaced;
        }
        // A key replaced by another (or by junk).
        9 if n > 0 => {
            let i = line(rng);
            if let Some(colon) = lines[i].find(':') {
                let start = lines[i][..colon].rfind([' ', '-', '{', ',']).map_or(0, |s| s + 1);
                let key = if rng.chance(80) {
                    rng.pick(KEYS)
                } else {
                    rng.pick(JUNK)
                };
                lines[i].replace_range(start..colon, key);
            }
        }
        // Garbage inserted anywhere.
        10 | 11 => {
            let mut t = lines.concat();
            for _ in 0..1 + rng.below(4) {
                let at = boundary(rng, &t);
                t.insert_str(at, rng.pick(GARBAGE));
            }
            return t;
        }
        // Truncated at any character.
        12 => {
            let t = lines.concat();
            let at = boundary(rng, &t);
            return t[..at].to_string();
        }
        // Indentation changed (spaces or tabs).
        13 if n > 0 => {
            let i = line(rng);
            match rng.below(3) {
                0 => lines[i].insert_str(0, rng.pick(&[" ", "  ", "\t", "    "])),
                1 => lines[i] = lines[i].trim_start().to_string(),
                _ => lines[i] = lines[i].replacen("  ", "\t", 1),
            }
        }
        // Deep nesting (flow or block), sometimes past serde_yaml's recursion limit.
        14 if n > 0 => {
            let depth = [2usize, 10, 100, 126, 127, 128, 300, 5000, 50_000][rng.below(9)];
            let value = match rng.below(3) {
                0 => format!("{}1{}", "[".repeat(depth), "]".repeat(depth)),
                1 => format!("{}1{}", "{a: ".repeat(depth), "}".repeat(depth)),
                _ => {
                    let mut v = String::from("\n");
                    for d in 0..depth.min(400) {
                        v.push_str(&" ".repeat(4 + 2 * d));
                        v.push_str("-\n");
                    }
                    v
                }
            };
            let i = line(rng);
            let l = lines[i].trim_end_matches('\n').to_string();
            lines[i] = match l.find(": ") {
                Some(at) => format!("{}{value}\n", &l[..at + 2]),
                None => format!("{l}{value}\n"),
            };
        }
        // Huge numbers.
        15 if n > 0 => {
            let i = line(rng);
            let digits = "9".repeat(1 + rng.below(400));
            let value = rng.pick(&["", "-", "0x", "1e", "[", "[[1, 2, "]).to_string() + &digits;
            let value = if value.starts_with('[') {
                format!("{value}]")
            } else {
                value
            };
            let value = if value.starts_with("[[") {
                format!("{value}]")
            } else {
                value
            };
            let l = lines[i].clone();
            if let Some(at) = l.find(": ") {
                lines[i] = format!("{}{value}\n", &l[..at + 2]);
            }
        }
        // Anchors and aliases: an entry anchored and aliased, an alias bomb, an undefined alias.
        16 => {
            let t = lines.concat();
            return match rng.below(4) {
                0 => t.replacen("  - kind:", "  - &entry\n    kind:", 1) + "  - *entry\n",
                1 => t.replacen(": f16", ": &t f16", 1).replace(": bf16", ": *t"),
                2 => {
                    let mut bomb = String::from("version: 1\nx0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n");
                    for k in 1..12 {
                        let refs = vec![format!("*a{}", k - 1); 10].join(", ");
                        bomb.push_str(&format!("x{k}: &a{k} [{refs}]\n"));
                    }
                    bomb + &t.replacen("version: 1\n", "", 1)
                }
                _ => t.replacen("tile:", "tile: *nowhere #", 1),
            };
        }
        // Several documents, directives, document markers.
        17 => {
            let t = lines.concat();
            return match rng.below(4) {
                0 => format!("{t}---\n{t}"),
                1 => format!("%YAML 1.1\n---\n{t}"),
                2 => format!("---\n{t}...\n"),
                _ => format!("%TAG ! tag:x,2000:\n--- !doc\n{t}"),
            };
        }
        // Whole-text transforms: CRLF line ends, no final newline, tabs for indentation.
        18 => {
            let t = lines.concat();
            return match rng.below(3) {
                0 => t.replace('\n', "\r\n"),
                1 => t.trim_end().to_string(),
                _ => t.replace("    ", "\t"),
            };
        }
        // A line of random bytes (valid UTF-8), or a very long line.
        19 => {
            let len = rng.below(80);
            let noise: String = (0..len)
                .map(|_| char::from_u32(rng.below(0x11_0000) as u32).unwrap_or('\u{fffd}'))
                .collect();
            let at = rng.below(lines.len() + 1);
            lines.insert(at, noise + "\n");
        }
        20 if n > 0 => {
            let i = line(rng);
            let long = rng.pick(WORDS).repeat(1 + rng.below(20_000));
            if let Some(at) = lines[i].find(": ") {
                lines[i] = format!("{}{long}\n", &lines[i][..at + 2]);
            }
        }
        // A long family list (towards MAX_KERNELS_PER_ENTRY and beyond).
        _ if n > 0 => {
            let i = line(rng);
            let len = [10usize, 64, 100, 4097, 10_000][rng.below(5)];
            let list = vec![rng.pick(WORDS); len].join(", ");
            if let Some(at) = lines[i].find(": ") {
                lines[i] = format!("{}[{list}]\n", &lines[i][..at + 2]);
            }
        }
        _ => {}
    }
    lines.concat()
}

/// The texts mutations start from: the real manifest, the error corpus, generated manifests.
fn seed_texts() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    let real = root.join("../kernel_manifest.yaml");
    texts.push((
        "kernel_manifest.yaml".to_string(),
        std::fs::read_to_string(real).unwrap(),
    ));
    let mut corpus: Vec<PathBuf> = std::fs::read_dir(root.join("tests/manifest_errors"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    corpus.sort();
    for path in corpus {
        let label = path.file_name().unwrap().to_string_lossy().into_owned();
        texts.push((label, std::fs::read_to_string(&path).unwrap()));
    }
    texts.push(("valid.yaml".to_string(), valid_manifest(6)));
    texts.push(("dup.yaml".to_string(), duplicate_manifest(4)));
    texts.push((
        "flow.yaml".to_string(),
        "version: 1\noperations:\n  - {kind: gemm, arch: 90, a: [f16, bf16], layout_a: row, layout_b: column,\n     \
         tile: [[128, 128, 64], [64, 128, 64]], cluster: [2, 1, 1], schedule: cooperative}\n  - {kind: gemm, \
         arch: 80, a: f16, layout_a: row, layout_b: column, tile: [128, 128, 32], warps: [2, 2, 1]}\n"
            .to_string(),
    ));
    texts
}

/// The generator of case `index`: each case can be made again on its own.
fn case_rng(seed: u64, index: usize) -> Rng {
    Rng::new(seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// One fuzz case: a random manifest, or 1-4 mutations of a seed text.
fn make_case(rng: &mut Rng, seeds: &[(String, String)]) -> (String, String) {
    if rng.chance(25) {
        return ("random.yaml".to_string(), random_manifest(rng));
    }
    let (label, text) = &seeds[rng.below(seeds.len())];
    let mut text = text.clone();
    for _ in 0..1 + rng.below(4) {
        text = mutate(rng, &text);
    }
    (label.clone(), text)
}

/// Lines a problem may name: up to the text's last line, with libyaml's line breaks (`\n`,
/// `\r\n`, `\r`, NEL, LS and PS).
fn line_bound(text: &str) -> usize {
    let text = text.replace("\r\n", "\n");
    let breaks = text
        .matches(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
        .count();
    let open_last_line = !text.ends_with(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']);
    (breaks + usize::from(open_last_line)).max(1)
}

/// What must hold of any result of `parse(text, label)`.
fn check_result(
    label: &str,
    text: &str,
    result: &Result<Vec<GemmKernel>, ManifestError>,
) -> Result<(), String> {
    let bound = line_bound(text);
    match result {
        Err(err) => {
            if err.problems.is_empty() {
                return Err("an error without problems".into());
            }
            let mut seen = HashSet::new();
            let mut last_line = 0;
            for p in &err.problems {
                check_problem(p, label, bound)?;
                if !seen.insert(p) {
                    return Err(format!("problem reported twice: {p}"));
                }
                let line = p.line.unwrap_or(0);
                if line < last_line {
                    return Err(format!("problems out of line order at {p}"));
                }
                last_line = line;
            }
        }
        Ok(kernels) => {
            if kernels.is_empty() {
                return Err("a valid manifest without kernels".into());
            }
            let mut names = HashSet::new();
            let mut rust_names = HashSet::new();
            for k in kernels {
                let line = k
                    .origin
                    .strip_prefix(&format!("{label}:"))
                    .and_then(|l| l.parse::<usize>().ok());
                if !line.is_some_and(|l| (1..=bound).contains(&l)) {
                    return Err(format!("kernel {} has origin `{}`", k.name, k.origin));
                }
                if !names.insert(&k.name) || !rust_names.insert(&k.rust_name) {
                    return Err(format!("kernel {} ({}) accepted twice", k.name, k.rust_name));
                }
            }
        }
    }
    Ok(())
}

/// Every problem names `file:line` (a line within the text) and says something.
fn check_problem(p: &Problem, label: &str, bound: usize) -> Result<(), String> {
    let Some(line) = p.line else {
        return Err(format!("problem without a line: {p}"));
    };
    if p.file != label || !(1..=bound).contains(&line) {
        return Err(format!(
            "problem at {}:{line} (text has {bound} lines): {p}",
            p.file
        ));
    }
    if !p.to_string().starts_with(&format!("{label}:{line}: ")) || p.message.trim().is_empty() {
        return Err(format!("problem rendered as `{p}`"));
    }
    Ok(())
}

/// Parses one case: no panic, bounded time, well-formed problems; every 16th case twice, which
/// must give the same result. Returns the time and the number of problems.
fn run_case(index: usize, label: &str, text: &str) -> Result<(Duration, usize), String> {
    let (result, time) = timed(|| catch_unwind(AssertUnwindSafe(|| manifest::parse(text, label))));
    let result = result.map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("panicked: {message}")
    })?;
    if time > CASE_LIMIT {
        return Err(format!("took {time:?} (limit {CASE_LIMIT:?})"));
    }
    check_result(label, text, &result)?;
    if index % 16 == 0 && manifest::parse(text, label) != result {
        return Err("a second parse gave another result".into());
    }
    Ok((time, result.err().map_or(0, |e| e.problems.len())))
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    let value = value.trim();
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name}={value} is not a number")))
}

/// Saves a failing case where it can be replayed from.
fn save_case(seed: u64, index: usize, label: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("cutlass-aot-fuzz-{seed:x}-{index}-{label}"));
    let _ = std::fs::write(&path, text);
    path
}

enum Progress {
    Started(usize, String, String),
    Failed(usize, String),
    Done {
        cases: usize,
        slowest: (Duration, usize),
        errors: usize,
        max_problems: usize,
    },
}

#[test]
fn fuzz_parse() {
    let seed = env_number("CUTLASS_AOT_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let cases = env_number("CUTLASS_AOT_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    let seeds = seed_texts();
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    // The cases run on a worker so that a hang fails the test (showing the case) instead of
    // blocking CI forever.
    std::thread::spawn(move || {
        let (mut slowest, mut errors, mut max_problems) = ((Duration::ZERO, 0), 0, 0);
        for index in 0..cases {
            let (label, text) = make_case(&mut case_rng(seed, index), &seeds);
            let label = format!("{index}_{label}");
            if tx
                .send(Progress::Started(index, label.clone(), text.clone()))
                .is_err()
            {
                return;
            }
            match run_case(index, &label, &text) {
                Ok((time, problems)) => {
                    slowest = slowest.max((time, index));
                    errors += usize::from(problems > 0);
                    max_problems = max_problems.max(problems);
                }
                Err(why) => {
                    let _ = tx.send(Progress::Failed(index, why));
                }
            }
        }
        let _ = tx.send(Progress::Done {
            cases,
            slowest,
            errors,
            max_problems,
        });
    });
    let mut current = (0, String::new(), String::new());
    let mut failures = Vec::new();
    loop {
        match rx.recv_timeout(HANG_LIMIT) {
            Ok(Progress::Started(index, label, text)) => current = (index, label, text),
            Ok(Progress::Failed(index, why)) => {
                let path = save_case(seed, index, &current.1, &current.2);
                failures.push(format!(
                    "case {index} (seed {seed:#x}, saved to {}): {why}",
                    path.display()
                ));
            }
            Ok(Progress::Done {
                cases,
                slowest,
                errors,
                max_problems,
            }) => {
                println!(
                    "fuzz_parse: {cases} cases, seed {seed:#x}, {:.1} s, {errors} rejected, slowest: case {} \
                     ({:?}), at most {max_problems} problems, {} failures",
                    start.elapsed().as_secs_f64(),
                    slowest.1,
                    slowest.0,
                    failures.len()
                );
                break;
            }
            Err(_) => {
                let (index, label, text) = &current;
                let path = save_case(seed, *index, label, text);
                panic!(
                    "case {index} (seed {seed:#x}) has not returned after {HANG_LIMIT:?}; saved to {}",
                    path.display()
                );
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `load` on corrupted files: invalid UTF-8, a UTF-16 byte order mark, NUL bytes ... Every
/// problem names the path and a line.
#[test]
fn fuzz_load_bytes() {
    let seed = env_number("CUTLASS_AOT_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let cases = (env_number("CUTLASS_AOT_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as usize) / 20).max(20);
    let seeds = seed_texts();
    let dir = std::env::temp_dir().join(format!("cutlass-aot-fuzz-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad: &[&[u8]] = &[
        b"\xff",
        b"\xfe\xff",
        b"\xc0\x80",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\x00",
        b"\x80",
        b"\xf4\x90\x80\x80",
    ];
    let mut failures = Vec::new();
    for index in 0..cases {
        let mut rng = Rng::new(!seed ^ index as u64);
        let (_, text) = make_case(&mut rng, &seeds);
        let mut bytes = text.into_bytes();
        for _ in 0..rng.below(3) {
            let at = rng.below(bytes.len() + 1);
            let insert = bad[rng.below(bad.len())];
            bytes.splice(at..at, insert.iter().copied());
        }
        let path = dir.join(format!("case_{index}.yaml"));
        std::fs::write(&path, &bytes).unwrap();
        let label = path.display().to_string();
        let result = catch_unwind(|| manifest::load(&path));
        let outcome = match &result {
            Err(_) => Err("panicked".to_string()),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(err)) => {
                // Line bound: at most one line per byte.
                err.problems
                    .iter()
                    .try_for_each(|p| check_problem(p, &label, bytes.len() + 1))
            }
        };
        if let Err(why) = outcome {
            let saved = save_case(seed, index, "load.yaml", &String::from_utf8_lossy(&bytes));
            failures.push(format!(
                "load case {index} (saved lossily to {}): {why}",
                saved.display()
            ));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    println!(
        "fuzz_load_bytes: {cases} files, seed {seed:#x}, {} failures",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn invalid_utf8_is_reported_at_its_line() {
    let dir = std::env::temp_dir().join(format!("cutlass-aot-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.yaml");
    std::fs::write(&path, b"version: 1\noperations:\n  - kind: g\xffmm\n").unwrap();
    let err = manifest::load(&path).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3: cannot read the manifest: byte 0xFF at column 12 is not valid UTF-8; a manifest is UTF-8 text",
            path.display()
        )
    );
}

/// Problems serde_yaml gives no position for still get a line.
#[test]
fn yaml_errors_without_a_position_get_a_line() {
    let two_documents = "version: 1\noperations: []\n---\nversion: 1\n";
    let err = manifest::parse(two_documents, "two.yaml").unwrap_err();
    assert_eq!(err.problems[0].line, Some(3), "{err}");
    // Aliases of aliases: past serde_yaml's repetition limit (no position), or past the reader's
    // own bound on what aliases expand to (checked before serde_yaml copies them).
    for (levels, message, line) in [
        (5, "invalid YAML: repetition limit exceeded", 3),
        (
            12,
            "the aliases up to here expand the manifest by more than 1000000 YAML nodes",
            7,
        ),
    ] {
        let mut bomb = String::from("version: 1\nx0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n");
        for k in 1..levels {
            let refs = vec![format!("*a{}", k - 1); 10].join(", ");
            bomb.push_str(&format!("x{k}: &a{k} [{refs}]\n"));
        }
        let err = manifest::parse(&bomb, "bomb.yaml").unwrap_err();
        assert_eq!(err.problems.len(), 1, "{err}");
        assert!(err.problems[0].message.starts_with(message), "{err}");
        assert_eq!(err.problems[0].line, Some(line), "{err}");
    }
    for text in ["", "# nothing\n", "operations:\n"] {
        let err = manifest::parse(text, "empty.yaml").unwrap_err();
        for p in &err.problems {
            assert!(p.line.is_some_and(|l| l >= 1), "{err}");
        }
    }
}

/// Regenerates fuzz case `CUTLASS_AOT_FUZZ_CASE` (of seed `CUTLASS_AOT_FUZZ_SEED`), saves it to
/// the temporary directory and parses it, printing the time and the first problems.
#[test]
#[ignore = "a debugging tool: replays the fuzz case named by CUTLASS_AOT_FUZZ_CASE"]
fn fuzz_replay() {
    let seed = env_number("CUTLASS_AOT_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let index = env_number("CUTLASS_AOT_FUZZ_CASE").expect("set CUTLASS_AOT_FUZZ_CASE") as usize;
    let (label, text) = make_case(&mut case_rng(seed, index), &seed_texts());
    let label = format!("{index}_{label}");
    let path = save_case(seed, index, &label, &text);
    let (result, time) = timed(|| manifest::parse(&text, &label));
    println!(
        "case {index}: {} bytes, saved to {}, parsed in {time:?}",
        text.len(),
        path.display()
    );
    match result {
        Ok(kernels) => println!("{} kernels", kernels.len()),
        Err(err) => {
            println!("{} problems", err.problems.len());
            for p in err.problems.iter().take(5) {
                println!("  {}", p.to_string().chars().take(300).collect::<String>());
            }
        }
    }
}
