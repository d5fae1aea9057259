//! The append path: rules 3 and 4 of the module docs.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::context::{PublishAckFuture, PublishErrorKind};
use async_nats::jetstream::message::PublishMessage;
use crossbeam_channel::Sender;
use engram_events::codec::binary;
use engram_events::{Envelope, EventId, Seq};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::remote::Remote;
use super::replica::{Incoming, Replica, CATCH_UP_STALL};
use super::{BATCH_LEFT_HEADER, BATCH_WAIT};
use crate::error::LogError;
use crate::event_log::{AppendOutcome, AppendTicket, EventLog};

/// Most events one round of publishing takes from the queue.
const MAX_GROUP_EVENTS: usize = 16_384;

/// A submitted batch and where its outcomes go.
struct Job {
    events: Vec<Envelope>,
    ack: Sender<Result<Vec<AppendOutcome>, LogError>>,
}

/// Takes batches in submission order and publishes them, one group of
/// queued batches at a time — or lets a lone appender publish its own
/// batch on its own thread ([`Publisher::append_here`]).
pub(super) struct Publisher {
    tx: Option<mpsc::UnboundedSender<Job>>,
    /// Batches submitted and not answered yet: a caller publishes its own
    /// only when none is, so that nothing it submitted before is overtaken.
    in_flight: Arc<AtomicUsize>,
    /// The right to publish a round: the task takes it for each group, a
    /// lone appender for its own batch.
    turn: Arc<tokio::sync::Mutex<()>>,
    remote: Arc<Remote>,
    replica: Arc<Replica>,
}

impl Publisher {
    pub(super) fn start(runtime: &tokio::runtime::Runtime, remote: Arc<Remote>, replica: Arc<Replica>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let turn = Arc::new(tokio::sync::Mutex::new(()));
        let task =
            Task { in_flight: in_flight.clone(), turn: turn.clone(), remote: remote.clone(), replica: replica.clone() };
        runtime.spawn(task.run(rx));
        Publisher { tx: Some(tx), in_flight, turn, remote, replica }
    }

    pub(super) fn submit(&self, events: Vec<Envelope>) -> Result<AppendTicket, LogError> {
        let (ack, rx) = crossbeam_channel::bounded(1);
        let tx = self.tx.as_ref().ok_or(LogError::WriterStopped)?;
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        if tx.send(Job { events, ack }).is_err() {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            return Err(LogError::WriterStopped);
        }
        Ok(AppendTicket::new(rx))
    }

    /// Publishes `events` on the caller's thread when the publisher is
    /// idle — nothing submitted unanswered, no round under way — and the
    /// caller is not on a tokio runtime: a lone appender then waits for
    /// the server's round trip and the copy's write, not for two thread
    /// hops besides (≈ 20–30 µs of a ≈ 150 µs append on loopback here,
    /// the sled log's [`SledLog::append`](crate::SledLog) does the same).
    /// Otherwise gives the events back, for [`Publisher::submit`] (group
    /// commit: the task takes every batch queued meanwhile at once).
    pub(super) fn append_here(
        &self,
        runtime: &tokio::runtime::Runtime,
        events: Vec<Envelope>,
    ) -> Result<Result<Vec<AppendOutcome>, LogError>, Vec<Envelope>> {
        if self.tx.is_none() || tokio::runtime::Handle::try_current().is_ok() {
            return Err(events);
        }
        if self.in_flight.load(Ordering::Acquire) != 0 {
            return Err(events);
        }
        let Ok(_turn) = self.turn.try_lock() else { return Err(events) };
        // Checked again with the turn held: a batch submitted since is ahead.
        if self.in_flight.load(Ordering::Acquire) != 0 {
            return Err(events);
        }
        let refs: Vec<&Envelope> = events.iter().collect();
        Ok(runtime.block_on(append(&self.remote, &self.replica, &refs)))
    }

    /// Stops taking batches; those queued are still published.
    pub(super) fn stop(&mut self) {
        self.tx = None;
    }
}

/// The publishing task's share of the [`Publisher`].
struct Task {
    in_flight: Arc<AtomicUsize>,
    turn: Arc<tokio::sync::Mutex<()>>,
    remote: Arc<Remote>,
    replica: Arc<Replica>,
}

