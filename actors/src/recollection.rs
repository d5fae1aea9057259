//! Recollection (seed 002 #3, #3b): the past days a request needs, found in
//! the diary and handed to the reply loop's model as dated, fenced data.
//!
//! The diary ([`Diary`], one entry per day) is folded from
//! `summary.written`; each day's entry is embedded through the embedding
//! cache (the same memo the fast path uses, so a restart re-embeds nothing)
//! into the project's own vector index ([`VectorIndex`]), keyed by day.
//! Entries are embedded lazily — at the first recall after they changed —
//! so warm-up over a long log costs no inference.
//!
//! A lookup takes an [`Enrichment`] (keywords and a day range; by the model
//! when one is configured, else by rule) and ranks the days in range by
//! the cosine between the request and the entry plus a bonus per keyword
//! the entry holds; an entry that neither resembles the request (the
//! model's `Calibration::recall` cosine) nor holds a keyword stays out. The WORLD facts of the
//! knowledge graph that hold a keyword go in beside them.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{FixedOffset, NaiveDate};
use engram_events::Envelope;
use engram_learning::embedder::EmbeddingModel;
use engram_learning::memory::passages::CHARS_PER_TOKEN;
use engram_learning::memory::{recall::content_set, Diary, Enrichment, MemoryQuery, PassageIndex, RecalledPassage};
use engram_local_state::embedding_cache::EmbeddingCache;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};
use engram_vector::{VectorConfig, VectorIndex};

use crate::fast_path_service::embed_text;
use engram_learning::embedder::Embedder;
use engram_learning::fence::fence_untrusted;
use engram_learning::text::truncate;

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

/// Most diary entries in a prompt.
pub const MAX_DAYS: usize = 3;
/// Most WORLD facts in a prompt.
pub const MAX_WORLD: usize = 5;
/// What one matching keyword adds to an entry's score.
const KEYWORD_BONUS: f32 = 0.1;
/// Longest entry in a prompt (characters).
const ENTRY_CHARS: usize = 800;

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

/// The diary with its vector index, and the memory index.
pub struct Recollection {
    diary: Diary,
    passages: PassageIndex,
    /// What recalled memory may take of a prompt, in characters.
    budget_chars: usize,
    embed: Option<(Arc<dyn Embedder>, Option<EmbeddingCache>)>,
    index: Option<VectorIndex<i32>>,
    /// Days whose entry changed since it was last embedded.
    stale: BTreeSet<NaiveDate>,
    /// Each day's content words (its text's, its topics'), kept with the
    /// entry so a recall counts keywords without normalising every entry
    /// again.
    words: HashMap<NaiveDate, (BTreeSet<String>, BTreeSet<String>)>,
}

