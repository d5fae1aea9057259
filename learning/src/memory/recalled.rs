//! What recall brings into a prompt (seed 002 #3), and which of it answers
//! a question: ranking and packing over what the indexes found.
//!
//! The actors' recollection holds the indexes (the diary's day vectors,
//! the memory index) and asks them; everything it decides with what they
//! return is here, as pure functions over typed inputs, so it is tested
//! without a model or a log.
//!
//! | # | rule |
//! |---|---|
//! | 1 | what was said ([`PassageIndex::pack`](super::PassageIndex::pack)) comes first and takes what it needs of the budget ([`MemorySection::context_budget_tokens`]) |
//! | 2 | a diary day in the enrichment's range enters when the range was named, when it holds a keyword, or when it resembles the request (the model's `Calibration::recall`); it scores its cosine plus [`KEYWORD_BONUS`] per keyword; the best [`MAX_DAYS`], the later day first on a tie, each cut to [`ENTRY_CHARS`] |
//! | 3 | the days, then the WORLD facts, fill what the passages left: a day costs its characters and 20, a fact its characters and 1; what does not fit stays out |
//! | 4 | a WORLD fact enters when its node or its text holds a keyword, most keywords first, at most [`MAX_WORLD`] |
//! | 5 | a passage answers a request when it resembles it (at least the bar), is not the same request said before (`Calibration::same_request`: an earlier "tell me a joke" is no answer to this one) and states something (a question the user asked is no fact) |
//! | 6 | a question no tool matched is answered from what was said when a passage answers it at the offline planner's bar — memory competes as one more tool would; a statement ("abito a Torino") is never answered so |
//! | 7 | the `recall` tool answers with the user's facts and the passage that answers best, whichever resembles the request more first (an answer cut to its first line is still the answer), then the rest of what was recalled that states something |

use std::collections::BTreeSet;

use chrono::NaiveDate;

use super::passages::RecalledPassage;
use super::recall::{content_set, Enrichment};
use super::DayEntry;
use crate::embedder::Calibration;
use crate::fence::fence_untrusted;
use crate::lang::Lang;
use crate::text::truncate;

/// `[memory]`: how much of a prompt recalled memory may take.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySection {
    /// Tokens (≈ 4 characters each) of what was said, the diary and the
    /// WORLD facts one request may bring into the model's context, most
    /// relevant first. The default, 600, holds about eight passages of a
    /// long conversation: measured on the memory fixture in
    /// docs/memory.md, where each step up or down is priced.
    pub context_budget_tokens: usize,
}

impl Default for MemorySection {
    fn default() -> Self {
        MemorySection { context_budget_tokens: DEFAULT_BUDGET_TOKENS }
    }
}

/// [`MemorySection::context_budget_tokens`]'s default.
pub const DEFAULT_BUDGET_TOKENS: usize = 600;

/// Most diary entries in a prompt (rule 2).
pub const MAX_DAYS: usize = 3;
/// Most WORLD facts in a prompt (rule 4).
pub const MAX_WORLD: usize = 5;
/// What one matching keyword adds to a day's score (rule 2).
pub const KEYWORD_BONUS: f32 = 0.1;
/// Longest entry in a prompt, in characters (rule 2).
pub const ENTRY_CHARS: usize = 800;

/// What recall found: what the user said, dated entries and WORLD facts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recalled {
    /// Passages of earlier turns, most relevant first.
    pub passages: Vec<RecalledPassage>,
    /// `(day, entry)`, best first.
    pub days: Vec<(NaiveDate, String)>,
    /// WORLD facts, `node: fact`.
    pub world: Vec<String>,
}

impl Recalled {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.passages.is_empty() && self.days.is_empty() && self.world.is_empty()
    }

    /// One line per finding, dated (for the `recall` tool): what was said
    /// first, then the diary's days, then WORLD facts.
    pub fn lines(&self) -> Vec<String> {
        self.passages
            .iter()
            .map(RecalledPassage::line)
            .chain(self.days.iter().map(|(d, t)| format!("{d} (diary): {t}")))
            .chain(self.world.iter().cloned())
            .collect()
    }

    /// The block for the reply loop's prompt, fenced as data; `None` when
    /// nothing was found.
    pub fn render(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        Some(format!(
            "From earlier conversations with the user (dated, most relevant first; where two disagree, the later holds; reference only):\n{}",
            fence_untrusted("memory of earlier sessions", &self.lines().join("\n"))
        ))
    }
}

/// A diary day's content words (its text's and its topics'), kept with
/// the entry so a recall counts keywords without normalising every entry
/// again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DayWords {
    text: BTreeSet<String>,
    topics: BTreeSet<String>,
}