impl Task {
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Job>) {
        while let Some(first) = rx.recv().await {
            let _turn = self.turn.lock().await;
            // Group commit: every batch queued meanwhile goes in the same round.
            let mut jobs = vec![first];
            let mut total = jobs[0].events.len();
            while total < MAX_GROUP_EVENTS {
                match rx.try_recv() {
                    Ok(job) => {
                        total += job.events.len();
                        jobs.push(job);
                    }
                    Err(_) => break,
                }
            }
            let events: Vec<&Envelope> = jobs.iter().flat_map(|j| j.events.iter()).collect();
            let result = append(&self.remote, &self.replica, &events).await;
            drop(events);
            let answered = jobs.len();
            self.answer(jobs, result);
            self.in_flight.fetch_sub(answered, Ordering::AcqRel);
        }
    }

    /// Gives each job of a round its outcomes, or the round's error.
    fn answer(&self, jobs: Vec<Job>, result: Result<Vec<AppendOutcome>, LogError>) {
        match result {
            Ok(outcomes) => {
                let mut outcomes = outcomes.into_iter();
                for job in jobs {
                    let mine = outcomes.by_ref().take(job.events.len()).collect();
                    let _ = job.ack.send(Ok(mine));
                }
            }
            Err(e) => {
                let what = e.to_string();
                let mut jobs = jobs.into_iter();
                if let Some(job) = jobs.next() {
                    let _ = job.ack.send(Err(e));
                }
                for job in jobs {
                    let url = self.remote.config.url.clone();
                    let _ = job.ack.send(Err(LogError::Remote { url, what: what.clone() }));
                }
            }
        }
    }
}

/// Why one round of publishing stopped short.
enum Interrupted {
    /// Another writer appended: catch up, look the ids up again.
    Overtaken,
    /// The server did not answer, or refused for a passing reason.
    Unavailable(String),
}

/// Appends `events` as one batch (rule 3: new ids only, each expecting the
/// one before; rule 4: never inside another writer's batch), retrying until
/// [`super::JetStreamConfig::append_timeout`].
async fn append(remote: &Remote, replica: &Replica, events: &[&Envelope]) -> Result<Vec<AppendOutcome>, LogError> {
    let deadline = Instant::now() + remote.config.append_timeout;
    let mut outcomes: Vec<Option<AppendOutcome>> = vec![None; events.len()];
    // Envelopes repeating an id earlier in the batch: where the first is.
    let mut first_of: HashMap<EventId, usize> = HashMap::new();
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if let Some(&first) = first_of.get(&e.id) {
            repeats.push((i, first));
        } else {
            first_of.insert(e.id, i);
        }
    }
    let repeated: std::collections::HashSet<usize> = repeats.iter().map(|&(i, _)| i).collect();
    loop {
        let base = replica.local().head();
        let mut fresh = Vec::new();
        for (i, e) in events.iter().enumerate() {
            if outcomes[i].is_some() || repeated.contains(&i) {
                continue;
            }
            match replica.local().seq_of(e.id)? {
                Some(seq) => outcomes[i] = Some(AppendOutcome::Existing(seq)),
                None => fresh.push(i),
            }
        }
        if fresh.is_empty() {
            break;
        }
        if replica.ends_in_open_batch() && replica.wait_batch_closed(BATCH_WAIT).await {
            continue;
        }
        let interrupted = match publish(remote, replica, events, &fresh, base, &mut outcomes).await {
            Ok(()) => continue,
            Err(i) => i,
        };
        if Instant::now() >= deadline {
            let why = match interrupted {
                Interrupted::Overtaken => "other writers kept appending".to_owned(),
                Interrupted::Unavailable(why) => why,
            };
            return Err(
                remote.error(format!("append not acknowledged within {:?}: {why}", remote.config.append_timeout))
            );
        }
        match interrupted {
            Interrupted::Overtaken => {
                // The copy catches up to what the server has now.
                match remote.last_seq().await {
                    Ok(last) => replica.wait_for(last, CATCH_UP_STALL).await?,
                    Err(e) => tracing::warn!(error = %e, "looking the stream's end up"),
                }
            }
            Interrupted::Unavailable(why) => {
                tracing::warn!(%why, "append not acknowledged; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                // What a lost acknowledgement may have stored is read back
                // before the ids are looked up again.
                if let Ok(last) = remote.last_seq().await {
                    replica.wait_for(last, CATCH_UP_STALL).await?;
                }
            }
        }
    }
    for (i, first) in repeats {
        outcomes[i] = Some(AppendOutcome::Existing(outcomes[first].expect("the first of an id has its outcome").seq()));
    }
    Ok(outcomes.into_iter().map(|o| o.expect("every event has its outcome")).collect())
}

