//! On a log several runtimes share (the same person's devices on one
//! JetStream stream), the turns and sessions spoken to *this* device, in
//! the data dir's `device.origin` tree: `t` + turn ULID, `s` + session id.
//!
//! Every runtime folds every event, but acts only on the turns spoken to
//! it: a turn is answered, and its tools run, on the device the user spoke
//! to, once. A turn's origin is recorded, durably, before its utterance is
//! appended, so a restarted runtime still knows its unfinished turns. The
//! log does not hold this (it is the same on every device), and no rebuild
//! recreates it.

use engram_events::{Envelope, SessionId, TurnId};
use engram_storage::local_db::{LocalDb, Namespace};
use engram_storage::LogError;

/// The tree's name, under [`Namespace::Device`].
const TREE: &str = "origin";

/// The turns and sessions spoken to this device.
#[derive(Clone)]
pub struct Origins {
    tree: sled::Tree,
}

impl Origins {
    /// The records kept in `db`.
    pub fn open(db: &LocalDb) -> Result<Origins, LogError> {
        Ok(Origins { tree: db.tree(Namespace::Device, TREE)? })
    }

    /// Records that `turn` of `session` was spoken to this device, durably.
    pub fn record(&self, session: &SessionId, turn: TurnId) -> Result<(), LogError> {
        self.tree.insert(key(b't', &turn.ulid().to_bytes()), &[])?;
        self.tree.insert(key(b's', session.as_str().as_bytes()), &[])?;
        self.tree.flush()?;
        Ok(())
    }

    /// Whether `env` is this device's to act on: an event of a turn spoken
    /// to it, of one of its sessions (events of no turn), or of no session
    /// at all (what every runtime derives alike, with the same ids).
    pub fn acts_on(&self, env: &Envelope) -> bool {
        let key = match (&env.turn, &env.session) {
            (Some(turn), _) => key(b't', &turn.ulid().to_bytes()),
            (None, Some(session)) => key(b's', session.as_str().as_bytes()),
            (None, None) => return true,
        };
        // A lookup that fails (an I/O error) acts: an answer twice is
        // better than none.
        self.tree.contains_key(key).unwrap_or(true)
    }

    /// Whether `session` was started on this device: only its owner ends
    /// it when idle.
    pub fn owns_session(&self, session: &SessionId) -> bool {
        self.tree.contains_key(key(b's', session.as_str().as_bytes())).unwrap_or(true)
    }
}

/// A key of the tree: a tag, then the id's bytes.
fn key(tag: u8, id: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + id.len());
    key.push(tag);
    key.extend_from_slice(id);
    key
}
