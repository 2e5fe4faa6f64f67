//! How well conv dispatch does on problems its table has not measured, offline: given a conv
//! dispatch table (every kernel and split-K timed on every problem, as `conv_bench
//! --dispatch-out` writes it), each problem in turn is left out of the table and dispatched by the
//! model calibrated on the rest (`Table::calibrated`) and by the bare heuristic; the measured time
//! of what each chose is compared with the problem's fastest. No GPU needed.
//!
//! ```text
//! cargo run --release --features conv --example conv_dispatch_study -- \
//!     bench/dispatch/conv_nvidia_h100.tsv [--sms 132] [--losses 12]
//! ```
//! Prints, per kind and element type, the geometric mean of fastest ÷ chosen, and the problems
//! where each choice loses most.

use std::collections::BTreeMap;
use std::process::ExitCode;

use cutlass_aot::conv::dispatch::{heuristic, Entry, Table};
use cutlass_aot::conv::{Conv2dProblem, ConvGeometry, ConvMode, ConvOperands, TensorOperand};
use cutlass_aot::kernels::REGISTRY;
use cutlass_aot::model::{ConvKind, DType};
use cutlass_aot::KernelInfo;

/// One measured problem: its first row (kind, types, extents, geometry) and every way's time.
struct Measured {
    row: Entry,
    times: BTreeMap<(&'static str, usize), f64>,
}

impl Measured {
    fn problem(&self) -> Conv2dProblem {
        let mut p = self.row.problem();
        p.compute_capability = Some(90);
        p
    }

    fn fastest(&self) -> ((&'static str, usize), f64) {
        self.times
            .iter()
            .map(|(k, &us)| (*k, us))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("a measured problem has a time")
    }
}

fn kernel(name: &str) -> Option<&'static KernelInfo> {
    REGISTRY
        .all()
        .iter()
        .copied()
        .find(|k| k.rust_name == name || k.name == name)
}

fn read(path: &str) -> Result<Vec<Measured>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut problems: Vec<Measured> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let bad = |what: &str| format!("{path}:{}: {what}", i + 1);
        if f.len() != 20 {
            return Err(bad("expected 20 tab-separated fields"));
        }
        let kind = ConvKind::from_manifest_name(f[0]).ok_or_else(|| bad("kind"))?;
        let dtype = |s: &str| DType::from_manifest_name(s).ok_or_else(|| bad("element type"));
        let elements = (dtype(f[1])?, dtype(f[2])?, dtype(f[3])?);
        let num = |j: usize| {
            f[j].parse::<usize>()
                .map_err(|_| bad(&format!("field {}", j + 1)))
        };
        let Some(info) = kernel(f[17]) else {
            continue; // a kernel this build lacks
        };
        let split = num(18)?;
        let us: f64 = f[19].parse().map_err(|_| bad("us"))?;
        let mut geometry = [0usize; 13];
        for (j, g) in geometry.iter_mut().enumerate() {
            *g = num(4 + j)?;
        }
        let row = Entry::row(kind, elements, geometry, info, split, us);
        let problem = row.problem();
        let at = match problems.iter().position(|m| m.row.measures(&problem)) {
            Some(at) => at,
            None => {
                problems.push(Measured {
                    row,
                    times: BTreeMap::new(),
                });
                problems.len() - 1
            }
        };
        let slot = problems[at].times.entry((info.rust_name, split)).or_insert(us);
        *slot = slot.min(us);
    }
    Ok(problems)
}

/// Packed operands of `problem` at aligned fake addresses (host-side choices only).
fn operands(problem: &Conv2dProblem) -> ConvOperands {
    let dims = problem.tensor_dims().expect("a measured problem has tensors");
    let tensor = |i: usize| TensorOperand {
        dims: dims[i],
        len: dims[i].iter().product(),
        address: 0x7f00_0000_0000 + (i as u64) * 0x10_0000_0000,
    };
    ConvOperands {
        a: tensor(0),
        b: tensor(1),
        c: None,
        d: tensor(2),
        geometry: ConvGeometry {
            pad: problem.pad,
            stride: problem.stride,
            dilation: problem.dilation,
            mode: ConvMode::CrossCorrelation,
        },
        alpha: 1.0,
        beta: 0.0,
        split_k_slices: 1,
        activation_arg: 0.0,
    }
}

