//! The follower: keeps the data dir's copy of the stream current, applying
//! what arrives in chunks (rule 2 of [`super`]). A copy far behind the
//! stream's end (a new device, one that was away) first fetches in bulk
//! from a pull consumer with large requests; then, and whenever it is near
//! the end, an ordered consumer from the copy's head follows the stream
//! live.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::Message;
use engram_events::chrono::DateTime;
use engram_events::codec::binary;
use engram_events::Seq;
use futures_util::StreamExt;

use super::foreign;
use super::packs::{self, Fetched, Packs};
use super::remote::{batch_left, Remote};
use super::replica::{Incoming, Replica};
use crate::error::LogError;
use crate::event_log::EventLog;

/// Most events the follower applies in one local append.
const APPLY_CHUNK: usize = 4096;

/// How far behind the stream's end a copy must be for a bulk fetch to pay
/// for its own consumer and the stream lookup before it.
const BULK_FETCH_MIN: u64 = 10_000;

/// How long a bulk fetch waits for its next message before it starts
/// again from the copy's head: well within the [`super::replica::CATCH_UP_STALL`] after
/// which an open waiting for it gives up.
const FETCH_STALL: Duration = Duration::from_secs(5);

/// Keeps the copy current: a bulk fetch while far behind, then an ordered
/// consumer from the copy's head, recreated (after a pause) whenever it
/// fails.
pub(super) struct Follower;

impl Follower {
    pub(super) fn start(
        runtime: &tokio::runtime::Runtime,
        remote: Arc<Remote>,
        replica: Arc<Replica>,
        packs: Option<Arc<Packs>>,
    ) {
        runtime.spawn(follow(remote, replica, packs));
    }
}

/// Why following stopped.
enum Stop {
    /// A bulk fetch reached the end it was fetching to.
    Reached,
    /// Reading the stream failed: read it again from the copy's head.
    Broken(String),
    /// The copy cannot take the stream's events: the follower stops for
    /// good (`Replica::fail` has been told).
    Failed,
}

