//! Running projections: persistence with checkpoints, catch-up, rebuild.

use std::time::Instant;

use engram_events::{Envelope, EventKind, Seq};

use super::{digest, Change, Projection};
use engram_storage::local_db::Namespace;
use engram_storage::{EventLog, LogError, OpenLog};

/// The key of a projection's checkpoint in its tree (rows use prefixes
/// below 0xFF, so it sorts after every row).
const CHECKPOINT_KEY: &[u8] = b"\xffcheckpoint";

/// Catch-up persists at least this often, so a long catch-up interrupted
/// resumes close to where it stopped.
const PERSIST_EVERY: u64 = 50_000;

/// A checkpoint as stored: the seq (big-endian) and the projection's
/// version (little-endian u32). A value of 8 bytes predates versions and
/// is version 1.
fn checkpoint_value(seq: Seq, version: u32) -> Vec<u8> {
    let mut v = seq.0.to_be_bytes().to_vec();
    v.extend_from_slice(&version.to_le_bytes());
    v
}

/// Loads a projection's stored rows into it (after a `reset`) and returns
/// the seq they are folded up to — or, as the inner error, why they cannot
/// be used: a checkpoint that does not parse, rows without one, another
/// version of the projection, a checkpoint past the log's head (rows folded
/// from events a power loss took back: the log keeps only whole
/// write-ahead records, `wal` rule 5), rows that do not decode.
fn stored_state(
    tree: &sled::Tree,
    projection: &mut dyn Projection,
    head: Seq,
) -> Result<Result<Seq, String>, LogError> {
    let (seq, version) = match tree.get(CHECKPOINT_KEY)? {
        None if tree.is_empty() => return Ok(Ok(Seq(0))),
        None => return Ok(Err("rows without a checkpoint".into())),
        Some(v) => match v.len() {
            8 => (u64::from_be_bytes(v[..8].try_into().expect("8 bytes")), 1),
            12 => (
                u64::from_be_bytes(v[..8].try_into().expect("8 bytes")),
                u32::from_le_bytes(v[8..].try_into().expect("4 bytes")),
            ),
            n => return Ok(Err(format!("a checkpoint of {n} bytes"))),
        },
    };
    if version != projection.version() {
        return Ok(Err(format!("stored as version {version}, this engram folds version {}", projection.version())));
    }
    if Seq(seq) > head {
        return Ok(Err(format!("checkpoint at seq {seq} is past the log's head ({head})")));
    }
    let mut rows = tree
        .iter()
        .filter_map(|r| r.ok())
        .filter(|(k, _)| k.as_ref() != CHECKPOINT_KEY)
        .map(|(k, v)| (k.to_vec(), v.to_vec()));
    match projection.load(&mut rows) {
        Ok(()) => Ok(Ok(Seq(seq))),
        Err(what) => Ok(Err(format!("stored rows are damaged ({what})"))),
    }
}

/// What one projection holds now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectionStatus {
    /// Its name.
    pub name: &'static str,
    /// Rows in its state.
    pub rows: u64,
    /// The last seq folded into it.
    pub last_seq: Seq,
    /// BLAKE3 over its rows.
    pub digest: [u8; 32],
}

struct Entry {
    projection: Box<dyn Projection>,
    tree: Option<sled::Tree>,
    last_seq: Seq,
    folded: u64,
}

/// A set of projections fed from one log.
///
/// Each projection's rows and checkpoint live in its own sled tree
/// (`projection.<name>`), written together in one atomic batch, so after a
/// crash a projection resumes from exactly the state its checkpoint names.
pub struct Projector {
    entries: Vec<Entry>,
}

