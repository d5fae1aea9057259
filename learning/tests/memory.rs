//! Verdicts, summaries and the knowledge graph end to end: hand-built
//! sessions (utterance, reply, turn, feedback, end) run through the judge,
//! summariser and graph reactors with `derive_all`, and the `graph`
//! projection rebuilt from the derived log.

use chrono::{DateTime, Duration, TimeZone, Utc};
use engram_events::payloads::{
    ExtractorKind, FeedbackRating, FeedbackReceived, GraphBranch, GraphFactAdded, GraphNodeMerged, JudgeKind, PlanStep,
    ReplyDelivered, RouteLayer, SessionEndReason, SessionEnded, SummariserKind, TurnCompleted, UtteranceReceived,
    UtteranceSource,
};
use engram_events::{ActorKind, Envelope, Event, EventId, SessionId, TurnId};
use engram_learning::projections::Graph;
use engram_learning::reactors::{derive_all, GraphReactor, JudgeReactor, Reactor, SummaryReactor};
use engram_local_state::projector::{digest, Projection};
use proptest::prelude::*;
use rust_decimal::Decimal;

/// 2026-11-20T09:00:00Z plus `secs`.
fn t(secs: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 9, 0, 0).unwrap() + Duration::seconds(secs)
}

/// A session being scripted: one turn every minute from `start`.
struct Sess {
    id: SessionId,
    start: i64,
    events: Vec<Envelope>,
    turns: Vec<TurnId>,
}

impl Sess {
    fn new(id: &str, start: i64) -> Self {
        Sess { id: SessionId::new(id), start, events: Vec::new(), turns: Vec::new() }
    }

    fn push(&mut self, at: DateTime<Utc>, turn: Option<TurnId>, actor: ActorKind, event: impl Into<Event>) {
        let ordinal = self.events.len() as u32;
        let id = EventId::derive(at, &[b"test", self.id.as_str().as_bytes(), &ordinal.to_be_bytes()]);
        let mut env = Envelope::at(id, at, actor, event).with_session(self.id.clone());
        env.turn = turn;
        self.events.push(env);
    }

    /// A turn: the utterance, the reply, `turn.completed` with `tools`.
    fn turn(&mut self, text: &str, reply: &str, tools: &[&str], tools_ok: bool) -> TurnId {
        let n = self.turns.len() as u32 + 1;
        let at = t(self.start + 60 * i64::from(n));
        let turn = TurnId::for_turn(&self.id, n, at);
        self.turns.push(turn);
        self.push(
            at,
            Some(turn),
            ActorKind::Listener,
            UtteranceReceived {
                text: text.into(),
                turn_number: n,
                source: UtteranceSource::Chat,
                lang: None,
                model: None,
                sticky_model: None,
            },
        );
        let done = at + Duration::seconds(2);
        self.push(
            done,
            Some(turn),
            ActorKind::ReplyLoop,
            ReplyDelivered { text: reply.into(), layer: RouteLayer::Planner, latency_ms: 2000 },
        );
        self.push(
            done,
            Some(turn),
            ActorKind::ReplyLoop,
            TurnCompleted {
                turn_number: n,
                text: text.into(),
                layer: RouteLayer::Planner,
                model: Some("ollama:qwen3:8b".into()),
                steps: tools.iter().map(|t| PlanStep { tool: (*t).into(), args: Default::default() }).collect(),
                tools_ok,
                planner_ms: 900,
                latency_ms: 2000,
                cost_usd: Decimal::ZERO,
                pricing_version: "2026-11".into(),
            },
        );
        turn
    }

    fn feedback(&mut self, subject: Option<TurnId>, rating: FeedbackRating) {
        let at = t(self.start + 60 * self.turns.len() as i64 + 30);
        self.push(at, None, ActorKind::Host, FeedbackReceived { subject_turn: subject, rating, text: None });
    }

    fn end(mut self) -> Vec<Envelope> {
        let at = t(self.start + 60 * (self.turns.len() as i64 + 5));
        let turns = self.turns.len() as u32;
        self.push(at, None, ActorKind::Host, SessionEnded { reason: SessionEndReason::Idle, turns });
        self.events
    }
}

