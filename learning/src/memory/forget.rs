//! Forgetting (issue #14 item 5): what a user's "forget this" retracts,
//! decided once and written down as one `memory.forgotten`.
//!
//! The decision is made here, against what the assistant knows when the
//! user asks; the event then lists exactly what it retracts, so every fold
//! that replays it (the graph, the diary, at every start and `rebuild`)
//! drops the same things without deciding again.
//!
//! | asked | retracts |
//! |---|---|
//! | a text (`engram forget Turin`) | every graph fact holding it (any branch, case-insensitive), every diary sentence holding it, earlier or later, and every passage of the memory index holding it (said before the retraction) |
//! | a session (`engram forget --session s-12`) | the facts that session's summary added (still held), its summaries leave the diary, its passages leave the memory index |
//!
//! What it does **not** do: erase. The log is append-only; the utterances,
//! summaries and facts stay in it (`engram export` shows them), and a fact
//! taught again later is learnt again. `docs/memory.md` says what would
//! erase the text itself.

use std::collections::BTreeMap;

use chrono::FixedOffset;

use engram_events::payloads::{ForgottenFact, MemoryForgotten};
use engram_events::{Envelope, Event, EventKind, SessionId};
use engram_local_state::projector::Projection;

use super::{Diary, PassageIndex};
use crate::projections::Graph;

/// What a user asks to forget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Forget {
    /// Every fact and diary sentence holding this text.
    Text(String),
    /// Everything this session taught.
    Session(SessionId),
}

impl std::fmt::Display for Forget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Forget::Text(t) => write!(f, "{t:?}"),
            Forget::Session(s) => write!(f, "session {s}"),
        }
    }
}

/// Why nothing was forgotten: nothing is appended.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForgetError {
    /// An empty or blank text would match everything.
    #[error("nothing to forget: the text is empty")]
    Empty,
    /// No fact or diary entry holds the text / the session taught nothing.
    #[error("nothing the assistant learnt matches {0}")]
    NoMatch(String),
    /// The log could not be read or appended to.
    #[error(transparent)]
    Log(#[from] engram_storage::LogError),
}

/// Retracts `what` in `log`: folds what the assistant learnt from the log,
/// decides what `what` retracts ([`Memory::retraction`]) and appends it as
/// one `memory.forgotten` by `actor`. Returns the event as appended. The
/// runtime's actors fold it like any other event; a CLI run appends it for
/// the next start.
pub fn forget(
    log: &dyn engram_storage::EventLog,
    what: &Forget,
    actor: engram_events::ActorKind,
) -> Result<Envelope, ForgetError> {
    let memory = Memory::from_log(log)?;
    let mut env = Envelope::new(actor, memory.retraction(what)?);
    env.seq = log.append(vec![env.clone()])?[0].seq();
    Ok(env)
}

/// The kinds [`Memory`] folds.
pub const FORGET_KINDS: &[EventKind] = &[
    EventKind::SummaryWritten,
    EventKind::GraphFactAdded,
    EventKind::GraphNodeMerged,
    EventKind::MemoryForgotten,
    EventKind::PassagesIndexed,
];

/// What the assistant has learnt, as far as forgetting needs it: the
/// graph, which session added which fact, and the diary (the one fold of
/// summaries and retractions the prompts read).
pub struct Memory {
    graph: Graph,
    /// Facts each session's summary added: (branch, node, fact).
    taught: BTreeMap<SessionId, Vec<ForgottenFact>>,
    /// The diary (its days do not matter here: any offset).
    diary: Diary,
    /// What was said (the memory index; no vectors are searched here).
    passages: PassageIndex,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            graph: Graph::default(),
            taught: BTreeMap::new(),
            diary: Diary::new(FixedOffset::east_opt(0).expect("UTC")),
            passages: PassageIndex::new(FixedOffset::east_opt(0).expect("UTC"), None),
        }
    }
}