impl Projector {
    /// Loads each projection from its tree and catches it up with `log`.
    /// `progress` gets (events folded, head) during catch-up.
    pub fn open(
        log: &OpenLog,
        projections: Vec<Box<dyn Projection>>,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, LogError> {
        Projector::open_clearing(log, projections, None, progress)
    }

    /// [`Projector::open`], but the projections named in `clear` (all of
    /// them for an empty list) are dropped first and rebuilt from seq 1 —
    /// without reading their old rows, so a damaged tree is repaired rather
    /// than refused. `None` clears nothing.
    pub fn open_clearing(
        log: &OpenLog,
        projections: Vec<Box<dyn Projection>>,
        clear: Option<&[&str]>,
        progress: impl FnMut(u64, u64),
    ) -> Result<Self, LogError> {
        let mut entries = Vec::with_capacity(projections.len());
        for mut projection in projections {
            let tree = log.local_db().tree(Namespace::Projection, projection.name())?;
            if clear.is_some_and(|names| names.is_empty() || names.contains(&projection.name())) {
                tree.clear()?;
            }
            projection.reset();
            // Stored state is a cache of the log: whatever is wrong with it
            // makes the projection fold the log again, never refuses it.
            let last_seq = match stored_state(&tree, projection.as_mut(), log.head())? {
                Ok(seq) => seq,
                Err(why) => {
                    tracing::warn!("projection {}: {why}; rebuilding it from the log", projection.name());
                    tree.clear()?;
                    projection.reset();
                    Seq(0)
                }
            };
            entries.push(Entry { projection, tree: Some(tree), last_seq, folded: 0 });
        }
        let mut projector = Projector { entries };
        projector.catch_up(&**log, progress)?;
        Ok(projector)
    }

    /// Projections held in memory only, starting empty (verify's rebuild,
    /// tests).
    pub fn in_memory(projections: Vec<Box<dyn Projection>>) -> Self {
        Projector {
            entries: projections
                .into_iter()
                .map(|mut projection| {
                    projection.reset();
                    Entry { projection, tree: None, last_seq: Seq(0), folded: 0 }
                })
                .collect(),
        }
    }

    /// Folds one envelope into every projection that has not seen it yet
    /// (and looks at its kind).
    pub fn apply(&mut self, env: &Envelope) {
        let kind = env.kind();
        for e in &mut self.entries {
            if env.seq > e.last_seq {
                if e.projection.kinds().is_none_or(|k| k.contains(&kind)) {
                    e.projection.apply(env);
                    e.folded += 1;
                }
                e.last_seq = env.seq;
            }
        }
    }

    /// Folds everything in `log` after each projection's checkpoint, then
    /// persists. Returns the number of envelopes read. Damaged records are
    /// folded around, each run with a warning naming its seqs: the state is
    /// then that of the log without them, as `engram repair` would leave it.
    pub fn catch_up(&mut self, log: &dyn EventLog, mut progress: impl FnMut(u64, u64)) -> Result<u64, LogError> {
        let Some(from) = self.entries.iter().map(|e| e.last_seq).min() else { return Ok(0) };
        let head = log.head();
        // Decode only what some projection looks at.
        let mut kinds: Option<Vec<EventKind>> = Some(Vec::new());
        for e in &self.entries {
            match (e.projection.kinds(), kinds.as_mut()) {
                (Some(k), Some(all)) => all.extend_from_slice(k),
                _ => kinds = None,
            }
        }
        let events = match &kinds {
            Some(kinds) => log.read_kinds(from.next(), kinds),
            None => log.read_from(from.next()),
        };
        let mut read = 0u64;
        for env in events {
            let env = match env {
                Ok(env) => env,
                Err(e) if e.is_record_damage() => {
                    tracing::warn!("projections fold around damage: {e}");
                    continue;
                }
                Err(e) => return Err(e),
            };
            self.apply(&env);
            read += 1;
            if read.is_multiple_of(PERSIST_EVERY) {
                self.persist()?;
                progress(read, head.0);
            }
        }
        // Every record up to the head seen at the start was visited, folded
        // or not of interest: the checkpoints move there.
        for e in &mut self.entries {
            e.last_seq = e.last_seq.max(head);
        }
        self.persist()?;
        progress(read, head.0);
        Ok(read)
    }

    /// Writes every projection's changed rows and checkpoint, atomically
    /// per projection.
    pub fn persist(&mut self) -> Result<(), LogError> {
        for e in &mut self.entries {
            let Some(tree) = &e.tree else {
                // In memory: nothing to write, so nothing to encode.
                e.projection.forget_changes();
                continue;
            };
            let changes: Vec<Change> = e.projection.take_changes();
            let mut batch = sled::Batch::default();
            for (k, v) in changes {
                match v {
                    Some(v) => batch.insert(k, v),
                    None => batch.remove(k),
                }
            }
            batch.insert(CHECKPOINT_KEY, checkpoint_value(e.last_seq, e.projection.version()));
            tree.apply_batch(batch)?;
        }
        Ok(())
    }

    /// Drops the state of the named projections (all when `names` is empty)
    /// and replays the log from the start. Returns (records replayed — the
    /// whole log, decoded or skipped by kind — and seconds).
    pub fn rebuild(
        &mut self,
        log: &dyn EventLog,
        names: &[&str],
        progress: impl FnMut(u64, u64),
    ) -> Result<(u64, f64), LogError> {
        for name in names {
            if !self.entries.iter().any(|e| e.projection.name() == *name) {
                return Err(LogError::Projection { name: "rebuild", what: format!("no projection named {name:?}") });
            }
        }
        for e in &mut self.entries {
            if names.is_empty() || names.contains(&e.projection.name()) {
                e.projection.reset();
                e.last_seq = Seq(0);
                e.folded = 0;
                if let Some(tree) = &e.tree {
                    tree.clear()?;
                }
            }
        }
        let started = Instant::now();
        self.catch_up(log, progress)?;
        Ok((log.head().0, started.elapsed().as_secs_f64()))
    }

    /// Name, rows, checkpoint and digest of each projection.
    pub fn status(&self) -> Vec<ProjectionStatus> {
        self.entries
            .iter()
            .map(|e| ProjectionStatus {
                name: e.projection.name(),
                rows: e.projection.row_count(),
                last_seq: e.last_seq,
                digest: digest(&e.projection.rows()),
            })
            .collect()
    }

    /// Envelopes folded into the named projection since it was opened or
    /// rebuilt.
    pub fn folded(&self, name: &str) -> Option<u64> {
        self.entries.iter().find(|e| e.projection.name() == name).map(|e| e.folded)
    }

    /// The projection named `name`, as its concrete type.
    pub fn get<P: Projection + 'static>(&self, name: &str) -> Option<&P> {
        let e = self.entries.iter().find(|e| e.projection.name() == name)?;
        let any: &dyn std::any::Any = &*e.projection;
        any.downcast_ref::<P>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projector::{Table, TableRows};
    use engram_events::payloads::{SessionEndReason, SessionEnded};
    use engram_events::ActorKind;
    use engram_storage::{LogConfig, SledLog};

    /// Counts the events it folded, in one row.
    struct Count {
        rows: Table<u64>,
        version: u32,
    }

    impl Projection for Count {
        fn name(&self) -> &'static str {
            "count"
        }
        fn version(&self) -> u32 {
            self.version
        }
        fn apply(&mut self, _env: &Envelope) {
            *self.rows.entry(b"n", || 0) += 1;
        }
        fn tables(&self) -> Vec<&dyn TableRows> {
            vec![&self.rows]
        }
        fn tables_mut(&mut self) -> Vec<&mut dyn TableRows> {
            vec![&mut self.rows]
        }
    }