impl Recollection {
    /// Entries per structure: the diary, the day index, the memory index.
    pub fn sizes(&self) -> Vec<(&'static str, usize)> {
        let mut out: Vec<(&'static str, usize)> = self.diary.sizes().to_vec();
        out.extend([
            ("diary.index", self.index.as_ref().map_or(0, |i| i.len())),
            ("diary.stale", self.stale.len()),
            ("diary.words", self.words.len()),
        ]);
        out.extend(self.passages.sizes());
        out
    }

    /// An empty recollection; days at `offset`; entries and requests
    /// embedded with `embed` (none: keywords alone rank them); what it
    /// recalls kept within `budget_tokens`.
    pub fn new(
        offset: FixedOffset,
        embed: Option<(Arc<dyn Embedder>, Option<EmbeddingCache>)>,
        budget_tokens: usize,
    ) -> Recollection {
        let provider = embed.as_ref().map(|(e, _)| e.model_id().to_owned());
        let bar = embed
            .as_ref()
            .map_or(f32::INFINITY, |(e, _)| EmbeddingModel::calibration_for_id(e.model_id()).memory_passage);
        Recollection {
            diary: Diary::new(offset),
            passages: PassageIndex::new(offset, provider).min_cosine(bar),
            budget_chars: budget_tokens.saturating_mul(CHARS_PER_TOKEN),
            embed,
            index: None,
            stale: BTreeSet::new(),
            words: HashMap::new(),
        }
    }

    /// Folds one event (`summary.written`, `memory.passages_indexed`,
    /// `memory.forgotten`; the rest are ignored).
    pub fn observe(&mut self, env: &Envelope) {
        self.stale.extend(self.diary.observe(env));
        self.passages.observe(env);
    }

    /// Whether nothing was said or summarised yet besides the
    /// conversation in progress (nothing to recall: no lookup, no
    /// enrichment call).
    pub fn is_empty(&self, in_progress: Option<(&engram_events::SessionId, chrono::DateTime<chrono::Utc>)>) -> bool {
        self.diary.is_empty() && !self.passages.holds_outside(in_progress)
    }

    /// This recollection with `bar` as the memory index's least cosine
    /// instead of the model's `Calibration::memory_passage` (for
    /// calibrating it: `engram bench memory --passage-bar`).
    pub fn passage_bar(mut self, bar: f32) -> Recollection {
        let index =
            std::mem::replace(&mut self.passages, PassageIndex::new(FixedOffset::east_opt(0).expect("UTC"), None));
        self.passages = index.min_cosine(bar);
        self
    }

    /// The memory index (for `engram inspect memory` and the bench).
    pub fn passages(&self) -> &PassageIndex {
        &self.passages
    }

    /// The day an instant falls on, for the user.
    pub fn day_of(&self, at: chrono::DateTime<chrono::Utc>) -> NaiveDate {
        self.diary.day_of(at)
    }

    fn vector(&self, text: &str) -> Option<Vec<f32>> {
        let (embedder, cache) = self.embed.as_ref()?;
        embed_text(embedder.as_ref(), cache.as_ref(), text)
            .map_err(|e| tracing::warn!("recall: embedding failed ({e}); keywords alone rank the diary"))
            .ok()
    }

    /// `facts` (the user's, one line each) nearest to `query` first, by the
    /// embedding model's cosine; ties and the rest keep their order. Without
    /// an embedder, or when embedding fails, they stay as they are. So
    /// "what city do I live in" puts "lives in Turin" before "my name is
    /// Ada", and an answer cut to its first line ("answer briefly") is
    /// still the answer.
    pub fn rank_facts(&self, query: &str, facts: Vec<String>) -> Vec<String> {
        self.score_facts(query, facts).into_iter().map(|(_, f)| f).collect()
    }

    /// [`Recollection::rank_facts`] with each fact's cosine (`None`: not
    /// compared).
    fn score_facts(&self, query: &str, facts: Vec<String>) -> Vec<(Option<f32>, String)> {
        let unscored = |facts: Vec<String>| facts.into_iter().map(|f| (None, f)).collect();
        let Some((embedder, _)) = self.embed.as_ref() else { return unscored(facts) };
        if facts.is_empty() {
            return Vec::new();
        }
        let Some(q) = self.vector(query) else { return unscored(facts) };
        let refs: Vec<&str> = facts.iter().map(String::as_str).collect();
        let vectors = match embedder.embed_batch(&refs) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!("recall: embedding the facts failed ({e}); they keep their order");
                return unscored(facts);
            }
        };
        let mut scored: Vec<(f32, usize, String)> = facts
            .into_iter()
            .zip(vectors)
            .enumerate()
            .map(|(i, (f, v))| (q.iter().zip(&v).map(|(a, b)| a * b).sum(), i, f))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|(c, _, f)| (Some(c), f)).collect()
    }

    /// The answer to a question no tool matched, from what was said: the
    /// best recalled passage that states something, when it resembles the
    /// request as much as a tool's description must to be planned
    /// offline (`Calibration::offline_planner`) — memory competes as one
    /// more tool would. Only a question (`?`) is answered so: a statement
    /// ("abito a Torino") resembles what was said before without asking
    /// for it. `None`: the turn stays unanswered.
    pub fn answer_unplanned(
        &self,
        request: &str,
        recalled: &Recalled,
        lang: engram_learning::lang::Lang,
    ) -> Option<String> {
        if !request.trim_end().ends_with('?') {
            return None;
        }
        let cal = self.embed.as_ref().map(|(e, _)| EmbeddingModel::calibration_for_id(e.model_id()))?;
        let p = recalled.passages.iter().find(|p| answers(p, cal.offline_planner, &cal))?;
        Some(said_line(p, lang))
    }

    /// What the `recall` tool answers `query` with: the user's `facts` and
    /// the passage said that answers it best ("On 12 November you said:
    /// …", in `lang`), whichever resembles the request more first — so an
    /// answer cut to its first line is still the answer — then the rest of
    /// what was recalled. A passage answers only when it resembles the
    /// request (the model's `Calibration::recall` cosine) and states
    /// something (not only a question the user asked).
    pub fn recall_lines(
        &self,
        query: &str,
        recalled: &Recalled,
        facts: Vec<String>,
        lang: engram_learning::lang::Lang,
    ) -> (Vec<String>, Vec<String>) {
        let facts = self.score_facts(query, facts);
        let cal = self.embed.as_ref().map(|(e, _)| EmbeddingModel::calibration_for_id(e.model_id()));
        let best = cal.and_then(|cal| recalled.passages.iter().position(|p| answers(p, cal.recall, &cal)));
        let mut answer: Vec<String> = Vec::new();
        let mut rest = Vec::new();
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
                let others = Recalled {
                    passages: recalled
                        .passages
                        .iter()
                        .enumerate()
                        .filter(|(j, p)| *j != i && states(p))
                        .map(|(_, p)| p.clone())
                        .collect(),
                    ..recalled.clone()
                };
                rest.extend(others.lines());
            }
            None => {
                answer.extend(facts.into_iter().map(|(_, f)| f));
                let stated = Recalled {
                    passages: recalled.passages.iter().filter(|p| states(p)).cloned().collect(),
                    ..recalled.clone()
                };
                rest.extend(stated.lines());
            }
        }
        (answer, rest)
    }

    /// Brings the words and the index up to date with the diary.
    fn refresh(&mut self) {
        for day in std::mem::take(&mut self.stale) {
            let Some(entry) = self.diary.entry(day) else {
                self.words.remove(&day);
                continue;
            };
            let text = entry.text.clone();
            self.words.insert(day, (content_set(&text), content_set(&entry.topics.join(" "))));
            if self.embed.is_none() {
                continue;
            }
            let Some(v) = self.vector(&text) else { continue };
            let index = self.index.get_or_insert_with(|| {
                let mut c = VectorConfig::new(v.len().max(1));
                c.build_threads = 1;
                VectorIndex::new(c).expect("a positive dimension")
            });
            if let Err(e) = index.insert(key(day), &v) {
                tracing::warn!("recall: the entry of {day} was not indexed ({e})");
            }
        }
    }

    /// What was said, the entries and the WORLD facts `query` needs, as
    /// `enrichment` narrows them; `world` is the graph's WORLD facts;
    /// `in_progress`, the conversation the prompt carries already (its
    /// session and when it began), is not recalled again.
    pub fn recall(
        &mut self,
        query: &str,
        enrichment: &Enrichment,
        world: &[(String, String)],
        in_progress: Option<(&engram_events::SessionId, chrono::DateTime<chrono::Utc>)>,
    ) -> Recalled {
        self.refresh();
        let keywords: BTreeSet<String> = enrichment.keywords.iter().flat_map(|k| content_set(k)).collect();
        // The request is embedded only when something it is compared with
        // was: no vectors, no inference.
        let query_vector = match self.index.is_some() || self.passages.holds_outside(in_progress) {
            true => self.vector(query),
            false => None,
        };
        // What was said, searched by the request and the keywords.
        let search_text = format!("{query} {}", enrichment.keywords.join(" "));
        let memory_query = MemoryQuery {
            text: &search_text,
            vector: query_vector.as_deref(),
            from: enrichment.from,
            to: enrichment.to,
            in_progress,
        };
        let found = self.passages.search(&memory_query);
        let passages = self.passages.pack(&found, self.budget_chars, query_vector.as_deref());
        let mut left =
            self.budget_chars.saturating_sub(passages.iter().map(|p| p.line().chars().count() + 1).sum::<usize>());
        let cosines: std::collections::HashMap<i32, f32> = match (&self.index, &query_vector) {
            (Some(index), Some(q)) => index
                .search_exact(q, index.len())
                .ok()
                .unwrap_or_default()
                .into_iter()
                .map(|h| (h.key, h.cosine))
                .collect(),
            _ => Default::default(),
        };
        // A named day is asked for whatever its words.
        let named = enrichment.from.is_some() || enrichment.to.is_some();
        let min_cosine =
            self.embed.as_ref().map_or(f32::INFINITY, |(e, _)| EmbeddingModel::calibration_for_id(e.model_id()).recall);
        let mut days: Vec<(f32, NaiveDate, String)> = self
            .diary
            .entries()
            .filter(|e| enrichment.covers(e.date))
            .filter_map(|e| {
                let n = self.words.get(&e.date).map_or(0, |(text, topics)| {
                    text.intersection(&keywords).count() + topics.intersection(&keywords).count()
                });
                let cosine = cosines.get(&key(e.date)).copied().unwrap_or(0.0);
                (named || n > 0 || cosine >= min_cosine)
                    .then(|| (cosine + KEYWORD_BONUS * n as f32, e.date, truncate(&e.text, ENTRY_CHARS)))
            })
            .collect();
        days.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        days.truncate(MAX_DAYS);
        // The diary's days and the WORLD facts fill what the passages left
        // of the budget.
        days.retain(|(_, _, text)| {
            let cost = text.chars().count() + 20;
            let fits = cost <= left;
            if fits {
                left -= cost;
            }
            fits
        });
        let hits = |text: &str| content_set(text).intersection(&keywords).count();
        let mut world: Vec<(usize, String)> = world
            .iter()
            .map(|(node, fact)| (hits(fact) + hits(node), format!("{node}: {fact}")))
            .filter(|(n, _)| *n > 0)
            .collect();
        world.sort_by_key(|w| std::cmp::Reverse(w.0));
        let world: Vec<String> = world
            .into_iter()
            .take(MAX_WORLD)
            .map(|(_, f)| f)
            .filter(|f| {
                let fits = f.chars().count() < left;
                if fits {
                    left -= f.chars().count() + 1;
                }
                fits
            })
            .collect();
        Recalled { passages, days: days.into_iter().map(|(_, d, t)| (d, t)).collect(), world }
    }
}