impl DayWords {
    /// The words of `entry`.
    pub fn of(entry: &DayEntry) -> DayWords {
        DayWords { text: content_set(&entry.text), topics: content_set(&entry.topics.join(" ")) }
    }

    /// How many of `keywords` the day holds, in its text and its topics
    /// (a word in both counts twice).
    fn held(&self, keywords: &BTreeSet<String>) -> usize {
        self.text.intersection(keywords).count() + self.topics.intersection(keywords).count()
    }
}

/// A diary day as recall weighs it: the entry, its words (`None`: not
/// counted yet) and its cosine with the request (0 when not compared).
pub struct DayFound<'a> {
    /// The entry.
    pub entry: &'a DayEntry,
    /// Its content words.
    pub words: Option<&'a DayWords>,
    /// Its cosine with the request.
    pub cosine: f32,
}

/// What [`assemble`] ranks and packs.
pub struct Findings<'a> {
    /// What the request asked for: its keywords and days.
    pub enrichment: &'a Enrichment,
    /// What was said, already packed within the budget (rule 1).
    pub passages: Vec<RecalledPassage>,
    /// Every diary day (those outside the enrichment's range stay out).
    pub days: Vec<DayFound<'a>>,
    /// The graph's WORLD facts, `(node, fact)`.
    pub world: &'a [(String, String)],
    /// The least cosine at which a day resembles the request
    /// (`Calibration::recall`; infinite without a model).
    pub min_cosine: f32,
    /// What recalled memory may take of a prompt, in characters.
    pub budget_chars: usize,
}

/// The keywords an enrichment asks for, as content words.
fn keywords(enrichment: &Enrichment) -> BTreeSet<String> {
    enrichment.keywords.iter().flat_map(|k| content_set(k)).collect()
}

/// Rules 1–4: the passages, then the days and WORLD facts that fit what
/// they left of the budget.
pub fn assemble(found: Findings<'_>) -> Recalled {
    let Findings { enrichment, passages, days, world, min_cosine, budget_chars } = found;
    let keywords = keywords(enrichment);
    let mut left = budget_chars.saturating_sub(passages.iter().map(|p| p.line().chars().count() + 1).sum::<usize>());
    let days = rank_days(enrichment, &keywords, days, min_cosine);
    // Rule 3: the days, then the WORLD facts, fill what is left.
    let days: Vec<(NaiveDate, String)> = days
        .into_iter()
        .filter(|(_, text)| {
            let cost = text.chars().count() + 20;
            let fits = cost <= left;
            if fits {
                left -= cost;
            }
            fits
        })
        .collect();
    let world: Vec<String> = world_facts(world, &keywords)
        .into_iter()
        .filter(|f| {
            let fits = f.chars().count() < left;
            if fits {
                left -= f.chars().count() + 1;
            }
            fits
        })
        .collect();
    Recalled { passages, days, world }
}