/// The table of every problem but `skip`: all their rows, as `conv_bench --dispatch-out` writes.
fn table_without(problems: &[Measured], skip: usize) -> Table {
    let entries: Vec<Entry> = problems
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != skip)
        .flat_map(|(_, m)| {
            m.times.iter().map(|(&(name, split), &us)| Entry {
                kernel: kernel(name).expect("read() kept known kernels"),
                split_k: split,
                us,
                ..m.row
            })
        })
        .collect();
    Table::new("study", "", Box::leak(entries.into_boxed_slice()))
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len().max(1) as f64).exp()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: conv_dispatch_study MATRIX.tsv [--sms 132]");
        return ExitCode::FAILURE;
    };
    let sms = args
        .iter()
        .position(|a| a == "--sms")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(132);
    let verbose_count = args
        .iter()
        .position(|a| a == "--losses")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let problems = match read(path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    // Per (kind, types): fastest ÷ chosen for the calibrated model and the bare heuristic.
    type Group = (Vec<f64>, Vec<f64>);
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut losses: Vec<(f64, String)> = Vec::new();
    let mut heuristic_losses: Vec<(f64, String)> = Vec::new();
    for (i, m) in problems.iter().enumerate() {
        let mut problem = m.problem();
        let ops = operands(&problem);
        problem.addresses = Some([ops.a.address, ops.b.address, ops.d.address, ops.d.address]);
        let ((fast_name, fast_split), best) = m.fastest();
        let group = groups
            .entry(format!("{} {}", m.row.signature.kind, m.row.signature.elements.0))
            .or_default();
        let table = table_without(&problems, i);
        let record = |picked: Option<(&'static str, usize)>,
                      ratios: &mut Vec<f64>,
                      losses: &mut Vec<(f64, String)>| {
            let Some(((n, s), us)) = picked.and_then(|(n, s)| Some(((n, s), *m.times.get(&(n, s))?))) else {
                return;
            };
            ratios.push(best / us);
            losses.push((
                best / us,
                format!(
                    "{} {:?} {:?} stride {:?}: {n} split {s} {us:.1} us, fastest {fast_name} split {fast_split} {best:.1} us",
                    m.row.signature.kind, m.row.activation, m.row.filter, m.row.stride
                ),
            ));
        };
        let calibrated = table
            .calibrated(&REGISTRY, &problem, &ops, sms)
            .map(|(k, s, _)| (k.rust_name, s));
        record(calibrated, &mut group.0, &mut losses);
        let bare = heuristic(&REGISTRY, &problem, sms).map(|(k, s)| (k.rust_name, s));
        record(bare, &mut group.1, &mut heuristic_losses);
    }
    let all: Vec<f64> = groups.values().flat_map(|g| g.0.iter().copied()).collect();
    let bare: Vec<f64> = groups.values().flat_map(|g| g.1.iter().copied()).collect();
    println!(
        "fastest ÷ chosen, each problem left out of the table: calibrated model {:.3} over {} problems, bare heuristic {:.3} over {}",
        geomean(&all),
        all.len(),
        geomean(&bare),
        bare.len()
    );
    for (name, (calibrated, bare)) in &groups {
        println!(
            "  {name:<12} calibrated {:.3} ({} problems)  heuristic {:.3} ({})",
            geomean(calibrated),
            calibrated.len(),
            geomean(bare),
            bare.len()
        );
    }
    for (label, losses) in [
        ("calibrated model", &mut losses),
        ("heuristic", &mut heuristic_losses),
    ] {
        losses.sort_by(|a, b| a.0.total_cmp(&b.0));
        println!("largest losses of the {label}:");
        for (ratio, what) in losses.iter().take(verbose_count) {
            println!("  {ratio:.2}  {what}");
        }
    }
    ExitCode::SUCCESS
}
