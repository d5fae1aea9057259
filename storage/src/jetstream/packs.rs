//! Packs: the stream's events, [`PACK_EVENTS`] to a message, in a second
//! stream beside it, so that a new device fetches a year-long log in a few
//! hundred messages rather than half a million.
//!
//! The stream holds one message per event (rule 1 of [`super`]), and
//! nats-server 2.9 spends ≈ 5 µs of its CPU on each message it delivers and
//! the client ≈ 13 µs on each it receives: one message an event tops out
//! near 100 k events/s on two cores, whatever the batch sizes. A pack is
//! one message holding the frames of [`PACK_EVENTS`] consecutive events,
//! exactly as the local copy stores them; fetched, its frames go into the
//! copy as they are (`SledLog::append_frames_here`: a CRC and a header read
//! per event, no decode, no encode), one round trip per pack.
//!
//! | where | what |
//! |---|---|
//! | stream `PACKS_<stream>`, subject `<stream>.packs.<k>` | the frames of the events at `seq` k·N + 1 ..= (k + 1)·N back to back (N = [`PACK_EVENTS`]) |
//!
//! Rules, each kept by the code named:
//!
//! 1. **A pack is derived, never the log** (`Packer`). Positions stay the
//!    stream's sequence and every write still goes to the stream; a pack is
//!    a copy of a range the stream holds for good (deletes are denied), so
//!    it never changes once written. The packs stream allows deletes: an
//!    operator may drop it, and devices pack again what they hold.
//! 2. **Packed once, when complete** (`Packer::pack`). A device packs range
//!    k once its copy holds `seq` (k + 1)·N. Every device would write the
//!    same bytes (the copy's frames, which encode the stream's events at
//!    their positions); `Nats-Expected-Last-Subject-Sequence: 0` makes the
//!    server keep the first and refuse the others.
//! 3. **Checked before use** (`Packs::get`, `unpack`). Every frame must
//!    pass its CRC and carry its position (read from its header, with its
//!    id), and the pack's last event must be the
//!    stream's event at that position (one direct get, sent beside the
//!    pack's). Packs left over from another log — a stream deleted and
//!    created again under the same name, its old packs stream still there
//!    — are refused so, and their ranges are fetched message by message.
//! 4. **Never the end** (`fetch`). Packs serve only ranges that end before
//!    the stream's last message: the copy's last event always comes from
//!    the stream itself, with its `Engram-Batch-Left` header (rule 4 of
//!    [`super`]), which packs do not carry.
//! 5. **Optional** (`Packs::open`, `fetch`). A server or credentials that
//!    refuse the packs stream, a pack over the server's `max_payload`, a
//!    pack missing or refused: that range is fetched message by message,
//!    as without packs. `[storage] packs = false` turns them off.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::context::{GetStreamErrorKind, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{Config as StreamConfig, DirectGetErrorKind, DiscardPolicy, StorageType};
use async_nats::jetstream::{Context, ErrorCode};
use engram_events::codec::binary;
use engram_events::{EventId, Seq};
use futures_util::{StreamExt, TryStreamExt};
use tokio::sync::watch;

use super::remote::Remote;
use super::replica::{Incoming, Replica};
use super::{foreign, PACK_EVENTS};
use crate::error::LogError;
use crate::event_log::EventLog;

/// Packs requested at once while fetching: the round trips overlap, and
/// at most this many packs' bytes wait in memory.
const PACKS_IN_FLIGHT: usize = 8;

/// Bytes a pack message's headers and the protocol may add to its frames.
const PACK_OVERHEAD: usize = 1024;

/// The packs stream of one log, if the server lets this device use it.
pub(super) struct Packs {
    js: Context,
    /// `PACKS_<stream>`.
    name: String,
    /// `<stream>.packs`.
    prefix: String,
    /// Events this process took from packs.
    fetched: AtomicU64,
    /// The next pack the packer will consider (every one before it is
    /// published or was found there); waiters of a flush watch it.
    packed: watch::Sender<u64>,
}

impl Packs {
    /// The packs stream of `remote`'s log, created if missing; `None`, with
    /// a warning, when the server refuses it (rule 5).
    pub(super) async fn open(remote: &Remote) -> Option<Arc<Packs>> {
        let stream = &remote.config.stream;
        let packs = Packs {
            js: remote.js.clone(),
            name: format!("PACKS_{stream}"),
            prefix: format!("{stream}.packs"),
            fetched: AtomicU64::new(0),
            packed: watch::Sender::new(0),
        };
        match packs.attach(remote.config.replicas).await {
            Ok(()) => Some(Arc::new(packs)),
            Err(why) => {
                tracing::warn!(stream = %packs.name, %why, "packs are off: a new device fetches the stream message by message");
                None
            }
        }
    }

