//! How well the selection engine does on problems its table has not measured, offline: every
//! problem of an embedded table is left out in turn (its rows hidden from the calibration) and the
//! engine chooses among the ways the table timed on it; the chosen way's time is set beside the
//! problem's fastest. No GPU needed (`cutlass_aot::select::study`).
//!
//! ```text
//! cargo run --release --all-features --example select_study -- [--device "NVIDIA H100 80GB HBM3"] [--losses 12] [--op conv2d] [--held-out SWEEP.tsv]...
//! ```
//! `--held-out` judges the problems of table files no embedded table holds (a fresh GPU sweep, as
//! `select_sweep --out` writes it) against the embedded table of their device, as it is.
//! Prints, per operation and element type, the geometric mean of fastest ÷ chosen and the share of
//! problems within 5 % of their fastest, for the calibrated engine and the bare model, and the
//! problems where the engine loses most.

use std::collections::BTreeMap;
use std::process::ExitCode;

use cutlass_aot::select::study::{held_out, leave_one_out, Outcome, Summary};
use cutlass_aot::select::{Context, Key};

#[path = "common/table_file.rs"]
mod table_file;
use table_file::read_rows;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let losses: usize = value("--losses").and_then(|s| s.parse().ok()).unwrap_or(12);
    let held_out_files: Vec<String> = args
        .iter()
        .zip(args.iter().skip(1))
        .filter(|(flag, _)| *flag == "--held-out")
        .map(|(_, file)| file.clone())
        .collect();
    let device = value("--device");
    // Only operations whose name starts with this (`gemm`, `conv2d`, `conv2d_wgrad`).
    let op = value("--op").unwrap_or_default();
    let tables: Vec<_> = cutlass_aot::kernels::TABLES
        .iter()
        .filter(|t| device.as_deref().map_or(true, |d| t.device == d))
        .collect();
    if tables.is_empty() {
        eprintln!("no embedded table matches; the build embeds every bench/dispatch/*.tsv");
        return ExitCode::FAILURE;
    }
    for table in tables {
        // As dispatch uses it where it is the device's table: with the rows it lacks added (on
        // compute capability 9.0: every embedded table measured a Hopper part).
        let table = cutlass_aot::select::device_table(cutlass_aot::kernels::TABLES, table.device, 90)
            .filter(|chosen| std::ptr::eq(chosen.rows, table.rows))
            .unwrap_or(table);
        println!(
            "{} (measured {}), {} rows{}",
            table.device,
            table.date,
            table.rows.len(),
            match table.supplement().len() {
                0 => String::new(),
                n => format!(" and {n} of kernels it lacks from other tables"),
            }
        );
        let context = Context {
            table,
            multiprocessors: sms_of(table.device),
            work_of: &cutlass_aot::operations::row_work,
        };
        let outcomes = if held_out_files.is_empty() {
            leave_one_out(
                &context,
                |o| o.starts_with(op.as_str()),
                cutlass_aot::operations::problem_of_key,
            )
        } else {
            let rows = match read_rows(&held_out_files, Some(table.device)) {
                Ok(rows) => rows,
                Err(message) => {
                    eprintln!("{message}");
                    return ExitCode::FAILURE;
                }
            };
            let kept = rows.into_iter().filter(|r| r.key.op.starts_with(op.as_str()));
            held_out(&context, kept, cutlass_aot::operations::problem_of_key)
        };
        report(&outcomes, losses);
    }
    ExitCode::SUCCESS
}

/// Multiprocessors of the table's device (the H100 SXM's 132 unless its name says otherwise).
fn sms_of(device: &str) -> u32 {
    if device.contains("PCIe") {
        114
    } else if device.contains("A100") {
        108
    } else {
        132
    }
}

fn label(key: &Key) -> String {
    format!("{} {}", key.op, key.elements[0])
}

fn report(outcomes: &[Outcome], losses: usize) {
    let mut groups: BTreeMap<String, Vec<&Outcome>> = BTreeMap::new();
    for o in outcomes {
        groups.entry(label(&o.keys[0])).or_default().push(o);
    }
    println!(
        "  {:<22} {:>8} {:>22} {:>22}",
        "operation", "problems", "calibrated (5 %)", "bare model (5 %)"
    );
    for (name, group) in &groups {
        let calibrated = Summary::of(group.iter().map(|o| o.calibrated_ratio()));
        let bare = Summary::of(group.iter().map(|o| o.bare_ratio()));
        println!(
            "  {name:<22} {:>8} {:>14.3} ({:>5.1} %) {:>14.3} ({:>5.1} %)",
            group.len(),
            calibrated.geomean,
            calibrated.within_5_percent * 100.0,
            bare.geomean,
            bare.within_5_percent * 100.0
        );
    }
    let all = Summary::of(outcomes.iter().map(|o| o.calibrated_ratio()));
    println!(
        "  all: {} problems, calibrated {:.3} of the fastest, {:.1} % within 5 %, worst {:.3}",
        all.problems,
        all.geomean,
        all.within_5_percent * 100.0,
        all.worst
    );
    let mut sorted: Vec<&Outcome> = outcomes.iter().collect();
    sorted.sort_by(|a, b| a.calibrated_ratio().total_cmp(&b.calibrated_ratio()));
    for o in sorted.iter().take(losses) {
        let (name, split, us) = o.calibrated;
        println!(
            "  {:.3} {} {:?}: chose {name} split {split} ({us:.1} us), fastest {} split {} ({:.1} us)",
            o.calibrated_ratio(),
            o.keys[0].op,
            &o.keys[0].dims[..],
            o.fastest.0,
            o.fastest.1,
            o.fastest_us
        );
    }
}
