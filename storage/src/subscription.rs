//! Subscriptions: the backlog from the log, then live events, in `seq`
//! order, with no gap and no duplicate.
//!
//! A subscriber registers a bounded live buffer with the [`Hub`] *before* it
//! reads its backlog, so every event committed afterwards reaches it live;
//! events seen both ways are dropped by `seq`. The writer never waits for a
//! subscriber: when a buffer is full it marks the subscriber lagged and wakes
//! it, and the subscriber re-reads what it missed from the log. A slow
//! subscriber therefore costs the writer one failed `try_send`, and loses
//! nothing.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, select, Receiver, Sender, TrySendError};
use engram_events::{Envelope, EventKind, Seq, SessionId};

use crate::error::LogError;

/// Which events a subscriber wants. Filtering happens on the subscriber's
/// side; positions are still consumed in order, so the filter never opens a
/// gap.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only these kinds (`None`: all).
    pub kinds: Option<HashSet<EventKind>>,
    /// Only this session (`None`: all).
    pub session: Option<SessionId>,
}

impl Filter {
    /// Everything.
    pub fn all() -> Self {
        Filter::default()
    }

    /// Only the given kinds.
    pub fn kinds(kinds: impl IntoIterator<Item = EventKind>) -> Self {
        Filter { kinds: Some(kinds.into_iter().collect()), session: None }
    }

    /// Does `env` pass?
    pub fn matches(&self, env: &Envelope) -> bool {
        self.kinds.as_ref().is_none_or(|k| k.contains(&env.kind()))
            && self.session.as_ref().is_none_or(|s| env.session.as_ref() == Some(s))
    }
}

/// Where a subscriber catches up from: the log itself.
pub trait Backlog: Send + Sync {
    /// Appends up to `max` envelopes starting at `from` to `out`.
    fn read_chunk(&self, from: Seq, max: usize, out: &mut Vec<Envelope>) -> Result<(), LogError>;
}

type Batch = Arc<[Envelope]>;

/// What a subscription has called on the publisher's thread after each
/// batch put in its live buffer ([`Subscription::on_publish`]).
pub type Notify = Arc<dyn Fn() + Send + Sync>;

struct Subscriber {
    id: u64,
    live: Sender<Batch>,
    wake: Sender<()>,
    lagged: Arc<AtomicBool>,
    notify: Option<Notify>,
}

/// The writer's side: the registered subscribers.
#[derive(Default)]
pub struct Hub {
    slots: Mutex<Vec<Subscriber>>,
    next_id: AtomicU64,
    closed: AtomicBool,
}

impl Hub {
    /// Delivers a committed batch to every subscriber, never blocking;
    /// then, on this thread and outside the hub's lock, calls what the
    /// subscribers asked to have called ([`Subscription::on_publish`]).
    pub fn publish(&self, batch: Batch) {
        let mut notify: Vec<Notify> = Vec::new();
        {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.retain(|slot| {
                let kept = match slot.live.try_send(batch.clone()) {
                    Ok(()) => true,
                    Err(TrySendError::Full(_)) => {
                        slot.lagged.store(true, Ordering::Release);
                        let _ = slot.wake.try_send(());
                        true
                    }
                    Err(TrySendError::Disconnected(_)) => false,
                };
                if let (true, Some(n)) = (kept, &slot.notify) {
                    notify.push(n.clone());
                }
                kept
            });
        }
        for n in notify {
            n();
        }
    }