    /// Creates the packs stream if it is missing; checks its subjects.
    async fn attach(&self, replicas: usize) -> Result<(), String> {
        let subjects = vec![format!("{}.*", self.prefix)];
        let info = match self.js.get_stream(&self.name).await {
            Ok(mut stream) => stream.info().await.map_err(|e| e.to_string())?.clone(),
            Err(e) if matches!(e.kind(), GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND) =>
            {
                let config = StreamConfig {
                    name: self.name.clone(),
                    description: Some("engram packs: the log's events, 1024 to a message, for new devices".to_owned()),
                    subjects: subjects.clone(),
                    storage: StorageType::File,
                    max_messages_per_subject: 1,
                    discard: DiscardPolicy::Old,
                    num_replicas: replicas.max(1),
                    allow_direct: true,
                    duplicate_window: Duration::from_secs(120),
                    ..Default::default()
                };
                let mut stream = self.js.create_stream(config).await.map_err(|e| format!("creating it: {e}"))?;
                stream.info().await.map_err(|e| e.to_string())?.clone()
            }
            Err(e) => return Err(format!("looking it up: {e}")),
        };
        if info.config.subjects != subjects || !info.config.allow_direct {
            return Err(format!(
                "takes the subjects {:?} (direct gets {}): not engram's packs stream",
                info.config.subjects,
                if info.config.allow_direct { "on" } else { "off" }
            ));
        }
        Ok(())
    }

    fn subject(&self, k: u64) -> String {
        format!("{}.{k}", self.prefix)
    }

    /// Events this process has taken from packs (a figure for the bench
    /// and the tests: how much of a fetch they served).
    pub(super) fn fetched(&self) -> u64 {
        self.fetched.load(Ordering::Relaxed)
    }

    /// The packs the stream holds.
    async fn present(&self) -> Result<BTreeSet<u64>, String> {
        let stream = self.js.get_stream_no_info(&self.name).await.map_err(|e| e.to_string())?;
        let mut subjects = stream.info_with_subjects(format!("{}.*", self.prefix)).await.map_err(|e| e.to_string())?;
        let mut present = BTreeSet::new();
        while let Some((subject, _)) = subjects.try_next().await.map_err(|e| e.to_string())? {
            if let Some(k) = subject.rsplit('.').next().and_then(|k| k.parse().ok()) {
                present.insert(k);
            }
        }
        Ok(present)
    }

    /// Pack `k`'s events, checked (rule 3); `Ok(None)` when the stream has
    /// no such pack.
    async fn get(&self, remote: &Remote, k: u64) -> Result<Option<Unpacked>, PackError> {
        let unavailable = |e: &dyn std::fmt::Display| PackError::Unavailable(format!("reading pack {k}: {e}"));
        let stream = self.js.get_stream_no_info(&self.name).await.map_err(|e| unavailable(&e))?;
        let last = Seq((k + 1) * PACK_EVENTS);
        let (pack, theirs) =
            tokio::join!(stream.direct_get_last_for_subject(self.subject(k)), remote.raw_message(last));
        let pack = match pack {
            Ok(message) => message.payload,
            Err(e) if e.kind() == DirectGetErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(unavailable(&e)),
        };
        let theirs = theirs.map_err(|e| unavailable(&e))?;
        let events = tokio::task::spawn_blocking(move || unpack(k, pack.to_vec(), &theirs))
            .await
            .map_err(|e| unavailable(&e))?
            .map_err(PackError::Refused)?;
        Ok(Some(events))
    }
}

/// Why a pack was not used.
enum PackError {
    /// The server did not answer as asked: the pack may be fine.
    Unavailable(String),
    /// The pack does not check out (rule 3).
    Refused(String),
}

impl std::fmt::Display for PackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackError::Unavailable(why) | PackError::Refused(why) => f.write_str(why),
        }
    }
}

/// A pack, checked (rule 3): its frames as they came, the first at
/// `first`, and their ids.
pub(super) struct Unpacked {
    first: Seq,
    frames: Vec<u8>,
    ids: Vec<EventId>,
}

impl Unpacked {
    /// The copy takes the frames as they are; failing that (the first pack
    /// of a copy that holds part of it, say), decoded.
    fn apply(self, replica: &Replica) -> Result<(), LogError> {
        if replica.apply_frames(self.first, &self.frames, &self.ids)? {
            return Ok(());
        }
        let mut incoming = Vec::with_capacity(self.ids.len());
        let mut seq = self.first;
        for frame in binary::frames(&self.frames) {
            let event = frame.and_then(|f| f.decode()).map_err(|source| LogError::Corrupt { seq, source })?;
            incoming.push(Incoming { seq, event, batch_left: 0 });
            seq = seq.next();
        }
        replica.apply(incoming)
    }
}

