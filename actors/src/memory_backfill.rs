//! The memory back-fill (issue 41, item 5): a data dir's history indexed
//! after the fact, so the reply loop recalls what was said in
//! conversations imported, or held before the memory indexer existed.
//!
//! The memory indexer ([`crate::roles::memory_indexer`]) sees only the
//! turns that complete while it runs: an actor new to a data dir starts at
//! the log's end, and `engram import` derives what the reactors derive,
//! not what the actors do. The back-fill reads the log's completed turns
//! and appends, for each one not indexed yet, the `memory.passages_indexed`
//! the indexer would have appended.
//!
//! # Rules
//!
//! 1. **The indexer's own events.** The same passages ([`passages_of`]:
//!    the request, embedded with the questions the session's last indexed
//!    reply ended on, and the reply when a model wrote it) with the same
//!    derived id (from the `turn.completed`), at the turn's time. So a turn
//!    the indexer did index is skipped (its id is in the log), a back-fill
//!    run twice appends nothing the second time, and one interrupted
//!    completes when run again.
//! 2. **History up to the head at the start.** What is appended while it
//!    runs (its own events, or a live runtime's) is not read: the indexer
//!    handles live turns.
//! 3. **Batches, fixed by the log.** The log's completed turns, counted
//!    from its start, fall in groups of [`BATCH_TURNS`]; a group's turns
//!    not indexed yet are embedded in one call and appended in one durable
//!    append. So a year of turns costs batches of inference, not a call a
//!    turn; a crash loses at most a group's work, never an event already
//!    appended; and a run resumed after a crash embeds the same groups a
//!    clean run would — the same batches, the same vectors bit for bit.
//! 4. **Appended at the end**, as any actor's work is: the reply loop folds
//!    them when it catches up, whatever its checkpoint.

use std::collections::HashMap;

use engram_events::payloads::PassagesIndexed;
use engram_events::{derived, derived_id, ActorKind, Envelope, Event, EventKind, Seq, TurnId};
use engram_learning::embedder::Embedder;
use engram_storage::{EventLog, LogError};

use crate::roles::memory_indexer::{passages_of, reply_kept, TurnSaid};
use engram_learning::memory::passages::Questions;

/// The log's completed turns per group, embedded and appended together
/// (rule 3).
pub const BATCH_TURNS: usize = 64;

/// What a back-fill found and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Backfill {
    /// Completed turns read.
    pub turns: u64,
    /// Of those, indexed already (by the indexer, or a back-fill before).
    pub already_indexed: u64,
    /// Turns indexed now (each one `memory.passages_indexed`).
    pub turns_indexed: u64,
    /// Passages appended now.
    pub passages: u64,
    /// Passages appended now without a vector (no embedder, or it failed:
    /// found by their words alone).
    pub without_vectors: u64,
}

/// A completed turn waiting for its batch.
struct Pending {
    cause: Envelope,
    request: String,
    reply: Option<String>,
    asked: Option<String>,
}

/// How many completed turns of `log` have no `memory.passages_indexed`
/// yet: what [`backfill`] would index now (one read of the log's turns;
/// no model needed to count).
pub fn unindexed(log: &dyn EventLog) -> Result<u64, LogError> {
    let head = log.head();
    let mut n = 0;
    for env in log.read_kinds(Seq::FIRST, &[EventKind::TurnCompleted]) {
        let env = env?;
        if env.seq > head {
            break;
        }
        if log.seq_of(derived_id(&env, EventKind::PassagesIndexed, 0))?.is_none() {
            n += 1;
        }
    }
    Ok(n)
}