    fn set_notify(&self, id: u64, notify: Notify) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = slots.iter_mut().find(|s| s.id == id) {
            slot.notify = Some(notify);
        }
    }

    /// Whether anyone subscribes: a writer with no subscriber builds no
    /// batch for them. (One who subscribes after this reads what the
    /// writer committed before it from the log: the head moved first.)
    pub fn has_subscribers(&self) -> bool {
        !self.slots.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// The log is closing: subscribers deliver what is in the log, then
    /// report [`LogError::WriterStopped`] instead of waiting forever.
    pub fn close(&self) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        self.closed.store(true, Ordering::Release);
        slots.clear();
    }

    fn register(&self, capacity: usize) -> (u64, Receiver<Batch>, Receiver<()>, Arc<AtomicBool>) {
        let (live_tx, live_rx) = bounded(capacity.max(1));
        let (wake_tx, wake_rx) = bounded(1);
        let lagged = Arc::new(AtomicBool::new(false));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if self.closed.load(Ordering::Acquire) {
            // Dropping the senders disconnects the subscriber at once.
            return (id, live_rx, wake_rx, lagged);
        }
        slots.push(Subscriber { id, live: live_tx, wake: wake_tx, lagged: lagged.clone(), notify: None });
        (id, live_rx, wake_rx, lagged)
    }

    fn unregister(&self, id: u64) {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).retain(|s| s.id != id);
    }

    /// Number of registered subscribers.
    pub fn len(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True when nobody subscribes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

const BACKLOG_CHUNK: usize = 4096;

/// A stream of envelopes from a starting `seq`, backlog then live.
///
/// Blocking: [`Subscription::recv`] waits for the next matching event. It is
/// also an [`Iterator`] that ends only on error.
pub struct Subscription {
    hub: Arc<Hub>,
    backlog: Arc<dyn Backlog>,
    id: u64,
    live: Receiver<Batch>,
    wake: Receiver<()>,
    lagged: Arc<AtomicBool>,
    filter: Filter,
    next: Seq,
    from_log: bool,
    closed: bool,
    pending: VecDeque<Envelope>,
    scratch: Vec<Envelope>,
}

impl Subscription {
    /// Registers with `hub`, then will read the backlog from `from`.
    pub fn new(hub: Arc<Hub>, backlog: Arc<dyn Backlog>, from: Seq, filter: Filter, capacity: usize) -> Self {
        let (id, live, wake, lagged) = hub.register(capacity);
        Subscription {
            hub,
            backlog,
            id,
            live,
            wake,
            lagged,
            filter,
            next: Seq(from.0.max(1)),
            from_log: true,
            closed: false,
            pending: VecDeque::new(),
            scratch: Vec::new(),
        }
    }

    /// The position the next delivered event will be at or after.
    pub fn position(&self) -> Seq {
        self.next
    }

    /// The next matching event, waiting as long as it takes.
    pub fn recv(&mut self) -> Result<Envelope, LogError> {
        loop {
            if let Some(env) = self.recv_until(None)? {
                return Ok(env);
            }
        }
    }

    /// The next matching event, or `None` after `timeout`.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<Envelope>, LogError> {
        self.recv_until(Some(Instant::now() + timeout))
    }

    /// The next matching event if one is available now.
    pub fn try_recv(&mut self) -> Result<Option<Envelope>, LogError> {
        self.recv_until(Some(Instant::now()))
    }

    /// Has `notify` called after every batch the log publishes to this
    /// subscription, on the publishing thread (the writer's, or an
    /// appender committing on its own), once the batch is in the live
    /// buffer: a subscriber can then take it there with
    /// [`Subscription::try_recv_live`] instead of waiting for a thread of
    /// its own to wake. `notify` must not block: the publisher is
    /// committing.
    pub fn on_publish(&self, notify: Notify) {
        self.hub.set_notify(self.id, notify);
    }

    /// The next matching event already in the live buffer (or taken from
    /// it before), without waiting and without reading the log: `None`
    /// when there is none, and also when the subscription must read the
    /// log first — after a gap, having fallen behind, before its backlog
    /// is read — which [`Subscription::needs_log`] tells and
    /// [`Subscription::try_recv`] does. What a publisher's thread may do
    /// in [`Subscription::on_publish`]'s call, where reading the log (which
    /// waits for it to be applied) has no place.
    pub fn try_recv_live(&mut self) -> Option<Envelope> {
        loop {
            if let Some(env) = self.pending.pop_front() {
                return Some(env);
            }
            if self.needs_log() {
                return None;
            }
            let batch = self.live.try_recv().ok()?;
            self.take_live(&batch);
        }
    }

    /// Whether the next events must be read from the log, not the live
    /// buffer ([`Subscription::try_recv_live`] stops there).
    pub fn needs_log(&self) -> bool {
        self.from_log || self.lagged.load(Ordering::Acquire)
    }

    fn recv_until(&mut self, deadline: Option<Instant>) -> Result<Option<Envelope>, LogError> {
        loop {
            if let Some(env) = self.pending.pop_front() {
                return Ok(Some(env));
            }
            if self.from_log {
                self.read_backlog()?;
                continue;
            }
            // Whatever is already buffered, without blocking.
            if let Ok(batch) = self.live.try_recv() {
                self.take_live(&batch);
                continue;
            }
            if self.lagged.swap(false, Ordering::AcqRel) {
                self.from_log = true;
                continue;
            }
            let timeout = match deadline {
                None => Duration::from_secs(3600),
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(t) if !t.is_zero() => t,
                    _ => return Ok(None),
                },
            };
            select! {
                recv(self.live) -> batch => match batch {
                    Ok(batch) => self.take_live(&batch),
                    // The log closed: deliver what it holds, then stop.
                    Err(_) if !self.closed => {
                        self.closed = true;
                        self.from_log = true;
                    }
                    Err(_) => return Err(LogError::WriterStopped),
                },
                recv(self.wake) -> _ => {},
                default(timeout) => {
                    if deadline.is_some() {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Reads one chunk of backlog; switches to live when the log is exhausted.
    fn read_backlog(&mut self) -> Result<(), LogError> {
        self.scratch.clear();
        self.backlog.read_chunk(self.next, BACKLOG_CHUNK, &mut self.scratch)?;
        if self.scratch.is_empty() {
            self.from_log = false;
        }
        for env in self.scratch.drain(..) {
            if env.seq < self.next {
                continue;
            }
            self.next = env.seq.next();
            if self.filter.matches(&env) {
                self.pending.push_back(env);
            }
        }
        Ok(())
    }

    fn take_live(&mut self, batch: &[Envelope]) {
        for env in batch {
            if env.seq < self.next {
                continue; // already delivered from the backlog
            }
            if env.seq > self.next {
                // A gap: this batch overtook events we dropped. They are all
                // in the log; read from there.
                self.from_log = true;
                return;
            }
            self.next = env.seq.next();
            if self.filter.matches(env) {
                self.pending.push_back(env.clone());
            }
        }
    }
}

impl Iterator for Subscription {
    type Item = Result<Envelope, LogError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(self.recv())
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.unregister(self.id);
    }
}