async fn follow(remote: Arc<Remote>, replica: Arc<Replica>, packs: Option<Arc<Packs>>) {
    let mut pause = Duration::from_millis(100);
    loop {
        let from = replica.local().head().next();
        let last = remote.last_seq().await.ok();
        // Packs first, for the complete ranges they serve before the
        // stream's end (nothing asked when none is that far ahead).
        let mut hole = None;
        if let (Some(p), Some(last)) = (&packs, last) {
            match packs::fetch(p, &remote, &replica, last).await {
                Fetched::Failed => return,
                Fetched::Hole(end) => hole = Some(end),
                // Look again: the ordered consumer may do for the rest.
                Fetched::Done if replica.local().head().next() > from => continue,
                Fetched::Done => {}
            }
        }
        let bulk = last.filter(|last| last.0 >= from.0.saturating_add(BULK_FETCH_MIN));
        let stopped = match hole.or(bulk) {
            Some(until) => fetch(&remote, &replica, until).await,
            None => match remote.ordered(from).await {
                Ok(messages) => apply_all(&replica, messages.map(|m| m.map_err(|e| e.to_string())), None).await,
                Err(e) => Stop::Broken(format!("cannot follow the stream yet: {e}")),
            },
        };
        match stopped {
            Stop::Failed => return,
            // Near enough now: the ordered consumer takes over at once.
            Stop::Reached => continue,
            Stop::Broken(why) => tracing::warn!(%why, "reading the stream failed; following it again"),
        }
        if replica.local().head().next() > from {
            pause = Duration::from_millis(100);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// A bulk fetch from the copy's head to `last` (at least), through a pull
/// consumer ([`Remote::fetch`]).
async fn fetch(remote: &Remote, replica: &Arc<Replica>, last: Seq) -> Stop {
    let from = replica.local().head().next();
    let (messages, consumer) = match remote.fetch(from).await {
        Ok(fetch) => fetch,
        Err(e) => return Stop::Broken(format!("cannot fetch the stream: {e}")),
    };
    let stopped = apply_all(replica, messages.map(|m| m.map_err(|e| e.to_string())), Some(last)).await;
    remote.drop_consumer(&consumer).await;
    stopped
}

/// Applies `messages` to the copy in chunks of up to [`APPLY_CHUNK`], one
/// local append each, until they fail, or the copy reaches `until`.
///
/// Pipelined: a chunk is decoded while the one before is being written,
/// and chunks are applied strictly in order (each append waits for the
/// one before). Positions are checked here, before anything is applied:
/// one the copy holds already is skipped (a consumer recreated a little
/// behind), and a gap — a message lost between the server and here, which
/// a pull consumer, unlike an ordered one, does not notice — ends the
/// reading, which starts again from the copy's head (rule 2 refuses gaps
/// in the copy for good, so they must never reach it).
async fn apply_all(
    replica: &Arc<Replica>,
    messages: impl futures_util::Stream<Item = Result<Message, String>> + Unpin,
    until: Option<Seq>,
) -> Stop {
    let mut chunks = messages.ready_chunks(APPLY_CHUNK);
    let mut due = replica.local().head().next();
    let mut writing: Option<tokio::task::JoinHandle<Result<(), LogError>>> = None;
    let stop = loop {
        if until.is_some_and(|until| due > until) {
            break Stop::Reached;
        }
        // A bulk fetch that stops short of its end (its last message
        // lost) is read again; the ordered consumer watches its own
        // heartbeats.
        let next = match until {
            Some(_) => match tokio::time::timeout(FETCH_STALL, chunks.next()).await {
                Ok(next) => next,
                Err(_) => break Stop::Broken(format!("no message for {FETCH_STALL:?} at seq {due}")),
            },
            None => chunks.next().await,
        };
        let Some(chunk) = next else { break Stop::Broken("the stream's consumer ended".to_owned()) };
        // What this process published is in the copy before its message
        // comes back (the publisher applies what the server acknowledged):
        // skipped here, undecoded, so a lone appender's echo costs a
        // header read, not a decode and a write.
        due = due.max(replica.local().head().next());
        let mut incoming = Vec::with_capacity(chunk.len());
        let mut broken = None;
        for message in chunk {
            // A fetch up to a hole in the packs stops at its end: packs
            // serve what follows.
            if until.is_some_and(|until| due > until) {
                break;
            }
            let seq = message.and_then(|m| Ok((stream_seq(&m)?, m)));
            match seq {
                Ok((seq, _)) if seq < due => {}
                Ok((seq, m)) if seq == due => {
                    due = due.next();
                    incoming.push(incoming_of(&m, seq));
                }
                Ok((seq, _)) => {
                    broken = Some(format!("seq {seq} arrived where seq {due} was due"));
                    break;
                }
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        if let Some(previous) = writing.take() {
            if !replica.settle(previous).await {
                break Stop::Failed;
            }
        }
        if !incoming.is_empty() {
            let replica = replica.clone();
            writing = Some(tokio::task::spawn_blocking(move || replica.apply(incoming)));
        }
        if let Some(why) = broken {
            break Stop::Broken(why);
        }
    };
    match writing {
        Some(last) => match replica.settle(last).await {
            true => stop,
            false => Stop::Failed,
        },
        None => stop,
    }
}

/// A message's position in the stream.
fn stream_seq(message: &Message) -> Result<Seq, String> {
    let info = message.info().map_err(|e| format!("a message without its position: {e}"))?;
    Ok(Seq(info.stream_sequence))
}

/// A message of the stream as the copy takes it, at its stream sequence
/// `seq` ([`stream_seq`]). Rule 6: what no engram wrote is recorded as
/// skipped, not followed and not a stop.
fn incoming_of(message: &Message, seq: Seq) -> Incoming {
    let published = || {
        let at = message.info().map(|i| i.published.unix_timestamp_nanos()).unwrap_or(0);
        DateTime::from_timestamp_nanos(i64::try_from(at).unwrap_or(0))
    };
    let event = match binary::decode(&message.payload) {
        Ok(event) => match foreign::misplaced(&event, seq) {
            None => event,
            Some(why) => foreign::skipped(seq, published(), &message.payload, why),
        },
        Err(e) => foreign::skipped(seq, published(), &message.payload, format!("not an engram frame ({e})")),
    };
    Incoming { seq, event, batch_left: batch_left(message.headers.as_ref()) }
}
