//! Lock files: `locks/<record>.lock`, one per record, taken with the OS's file locks, so several
//! hub processes share the store without a daemon.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

use capabilities_core::ports::StoreError;

use super::{Store, io_error};

impl Store {
    /// Takes the lock file of one record; released when the guard drops.
    pub fn lock(&self, record: &str) -> Result<RecordLock, StoreError> {
        self.lock_file(record, true)
    }

    fn lock_file(&self, record: &str, exclusive: bool) -> Result<RecordLock, StoreError> {
        let name: String = record
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect();
        let path = self.root.join("locks").join(format!("{name}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        if exclusive { file.lock() } else { file.lock_shared() }.map_err(|e| io_error(&path, e))?;
        Ok(RecordLock { _file: file })
    }

    /// The lock a write left to the writer threads holds until its record is in place.
    /// Taken after the record's own lock, never before it.
    pub(super) fn written_lock(&self, id: &str, exclusive: bool) -> Result<RecordLock, StoreError> {
        self.lock_file(&format!("{id}.written"), exclusive)
    }
}

/// Held while a record is being written; dropping it releases the lock file.
#[derive(Debug)]
pub struct RecordLock {
    _file: File,
}