/// Indexes every completed turn of `log`, up to its head now, that has no
/// `memory.passages_indexed` yet, embedding with `embedder` (none:
/// passages without vectors). `progress(turns)` is called after each
/// batch with the turns embedded so far.
pub fn backfill(
    log: &dyn EventLog,
    embedder: Option<&dyn Embedder>,
    mut progress: impl FnMut(u64),
) -> Result<Backfill, LogError> {
    let head = log.head();
    let mut stats = Backfill::default();
    let mut replies: HashMap<TurnId, String> = HashMap::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut asking = Questions::default();
    for env in log.read_kinds(Seq::FIRST, &[EventKind::ReplyDelivered, EventKind::TurnCompleted]) {
        let env = env?;
        if env.seq > head {
            break;
        }
        match &env.event {
            Event::ReplyDelivered(r) => {
                if let Some(turn) = env.turn {
                    replies.insert(turn, r.text.clone());
                }
            }
            Event::TurnCompleted(t) => {
                stats.turns += 1;
                let reply = env.turn.and_then(|turn| replies.remove(&turn)).filter(|_| reply_kept(t));
                let asked = asking.take(env.session.as_ref());
                asking.after(env.session.as_ref(), reply.as_deref());
                if log.seq_of(derived_id(&env, EventKind::PassagesIndexed, 0))?.is_none() {
                    pending.push(Pending { request: t.text.clone(), reply, asked, cause: env });
                } else {
                    stats.already_indexed += 1;
                }
                // Rule 3: a group ends at every BATCH_TURNS-th turn of the log.
                if stats.turns % BATCH_TURNS as u64 == 0 && !pending.is_empty() {
                    append_batch(log, embedder, std::mem::take(&mut pending), &mut stats)?;
                    progress(stats.turns - stats.already_indexed);
                }
            }
            _ => {}
        }
    }
    append_batch(log, embedder, pending, &mut stats)?;
    progress(stats.turns - stats.already_indexed);
    Ok(stats)
}

