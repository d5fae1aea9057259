//! The dispatcher: one subscription to the log, fanned out to every actor's
//! mailbox (the kinds it wants: the shells' roles, and the listener's
//! `reply.delivered` for the hot window) and to the host bridge.
//!
//! 1. **Order.** Each batch goes to the listener's mailbox, then to the
//!    bridge, which wakes the host call waiting for its turn, then to the
//!    shells: whatever the host says next reaches the listener after the
//!    reply that opened the hot window, and the host is not kept waiting
//!    behind the wake-ups of actors that only fold the turn (a shell's
//!    `seen` moves only once it has been handed the batch, so
//!    [`crate::Runtime::settle`] still waits for them). Events are handed
//!    on in `seq` order, once each, whoever hands them on: the fan-out
//!    holds the dispatcher's lock.
//! 2. **On the publisher's thread.** Whoever commits a batch — the log's
//!    writer thread, or an actor committing its own append — hands it on
//!    itself, on its own thread, when the dispatcher is free: a turn then
//!    waits for no thread of the dispatcher's to wake between one actor's
//!    append and the next actor's mailbox (three hops a fast-path turn
//!    saved). Handing on never blocks: actix mailboxes are unbounded.
//! 3. **The dispatcher's thread** does the rest: what a publisher found
//!    the dispatcher busy for (it wakes the thread instead of waiting), and
//!    whatever must be read from the log — the backlog at start, and the
//!    events of a subscription that fell behind its live buffer — which a
//!    committing thread never reads. A slow actor never holds the others
//!    up.
//! 4. One thread wakes per committed batch at most, rather than one per
//!    actor: on a small machine the wake-ups of threads with nothing to do
//!    are what a turn waits behind.
//! 5. **One message per actor per batch.** An actor is handed the events
//!    of a batch it wants in one [`Deliver`] ([`MAX_HANDED_ON`] at most),
//!    not one message (and one wake-up) per event: the reply loop's batch
//!    of four events woke each actor that folds the turn four times.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, TryLockError};
use std::thread::Thread;
use std::time::Duration;

use actix::Recipient;
use engram_events::{Envelope, EventKind, Seq};
use engram_storage::{Filter, Subscription};

use crate::bridge::Bridge;
use crate::bus::Bus;
use crate::error::RuntimeError;
use crate::shell::{wants, Deliver, ShellStatus};