fn reactors() -> Vec<Box<dyn Reactor>> {
    vec![Box::new(JudgeReactor::new()), Box::new(SummaryReactor::new()), Box::new(GraphReactor::default())]
}

/// (subject, score, confidence, judge, rubric, causation kind) of every verdict.
fn verdicts(events: &[Envelope]) -> Vec<(TurnId, f64, f64, JudgeKind, String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::EvalCompleted(v) => {
                assert_eq!(e.turn, Some(v.subject_turn), "the verdict's envelope names its subject");
                assert_eq!(e.actor, ActorKind::Judge);
                let cause = events.iter().find(|c| Some(c.id) == e.causation).expect("cause in the log");
                Some((
                    v.subject_turn,
                    v.score,
                    v.confidence,
                    v.judge,
                    v.rubric.clone().unwrap_or_default(),
                    cause.kind().name().to_owned(),
                ))
            }
            _ => None,
        })
        .collect()
}

/// The scripted week: a first session where the user introduces
/// themselves, corrects a turn, a tool fails and thumbs a turn up; a second
/// where they moved.
fn week() -> (Vec<Envelope>, Vec<TurnId>) {
    let mut s1 = Sess::new("s-1", 0);
    let t1 = s1.turn("download the weather report for Milan", "Here it is.", &["get_urls"], true);
    let t2 = s1.turn("No, I meant the PDF report", "Here is the PDF.", &["find_files"], true);
    let t3 = s1.turn("My name is Marco and I live in Milan.", "Nice to meet you, Marco.", &[], true);
    let t4 = s1.turn("I love jazz. Always answer in Italian.", "", &["play_music"], false);
    s1.feedback(None, FeedbackRating::Positive);
    s1.feedback(Some(t1), FeedbackRating::Negative);
    let mut events = s1.end();
    let mut s2 = Sess::new("s-2", 86_400);
    let t5 = s2.turn("Ho detto che I live in Rome. Mi piace la pizza.", "Capito.", &[], true);
    events.extend(s2.end());
    (events, vec![t1, t2, t3, t4, t5])
}

#[test]
fn verdicts_from_turns_corrections_and_feedback() {
    let (events, t) = week();
    let out = derive_all(events, &mut reactors());
    let v = verdicts(&out);
    let h = |turn: TurnId, (s, c): (f64, f64), rubric: &str| {
        (turn, s, c, JudgeKind::Heuristic, rubric.to_owned(), "turn.completed".to_owned())
    };
    let f = |turn: TurnId, (s, c): (f64, f64), rubric: &str| {
        (turn, s, c, JudgeKind::Feedback, rubric.to_owned(), "feedback.received".to_owned())
    };
    use engram_learning::reactors::verdicts::*;
    assert_eq!(
        v,
        vec![
            h(t[0], ANSWERED, "heuristic/answered"),
            h(t[1], ANSWERED, "heuristic/answered"),
            // The correction is a verdict on the turn before it.
            h(t[0], CORRECTED, "heuristic/user_correction"),
            // Replied, no tools: still answered.
            h(t[2], ANSWERED, "heuristic/answered"),
            h(t[3], TOOL_FAILURE, "heuristic/tool_failure"),
            // No subject: the session's last turn.
            f(t[3], FEEDBACK_POSITIVE, "feedback/positive"),
            f(t[0], FEEDBACK_NEGATIVE, "feedback/negative"),
            // A new session: "ho detto" has no previous turn to correct.
            h(t[4], ANSWERED, "heuristic/answered"),
        ]
    );
    // Distinct verdicts have distinct ids, envelopes too.
    let mut ids: Vec<_> = out
        .iter()
        .filter_map(|e| if let Event::EvalCompleted(v) = &e.event { Some(v.eval_id) } else { None })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), v.len());
    let mut env_ids: Vec<_> = out.iter().map(|e| e.id).collect();
    env_ids.sort();
    env_ids.dedup();
    assert_eq!(env_ids.len(), out.len());
}

