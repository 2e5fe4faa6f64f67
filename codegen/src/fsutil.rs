//! File helpers for generated outputs.

use std::fs;
use std::io;
use std::path::Path;

/// Writes `contents` to `path` unless it already holds exactly that, so that cargo and nvcc see an
/// unchanged modification time and rebuild nothing. Returns whether the file was written.
pub fn write_if_changed(path: &Path, contents: &[u8]) -> io::Result<bool> {
    if let Ok(existing) = fs::read(path) {
        if existing == contents {
            return Ok(false);
        }
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    // Write a sibling and rename, so a reader never sees a half-written file.
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&temp, contents)?;
    fs::rename(&temp, path)?;
    Ok(true)
}

/// Copies `from` to `to` only when the contents differ.
pub fn copy_if_changed(from: &Path, to: &Path) -> io::Result<bool> {
    write_if_changed(to, &fs::read(from)?)
}