    fn open(log: &OpenLog, version: u32) -> (u64, u64) {
        let p = Projector::open(log, vec![Box::new(Count { rows: Table::new(1), version })], |_, _| {}).unwrap();
        let count = p.get::<Count>("count").unwrap().rows.get(b"n").copied().unwrap_or(0);
        (count, p.folded("count").unwrap())
    }

    #[test]
    fn stored_rows_that_are_damaged_or_of_another_version_are_rebuilt_not_refused() {
        let dir = tempfile::tempdir().unwrap();
        let log = OpenLog::from_sled(SledLog::open(dir.path(), LogConfig::default()).unwrap());
        let end = |i| Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i });
        log.append((0..5).map(end).collect()).unwrap();
        assert_eq!(open(&log, 1), (5, 5), "folded from seq 1");
        assert_eq!(open(&log, 1), (5, 0), "loaded, nothing folded again");
        let tree = log.local_db().tree(Namespace::Projection, "count").unwrap();
        tree.insert(b"\x01n", b"not a number".to_vec()).unwrap();
        assert_eq!(open(&log, 1), (5, 5), "damaged rows: folded again");
        assert_eq!(open(&log, 2), (5, 5), "another version: folded again");
        assert_eq!(open(&log, 2), (5, 0));
        // A checkpoint written before versions (8 bytes) is version 1.
        tree.insert(CHECKPOINT_KEY, &5u64.to_be_bytes()).unwrap();
        assert_eq!(open(&log, 2), (5, 5));
        tree.insert(CHECKPOINT_KEY, &5u64.to_be_bytes()).unwrap();
        assert_eq!(open(&log, 1), (5, 0));
        tree.remove(CHECKPOINT_KEY).unwrap();
        assert_eq!(open(&log, 1), (5, 5), "rows without a checkpoint: folded again");
    }
}
