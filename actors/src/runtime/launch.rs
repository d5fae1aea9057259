//! Starting the actors: the actix system on a thread of its own, one
//! arbiter (thread) per role under a supervisor — but for the roles that
//! share the listener's ([`ON_LISTENER_THREAD`]) — and the dispatcher that
//! hands each of them the log's events from where their catch-up leaves
//! off.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::{ActorEntry, Runtime};
use crate::bridge::Bridge;
use crate::bus::Bus;
use crate::dispatch::{self, Feed};
use crate::error::RuntimeError;
use crate::roles::listener::{Listener, LISTENER_KINDS};
use crate::shell::{Deliver, RoleFactory, SaveSnapshot, Shell, ShellStatus, Sizes};

/// The roles whose shell runs on the listener's thread: the router. A
/// turn's way in — heard, then routed — is then one thread's work: the
/// listener's append hands the router its batch on the thread that
/// committed it, where a router of its own waited for the OS to wake its
/// thread onto a core, behind whatever else the turn had woken. A probe
/// of a relaxed L0 turn (docs/performance.md, *The router on the
/// listener's thread*) put that hop at 8–31 µs of a 160–230 µs turn; the
/// turn as a whole became 0.78× (back to back) and 0.79× (at rest).
///
/// Why the router and no other: its work is short (a decision, an
/// embedding, a fold), so a stop said while it works is heard a
/// millisecond late at worst — but for its first route after a start,
/// which builds the fast path, and once after the embedding model
/// changed, when it embeds the pattern store's requests again
/// (`Router::reembed`): the listener waits for those as long as they
/// take. The reply loop waits on tools and models for seconds, and a
/// stop must be heard while it does (the listener's rule: stop never
/// waits for a model); the planner likewise.
pub(crate) const ON_LISTENER_THREAD: &[&str] = &["router"];

impl Runtime {
    /// Starts the listener and a supervised shell per factory, and the
    /// dispatcher; every actor new to the data dir starts at the head.
    pub(super) fn launch(
        bus: Arc<Bus>,
        listener: Listener,
        factories: Vec<(&'static str, RoleFactory)>,
        turn_timeout: Duration,
        online: bool,
    ) -> Result<Runtime, RuntimeError> {
        let stop = Arc::new(AtomicBool::new(false));
        // Subscriptions start where the actors' catch-up will have read to
        // at least: nothing falls between the two.
        let head = bus.head();
        let from = head.next();
        // An actor new to this data dir starts at the head: it folds the
        // history before it and derives from what comes next.
        for (name, _) in &factories {
            bus.start_checkpoint(name, head)?;
        }
        let bridge = Bridge::new();
        let statuses: Vec<(&'static str, Arc<ShellStatus>)> =
            factories.iter().map(|(n, _)| (*n, Arc::new(ShellStatus::dispatching_after(head)))).collect();
        let kinds: Vec<_> = factories.iter().map(|(_, f)| f().kinds()).collect();
        let (tx, rx) = crossbeam_channel::bounded(1);
        let sys_bus = bus.clone();
        let sys_statuses = statuses.clone();
        let sys_kinds = kinds.clone();
        let system_thread = std::thread::Builder::new()
            .name("engram-actors".into())
            .spawn(move || {
                let sys = System::new();
                let started = sys.block_on(async move {
                    let listener_arbiter = Arbiter::new();
                    let listener = Listener::start_in_arbiter(&listener_arbiter.handle(), move |_| listener);
                    let mut addrs = Vec::new();
                    for (((name, factory), kinds), (_, status)) in
                        factories.into_iter().zip(sys_kinds).zip(sys_statuses)
                    {
                        let shared = ON_LISTENER_THREAD.contains(&name);
                        let arbiter = if shared { listener_arbiter.handle() } else { Arbiter::new().handle() };
                        if crate::priority::BACKGROUND_ROLES.contains(&name) {
                            arbiter.spawn_fn(crate::priority::lower_this_thread);
                        }
                        let bus = sys_bus.clone();
                        let addr = Supervisor::start_in_arbiter(&arbiter, move |_| {
                            Shell::new(name, bus, factory, kinds, status)
                        });
                        addrs.push((
                            addr.clone().recipient::<Deliver>(),
                            addr.clone().recipient::<SaveSnapshot>(),
                            addr.recipient::<Sizes>(),
                        ));
                    }
                    (System::current(), listener, addrs)
                });
                let _ = tx.send(started);
                sys.run().ok();
            })
            .map_err(RuntimeError::Thread)?;
        let (system, listener, addrs) = rx.recv().map_err(|_| RuntimeError::ActorFailed("system"))?;
        let mut snapshots: Vec<Recipient<SaveSnapshot>> = vec![listener.clone().recipient()];
        let mut sizes: Vec<Recipient<Sizes>> = vec![listener.clone().recipient()];
        // The listener's feed comes first: the dispatcher hands it each
        // event before any shell counts that event as seen, so once the
        // shells have settled the listener has been handed everything too
        // (its snapshot at shutdown relies on it).
        let listener_feed =
            Feed { kinds: Some(LISTENER_KINDS.to_vec()), addr: listener.clone().recipient(), status: None };
        let mut feeds = Vec::new();
        for (((deliver, save, size), kinds), (name, status)) in addrs.into_iter().zip(kinds).zip(&statuses) {
            feeds.push(Feed { kinds, addr: deliver, status: Some((name, status.clone())) });
            snapshots.push(save);
            sizes.push(size);
        }
        let threads = vec![dispatch::start(&bus, from, listener_feed, feeds, bridge.clone(), stop.clone())?];
        let actors = statuses.into_iter().map(|(name, status)| ActorEntry { name, status }).collect();
        Ok(Runtime {
            bus,
            listener,
            actors,
            bridge,
            stop,
            threads,
            system: Some((system, system_thread)),
            turn_timeout,
            online,
            candidates: Vec::new(),
            model_calls: Arc::default(),
            held_by_model: false,
            max_utterance_bytes: engram_learning::import::turn_record::limits::MAX_TEXT_BYTES,
            snapshots,
            sizes,
            #[cfg(feature = "metrics")]
            metrics_server: None,
            catalogue: None,
            memo: None,
            #[cfg(feature = "mcp")]
            mcp: None,
        })
    }
}