/// Embeds and appends one batch (rules 1 and 3).
fn append_batch(
    log: &dyn EventLog,
    embedder: Option<&dyn Embedder>,
    batch: Vec<Pending>,
    stats: &mut Backfill,
) -> Result<(), LogError> {
    if batch.is_empty() {
        return Ok(());
    }
    let turns: Vec<TurnSaid<'_>> = batch
        .iter()
        .map(|p| TurnSaid { request: p.request.as_str(), reply: p.reply.as_deref(), asked: p.asked.as_deref() })
        .collect();
    let passages = passages_of(embedder, &turns);
    let events: Vec<Envelope> = batch
        .iter()
        .zip(passages)
        .filter(|(_, passages)| !passages.is_empty())
        .map(|(p, passages)| {
            stats.turns_indexed += 1;
            stats.passages += passages.len() as u64;
            stats.without_vectors += passages.iter().filter(|p| p.vector.is_none()).count() as u64;
            derived(&p.cause, ActorKind::Memory, PassagesIndexed { passages }, 0)
        })
        .collect();
    if !events.is_empty() {
        log.append(events)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::{ReplyDelivered, RouteLayer, TurnCompleted};
    use engram_events::SessionId;
    use engram_learning::embedder::EmbedError;
    use engram_storage::{LogConfig, SledLog};

    /// Letters counted: enough to tell that vectors were made.
    struct Letters;

    impl Embedder for Letters {
        fn model_id(&self) -> &str {
            "letters-v1"
        }
        fn dim(&self) -> usize {
            26
        }
        fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
            let mut v = vec![0.0f32; 26];
            for c in text.to_lowercase().chars().filter(char::is_ascii_lowercase) {
                v[(c as u8 - b'a') as usize] += 1.0;
            }
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::EPSILON);
            Ok(v.into_iter().map(|x| x / n).collect())
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            texts.iter().map(|t| self.embed(t)).collect()
        }
    }

    fn turn(n: u32, text: &str, reply: &str, model: Option<&str>) -> Vec<Envelope> {
        let turn = TurnId::derive(chrono::Utc::now(), &[b"t", &n.to_be_bytes()]);
        let delivered = ReplyDelivered { text: reply.to_owned(), layer: RouteLayer::Planner, latency_ms: 1 };
        let completed = TurnCompleted {
            turn_number: n,
            text: text.to_owned(),
            layer: RouteLayer::Planner,
            model: model.map(str::to_owned),
            steps: Vec::new(),
            tools_ok: true,
            planner_ms: 1,
            latency_ms: 1,
            cost_usd: rust_decimal::Decimal::ZERO,
            pricing_version: "none".into(),
        };
        [Event::from(delivered), Event::from(completed)]
            .into_iter()
            .map(|e| Envelope::new(ActorKind::Host, e).with_session(SessionId::new("s-1")).with_turn(turn))
            .collect()
    }

    fn indexed(log: &dyn EventLog) -> Vec<PassagesIndexed> {
        payloads(log.read_kinds(Seq::FIRST, &[EventKind::PassagesIndexed]).map(Result::unwrap))
    }

    fn payloads(events: impl IntoIterator<Item = Envelope>) -> Vec<PassagesIndexed> {
        events
            .into_iter()
            .map(|e| match e.event {
                Event::PassagesIndexed(p) => p,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn history_is_indexed_once_with_a_models_reply_and_not_an_offline_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        let mut events = turn(1, "the outer box had seven crushed corners", "Noted: seven.", Some("ollama:qwen"));
        events.extend(turn(2, "what time is it", "It is 10:00.", Some("offline:rules")));
        log.append(events).unwrap();
        let mut calls = 0;
        let first = backfill(&log, Some(&Letters), |_| calls += 1).unwrap();
        assert_eq!((first.turns, first.already_indexed, first.turns_indexed), (2, 0, 2));
        assert_eq!(first.passages, 3, "the request and the model's reply; the offline reply is not kept");
        assert_eq!(first.without_vectors, 0);
        assert!(calls >= 1);
        let held = indexed(&log);
        assert_eq!(held.len(), 2);
        assert_eq!(held[0].passages[0].text, "the outer box had seven crushed corners");
        assert_eq!(held[0].passages[1].text, "Noted: seven.");
        assert!(held.iter().flat_map(|p| &p.passages).all(|p| p.vector.is_some()));
        // Rule 1: a second run appends nothing.
        let second = backfill(&log, Some(&Letters), |_| {}).unwrap();
        assert_eq!((second.turns, second.already_indexed, second.turns_indexed), (2, 2, 0));
        assert_eq!(indexed(&log).len(), 2);
    }

    /// The back-fill embeds an answer with the questions the reply before
    /// it ended on, as the live indexer does: the same vectors either way.
    #[test]
    fn an_answer_is_embedded_with_its_question_as_the_indexer_embeds_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        let mut events = turn(1, "I took a road trip", "Great! Where did you go?", Some("ollama:qwen"));
        events.extend(turn(2, "Woodhaven", "Lovely.", Some("ollama:qwen")));
        log.append(events.clone()).unwrap();
        backfill(&log, Some(&Letters), |_| {}).unwrap();
        let held = indexed(&log);
        let woodhaven = held[1].passages[0].vector.clone().unwrap();
        let alone = engram_learning::memory::passages::quantize("letters-v1", &Letters.embed("Woodhaven").unwrap());
        let with_question = engram_learning::memory::passages::quantize(
            "letters-v1",
            &Letters.embed("Where did you go? Woodhaven").unwrap(),
        );
        assert_eq!(woodhaven, with_question);
        assert_ne!(woodhaven, alone);
        // The live indexer, fed the same turns, derives the same passages.
        let mut indexer = crate::roles::memory_indexer::MemoryIndexer::new(Some(std::sync::Arc::new(Letters)));
        let other = tempfile::tempdir().unwrap();
        let open = engram_storage::OpenLog::from_sled(SledLog::open(other.path(), LogConfig::default()).unwrap());
        let bus = crate::bus::Bus::new(&open).unwrap();
        let mut live = Vec::new();
        for e in &events {
            live.extend(crate::shell::Role::handle(&mut indexer, e, &bus));
        }
        assert_eq!(payloads(live), held);
    }

    #[test]
    fn a_turn_the_indexer_indexed_is_skipped_and_without_an_embedder_words_remain() {
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path(), LogConfig::default()).unwrap();
        let events = turn(1, "my sister lives in Bergen", "Nice.", None);
        log.append(events.clone()).unwrap();
        // The live indexer's event for it, as the actor derives it.
        let by_indexer = derived(&events[1], ActorKind::Memory, PassagesIndexed { passages: Vec::new() }, 0);
        log.append(vec![by_indexer]).unwrap();
        log.append(turn(2, "the call with Jacob moved to Wednesday", "", None)).unwrap();
        assert_eq!(unindexed(&log).unwrap(), 1);
        let stats = backfill(&log, None, |_| {}).unwrap();
        assert_eq!(unindexed(&log).unwrap(), 0);
        assert_eq!((stats.turns, stats.already_indexed, stats.turns_indexed), (2, 1, 1));
        assert_eq!((stats.passages, stats.without_vectors), (1, 1));
    }
}
