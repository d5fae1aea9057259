//! The data dir's database, as the log shares it with what the data dir
//! keeps beside the events.
//!
//! The sled log's database (`<data dir>/log.sled`) holds the log's own
//! trees (`log`, `ids`, `meta`; see [`crate::log`]) and, in trees of their
//! own, the data dir's local state: projections' rows and checkpoints, the
//! actors' checkpoints, the embedding memo, the device's own records. One
//! database, so that one flush makes the log and everything beside it
//! durable together, and one page cache serves both. This module hands out
//! those other trees by namespace, and nothing else: what is *in* them is
//! the `engram-local-state` crate's business, the log never reads them.
//!
//! | namespace | tree name | what | rebuilt from the log? |
//! |---|---|---|---|
//! | [`Namespace::Projection`] | `projection.<name>` | a projection's rows and checkpoint, the actors' checkpoints | yes |
//! | [`Namespace::Cache`] | `cache.<name>` | a bounded memo (embeddings) | no: recomputed when missing |
//! | [`Namespace::Device`] | `device.<name>` | this data dir's own facts (the turns spoken to it) | no: not in the log |

use std::path::{Path, PathBuf};

use crate::error::LogError;

/// The kinds of tree the data dir keeps beside the log; each has its own
/// prefix, so no name can collide with the log's own trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespace {
    /// State folded from the log (`projection.`): dropped and rebuilt at
    /// will.
    Projection,
    /// A memo of something costly to compute (`cache.`): never rebuilt,
    /// recomputed when missing.
    Cache,
    /// What only this data dir knows (`device.`): not in the log, not
    /// rebuilt.
    Device,
}

impl Namespace {
    fn prefix(self) -> &'static str {
        match self {
            Namespace::Projection => "projection.",
            Namespace::Cache => "cache.",
            Namespace::Device => "device.",
        }
    }
}

/// A handle on the data dir's database (cheap to clone: sled's handles
/// are reference-counted). It lives as long as any handle or tree does.
#[derive(Clone)]
pub struct LocalDb {
    db: sled::Db,
    dir: PathBuf,
}

impl LocalDb {
    pub(crate) fn new(db: sled::Db, dir: PathBuf) -> LocalDb {
        LocalDb { db, dir }
    }

    /// The data dir.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tree `name` of `namespace`, created if missing.
    pub fn tree(&self, namespace: Namespace, name: &str) -> Result<sled::Tree, LogError> {
        Ok(self.db.open_tree(format!("{}{name}", namespace.prefix()))?)
    }

    /// Bytes sled reports for the whole database, the log included (its
    /// own accounting).
    pub fn size_on_disk(&self) -> Result<u64, LogError> {
        Ok(self.db.size_on_disk()?)
    }
}
