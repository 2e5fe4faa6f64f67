//! Table files (`bench/dispatch/*.tsv`, `select_sweep --out`) read at run time: the examples'
//! reader of the format the build embeds (`cutlass_aot_build::table` reads it at build time).

use cutlass_aot::model::{DType, Layout};
use cutlass_aot::select::{Key, Raster, Row, Tuning};

/// The rows of table files measured on `device` (others skipped; every file's with `None`), kept
/// for the program's life.
pub fn read_rows(files: &[String], device: Option<&str>) -> Result<Vec<&'static Row>, String> {
    let mut rows = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
        if let Some(other) = text.lines().find_map(|l| l.strip_prefix("# device: ")) {
            if device.is_some_and(|device| other.trim() != device) {
                continue;
            }
        }
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.starts_with('#')) {
            let row = parse_row(line).map_err(|e| format!("{file}:{}: {e}", n + 1))?;
            rows.extend(row.map(|r| &*Box::leak(Box::new(r))));
        }
    }
    Ok(rows)
}

/// A line of a table file; `None` for a kernel this build lacks.
pub fn parse_row(line: &str) -> Result<Option<Row>, String> {
    let f: Vec<&str> = line.split('\t').collect();
    let [op, a, b, c, layouts, dims, kernel, split, raster, swizzle, us] = f[..] else {
        return Err(format!("{} columns, not 11", f.len()));
    };
    // The registry's kernels, or the crate's skinny GEMMs (kept apart from it).
    let skinny = || {
        cutlass_aot::dispatch::skinny::KERNELS
            .iter()
            .map(|(k, ..)| *k)
            .find(|k| k.name == kernel)
    };
    let Some(kernel) = cutlass_aot::kernels::REGISTRY.by_name(kernel).or_else(skinny) else {
        return Ok(None);
    };
    let dtype = |s: &str| DType::from_manifest_name(s).ok_or(format!("element type {s}"));
    let layout = |c: char| match c {
        't' => Ok(Layout::Row),
        'n' => Ok(Layout::Column),
        _ => Err(format!("layout {c}")),
    };
    let layouts = match layouts {
        "-" => None,
        l => {
            let v = l.chars().map(layout).collect::<Result<Vec<_>, _>>()?;
            Some(<[Layout; 3]>::try_from(v).map_err(|_| format!("layouts {l}"))?)
        }
    };
    let dims = dims
        .split(',')
        .map(|d| d.parse::<usize>().map_err(|e| format!("extent {d}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let number = |s: &str| s.parse::<f64>().map_err(|e| format!("{s}: {e}"));
    let tuning = Tuning {
        raster: match raster {
            "m" => Raster::AlongM,
            "n" => Raster::AlongN,
            _ => Raster::Heuristic,
        },
        max_swizzle: number(swizzle)? as u32,
    };
    let op: &'static str = Box::leak(op.to_string().into_boxed_str());
    let key = Key::new(op, [dtype(a)?, dtype(b)?, dtype(c)?], layouts, &dims);
    Ok(Some(Row::new(
        key,
        kernel,
        number(split)? as usize,
        tuning,
        number(us)?,
    )))
}