/// Rule 2: the days in range that were named, hold a keyword or resemble
/// the request, best first, at most [`MAX_DAYS`], each cut to
/// [`ENTRY_CHARS`].
fn rank_days(
    enrichment: &Enrichment,
    keywords: &BTreeSet<String>,
    days: Vec<DayFound<'_>>,
    min_cosine: f32,
) -> Vec<(NaiveDate, String)> {
    // A named day is asked for whatever its words.
    let named = enrichment.from.is_some() || enrichment.to.is_some();
    let mut ranked: Vec<(f32, NaiveDate, String)> = days
        .into_iter()
        .filter(|d| enrichment.covers(d.entry.date))
        .filter_map(|d| {
            let n = d.words.map_or(0, |w| w.held(keywords));
            (named || n > 0 || d.cosine >= min_cosine)
                .then(|| (d.cosine + KEYWORD_BONUS * n as f32, d.entry.date, truncate(&d.entry.text, ENTRY_CHARS)))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    ranked.truncate(MAX_DAYS);
    ranked.into_iter().map(|(_, d, t)| (d, t)).collect()
}

/// Rule 4: the WORLD facts holding a keyword, most first, at most
/// [`MAX_WORLD`], as `node: fact`.
fn world_facts(world: &[(String, String)], keywords: &BTreeSet<String>) -> Vec<String> {
    let hits = |text: &str| content_set(text).intersection(keywords).count();
    let mut found: Vec<(usize, String)> = world
        .iter()
        .map(|(node, fact)| (hits(fact) + hits(node), format!("{node}: {fact}")))
        .filter(|(n, _)| *n > 0)
        .collect();
    found.sort_by_key(|w| std::cmp::Reverse(w.0));
    found.into_iter().take(MAX_WORLD).map(|(_, f)| f).collect()
}

/// `facts` scored by their cosine with `query` (both unit vectors; one
/// vector per fact), nearest first; ties keep their order.
pub fn by_cosine(query: &[f32], facts: Vec<String>, vectors: Vec<Vec<f32>>) -> Vec<(Option<f32>, String)> {
    let mut scored: Vec<(f32, usize, String)> = facts
        .into_iter()
        .zip(vectors)
        .enumerate()
        .map(|(i, (f, v))| (query.iter().zip(&v).map(|(a, b)| a * b).sum(), i, f))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(c, _, f)| (Some(c), f)).collect()
}

/// Rule 5: whether a passage can answer the request at `bar`.
pub fn answers(p: &RecalledPassage, bar: f32, cal: &Calibration) -> bool {
    p.cosine.is_some_and(|c| c >= bar && (c as f64) < cal.same_request) && states(p)
}

/// Whether a passage states something: one of its sentences does not ask
/// (a question the user asked is no fact to quote back).
pub fn states(p: &RecalledPassage) -> bool {
    super::sentences(&p.text).iter().any(|s| !crate::mood::asks(s))
}

/// Rule 6: the answer to a question no tool matched, from what was said;
/// `cal` is the embedding model's (`None`: no model, no answer). `None`:
/// the turn stays unanswered.
pub fn answer_unplanned(request: &str, recalled: &Recalled, cal: Option<&Calibration>, lang: Lang) -> Option<String> {
    if !request.trim_end().ends_with('?') {
        return None;
    }
    let cal = cal?;
    let p = recalled.passages.iter().find(|p| answers(p, cal.offline_planner, cal))?;
    Some(said_line(p, lang))
}

/// Rule 7: what the `recall` tool answers with — the answer (the facts,
/// scored as [`by_cosine`] does, and the passage that answers best), and
/// the rest of what was recalled.
pub fn recall_answer(
    recalled: &Recalled,
    facts: Vec<(Option<f32>, String)>,
    cal: Option<&Calibration>,
    lang: Lang,
) -> (Vec<String>, Vec<String>) {
    let best = cal.and_then(|cal| recalled.passages.iter().position(|p| answers(p, cal.recall, cal)));
    let mut answer: Vec<String> = Vec::new();
    let stated = |skip: Option<usize>| Recalled {
        passages: recalled
            .passages
            .iter()
            .enumerate()
            .filter(|(j, p)| Some(*j) != skip && states(p))
            .map(|(_, p)| p.clone())
            .collect(),
        ..recalled.clone()
    };
    match best {
        Some(i) => {
            let p = &recalled.passages[i];
            let passage_first = facts.first().and_then(|(c, _)| *c).is_none_or(|c| p.cosine.unwrap_or(0.0) > c);
            let line = said_line(p, lang);
            if passage_first {
                answer.push(line);
                answer.extend(facts.into_iter().map(|(_, f)| f));
            } else {
                answer.extend(facts.into_iter().map(|(_, f)| f));
                answer.push(line);
            }
            (answer, stated(Some(i)).lines())
        }
        None => {
            answer.extend(facts.into_iter().map(|(_, f)| f));
            (answer, stated(None).lines())
        }
    }
}

/// A passage as an answer, in the request's language: "On 12 November
/// you said: "…"" / "Il 12 novembre mi hai detto: "…"".
pub fn said_line(p: &RecalledPassage, lang: Lang) -> String {
    use crate::calendar::italian;
    use chrono::Datelike;
    use engram_events::payloads::Speaker;
    let text = p.text.trim();
    match (lang, p.speaker) {
        (Lang::It, Speaker::User) => {
            format!("Il {} {} mi hai detto: \"{text}\"", p.day.day(), italian(p.day.month0()))
        }
        (Lang::It, Speaker::Assistant) => {
            format!("Il {} {} ti ho detto: \"{text}\"", p.day.day(), italian(p.day.month0()))
        }
        (_, Speaker::User) => format!("On {} you said: \"{text}\"", p.day.format("%-d %B")),
        (_, Speaker::Assistant) => format!("On {} I told you: \"{text}\"", p.day.format("%-d %B")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::Speaker;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, d).expect("a day")
    }

    fn entry(d: u32, text: &str) -> DayEntry {
        DayEntry { date: day(d), text: text.to_owned(), topics: Vec::new(), sessions: 1 }
    }

    fn passage(text: &str, cosine: f32) -> RecalledPassage {
        RecalledPassage {
            day: day(3),
            speaker: Speaker::User,
            text: text.to_owned(),
            latest: false,
            cosine: Some(cosine),
            asked: None,
        }
    }

    #[test]
    fn days_enter_by_keyword_cosine_or_name_and_the_best_come_first() {
        let entries = [entry(1, "we talked about the garden"), entry(2, "the boiler broke"), entry(3, "nothing")];
        let words: Vec<DayWords> = entries.iter().map(DayWords::of).collect();
        let days = |cos: [f32; 3]| {
            entries
                .iter()
                .zip(&words)
                .zip(cos)
                .map(|((entry, w), cosine)| DayFound { entry, words: Some(w), cosine })
                .collect::<Vec<_>>()
        };
        let enrichment = Enrichment { keywords: vec!["garden".into()], from: None, to: None };
        let found = assemble(Findings {
            enrichment: &enrichment,
            passages: Vec::new(),
            days: days([0.1, 0.6, 0.2]),
            world: &[],
            min_cosine: 0.5,
            budget_chars: 10_000,
        });
        // The boiler's day resembles the request (0.6 ≥ 0.5) and outranks
        // the garden's keyword (0.1 + 0.1); the third holds neither.
        assert_eq!(found.days.iter().map(|(d, _)| *d).collect::<Vec<_>>(), [day(2), day(1)]);
        // A named range takes its days whatever their words.
        let named = Enrichment { keywords: Vec::new(), from: Some(day(3)), to: Some(day(3)) };
        let found = assemble(Findings {
            enrichment: &named,
            passages: Vec::new(),
            days: days([0.0; 3]),
            world: &[],
            min_cosine: 0.5,
            budget_chars: 10_000,
        });
        assert_eq!(found.days, [(day(3), "nothing".to_owned())]);
    }

    #[test]
    fn passages_take_the_budget_first_and_world_facts_fill_what_is_left() {
        let enrichment = Enrichment { keywords: vec!["turin".into()], from: None, to: None };
        let world = [("Ada".to_owned(), "lives in Turin".to_owned()), ("Bob".to_owned(), "likes tea".to_owned())];
        let p = passage("I moved to Turin in May", 0.7);
        let cost = p.line().chars().count() + 1;
        let found = |budget| {
            assemble(Findings {
                enrichment: &enrichment,
                passages: vec![p.clone()],
                days: Vec::new(),
                world: &world,
                min_cosine: 0.5,
                budget_chars: budget,
            })
        };
        assert_eq!(found(cost + 100).world, ["Ada: lives in Turin"], "only the fact holding a keyword");
        assert!(found(cost + 5).world.is_empty(), "what the passages left is too little");
    }

    #[test]
    fn a_passage_answers_when_alike_not_the_same_request_and_stating() {
        let cal = crate::embedder::EmbeddingModel::calibration_for_id("use-multilingual-v3");
        let bar = cal.recall;
        assert!(answers(&passage("my boiler is a Vaillant", bar + 0.01), bar, &cal));
        assert!(!answers(&passage("my boiler is a Vaillant", bar - 0.01), bar, &cal));
        assert!(!answers(&passage("what boiler do I have?", bar + 0.01), bar, &cal), "a question states nothing");
        assert!(!answers(&passage("my boiler is a Vaillant", 0.999), bar, &cal), "the same request said before");
        let recalled = Recalled { passages: vec![passage("my boiler is a Vaillant", 0.9)], ..Default::default() };
        assert_eq!(answer_unplanned("my boiler is broken", &recalled, Some(&cal), Lang::En), None, "not a question");
        assert_eq!(answer_unplanned("what boiler do I have?", &recalled, None, Lang::En), None, "no model");
    }

    #[test]
    fn the_recall_tool_puts_whichever_resembles_more_first() {
        let cal = crate::embedder::EmbeddingModel::calibration_for_id("use-multilingual-v3");
        let recalled = Recalled {
            passages: vec![passage("my boiler is a Vaillant", 0.7), passage("did I say which boiler?", 0.6)],
            ..Default::default()
        };
        let (answer, rest) =
            recall_answer(&recalled, vec![(Some(0.5), "Ada: has a boiler".into())], Some(&cal), Lang::It);
        assert_eq!(answer, ["Il 3 novembre mi hai detto: \"my boiler is a Vaillant\"", "Ada: has a boiler"]);
        assert!(rest.is_empty(), "the question asked states nothing: {rest:?}");
        let (answer, _) = recall_answer(&recalled, vec![(Some(0.8), "Ada: has a boiler".into())], Some(&cal), Lang::En);
        assert_eq!(answer, ["Ada: has a boiler", "On 3 November you said: \"my boiler is a Vaillant\""]);
    }

    #[test]
    fn facts_are_ordered_by_cosine_ties_keeping_their_order() {
        let scored = by_cosine(
            &[1.0, 0.0],
            vec!["a".into(), "b".into(), "c".into()],
            vec![vec![0.0, 1.0], vec![1.0, 0.0], vec![0.0, 1.0]],
        );
        assert_eq!(scored.iter().map(|(_, f)| f.as_str()).collect::<Vec<_>>(), ["b", "a", "c"]);
    }
}
