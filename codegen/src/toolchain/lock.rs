//! A cross-process exclusive lock: a file created with `create_new`.
//!
//! The holder refreshes the file's modification time ([`LockFile::touch`]) while it works, so a
//! lock whose file has not been touched for [`STALE_AFTER`] belongs to a dead process and is
//! taken over. A waiter gives up after [`MAX_WAIT`].

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// A lock file untouched for this long is considered abandoned.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(10 * 60);
/// How often the holder should [`LockFile::touch`] it (well under [`STALE_AFTER`]).
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(20);
/// How long a waiter waits for a live holder before giving up.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(60 * 60);

/// A held lock; released (the file removed) on drop.
#[derive(Debug)]
pub(crate) struct LockFile {
    path: PathBuf,
    token: String,
}

impl LockFile {
    /// Takes the lock at `path`, waiting while another live process holds it.
    pub(crate) fn acquire(path: &Path) -> Result<LockFile, String> {
        let start = Instant::now();
        let token = format!(
            "pid {} at {:?}\n",
            std::process::id(),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
        );
        let mut announced = false;
        loop {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut f) => {
                    f.write_all(token.as_bytes())
                        .map_err(|e| format!("cannot write lock file {}: {e}", path.display()))?;
                    return Ok(LockFile {
                        path: path.to_path_buf(),
                        token,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("cannot create lock file {}: {e}", path.display())),
            }
            let age = fs::metadata(path)
                .and_then(|m| m.modified())
                .map(|t| t.elapsed().unwrap_or_default());
            match age {
                // Released between our attempt and now: try again at once.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Ok(age) if age > STALE_AFTER => {
                    eprintln!(
                        "cutlass-aot: taking over lock {} (untouched for {} s: its holder died)",
                        path.display(),
                        age.as_secs()
                    );
                    let _ = fs::remove_file(path);
                    continue;
                }
                _ => {}
            }
            if start.elapsed() > MAX_WAIT {
                return Err(format!(
                    "gave up after waiting {} min for lock {} held by another build (remove the \
                     file if no other build is running)",
                    MAX_WAIT.as_secs() / 60,
                    path.display()
                ));
            }
            if !announced {
                eprintln!(
                    "cutlass-aot: waiting for another build holding {}",
                    path.display()
                );
                announced = true;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Marks the lock as still in use.
    pub(crate) fn touch(&self) {
        if let Ok(f) = OpenOptions::new().write(true).open(&self.path) {
            let _ = f.set_modified(SystemTime::now());
        }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Remove only our own lock: if it was taken over as stale, the file is someone else's now.
        if fs::read_to_string(&self.path).is_ok_and(|t| t == self.token) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("cutlass-aot-lock-{name}-{}.lock", std::process::id()));
        let _ = fs::remove_file(&p);
        p
    }

    #[test]
    fn excludes_then_releases() {
        let path = temp("excl");
        let held = LockFile::acquire(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p2 = path.clone();
        let waiter = std::thread::spawn(move || {
            let l = LockFile::acquire(&p2).unwrap();
            tx.send(()).unwrap();
            drop(l);
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(800)).is_err(),
            "lock was not exclusive"
        );
        held.touch();
        drop(held);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("waiter never got the lock");
        waiter.join().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn takes_over_stale_lock() {
        let path = temp("stale");
        fs::write(&path, "pid 1\n").unwrap();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_modified(SystemTime::now() - STALE_AFTER - Duration::from_secs(5))
            .unwrap();
        drop(f);
        let start = Instant::now();
        let l = LockFile::acquire(&path).unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
        drop(l);
        assert!(!path.exists());
    }
}