#[test]
fn deriving_twice_gives_the_same_events() {
    let (events, _) = week();
    let once = derive_all(events.clone(), &mut reactors());
    let twice = derive_all(events.clone(), &mut reactors());
    assert_eq!(once, twice);
    assert!(once.len() > events.len() + 10, "{} derived", once.len() - events.len());
    // A warm reactor set that already observed the whole derived log
    // derives no new summary (the sessions are forgotten) nor graph fact.
    let mut warm = reactors();
    for e in &once {
        for r in warm.iter_mut() {
            r.observe(e);
        }
    }
    let last_end = events.last().unwrap().clone();
    let again = derive_all(vec![last_end], &mut warm);
    assert_eq!(again.len(), 1, "{again:?}");
}

#[test]
fn one_summary_per_session_with_the_users_statements() {
    let (events, _) = week();
    let out = derive_all(events, &mut reactors());
    let summaries: Vec<_> = out
        .iter()
        .filter_map(|e| match &e.event {
            Event::SummaryWritten(s) => Some((e, s)),
            _ => None,
        })
        .collect();
    assert_eq!(summaries.len(), 2);
    let (env, s) = summaries[0];
    assert_eq!(env.actor, ActorKind::Summariser);
    assert_eq!(env.session.as_ref().unwrap().as_str(), "s-1");
    assert_eq!(s.summariser, SummariserKind::Extractive);
    assert_eq!(s.turns_covered, 4);
    for statement in ["My name is Marco and I live in Milan.", "I love jazz.", "Always answer in Italian."] {
        assert!(s.summary.contains(statement), "{statement:?} not in {:?}", s.summary);
    }
    assert!(s.topics.contains(&"report".to_owned()), "{:?}", s.topics);
    // Its cause is the session's end.
    let cause = out.iter().find(|c| Some(c.id) == env.causation).unwrap();
    assert!(matches!(cause.event, Event::SessionEnded(_)));
    // A session without a turn gets none.
    let empty = Sess::new("s-empty", 0).end();
    let out = derive_all(empty, &mut reactors());
    assert!(!out.iter().any(|e| matches!(e.event, Event::SummaryWritten(_))));
}

fn graph_events(out: &[Envelope]) -> Vec<&Event> {
    out.iter()
        .filter(|e| matches!(e.event, Event::GraphFactAdded(_) | Event::GraphNodeMerged(_)))
        .map(|e| &e.event)
        .collect()
}

#[test]
fn facts_land_in_their_branches_and_a_move_replaces_the_old_city() {
    let (events, _) = week();
    let mut rs = reactors();
    let out = derive_all(events, &mut rs);
    let added = |branch, node: &str, fact: &str| {
        Event::GraphFactAdded(GraphFactAdded {
            branch,
            node: node.into(),
            fact: fact.into(),
            extractor: ExtractorKind::Rule,
        })
    };
    let expected = [
        added(GraphBranch::User, "identity", "My name is Marco"),
        added(GraphBranch::User, "location", "I live in Milan"),
        added(GraphBranch::User, "preferences", "I love jazz"),
        added(GraphBranch::Directives, "behaviour", "Always answer in Italian"),
        // Session 2: Rome contradicts Milan, which is dropped.
        Event::GraphNodeMerged(GraphNodeMerged {
            branch: GraphBranch::User,
            node: "location".into(),
            facts: vec!["I live in Rome".into()],
            facts_before: 2,
        }),
        added(GraphBranch::User, "preferences", "Mi piace la pizza"),
    ];
    assert_eq!(graph_events(&out), expected.iter().collect::<Vec<_>>());
    for e in out.iter().filter(|e| matches!(e.event, Event::GraphFactAdded(_) | Event::GraphNodeMerged(_))) {
        assert_eq!(e.actor, ActorKind::Graph);
    }

    // The projection rebuilt from the log is the reactor's state, row for row.
    let mut rebuilt = Graph::default();
    for e in &out {
        rebuilt.apply(e);
    }
    assert_eq!(rebuilt.facts(GraphBranch::User, "location"), ["I live in Rome"]);
    assert_eq!(rebuilt.facts(GraphBranch::User, "preferences"), ["I love jazz", "Mi piace la pizza"]);
    let graph_reactor = GraphReactor::from_projection(&rebuilt);
    assert_eq!(digest(&graph_reactor.graph().rows()), digest(&rebuilt.rows()));
    // ... and the reactor that derived the events holds the same rows.
    let mut live = GraphReactor::default();
    let out2 = derive_all(week().0, &mut [Box::new(JudgeReactor::new()), Box::new(SummaryReactor::new())]);
    for e in out2 {
        // As `derive_all` does: each derived event is shown right after its cause.
        for derived in live.react(&e) {
            assert!(live.react(&derived).is_empty());
        }
    }
    assert_eq!(digest(&live.graph().rows()), digest(&rebuilt.rows()));
}

