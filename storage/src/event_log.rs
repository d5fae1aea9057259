//! The log behind a trait, so a distributed backend (NATS JetStream, Kafka)
//! can replace sled when a deployment outgrows one machine. The trait knows
//! none of its implementations: the sled log (`crate::log`) is the embedded
//! default, and [`crate::backend`] opens whichever a data dir is configured
//! for.

use crossbeam_channel::Receiver;
use engram_events::{Envelope, EventId, EventKind, Seq};

use crate::error::LogError;
use crate::subscription::{Filter, Subscription};

/// What happened to one appended envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// Newly written at this position.
    Appended(Seq),
    /// Its id was already in the log, at this position; nothing written.
    Existing(Seq),
}

impl AppendOutcome {
    /// The position, new or existing.
    pub fn seq(self) -> Seq {
        match self {
            AppendOutcome::Appended(s) | AppendOutcome::Existing(s) => s,
        }
    }

    /// Was it newly written?
    pub fn is_new(self) -> bool {
        matches!(self, AppendOutcome::Appended(_))
    }
}

/// A submitted batch; [`AppendTicket::wait`] blocks until it is
/// acknowledged under the log's durability policy.
#[must_use = "an append is only acknowledged once the ticket is waited on"]
pub struct AppendTicket {
    rx: Receiver<Result<Vec<AppendOutcome>, LogError>>,
}

impl AppendTicket {
    pub(crate) fn new(rx: Receiver<Result<Vec<AppendOutcome>, LogError>>) -> Self {
        AppendTicket { rx }
    }

    /// Waits for the acknowledgement: one outcome per submitted envelope,
    /// in order.
    pub fn wait(self) -> Result<Vec<AppendOutcome>, LogError> {
        self.rx.recv().map_err(|_| LogError::WriterStopped)?
    }
}

/// An append-only, totally ordered, durable event log.
///
/// Guarantees every backend must keep: positions start at 1 and are
/// gap-free; an envelope whose id is already present is not appended again;
/// an acknowledged append survives a process crash (and, under the durable
/// policy, a power loss); a subscription sees every event from its start, in
/// order, exactly once.
pub trait EventLog: Send + Sync {
    /// Queues a batch (atomic: all of it or none) and returns at once.
    /// Batches are committed in submission order.
    fn submit(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError>;

    /// Appends a batch and waits for the acknowledgement.
    fn append(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        self.submit(events)?.wait()
    }

    /// Like [`EventLog::submit`], but acknowledged once committed, before
    /// it is durable: the next durable append (or [`EventLog::flush`], or a
    /// short interval) makes it durable together with everything before
    /// it. For events that can be derived again from durable ones — an
    /// actor's derivations, re-derived with the same ids after a crash — so
    /// a turn pays one fsync, not one per actor. Backends without the
    /// distinction make it durable at once.
    fn submit_deferred(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        self.submit(events)
    }

    /// [`EventLog::submit_deferred`] and wait for the acknowledgement.
    fn append_deferred(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        self.submit_deferred(events)?.wait()
    }

    /// The last assigned position (`Seq(0)` when empty).
    fn head(&self) -> Seq;

    /// Every envelope from `from` to the current end, in order. A damaged
    /// record (or run of records) is one [`LogError::Lost`] item naming its
    /// seqs, after which the iteration goes on with the next readable
    /// record: a caller that stops at the first error (`?`) stops there, a
    /// caller that reads around damage (`engram export`, projection
    /// catch-up, `engram repair`) reads everything else.
    fn read_from(&self, from: Seq) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_>;

    /// Like [`EventLog::read_from`], only the given kinds. Backends that can
    /// tell a record's kind without decoding it skip the others cheaply.
    fn read_kinds(
        &self,
        from: Seq,
        kinds: &[EventKind],
    ) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        let kinds: Vec<EventKind> = kinds.to_vec();
        Box::new(self.read_from(from).filter(move |e| e.as_ref().map_or(true, |e| kinds.contains(&e.kind()))))
    }

    /// Backlog from `from`, then live events, filtered.
    fn subscribe(&self, from: Seq, filter: Filter) -> Result<Subscription, LogError>;

    /// Where `id` is in the log, if it is.
    fn seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError>;

    /// Makes everything acknowledged so far durable (a no-op under the
    /// durable policy, which already is).
    fn flush(&self) -> Result<(), LogError>;

    /// What the log is, for a report: `sled`, or the stream and server.
    fn describe(&self) -> String {
        "sled".to_owned()
    }

    /// Whether other runtimes may append to this log too (a shared
    /// remote log): then a runtime acts only on the turns spoken to it.
    fn shared(&self) -> bool {
        false
    }

    /// A remote backend's own check (`engram verify`): the local copy
    /// against the remote log, event for event; the first position that
    /// differs. The embedded log has nothing remote to compare with.
    fn verify_remote(&self) -> Result<Option<(Seq, String)>, LogError> {
        Ok(None)
    }
}

/// A shared log is a log: what a command or an actor holds is an
/// `Arc<dyn EventLog>` of whichever backend the data dir runs on.
impl<L: EventLog + ?Sized> EventLog for std::sync::Arc<L> {
    fn submit(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        (**self).submit(events)
    }
    fn append(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        (**self).append(events)
    }
    fn submit_deferred(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        (**self).submit_deferred(events)
    }
    fn append_deferred(&self, events: Vec<Envelope>) -> Result<Vec<AppendOutcome>, LogError> {
        (**self).append_deferred(events)
    }
    fn head(&self) -> Seq {
        (**self).head()
    }
    fn read_from(&self, from: Seq) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        (**self).read_from(from)
    }
    fn read_kinds(
        &self,
        from: Seq,
        kinds: &[EventKind],
    ) -> Box<dyn Iterator<Item = Result<Envelope, LogError>> + Send + '_> {
        (**self).read_kinds(from, kinds)
    }
    fn subscribe(&self, from: Seq, filter: Filter) -> Result<Subscription, LogError> {
        (**self).subscribe(from, filter)
    }
    fn seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        (**self).seq_of(id)
    }
    fn flush(&self) -> Result<(), LogError> {
        (**self).flush()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn shared(&self) -> bool {
        (**self).shared()
    }
    fn verify_remote(&self) -> Result<Option<(Seq, String)>, LogError> {
        (**self).verify_remote()
    }
}
