//! What the log tests of every backend append and read back.

use engram_events::payloads::{SessionEndReason, SessionEnded};
use engram_events::{ActorKind, Envelope, Event, SessionId};

/// Event `i`: a `session.ended` whose `turns` is `i`, in one of seven
/// sessions (`s-{i % 7}`), with a fresh id.
pub fn event(i: u32) -> Envelope {
    Envelope::new(ActorKind::Host, SessionEnded { reason: SessionEndReason::Host, turns: i })
        .with_session(SessionId::new(format!("s-{}", i % 7)))
}

/// The `i` an [`event`] was made from.
pub fn turns_of(env: &Envelope) -> u32 {
    match &env.event {
        Event::SessionEnded(p) => p.turns,
        other => panic!("unexpected {other:?}"),
    }
}