#[test]
fn a_full_node_is_merged_down_to_its_newest_facts() {
    use engram_learning::reactors::graph_facts::MAX_FACTS_PER_NODE;
    let mut s = Sess::new("s-many", 0);
    for i in 0..MAX_FACTS_PER_NODE + 2 {
        s.turn(&format!("I like band number {i}."), "ok", &[], true);
    }
    let out = derive_all(s.end(), &mut reactors());
    let events = graph_events(&out);
    assert_eq!(events.len(), 1, "{events:?}");
    let Event::GraphNodeMerged(m) = events[0] else { panic!("{events:?}") };
    assert_eq!(m.facts.len(), MAX_FACTS_PER_NODE);
    assert_eq!(m.facts_before as usize, MAX_FACTS_PER_NODE + 2);
    assert_eq!(m.facts.last().unwrap(), &format!("I like band number {}", MAX_FACTS_PER_NODE + 1));
    assert_eq!(m.facts[0], "I like band number 2");
}

/// A graph event from a small alphabet of branches, nodes and facts.
fn graph_event() -> impl Strategy<Value = Event> {
    let branch = prop_oneof![Just(GraphBranch::User), Just(GraphBranch::Directives), Just(GraphBranch::World)];
    let node = prop_oneof![Just("identity"), Just("food/preferences"), Just("behaviour")];
    let fact = (0..6u8).prop_map(|i| format!("fact {i}"));
    prop_oneof![
        3 => (branch.clone(), node.clone(), fact.clone()).prop_map(|(branch, node, fact)| {
            Event::GraphFactAdded(GraphFactAdded { branch, node: node.into(), fact, extractor: ExtractorKind::Rule })
        }),
        1 => (branch, node, proptest::collection::vec(fact, 0..4)).prop_map(|(branch, node, facts)| {
            Event::GraphNodeMerged(GraphNodeMerged { branch, node: node.into(), facts_before: facts.len() as u32, facts })
        }),
    ]
}

proptest! {
    /// Persisting part-way (rows → load) and folding the rest gives the
    /// digest of one uninterrupted fold: the rows hold the whole state.
    #[test]
    fn graph_digest_survives_persist_and_reload(events in proptest::collection::vec(graph_event(), 0..40), cut in 0usize..40) {
        let envs: Vec<Envelope> = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| Envelope::at(EventId::derive(t(i as i64), &[b"p"]), t(i as i64), ActorKind::Graph, e))
            .collect();
        let mut whole = Graph::default();
        for e in &envs {
            whole.apply(e);
        }
        let cut = cut.min(envs.len());
        let mut first = Graph::default();
        for e in &envs[..cut] {
            first.apply(e);
        }
        let mut resumed = Graph::default();
        resumed.load(&mut first.rows().into_iter()).unwrap();
        for e in &envs[cut..] {
            resumed.apply(e);
        }
        prop_assert_eq!(digest(&resumed.rows()), digest(&whole.rows()));
        prop_assert_eq!(resumed.fact_count(), whole.fact_count());
    }
}

/// One step of a memory index's life: a turn's passages or a retraction.
#[derive(Clone, Debug)]
enum PassageStep {
    Said { session: u8, texts: Vec<(bool, u8)> },
    ForgetWord(u8),
    ForgetSession(u8),
}

const WORDS: [&str; 6] = ["Pickle", "rent 865", "Biscuit", "Turin", "the weather", "puppy pads"];

fn passage_step() -> impl Strategy<Value = PassageStep> {
    prop_oneof![
        4 => (0u8..3, proptest::collection::vec((any::<bool>(), 0u8..6), 1..4))
            .prop_map(|(session, texts)| PassageStep::Said { session, texts }),
        1 => (0u8..6).prop_map(PassageStep::ForgetWord),
        1 => (0u8..3).prop_map(PassageStep::ForgetSession),
    ]
}

