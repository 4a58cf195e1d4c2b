//! The text behind a run's handles: `blobs/<run>/<handle>`, each written once, atomically, and
//! read in slices; the core's `Blobs` port over them. A run's blobs go when its record does.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use capabilities_core::handles::Handle;
use capabilities_core::ports::{BlobBytes, Blobs, BoxFuture, StoreError};

use super::{Store, create_private_dir, io_error, is_run_id, write_atomic};

/// A run's blobs outlive its record by at most this, so a run whose record is still on its way
/// to disk never loses them.
const ORPHAN_GRACE: Duration = Duration::from_secs(60 * 60);

impl Store {
    /// `blobs/<run>/<handle>`, for a run id and handle the core checked (checked again here:
    /// they become a path).
    fn blob_path(&self, run: &str, handle: &str) -> Result<PathBuf, StoreError> {
        match Handle::parse(handle) {
            Some(h) if h.run().as_str() == run => Ok(self.root.join("blobs").join(run).join(handle)),
            _ => Err(StoreError::Corrupt("handle".to_owned(), "not a handle of this run".to_owned())),
        }
    }

    pub fn put_blob_sync(&self, run: &str, handle: &str, text: &str) -> Result<(), StoreError> {
        let path = self.blob_path(run, handle)?;
        let dir = path.parent().unwrap_or(&self.root).to_owned();
        let mut warnings = Vec::new();
        create_private_dir(&dir, &mut warnings)
            .and_then(|()| write_atomic(&path, text.as_bytes()))
            .map_err(|e| StoreError::Io(format!("blobs/{run}/{handle}"), format!("{e:#}")))
    }

    pub fn read_blob_sync(
        &self,
        run: &str,
        handle: &str,
        offset: u64,
        len: u64,
    ) -> Result<Option<BlobBytes>, StoreError> {
        let path = self.blob_path(run, handle)?;
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(io_error(&path, err)),
        };
        let total = file.metadata().map_err(|e| io_error(&path, e))?.len();
        let start = offset.min(total);
        let want = len.min(total - start);
        let mut bytes = Vec::with_capacity(usize::try_from(want).unwrap_or(0));
        file.seek(SeekFrom::Start(start)).map_err(|e| io_error(&path, e))?;
        file.take(want).read_to_end(&mut bytes).map_err(|e| io_error(&path, e))?;
        Ok(Some(BlobBytes { bytes, total }))
    }

    /// Removes the blobs of runs whose record is gone (pruned, or never written), once they are
    /// older than [`ORPHAN_GRACE`].
    pub fn prune_blobs(&self) {
        let Some(cutoff) = SystemTime::now().checked_sub(ORPHAN_GRACE) else { return };
        let Ok(entries) = fs::read_dir(self.root.join("blobs")) else { return };
        for entry in entries.flatten() {
            let Some(run) = entry.file_name().to_str().map(str::to_owned) else { continue };
            let old = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < cutoff);
            if is_run_id(&run) && old && !self.root.join("runs").join(format!("{run}.json")).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

impl Blobs for Store {
    fn put<'a>(
        &'a self,
        run: &'a str,
        handle: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.put_blob_sync(run, handle, text) })
    }

    fn read<'a>(
        &'a self,
        run: &'a str,
        handle: &'a str,
        offset: u64,
        len: u64,
    ) -> BoxFuture<'a, Result<Option<BlobBytes>, StoreError>> {
        Box::pin(async move { self.read_blob_sync(run, handle, offset, len) })
    }
}

#[cfg(test)]
mod tests {
    use capabilities_core::record::RunId;

    use super::*;

    #[test]
    fn blobs_are_written_whole_read_in_slices_and_go_with_their_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let run = RunId::from_bytes([3; 8]);
        let handle = Handle::new(&run, [9; 16]);
        store.put_blob_sync(&run, handle.as_str(), "hello world").unwrap();
        let got = store.read_blob_sync(&run, handle.as_str(), 6, 100).unwrap().unwrap();
        assert_eq!((got.bytes.as_slice(), got.total), (&b"world"[..], 11));
        let past = store.read_blob_sync(&run, handle.as_str(), 50, 10).unwrap().unwrap();
        assert_eq!((past.bytes.len(), past.total), (0, 11));
        // A handle of another run never becomes a path under this one.
        let other = Handle::new(&RunId::from_bytes([4; 8]), [9; 16]);
        assert!(store.read_blob_sync(&run, other.as_str(), 0, 1).is_err());
        assert!(store.read_blob_sync(&run, "../../hub.json", 0, 1).is_err());
        let mode = fs::metadata(dir.path().join("blobs").join(run.as_str()).join(handle.as_str())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o777, 0o600);

        // No record and old enough: pruned with its directory.
        let blob_dir = dir.path().join("blobs").join(run.as_str());
        let old = SystemTime::now() - Duration::from_secs(2 * 60 * 60);
        File::open(&blob_dir).unwrap().set_modified(old).unwrap();
        store.prune_blobs();
        assert!(!blob_dir.exists());
        assert_eq!(store.read_blob_sync(&run, handle.as_str(), 0, 1).unwrap(), None);
    }
}
