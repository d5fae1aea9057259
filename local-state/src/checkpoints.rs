//! The actors' checkpoints: for each actor, the `seq` of the last event it
//! handled, in the data dir's `projection.actor_checkpoints` tree (actor
//! name → `seq`, big-endian).
//!
//! A restarted actor finds its work where it left it: it folds up to its
//! checkpoint and handles what follows. A checkpoint is not flushed on its
//! own — one that lags after a crash only makes its actor handle a few
//! events again, which derivation by causation id absorbs — and it is
//! never read past the log's head (see [`ActorCheckpoints::get`]).

use engram_events::Seq;
use engram_storage::local_db::{LocalDb, Namespace};
use engram_storage::LogError;

/// The tree's name, under [`Namespace::Projection`].
const TREE: &str = "actor_checkpoints";

/// A checkpoint as stored: its seq, big-endian (a value that is not 8
/// bytes reads as 0: the actor folds from seq 1).
fn stored_seq(v: &[u8]) -> Seq {
    Seq(u64::from_be_bytes(v.try_into().unwrap_or([0; 8])))
}

/// The actors' checkpoints of one data dir.
#[derive(Clone)]
pub struct ActorCheckpoints {
    tree: sled::Tree,
}

impl ActorCheckpoints {
    /// The checkpoints kept in `db`.
    pub fn open(db: &LocalDb) -> Result<ActorCheckpoints, LogError> {
        Ok(ActorCheckpoints { tree: db.tree(Namespace::Projection, TREE)? })
    }

    /// The last `seq` `actor` handled (0: none), never past `head`, the
    /// log's head: a checkpoint beyond it names events a power loss took
    /// back (the log keeps only whole write-ahead records; see
    /// `engram_storage::wal`, rule 5), and the events that take those
    /// positions next are new work.
    pub fn get(&self, actor: &str, head: Seq) -> Result<Seq, LogError> {
        let stored = match self.tree.get(actor.as_bytes())? {
            Some(v) => stored_seq(&v),
            None => Seq(0),
        };
        Ok(stored.min(head))
    }

    /// Records that `actor` handled everything up to `seq` (not flushed).
    pub fn set(&self, actor: &str, seq: Seq) -> Result<(), LogError> {
        self.tree.insert(actor.as_bytes(), &seq.0.to_be_bytes())?;
        Ok(())
    }

    /// Gives `actor` a checkpoint at `seq` if it has none, and says whether
    /// it did (`false`: it had one already).
    pub fn set_if_missing(&self, actor: &str, seq: Seq) -> Result<bool, LogError> {
        let prev = self.tree.compare_and_swap(actor.as_bytes(), None::<&[u8]>, Some(&seq.0.to_be_bytes()))?;
        Ok(prev.is_ok())
    }

    /// Moves every checkpoint that stood at `from` to `to`, and flushes:
    /// events appended in between by someone else than the runtime
    /// (`engram import`, which derives what the live actors would have)
    /// are history to fold, not work to do. Checkpoints behind `from` (an
    /// actor that had not finished) are left alone. Returns how many moved.
    pub fn advance(&self, from: Seq, to: Seq) -> Result<usize, LogError> {
        let mut moved = 0;
        for entry in self.tree.iter() {
            let (k, v) = entry?;
            if v.as_ref() == from.0.to_be_bytes() {
                self.tree.insert(k, &to.0.to_be_bytes())?;
                moved += 1;
            }
        }
        self.tree.flush()?;
        Ok(moved)
    }

    /// How many actors have a checkpoint behind `head`: work left from an
    /// earlier run (a crash), which only a runtime with that run's
    /// configuration should do.
    pub fn behind(&self, head: Seq) -> Result<usize, LogError> {
        let mut behind = 0;
        for entry in self.tree.iter() {
            let (_, v) = entry?;
            behind += usize::from(stored_seq(&v) < head);
        }
        Ok(behind)
    }

    /// Flushes the checkpoints (at shutdown).
    pub fn flush(&self) -> Result<(), LogError> {
        self.tree.flush()?;
        Ok(())
    }
}
