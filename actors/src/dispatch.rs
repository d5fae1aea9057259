//! The dispatcher: one subscription to the log, fanned out to every actor's
//! mailbox (the kinds it wants: the shells' roles, and the listener's
//! `reply.delivered` for the hot window) and to the host bridge.
//!
//! An actor's mailbox gets an event before the bridge wakes the host call
//! waiting for its turn, so whatever the host says next reaches the
//! listener after the reply that opened the hot window.
//!
//! One thread wakes per committed batch, rather than one per actor: on a
//! small machine the wake-ups of threads with nothing to do are what a turn
//! waits behind. A slow actor never holds the others up: actix mailboxes
//! are unbounded, and the subscription itself re-reads from the log when
//! the dispatcher falls behind its live buffer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use engram_events::{EventKind, Seq};
use engram_storage::Filter;

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

/// Starts the dispatcher thread: events from `from` on, until `stop`.
pub fn start(
    bus: &Arc<Bus>,
    from: Seq,
    feeds: Vec<Feed>,
    bridge: Arc<Bridge>,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>, RuntimeError> {
    let mut sub = bus.log().subscribe(from, Filter::all())?;
    let bus = bus.clone();
    std::thread::Builder::new()
        .name("engram-dispatch".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                match sub.recv_timeout(Duration::from_millis(50)) {
                    Ok(Some(env)) => {
                        let seq = env.seq.0;
                        for f in &feeds {
                            let wanted = wants(f.kinds.as_deref(), &env);
                            if let (true, Some((_, status))) = (wanted, &f.status) {
                                status.forwarded.store(seq, Ordering::SeqCst);
                            }
                            if wanted {
                                f.addr.do_send(Deliver(env.clone()));
                            }
                            if let Some((name, status)) = &f.status {
                                status.seen.store(seq, Ordering::SeqCst);
                                if !wanted {
                                    passed_idle(&bus, name, status, seq);
                                }
                            }
                        }
                        bridge.take(&env);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::error!("dispatcher: subscription failed: {e}");
                        std::thread::sleep(Duration::from_millis(200));
                    }
                }
            }
        })
        .map_err(RuntimeError::Thread)
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
