//! The keychain's stamp: a small file in the hub's home that every write to the keychain made
//! through [`super::SecretStore`] changes, in whichever process made it (`hub auth`,
//! `hub remove`, a refreshed OAuth token). A serving hub keeps the values it read from the
//! keychain with the stamp it read before them, and reads them again once the stamp differs;
//! reading the stamp is a small file read, where a keychain lookup is a D-Bus round trip.
//!
//! A value changed in the keychain by another program (`secret-tool`, Seahorse) leaves the
//! stamp as it was: a serving hub sees it once the hub's configuration changes or it restarts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::store::Store;

/// The stamp's file name in the hub's home.
pub const FILE_NAME: &str = "keychain.stamp";

pub fn path(store: &Store) -> PathBuf {
    store.root().join(FILE_NAME)
}

/// The stamp as it is now; `None` when there is none or it cannot be read, and then nothing
/// read from the keychain is kept. Only a write makes one: a run never writes to the hub's
/// home, so a keychain filled before stamps existed is read on every call until its next write.
pub fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().filter(|stamp| !stamp.is_empty())
}

/// Changes the stamp after a write to the keychain: to a value no earlier write gave it (this
/// process, the time in nanoseconds and a count). Written whole under a new name and moved
/// into place, so a reader sees the old stamp or the new one. When it cannot be written, the
/// stamp is removed, and a hub that cannot read it keeps nothing.
pub fn change(path: &Path) {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let stamp = format!("{}-{nanos}-{count}\n", std::process::id());
    let staged = path.with_extension(format!("stamp.{}.{count}", std::process::id()));
    let written = std::fs::write(&staged, stamp).and_then(|()| std::fs::rename(&staged, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&staged);
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_gives_a_new_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        assert_eq!(read(&path), None, "no write yet, no stamp");
        change(&path);
        let first = read(&path).expect("made by a write");
        assert_eq!(read(&path).as_ref(), Some(&first), "read again, the same");
        let mut seen = vec![first];
        for _ in 0..100 {
            change(&path);
            let stamp = read(&path).unwrap();
            assert!(!seen.contains(&stamp), "{stamp} again");
            seen.push(stamp);
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [FILE_NAME], "nothing staged is left");
        // A stamp that cannot be written is removed, and one that cannot be read keeps nothing.
        std::fs::write(&path, "").unwrap();
        assert_eq!(read(&path), None);
    }
}