/// Checks pack `k`'s bytes (rule 3) without decoding its events: each
/// frame's CRC, its position and its id from the frame's header; the last
/// one decoded, to compare with `theirs`, the stream's message at the
/// pack's last position.
fn unpack(k: u64, pack: Vec<u8>, theirs: &[u8]) -> Result<Unpacked, String> {
    let first = Seq(k * PACK_EVENTS + 1);
    let mut ids = Vec::with_capacity(PACK_EVENTS as usize);
    let mut due = first;
    let mut last = None;
    for frame in binary::frames(&pack) {
        let frame = frame.map_err(|e| format!("pack {k} at seq {due}: {e}"))?;
        let (seq, id) = frame.seq_and_id().map_err(|e| format!("pack {k} at seq {due}: {e}"))?;
        if seq != due {
            return Err(format!("pack {k} holds seq {seq} where seq {due} was due"));
        }
        ids.push(id);
        last = Some(frame);
        due = due.next();
    }
    if ids.len() as u64 != PACK_EVENTS {
        return Err(format!("pack {k} holds {} events, not {PACK_EVENTS}", ids.len()));
    }
    let last = last.expect("a full pack").decode().map_err(|e| format!("pack {k}'s last event: {e}"))?;
    let same = match foreign::stands_for(&last, theirs) {
        Some(same) => same,
        None => binary::decode(theirs).is_ok_and(|e| e.id == last.id),
    };
    if !same {
        return Err(format!(
            "pack {k} ends with event {} at seq {}, which the stream does not hold there: a pack of another log",
            last.id, last.seq
        ));
    }
    Ok(Unpacked { first, frames: pack, ids })
}

/// Where a fetch from packs stopped.
pub(super) enum Fetched {
    /// No pack serves the copy's next position: the rest is the stream's.
    Done,
    /// A range no pack serves, with packs after it: fetch up to this `seq`
    /// from the stream, then packs again.
    Hole(Seq),
    /// The copy cannot take the events: the follower stops for good
    /// (`Replica::fail` has been told).
    Failed,
}

/// Applies packs to the copy from its head on, in order, for as long as
/// they serve ranges ending before `last` (rule 4), several requested at
/// once; a pack is unpacked while the one before is written.
pub(super) async fn fetch(packs: &Arc<Packs>, remote: &Arc<Remote>, replica: &Arc<Replica>, last: Seq) -> Fetched {
    let first = replica.local().head().0 / PACK_EVENTS;
    // Packs k with (k + 1)·N < last: never the stream's last message.
    let end = last.0.saturating_sub(1) / PACK_EVENTS;
    if first >= end {
        return Fetched::Done;
    }
    let mut gets = futures_util::stream::iter(first..end)
        .map(|k| {
            let (packs, remote) = (packs.clone(), remote.clone());
            async move { (k, packs.get(&remote, k).await) }
        })
        .buffered(PACKS_IN_FLIGHT);
    let mut writing: Option<tokio::task::JoinHandle<Result<(), LogError>>> = None;
    let mut fetched = Fetched::Done;
    while let Some((k, got)) = gets.next().await {
        let events = match got {
            Ok(Some(events)) => events,
            missing => {
                if let Err(why) = missing {
                    tracing::warn!(%why, "a pack refused; its range is fetched from the stream");
                }
                // A hole when the next pack is there; else packs end here.
                if let Some((_, Ok(Some(_)))) = gets.next().await {
                    fetched = Fetched::Hole(Seq((k + 1) * PACK_EVENTS));
                }
                break;
            }
        };
        if let Some(previous) = writing.take() {
            if !replica.settle(previous).await {
                return Fetched::Failed;
            }
        }
        packs.fetched.fetch_add(events.ids.len() as u64, Ordering::Relaxed);
        let replica = replica.clone();
        writing = Some(tokio::task::spawn_blocking(move || events.apply(&replica)));
    }
    if let Some(last) = writing {
        if !replica.settle(last).await {
            return Fetched::Failed;
        }
    }
    fetched
}

/// Packs what the copy holds and the packs stream lacks, in order, as the
/// copy grows (rule 2); one task per open log.
pub(super) struct Packer;

