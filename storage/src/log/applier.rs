//! The applier: writes what the writer acknowledged into sled (segments,
//! then ids, each an atomic batch) and runs the checkpoints that retire
//! write-ahead files; readers of the trees wait for it to reach the head.

use std::path::Path;
use std::time::Duration;

use crossbeam_channel::Receiver;
use engram_events::{EventId, Seq};

use super::shared::Shared;
use crate::durability::Syncer;
use crate::error::LogError;
use crate::id_index;
use crate::{segment, wal};

/// Most records the applier writes to sled in one pair of batches.
pub(super) const APPLY_RECORDS: usize = 1024;

/// How long the applier gathers records before writing them to sled,
/// unless a reader is waiting. Measured with one durable appender: applying
/// each record as it came put sled's IO-buffer writes between consecutive
/// write-ahead fsyncs and halved the rate.
pub(super) const APPLY_DELAY: Duration = Duration::from_millis(10);

/// The applier thread: applies the writer's records to sled, all those
/// that come within [`APPLY_DELAY`] of the first in one pair of batches —
/// sled's atomic batch costs two IO-buffer rolls (`pwrite` +
/// `sync_file_range`) whatever its size, and here they are paid off the
/// appenders' path, rarely, so their I/O does not queue up with the
/// write-ahead fsyncs — at once when a reader is waiting (`hurry`); and
/// runs the checkpoints
/// (sled flushed and fsynced, then the write-ahead files up to a
/// generation deleted). A failed checkpoint leaves the files for the next
/// one, or the next open; a failed apply stops appends (the files keep
/// every event).
pub(super) fn applier(
    shared: &Shared,
    mut syncer: Syncer,
    wal_dir: &Path,
    rx: &Receiver<ApplyMsg>,
    hurry: &Receiver<()>,
) -> Syncer {
    // A reader is waiting for what is queued: apply it without delay.
    let mut hurried = false;
    loop {
        let first = crossbeam_channel::select! {
            recv(rx) -> msg => match msg {
                Ok(msg) => msg,
                Err(_) => break,
            },
            recv(hurry) -> _ => {
                hurried = true;
                continue;
            }
        };
        let mut records = Vec::new();
        let mut checkpoint = None;
        match first {
            ApplyMsg::Record(r) => records.push(r),
            ApplyMsg::Checkpoint(generation) => checkpoint = Some(generation),
        }
        // Gather for APPLY_DELAY — asleep, not woken by each record: a
        // wake-up per record costs the appender on two cores — unless a
        // reader (or the writer closing) hurries it.
        if checkpoint.is_none() && !hurried {
            crossbeam_channel::select! {
                recv(hurry) -> _ => {}
                default(APPLY_DELAY) => {}
            }
        }
        // Then everything queued, up to a checkpoint (which must follow
        // the records before it, and no later one).
        while checkpoint.is_none() && records.len() < APPLY_RECORDS {
            match rx.try_recv() {
                Ok(ApplyMsg::Record(r)) => records.push(r),
                Ok(ApplyMsg::Checkpoint(generation)) => checkpoint = Some(generation),
                Err(_) => break,
            }
        }
        hurried = false;
        if shared.applied.failure().is_some() {
            continue;
        }
        if let Some(last) = records.last().map(|r| r.last) {
            let segments = records.iter().flat_map(|r| r.segments.iter());
            let index = records.iter().flat_map(|r| r.index.iter().copied());
            match write_to_sled(&shared.log, &shared.ids, segments, index) {
                Ok(()) => {
                    let mut pending = shared.pending.lock().unwrap_or_else(|p| p.into_inner());
                    for (id, _) in records.iter().flat_map(|r| r.index.iter()) {
                        pending.remove(id);
                    }
                    drop(pending);
                    shared.applied.advance(last);
                }
                Err(e) => {
                    let why = format!("applying appended events to sled failed: {e}; reopen the log");
                    tracing::error!("{why}");
                    shared.applied.fail(why);
                    continue;
                }
            }
        }
        if let Some(generation) = checkpoint {
            if let Err(e) =
                make_sled_durable(&shared.db, &mut syncer).and_then(|_| wal::remove_up_to(wal_dir, generation))
            {
                tracing::error!("checkpoint failed (the write-ahead files stay until one succeeds): {e}");
            }
        }
    }
    syncer
}

/// A group commit, written to the write-ahead file, for sled.
pub(super) struct Record {
    pub(super) segments: Vec<(Seq, Vec<u8>)>,
    pub(super) index: Vec<(EventId, Seq)>,
    pub(super) last: Seq,
}

/// What the writer hands the applier, in order.
pub(super) enum ApplyMsg {
    /// Apply a record to sled.
    Record(Record),
    /// Make sled durable, then delete the write-ahead files up to this
    /// generation (every record in them came before).
    Checkpoint(u64),
}

/// Writes segments, then their ids, into sled as two atomic batches.
/// sled recovers its log as batches, so after a crash the index can only
/// lag the segments, never lead them (`reindex_tail` repairs the lag), and
/// no segment is ever half there. (sled's recovery of plain inserts, cut by
/// a crash among its concurrently written buffers, can leave its page table
/// with a hole it then panics on; its batches are recovered whole or not
/// at all.)
pub(super) fn write_to_sled<'a>(
    log: &sled::Tree,
    ids: &sled::Tree,
    segments: impl Iterator<Item = &'a (Seq, Vec<u8>)>,
    index: impl Iterator<Item = (EventId, Seq)>,
) -> Result<(), LogError> {
    let mut log_batch = sled::Batch::default();
    for (first, bytes) in segments {
        log_batch.insert(&segment::key(*first), bytes.as_slice());
    }
    log.apply_batch(log_batch)?;
    id_index::insert_all(ids, index)
}

/// sled flushed and fsynced: after this, write-ahead files holding only
/// records applied before it may go (rule 4).
pub(super) fn make_sled_durable(db: &sled::Db, syncer: &mut Syncer) -> Result<(), LogError> {
    db.flush()?;
    syncer.sync()
}