fn passage_events(steps: &[PassageStep]) -> Vec<Envelope> {
    use engram_events::payloads::{MemoryForgotten, Passage, PassagesIndexed, Speaker};
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let mut env = match step {
                PassageStep::Said { session, texts } => {
                    let passages = texts
                        .iter()
                        .map(|(user, w)| Passage {
                            text: format!("I said {} today", WORDS[*w as usize]),
                            speaker: if *user { Speaker::User } else { Speaker::Assistant },
                            vector: None,
                        })
                        .collect();
                    Envelope::new(ActorKind::Memory, PassagesIndexed { passages })
                        .with_session(SessionId::new(format!("s{session}")))
                }
                PassageStep::ForgetWord(w) => Envelope::new(
                    ActorKind::Cli,
                    MemoryForgotten {
                        request: WORDS[*w as usize].into(),
                        facts: Vec::new(),
                        sessions: Vec::new(),
                        phrases: vec![WORDS[*w as usize].to_lowercase()],
                    },
                ),
                PassageStep::ForgetSession(s) => Envelope::new(
                    ActorKind::Cli,
                    MemoryForgotten {
                        request: format!("session s{s}"),
                        facts: Vec::new(),
                        sessions: vec![SessionId::new(format!("s{s}"))],
                        phrases: Vec::new(),
                    },
                ),
            };
            env.at = t(60 * i as i64);
            env
        })
        .collect()
}

/// The texts `index` finds for `word`, best first.
fn found(index: &mut engram_learning::memory::PassageIndex, word: &str) -> Vec<String> {
    let q = engram_learning::memory::MemoryQuery { text: word, ..Default::default() };
    index.search(&q).into_iter().map(|s| index.get(s).unwrap().text.clone()).collect()
}

proptest! {
    /// The memory index is a fold: a repeat is one passage at its latest
    /// time, a retraction drops exactly what it names among what was held,
    /// and a snapshot restores the same index (the same passages, the same
    /// answers to a search, and the same after what is said next).
    #[test]
    fn the_memory_index_folds_repeats_and_retractions_and_restores_the_same(
        steps in proptest::collection::vec(passage_step(), 0..24),
        next in proptest::collection::vec(passage_step(), 0..4),
    ) {
        use chrono::FixedOffset;
        use engram_learning::memory::PassageIndex;
        let events = passage_events(&steps);
        let utc = FixedOffset::east_opt(0).unwrap();
        let mut index = PassageIndex::new(utc, None);
        // The model: (speaker, word) → (session, at), latest wins.
        let mut model: std::collections::BTreeMap<(bool, u8), (u8, DateTime<Utc>)> = Default::default();
        for (step, env) in steps.iter().zip(&events) {
            index.observe(env);
            match step {
                PassageStep::Said { session, texts } => {
                    for (user, w) in texts {
                        model.insert((*user, *w), (*session, env.at));
                    }
                }
                PassageStep::ForgetWord(w) => {
                    let needle = WORDS[*w as usize].to_lowercase();
                    model.retain(|(_, word), _| !WORDS[*word as usize].to_lowercase().contains(&needle));
                }
                PassageStep::ForgetSession(s) => model.retain(|_, (session, _)| session != s),
            }
        }
        prop_assert_eq!(index.len(), model.len());
        let held: Vec<_> = index.passages().map(|p| (p.session.clone(), p.at, p.text.clone())).collect();
        for ((_, w), (s, at)) in &model {
            let text = format!("I said {} today", WORDS[*w as usize]);
            prop_assert!(held.contains(&(Some(SessionId::new(format!("s{s}"))), *at, text)), "{held:?}");
        }
        let mut restored = PassageIndex::new(utc, None);
        restored.restore(index.save().owned());
        let again: Vec<_> = restored.passages().map(|p| (p.session.clone(), p.at, p.text.clone())).collect();
        prop_assert_eq!(&again, &held);
        for word in WORDS {
            prop_assert_eq!(found(&mut index, word), found(&mut restored, word));
        }
        // What is said next folds the same into either (rule 8's threads
        // come back as the fold left them).
        let later = passage_events(&[steps.clone(), next].concat());
        for env in &later[steps.len()..] {
            index.observe(env);
            restored.observe(env);
        }
        for word in WORDS {
            prop_assert_eq!(found(&mut index, word), found(&mut restored, word));
        }
    }
}