/// Whether a passage can answer the request: at least `bar` alike with
/// it, but not the same request said before (`Calibration::same_request`,
/// the L1 bar: an earlier "tell me a joke" is no answer to this one), and
/// stating something (a question is no answer to a later one).
fn answers(p: &RecalledPassage, bar: f32, cal: &engram_learning::embedder::Calibration) -> bool {
    p.cosine.is_some_and(|c| c >= bar && (c as f64) < cal.same_request) && states(p)
}

/// Whether a passage states something: one of its sentences does not ask
/// (a question the user asked is no fact to quote back).
fn states(p: &RecalledPassage) -> bool {
    engram_learning::memory::sentences(&p.text).iter().any(|s| !engram_learning::mood::asks(s))
}

/// A passage as an answer, in the request's language: "On 12 November
/// you said: "…"" / "Il 12 novembre mi hai detto: "…"".
pub fn said_line(p: &RecalledPassage, lang: engram_learning::lang::Lang) -> String {
    use chrono::Datelike;
    use engram_events::payloads::Speaker;
    use engram_learning::calendar::italian;
    use engram_learning::lang::Lang;
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

/// A day as an index key: days since 1970-01-01.
fn key(day: NaiveDate) -> i32 {
    (day - NaiveDate::default()).num_days() as i32
}

/// The diary and the passages. The diary's words and vector index are
/// built again, day by day, at the first recall (the vectors come from the
/// embedding memo); the passages' postings at restore and their vector
/// index at the first search (the vectors come from the passages).
impl Snapshot for Recollection {
    fn save(&self, w: &mut SnapshotWriter) {
        self.diary.save(w);
        w.put(&self.passages.save());
    }

    fn restore(&mut self, r: &mut SnapshotReader<'_>) -> Result<(), SnapshotError> {
        self.diary.restore(r)?;
        self.passages.restore(r.take()?);
        self.stale = self.diary.dates().collect();
        self.words.clear();
        self.index = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use engram_events::payloads::{SummariserKind, SummaryWritten};
    use engram_events::ActorKind;

    fn written(day: u32, text: &str) -> Envelope {
        let mut e = Envelope::new(
            ActorKind::Summariser,
            SummaryWritten {
                summary: text.into(),
                topics: Vec::new(),
                summariser: SummariserKind::Extractive,
                turns_covered: 1,
            },
        );
        e.at = Utc.with_ymd_and_hms(2026, 11, day, 12, 0, 0).unwrap();
        e
    }

    #[test]
    fn keywords_and_days_choose_the_entries() {
        let mut r = Recollection::new(FixedOffset::east_opt(0).unwrap(), None, 1_000);
        r.observe(&written(20, "Dinner at Trattoria Da Mario with Luca."));
        r.observe(&written(21, "Asked for the weather in Rome."));
        r.observe(&written(22, "Talked about the film Dune."));
        let day = |n| NaiveDate::from_ymd_opt(2026, 11, n).unwrap();
        let kw = |k: &[&str]| Enrichment { keywords: k.iter().map(|s| s.to_string()).collect(), from: None, to: None };
        let got = r.recall("where did we have dinner?", &kw(&["dinner"]), &[], None);
        assert_eq!(got.days, [(day(20), "Dinner at Trattoria Da Mario with Luca.".to_owned())]);
        // Nothing matches: nothing goes in.
        assert!(r.recall("quantum physics", &kw(&["quantum"]), &[], None).is_empty());
        // A named day goes in whatever its words.
        let yesterday = Enrichment { keywords: vec!["talk".into()], from: Some(day(21)), to: Some(day(21)) };
        assert_eq!(r.recall("what did we talk about?", &yesterday, &[], None).days[0].0, day(21));
        // WORLD facts with a keyword.
        let world = [("places".to_owned(), "Da Mario closes on Mondays".to_owned()), ("x".into(), "unrelated".into())];
        let got = r.recall("is Mario open?", &kw(&["mario"]), &world, None);
        assert_eq!(got.world, ["places: Da Mario closes on Mondays"]);
        let block = got.render().unwrap();
        assert!(block.contains("2026-11-20 (diary): Dinner") && block.contains("UNTRUSTED"), "{block}");
    }
}