/// Where one actor's events go.
pub struct Feed {
    /// The kinds it wants (`None`: all).
    pub kinds: Option<Vec<EventKind>>,
    /// Its mailbox.
    pub addr: Recipient<Deliver>,
    /// The actor's name and what has been seen and handed on, for
    /// [`crate::Runtime::settle`] and its lag gauge (`None` for the
    /// listener, which is not a shell and not waited for).
    pub status: Option<(&'static str, Arc<ShellStatus>)>,
}

/// How often the dispatcher's thread looks at its stop flag, and at the
/// log, with nothing to wake it.
const IDLE_WAKE: Duration = Duration::from_millis(50);

/// The subscription and where its events go: whoever holds the lock hands
/// events on (rule 1).
struct Fanout {
    sub: Subscription,
    /// The listener's feed (rule 1).
    listener: Feed,
    /// The shells' feeds.
    shells: Vec<Feed>,
    bridge: Arc<Bridge>,
    bus: Arc<Bus>,
}

/// What the publishers' calls and the dispatcher's thread share.
struct Dispatcher {
    fanout: Mutex<Fanout>,
    /// The dispatcher's thread, woken when a publisher leaves it work.
    thread: OnceLock<Thread>,
    /// Set at shutdown: nothing is handed on any more, by anyone.
    stop: Arc<AtomicBool>,
}

/// Starts the dispatcher thread: events from `from` on, until `stop`, to
/// the listener, the bridge and the shells, in that order (rule 1).
pub fn start(
    bus: &Arc<Bus>,
    from: Seq,
    listener: Feed,
    shells: Vec<Feed>,
    bridge: Arc<Bridge>,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, RuntimeError> {
    let sub = bus.log().subscribe(from, Filter::all())?;
    let dispatcher = Arc::new(Dispatcher {
        fanout: Mutex::new(Fanout { sub, listener, shells, bridge, bus: bus.clone() }),
        thread: OnceLock::new(),
        stop,
    });
    let thread = {
        let dispatcher = dispatcher.clone();
        std::thread::Builder::new()
            .name("engram-dispatch".into())
            .spawn(move || {
                while !dispatcher.stop.load(Ordering::Acquire) {
                    dispatcher.lock().drain();
                    // A publisher that left work unparks this thread; an
                    // unpark before the park makes it return at once.
                    std::thread::park_timeout(IDLE_WAKE);
                }
            })
            .map_err(RuntimeError::Thread)?
    };
    let _ = dispatcher.thread.set(thread.thread().clone());
    // Weak: the subscription (in the hub) must not keep alive what holds it.
    let weak = Arc::downgrade(&dispatcher);
    dispatcher.lock().sub.on_publish(Arc::new(move || {
        if let Some(d) = weak.upgrade() {
            d.published();
        }
    }));
    // The thread may have parked before it was named: look again.
    dispatcher.wake();
    Ok(thread)
}

impl Dispatcher {
    fn lock(&self) -> std::sync::MutexGuard<'_, Fanout> {
        self.fanout.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    /// A batch was published (on the publisher's thread; rule 2): handed on
    /// here if the dispatcher is free and the batch is in the live buffer,
    /// else left to the dispatcher's thread (rule 3), which is woken.
    fn published(&self) {
        if self.stop.load(Ordering::Acquire) {
            return;
        }
        let mut fanout = match self.fanout.try_lock() {
            Ok(f) => f,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            // Busy: whoever holds it may have looked at the buffer before
            // this batch came; the thread looks again once it is free.
            Err(TryLockError::WouldBlock) => return self.wake(),
        };
        let mut batch = Vec::new();
        while let Some(env) = fanout.sub.try_recv_live() {
            batch.push(env);
            if batch.len() == MAX_HANDED_ON {
                fanout.hand_on(&batch);
                batch.clear();
            }
        }
        fanout.hand_on(&batch);
        if fanout.sub.needs_log() {
            drop(fanout);
            self.wake();
        }
    }
}

/// Most events handed on in one message per actor (rule 5): bounds the
/// copies a backlog read at start makes at once.
pub const MAX_HANDED_ON: usize = 1024;

impl Fanout {
    /// Everything the subscription has now, the log read where it must be
    /// (the dispatcher's thread only: rule 3).
    fn drain(&mut self) {
        let mut batch = Vec::new();
        loop {
            match self.sub.try_recv() {
                Ok(Some(env)) => {
                    batch.push(env);
                    if batch.len() == MAX_HANDED_ON {
                        self.hand_on(&batch);
                        batch.clear();
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::error!("dispatcher: subscription failed: {e}");
                    self.hand_on(&batch);
                    std::thread::sleep(Duration::from_millis(200));
                    return;
                }
            }
        }
        self.hand_on(&batch);
    }

    /// Consecutive events to every actor that wants some of them, each
    /// actor's in one message (rule 5): first the listener, then the
    /// bridge, then the shells (rule 1).
    fn hand_on(&self, batch: &[Envelope]) {
        let Some(last) = batch.last().map(|e| e.seq.0) else { return };
        feed(&self.listener, batch);
        for env in batch {
            self.bridge.take(env);
        }
        for f in &self.shells {
            let wanted = feed(f, batch);
            if let Some((name, status)) = &f.status {
                status.seen.store(last, Ordering::SeqCst);
                if wanted < last {
                    passed_idle(&self.bus, name, status, last);
                }
            }
        }
    }
}

/// Sends `f` the events of `batch` it wants, in one message, if any;
/// returns the seq of the last (0: none).
fn feed(f: &Feed, batch: &[Envelope]) -> u64 {
    let wanted: Vec<Envelope> = batch.iter().filter(|e| wants(f.kinds.as_deref(), e)).cloned().collect();
    let Some(last) = wanted.last().map(|e| e.seq.0) else { return 0 };
    if let Some((_, status)) = &f.status {
        status.forwarded.store(last, Ordering::SeqCst);
    }
    f.addr.do_send(Deliver(wanted));
    last
}

/// An event `name` does not want passed its subscription: when the actor
/// has handled everything handed to it, it is no event behind because of
/// it, and its lag gauge says so (otherwise the gauge kept the lag of the
/// actor's last handled event, however long it then sat idle). The actor
/// does the same from its side ([`crate::shell`]'s `advance` reads `seen`);
/// with both stores before both loads (`SeqCst`), whichever comes last sees
/// the other's.
fn passed_idle(bus: &Bus, name: &str, status: &ShellStatus, seq: u64) {
    if status.position.load(Ordering::SeqCst) >= status.forwarded.load(Ordering::SeqCst) {
        if let Some(m) = bus.observer() {
            m.lag(name, bus.head().0.saturating_sub(seq));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;
    use engram_events::payloads::{DayActivated, SessionEndReason, SessionEnded};
    use engram_events::{ActorKind, SessionId};
    use engram_storage::{Durability, LogBackend, LogConfig};

    /// An actor that writes down the seqs it is handed.
    struct Collect(Arc<Mutex<Vec<u64>>>);

    impl Actor for Collect {
        type Context = Context<Self>;
    }

    impl Handler<Deliver> for Collect {
        type Result = ();

        fn handle(&mut self, Deliver(events): Deliver, _: &mut Context<Self>) {
            self.0.lock().unwrap().extend(events.iter().map(|e| e.seq.0));
        }
    }

    fn ended(i: u32) -> Envelope {
        Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
            .with_session(SessionId::new(format!("s-{i}")))
    }

    /// Rules 1–3: appenders on many threads hand batches on themselves or
    /// leave them to the dispatcher's thread (a live buffer of 2 makes the
    /// subscription lag and read the log), and every actor is still handed
    /// every event it wants once, in order; a shell's `seen` reaches the
    /// head.
    #[test]
    fn every_actor_is_handed_every_event_it_wants_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            durability: Durability::Relaxed { flush_every_ms: 5 },
            subscriber_buffer: 2,
            ..LogConfig::default()
        };
        let open = LogBackend::Sled.open(dir.path(), config).unwrap();
        let bus = Arc::new(Bus::new(&open).unwrap());
        bus.append((0..5).map(|i| ended(1000 + i)).collect()).unwrap();
        let (all, some, listened) = (Arc::default(), Arc::default(), Arc::default());
        let (tx, rx) = crossbeam_channel::bounded(1);
        let (a, s, l) = (Arc::clone(&all), Arc::clone(&some), Arc::clone(&listened));
        let system = std::thread::spawn(move || {
            let sys = System::new();
            let addrs =
                sys.block_on(
                    async move { (Collect(a).start(), Collect(s).start(), Collect(l).start(), System::current()) },
                );
            tx.send(addrs).unwrap();
            sys.run().unwrap();
        });
        let (all_addr, some_addr, listener_addr, sys) = rx.recv().unwrap();
        let status = Arc::new(ShellStatus::dispatching_after(Seq(0)));
        let shells = vec![
            Feed { kinds: None, addr: all_addr.recipient(), status: Some(("all", status.clone())) },
            Feed { kinds: Some(vec![EventKind::DayActivated]), addr: some_addr.recipient(), status: None },
        ];
        let listener =
            Feed { kinds: Some(vec![EventKind::SessionEnded]), addr: listener_addr.recipient(), status: None };
        let stop = Arc::new(AtomicBool::new(false));
        let thread = start(&bus, Seq(1), listener, shells, Bridge::new(), stop.clone()).unwrap();
        let appenders: Vec<_> = (0..4u32)
            .map(|t| {
                let bus = bus.clone();
                std::thread::spawn(move || {
                    for i in 0..100u32 {
                        let mut batch = vec![ended(t * 100 + i)];
                        if i % 10 == 0 {
                            batch.push(Envelope::new(
                                ActorKind::Listener,
                                DayActivated { day: format!("d-{t}-{i}"), rank: i },
                            ));
                        }
                        bus.append_deferred(batch).unwrap();
                    }
                })
            })
            .collect();
        for a in appenders {
            a.join().unwrap();
        }
        let head = bus.head().0;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while all.lock().unwrap().len() < head as usize || status.seen.load(Ordering::SeqCst) < head {
            assert!(std::time::Instant::now() < deadline, "not every event handed on");
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(50));
        stop.store(true, Ordering::Release);
        thread.join().unwrap();
        sys.stop();
        system.join().unwrap();
        let kinds: Vec<EventKind> = bus.read_range(Seq(1), Seq(head)).map(|e| e.unwrap().kind()).collect();
        let of = |k: EventKind| -> Vec<u64> { (1..=head).filter(|s| kinds[*s as usize - 1] == k).collect() };
        assert_eq!(*all.lock().unwrap(), (1..=head).collect::<Vec<_>>(), "in order, each once");
        assert_eq!(*some.lock().unwrap(), of(EventKind::DayActivated));
        assert_eq!(*listened.lock().unwrap(), of(EventKind::SessionEnded));
        assert_eq!(status.forwarded.load(Ordering::SeqCst), head);
    }
}