/// Most publishes awaiting their acknowledgement at once: the client
/// holds at most 5 000 (a permit each, returned with the acknowledgement),
/// so a round of more must take acknowledgements as it goes.
const ACK_WINDOW: usize = 1024;

/// One round: publishes `fresh` back to back after `base`, then applies
/// what the server acknowledged to the copy. `Ok` when every one of them
/// was stored or found a duplicate.
async fn publish(
    remote: &Remote,
    replica: &Replica,
    events: &[&Envelope],
    fresh: &[usize],
    base: Seq,
    outcomes: &mut [Option<AppendOutcome>],
) -> Result<(), Interrupted> {
    let mut pending: VecDeque<(usize, PublishAckFuture)> = VecDeque::with_capacity(ACK_WINDOW.min(fresh.len()));
    // Acknowledged positions run on from `base`; they are applied together.
    let mut stored: Vec<Incoming> = Vec::new();
    let mut interrupted = None;
    for (k, &i) in fresh.iter().enumerate() {
        // The frame carries the position it is meant for, as the sled log's
        // frames do: a copy compares byte for byte.
        let mut event = events[i].clone();
        event.seq = Seq(base.0 + 1 + k as u64);
        let mut message = PublishMessage::build()
            .payload(binary::encode(&event).into())
            .message_id(event.id.to_string())
            .expected_last_sequence(base.0 + k as u64)
            .header(BATCH_LEFT_HEADER, (fresh.len() - 1 - k).to_string());
        if k > 0 {
            // Chained to the message before: if that one was refused, so is
            // this one, even where its position happens to be free (a
            // stale base a few events behind would otherwise let the tail
            // of the batch land after another writer's events).
            message = message.expected_last_message_id(events[fresh[k - 1]].id.to_string());
        }
        match remote.js.send_publish(remote.subject.clone(), message).await {
            Ok(ack) => pending.push_back((i, ack)),
            Err(e) => {
                interrupted = Some(Interrupted::Unavailable(e.to_string()));
                break;
            }
        }
        if pending.len() >= ACK_WINDOW {
            let (i, ack) = pending.pop_front().expect("a full window");
            if let Err(e) = settle(i, ack, events, outcomes, &mut stored).await {
                interrupted = Some(e);
                break;
            }
        }
    }
    if interrupted.is_none() {
        while let Some((i, ack)) = pending.pop_front() {
            if let Err(e) = settle(i, ack, events, outcomes, &mut stored).await {
                interrupted = Some(e);
                break;
            }
        }
    }
    if !stored.is_empty() {
        if let Err(e) = tokio::task::block_in_place(|| replica.apply(stored)) {
            // The stream has them; the follower brings them if this failed.
            tracing::warn!(error = %e, "applying acknowledged events to the local copy");
        }
    }
    match interrupted {
        None => Ok(()),
        Some(i) => Err(i),
    }
}

/// Takes the acknowledgement of `events[i]`'s publish: stored (into
/// `stored`), a duplicate, or why the round stops.
async fn settle(
    i: usize,
    ack: PublishAckFuture,
    events: &[&Envelope],
    outcomes: &mut [Option<AppendOutcome>],
    stored: &mut Vec<Incoming>,
) -> Result<(), Interrupted> {
    match ack.await {
        Ok(ack) if ack.duplicate => {
            // Within the server's duplicate window: the id is stored
            // already, where the acknowledgement says. What follows
            // expected this one to take a position, and fails.
            outcomes[i] = Some(AppendOutcome::Existing(Seq(ack.sequence)));
            Ok(())
        }
        Ok(ack) => {
            let seq = Seq(ack.sequence);
            stored.push(Incoming { seq, event: events[i].clone(), batch_left: 0 });
            outcomes[i] = Some(AppendOutcome::Appended(seq));
            Ok(())
        }
        Err(e) if matches!(e.kind(), PublishErrorKind::WrongLastSequence | PublishErrorKind::WrongLastMessageId) => {
            Err(Interrupted::Overtaken)
        }
        Err(e) => Err(Interrupted::Unavailable(e.to_string())),
    }
}
