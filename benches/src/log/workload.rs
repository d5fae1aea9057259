//! The log bench's workload: `utterance.received` envelopes whose encoded
//! frames are about the size asked for, and how they are split over the
//! appenders and into batches. Every side — the sled log, SQLite,
//! JetStream, the criterion bench — appends exactly these envelopes, so
//! their figures compare.

use engram::events::codec::binary;
use engram::events::payloads::{UtteranceReceived, UtteranceSource};
use engram::events::{ActorKind, Envelope, SessionId, TurnId};

/// The words utterance texts are made of.
const WORDS: [&str; 24] = [
    "turn", "on", "the", "kitchen", "lights", "please", "what", "is", "weather", "tomorrow", "in", "rome", "remind",
    "me", "to", "call", "mum", "at", "six", "play", "some", "jazz", "set", "timer",
];

/// Utterance text of exactly `len` bytes, varied by `i`.
fn utterance_text(i: usize, len: usize) -> String {
    let mut text = String::with_capacity(len + 16);
    // A small LCG: deterministic, different words for different events.
    let mut x = (i as u64).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    while text.len() < len {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(WORDS[(x >> 33) as usize % WORDS.len()]);
    }
    text.truncate(len);
    text
}

/// Event `i` of the workload: an `utterance.received` of session
/// `bench-sNNNNN` (16 turns each), with `text_len` bytes of text, a fresh
/// live id and the current time.
pub fn workload_event(i: usize, text_len: usize) -> Envelope {
    let session = SessionId::new(format!("bench-s{:05}", i / 16));
    let turn_number = (i % 16) as u32 + 1;
    let env = Envelope::new(
        ActorKind::Listener,
        UtteranceReceived {
            text: utterance_text(i, text_len),
            turn_number,
            source: UtteranceSource::Voice,
            lang: Some("en".to_owned()),
            model: None,
            sticky_model: None,
        },
    );
    let turn = TurnId::for_turn(&session, turn_number, env.at);
    env.with_session(session).with_turn(turn)
}

/// The text length that makes an encoded frame about `payload_bytes` long.
pub fn text_len_for(payload_bytes: usize) -> usize {
    let mut len = 64usize;
    for _ in 0..4 {
        let frame = binary::encode(&workload_event(0, len)).len();
        let next = (len as i64 + payload_bytes as i64 - frame as i64).max(9) as usize;
        if next == len {
            break;
        }
        len = next;
    }
    len
}

/// `n` workload events whose frames are about `payload_bytes` long (fresh
/// ids every call, so two calls never collide in one log).
pub fn workload(n: usize, payload_bytes: usize) -> Vec<Envelope> {
    let len = text_len_for(payload_bytes);
    (0..n).map(|i| workload_event(i, len)).collect()
}

/// Mean encoded frame size of `events`, in bytes.
pub fn mean_frame_bytes(events: &[Envelope]) -> usize {
    if events.is_empty() {
        return 0;
    }
    let mut buf = Vec::with_capacity(512);
    let mut total = 0usize;
    for env in events {
        buf.clear();
        total += binary::encode_into(env, &mut buf);
    }
    (total as f64 / events.len() as f64).round() as usize
}

/// Splits `events` over `appenders` appenders (round robin), each into
/// batches of `batch` events: what each appender thread submits, in order.
pub fn split(events: Vec<Envelope>, appenders: usize, batch: usize) -> Vec<Vec<Vec<Envelope>>> {
    let appenders = appenders.max(1);
    let batch = batch.max(1);
    let mut per: Vec<Vec<Envelope>> = vec![Vec::new(); appenders];
    for (i, env) in events.into_iter().enumerate() {
        per[i % appenders].push(env);
    }
    per.into_iter()
        .map(|evs| {
            let mut batches = Vec::with_capacity(evs.len() / batch + 1);
            let mut it = evs.into_iter().peekable();
            while it.peek().is_some() {
                batches.push(it.by_ref().take(batch).collect());
            }
            batches
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_about_the_target_size() {
        let envs = workload(100, 200);
        let mean = mean_frame_bytes(&envs);
        assert!((190..=215).contains(&mean), "mean frame {mean} B");
    }

    #[test]
    fn split_keeps_every_event_in_order() {
        let envs = workload(10, 120);
        let ids: Vec<_> = envs.iter().map(|e| e.id).collect();
        let work = split(envs, 3, 2);
        assert_eq!(work.len(), 3);
        let first: Vec<_> = work[0].iter().flatten().map(|e| e.id).collect();
        assert_eq!(first, vec![ids[0], ids[3], ids[6], ids[9]]);
        assert_eq!(work.iter().flatten().flatten().count(), 10);
        assert!(work.iter().flatten().all(|b| b.len() <= 2));
    }
}
