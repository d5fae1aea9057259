//! The data dir's copy of a stream, read while the server cannot be
//! reached: what read commands (`engram export`, `stats`, `inspect`,
//! `replay`) fall back to on a laptop away from its server, saying so.
//! It appends nothing — positions are the stream's to give.

use std::path::Path;
use std::sync::Arc;

use engram_events::{Envelope, EventId, EventKind, Seq};

use super::JetStreamConfig;
use crate::error::LogError;
use crate::event_log::{AppendTicket, EventLog};
use crate::log::{LogConfig, SledLog};
use crate::subscription::{Filter, Subscription};

/// A JetStream data dir's copy, opened without its server, read-only.
pub struct OfflineCopy {
    copy: Arc<SledLog>,
    config: JetStreamConfig,
}

impl OfflineCopy {
    /// Opens the copy in `dir` (taking the data dir's lock); it must hold
    /// at least one event.
    pub fn open(dir: &Path, local: LogConfig, config: JetStreamConfig) -> Result<Self, LogError> {
        let none_yet = || LogError::Remote {
            url: config.url.clone(),
            what: format!("unreachable, and {} holds no copy of the stream yet", dir.display()),
        };
        if !dir.join("log.sled").is_dir() {
            return Err(none_yet());
        }
        let copy = Arc::new(SledLog::open(dir, super::copy_config(local))?);
        if copy.head() == Seq(0) {
            return Err(none_yet());
        }
        Ok(OfflineCopy { copy, config })
    }

    /// The data dir's copy of the stream.
    pub fn copy(&self) -> &Arc<SledLog> {
        &self.copy
    }
}

impl EventLog for OfflineCopy {
    fn submit(&self, _: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        Err(LogError::Remote {
            url: self.config.url.clone(),
            what: "unreachable: the data dir's copy of the stream is open read-only, nothing can be appended"
                .to_owned(),
        })
    }

    fn head(&self) -> Seq {
        self.copy.head()
    }

    fn read_from(&self, from: Seq) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        self.copy.read_from(from)
    }

    fn read_kinds(
        &self,
        from: Seq,
        kinds: &[EventKind],
    ) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        self.copy.read_kinds(from, kinds)
    }

    fn subscribe(&self, from: Seq, filter: Filter) -> Result<Subscription, LogError> {
        self.copy.subscribe(from, filter)
    }

    fn seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        self.copy.seq_of(id)
    }

    fn flush(&self) -> Result<(), LogError> {
        self.copy.flush()
    }

    fn describe(&self) -> String {
        format!(
            "jetstream (stream {} at {}, unreachable: the data dir's copy up to seq {}, read-only)",
            self.config.stream,
            self.config.url,
            self.copy.head()
        )
    }

    fn shared(&self) -> bool {
        true
    }

    fn verify_remote(&self) -> Result<Option<(Seq, String)>, LogError> {
        Err(LogError::Remote { url: self.config.url.clone(), what: "unreachable: the copy cannot be compared".into() })
    }
}
