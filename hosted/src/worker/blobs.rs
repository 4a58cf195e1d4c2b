//! The text behind a tenant's handles, in its Durable Object's SQLite: one row per part of at
//! most [`PART_BYTES`] (a row holds at most 2 MB), each part whole characters, synced before
//! `put` returns; the core's `Blobs` port. Every tenant has its own object, so a handle never
//! leaves its tenant. Runs are not pruned here yet, so handles expire on their own: a put drops
//! the blobs older than [`RETENTION_MS`] (the 7 days runs are kept locally), and a read does not
//! see them.

use capabilities_core::ports::{BlobBytes, Blobs, BoxFuture, Clock, StoreError};
use worker::SqlStorageValue;

use super::platform::WorkerClock;
// The store's row types, reused: each row type costs the bundle a deserializer.
use super::store::{Count, Record, SqlStore};

/// The most text one row holds.
const PART_BYTES: usize = 1024 * 1024;
/// How long a handle lasts.
const RETENTION_MS: u64 = 7 * 24 * 60 * 60 * 1000;

fn int(n: u64) -> SqlStorageValue {
    SqlStorageValue::from(i64::try_from(n).unwrap_or(i64::MAX))
}

fn text(s: &str) -> SqlStorageValue {
    SqlStorageValue::from(s)
}

/// `text` cut into parts of at most `PART_BYTES`, on character boundaries.
fn parts(text: &str) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = text.floor_char_boundary((start + PART_BYTES).min(text.len()));
        let end = if end == start { text.ceil_char_boundary(start + 1) } else { end };
        parts.push((start, &text[start..end]));
        start = end;
    }
    parts
}

impl Blobs for SqlStore {
    fn put<'a>(
        &'a self,
        run: &'a str,
        handle: &'a str,
        body: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let what = format!("blobs/{run}/{handle}");
            let now = WorkerClock.now_ms();
            self.exec(
                &what,
                "DELETE FROM blobs WHERE created_ms < ?",
                vec![int(now.saturating_sub(RETENTION_MS))],
            )?;
            let total = body.len() as u64;
            let mut pieces = parts(body);
            if pieces.is_empty() {
                pieces.push((0, ""));
            }
            for (i, (start, data)) in pieces.into_iter().enumerate() {
                self.exec(
                    &what,
                    "INSERT INTO blobs (run_id, handle, part, start, len, total, created_ms, data) \
                     VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    vec![
                        text(run),
                        text(handle),
                        int(i as u64),
                        int(start as u64),
                        int(data.len() as u64),
                        int(total),
                        int(now),
                        text(data),
                    ],
                )?;
            }
            self.sync(&what).await
        })
    }

    fn read<'a>(
        &'a self,
        run: &'a str,
        handle: &'a str,
        offset: u64,
        len: u64,
    ) -> BoxFuture<'a, Result<Option<BlobBytes>, StoreError>> {
        Box::pin(async move {
            let what = format!("blobs/{run}/{handle}");
            let since = int(WorkerClock.now_ms().saturating_sub(RETENTION_MS));
            let Some(total) = self
                .rows::<Count>(
                    &what,
                    "SELECT total AS n FROM blobs WHERE run_id = ? AND handle = ? AND part = 0 AND created_ms >= ?",
                    vec![text(run), text(handle), since],
                )?
                .pop()
            else {
                return Ok(None);
            };
            let total = u64::try_from(total.n).unwrap_or(0);
            let start = offset.min(total);
            let end = start.saturating_add(len).min(total);
            if start >= end {
                return Ok(Some(BlobBytes { bytes: Vec::new(), total }));
            }
            // The parts overlapping [start, end), in order: contiguous from the first one's start.
            macro_rules! overlapping {
                ($select:literal, $order:literal) => {
                    concat!(
                        $select,
                        " FROM blobs WHERE run_id = ? AND handle = ? AND start < ? AND start + len > ?",
                        $order
                    )
                };
            }
            let bindings = || vec![text(run), text(handle), int(end), int(start)];
            let first = self.rows::<Count>(&what, overlapping!("SELECT MIN(start) AS n", ""), bindings())?;
            let rows = self.rows::<Record>(
                &what,
                overlapping!("SELECT data AS record", " ORDER BY part"),
                bindings(),
            )?;
            let from = first.first().map_or(start, |c| u64::try_from(c.n).unwrap_or(0));
            let mut joined = Vec::with_capacity(usize::try_from(end - start).unwrap_or(0));
            for row in &rows {
                joined.extend_from_slice(row.record.as_bytes());
            }
            let a = usize::try_from(start.saturating_sub(from)).unwrap_or(0).min(joined.len());
            let b = usize::try_from(end.saturating_sub(from)).unwrap_or(0).min(joined.len());
            let bytes = joined[a..b].to_vec();
            Ok(Some(BlobBytes { bytes, total }))
        })
    }
}