impl Packer {
    /// Starts packing: first whatever complete range has no pack yet (a log
    /// older than packs, a pack dropped), then each range as it completes.
    pub(super) fn start(
        runtime: &tokio::runtime::Runtime,
        packs: Arc<Packs>,
        remote: Arc<Remote>,
        replica: Arc<Replica>,
    ) {
        runtime.spawn(async move {
            let present = match packs.present().await {
                Ok(present) => present,
                Err(why) => {
                    tracing::warn!(%why, "listing the packs; this device packs nothing");
                    packs.packed.send_replace(u64::MAX);
                    return;
                }
            };
            let present = Packer::drop_stale(&packs, &remote, present).await;
            Packer::run(&packs, &remote, &replica, present).await;
            packs.packed.send_replace(u64::MAX);
        });
    }

    /// The packs present, or none after purging them when the last one is
    /// of another log (rule 3: a stream deleted and created again beside
    /// its old packs), so that this device packs the log again.
    async fn drop_stale(packs: &Packs, remote: &Remote, present: BTreeSet<u64>) -> BTreeSet<u64> {
        let Some(&k) = present.last() else { return present };
        let beyond = remote.last_seq().await.is_ok_and(|last| (k + 1) * PACK_EVENTS > last.0);
        let stale = match beyond {
            true => Some(format!("pack {k} ends past the stream's end")),
            false => match packs.get(remote, k).await {
                Err(PackError::Refused(why)) => Some(why),
                _ => None,
            },
        };
        let Some(why) = stale else { return present };
        tracing::warn!(stream = %packs.name, %why, "the packs are another log's: purging them, packing this one");
        let purged = match packs.js.get_stream_no_info(&packs.name).await {
            Ok(stream) => stream.purge().await.map(|_| ()).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match purged {
            Ok(()) => BTreeSet::new(),
            Err(e) => {
                tracing::warn!(error = %e, "purging the packs stream");
                present
            }
        }
    }

    async fn run(packs: &Packs, remote: &Remote, replica: &Replica, mut present: BTreeSet<u64>) {
        let max_payload = remote.js.client().server_info().max_payload.max(PACK_OVERHEAD * 2) - PACK_OVERHEAD;
        let mut ranges = replica.complete_ranges();
        let mut next = 0;
        loop {
            let complete = *ranges.borrow_and_update();
            while next < complete {
                if !present.remove(&next) {
                    if let Err(why) = Packer::pack(packs, replica, next, max_payload).await {
                        tracing::warn!(pack = next, %why, "packing; a new device fetches this range from the stream");
                    }
                }
                next += 1;
                packs.packed.send_replace(next);
            }
            if ranges.changed().await.is_err() {
                return;
            }
        }
    }

    /// Publishes pack `k` from the copy, unless the server has it.
    async fn pack(packs: &Packs, replica: &Replica, k: u64, max_payload: usize) -> Result<(), String> {
        let (from, to) = (Seq(k * PACK_EVENTS + 1), Seq((k + 1) * PACK_EVENTS));
        let local = replica.local().clone();
        let frames = tokio::task::spawn_blocking(move || {
            let mut frames = Vec::new();
            local.frames_between(from, to, &mut frames).map(|n| (n, frames))
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
        let (n, frames) = frames;
        if n != PACK_EVENTS {
            return Err(format!("the copy holds {n} of its {PACK_EVENTS} events"));
        }
        if frames.len() > max_payload {
            tracing::debug!(
                pack = k,
                bytes = frames.len(),
                max_payload,
                "a pack over the server's max_payload: not packed"
            );
            return Ok(());
        }
        // No message id: the server's duplicate window would take a pack
        // of a log recreated within it for the old one's. The subject's
        // expected sequence alone keeps the first (a retried publish
        // whose acknowledgement was lost is refused, as another device's).
        let message = PublishMessage::build().payload(frames.into()).expected_last_subject_sequence(0);
        let ack = packs.js.send_publish(packs.subject(k), message).await.map_err(|e| e.to_string())?;
        match ack.await {
            Ok(_) => Ok(()),
            // Another device packed it first (rule 2).
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Waits until the packer has considered every range complete at `head`,
/// for as long as it moves within `stall`: what a flush of the log waits
/// for, so that a device joining after an import finds the packs.
pub(super) async fn wait_packed(packs: &Packs, head: Seq, stall: Duration) {
    let want = head.0 / PACK_EVENTS;
    let mut rx = packs.packed.subscribe();
    while *rx.borrow_and_update() < want {
        match tokio::time::timeout(stall, rx.changed()).await {
            Ok(Ok(())) => {}
            _ => {
                tracing::warn!(head = %head, "the packs lag the log; the next device fetches the rest from the stream");
                return;
            }
        }
    }
}