impl Memory {
    /// What the assistant learnt, folded from `log` (a damaged record is
    /// read around: `engram verify` names it).
    pub fn from_log(log: &dyn engram_storage::EventLog) -> Result<Memory, ForgetError> {
        let mut memory = Memory::default();
        for env in log.read_kinds(engram_events::Seq::FIRST, FORGET_KINDS) {
            match env {
                Ok(env) => memory.observe(&env),
                Err(e) if e.is_record_damage() => tracing::warn!("forget: {e}"),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(memory)
    }

    /// Folds one event (the [`FORGET_KINDS`]; the rest are ignored).
    pub fn observe(&mut self, env: &Envelope) {
        match &env.event {
            Event::GraphFactAdded(f) => {
                if let Some(s) = &env.session {
                    let fact = ForgottenFact { branch: f.branch, node: f.node.clone(), fact: f.fact.clone() };
                    self.taught.entry(s.clone()).or_default().push(fact);
                }
            }
            Event::MemoryForgotten(m) => {
                for s in &m.sessions {
                    self.taught.remove(s);
                }
            }
            _ => {}
        }
        self.diary.observe(env);
        self.passages.observe(env);
        self.graph.apply(env);
        self.graph.forget_changes();
    }

    /// The retraction `what` asks for, or why there is none.
    pub fn retraction(&self, what: &Forget) -> Result<MemoryForgotten, ForgetError> {
        let held = |f: &ForgottenFact| self.graph.facts(f.branch, &f.node).contains(&f.fact);
        let (facts, sessions, phrases) = match what {
            Forget::Text(text) => {
                let needle = text.trim().to_lowercase();
                if needle.is_empty() {
                    return Err(ForgetError::Empty);
                }
                let facts: Vec<ForgottenFact> = self
                    .graph
                    .iter()
                    .flat_map(|n| {
                        n.facts.iter().map(|f| ForgottenFact {
                            branch: n.branch,
                            node: n.node.clone(),
                            fact: f.clone(),
                        })
                    })
                    .filter(|f| f.fact.to_lowercase().contains(&needle))
                    .collect();
                let in_diary = self.diary.entries().any(|e| e.text.to_lowercase().contains(&needle));
                let said = self.passages.passages().any(|p| p.text.to_lowercase().contains(&needle));
                if facts.is_empty() && !in_diary && !said {
                    return Err(ForgetError::NoMatch(what.to_string()));
                }
                (facts, Vec::new(), vec![text.trim().to_owned()])
            }
            Forget::Session(session) => {
                let mut facts: Vec<ForgottenFact> = Vec::new();
                for f in self.taught.get(session).into_iter().flatten() {
                    if held(f) && !facts.contains(f) {
                        facts.push(f.clone());
                    }
                }
                let summarised = self.diary.summarises(session);
                let said = self.passages.passages().any(|p| p.session.as_ref() == Some(session));
                if facts.is_empty() && !summarised && !said {
                    return Err(ForgetError::NoMatch(what.to_string()));
                }
                (facts, vec![session.clone()], Vec::new())
            }
        };
        Ok(MemoryForgotten { request: what.to_string(), facts, sessions, phrases })
    }

    /// The graph as it stands (after every retraction folded so far).
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::{ExtractorKind, GraphBranch, GraphFactAdded, SummariserKind, SummaryWritten};
    use engram_events::ActorKind;

    fn in_session(s: &str, event: impl Into<Event>) -> Envelope {
        Envelope::new(ActorKind::Graph, event).with_session(SessionId::new(s))
    }

    fn fact(s: &str, node: &str, text: &str) -> Envelope {
        in_session(
            s,
            GraphFactAdded {
                branch: GraphBranch::User,
                node: node.into(),
                fact: text.into(),
                extractor: ExtractorKind::Rule,
            },
        )
    }

    fn summary(s: &str, text: &str) -> Envelope {
        in_session(
            s,
            SummaryWritten {
                summary: text.into(),
                topics: vec![],
                summariser: SummariserKind::Extractive,
                turns_covered: 1,
            },
        )
    }

    fn memory() -> Memory {
        let mut m = Memory::default();
        for e in [
            summary("s-1", "My name is Ada. I live in Turin."),
            fact("s-1", "identity", "My name is Ada"),
            fact("s-1", "location", "I live in Turin"),
            summary("s-2", "I like jazz."),
            fact("s-2", "preferences", "I like jazz"),
        ] {
            m.observe(&e);
        }
        m
    }

    #[test]
    fn a_text_retracts_the_facts_holding_it_and_the_phrase() {
        let m = memory();
        let r = m.retraction(&Forget::Text("turin".into())).unwrap();
        assert_eq!(r.facts.len(), 1);
        assert_eq!(r.facts[0].fact, "I live in Turin");
        assert_eq!(r.phrases, ["turin"]);
        assert!(r.sessions.is_empty());
        assert!(matches!(m.retraction(&Forget::Text("  ".into())), Err(ForgetError::Empty)));
        assert!(matches!(m.retraction(&Forget::Text("Lisbon".into())), Err(ForgetError::NoMatch(_))));
    }

    #[test]
    fn a_session_retracts_what_it_taught_and_once_folded_nothing_is_left() {
        let mut m = memory();
        let r = m.retraction(&Forget::Session(SessionId::new("s-1"))).unwrap();
        let facts: Vec<&str> = r.facts.iter().map(|f| f.fact.as_str()).collect();
        assert_eq!(facts, ["My name is Ada", "I live in Turin"]);
        assert_eq!(r.sessions, [SessionId::new("s-1")]);
        m.observe(&Envelope::new(ActorKind::Cli, r));
        assert!(m.graph().facts(GraphBranch::User, "identity").is_empty());
        assert_eq!(m.graph().facts(GraphBranch::User, "preferences"), ["I like jazz"]);
        // Asked again: nothing left to forget, nothing appended.
        assert!(matches!(m.retraction(&Forget::Session(SessionId::new("s-1"))), Err(ForgetError::NoMatch(_))));
        assert!(matches!(m.retraction(&Forget::Session(SessionId::new("s-9"))), Err(ForgetError::NoMatch(_))));
    }

    #[test]
    fn what_was_only_said_is_forgotten_too() {
        use engram_events::payloads::{Passage, PassagesIndexed, Speaker};
        let mut m = Memory::default();
        let said = PassagesIndexed {
            passages: vec![Passage {
                text: "the box had seven crushed corners".into(),
                speaker: Speaker::User,
                vector: None,
            }],
        };
        m.observe(&Envelope::new(ActorKind::Memory, said).with_session(SessionId::new("s-7")));
        // No fact, no diary entry: the passage alone is something to forget.
        let r = m.retraction(&Forget::Text("crushed corners".into())).unwrap();
        assert_eq!(r.phrases, ["crushed corners"]);
        assert!(m.retraction(&Forget::Session(SessionId::new("s-7"))).is_ok());
        m.observe(&Envelope::new(ActorKind::Cli, r));
        assert!(matches!(m.retraction(&Forget::Text("crushed corners".into())), Err(ForgetError::NoMatch(_))));
        assert!(matches!(m.retraction(&Forget::Session(SessionId::new("s-7"))), Err(ForgetError::NoMatch(_))));
    }
}
