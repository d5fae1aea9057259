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
//! when one is configured, else by rule), asks the memory index and the
//! day index, and hands what they found to
//! [`engram_learning::memory::recalled`], whose rules rank the days and the
//! knowledge graph's WORLD facts and pack them within the budget: this
//! module holds the indexes and the embeddings, not the rules.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{FixedOffset, NaiveDate};
use engram_events::Envelope;
use engram_learning::embedder::EmbeddingModel;
use engram_learning::lang::Lang;
use engram_learning::memory::passages::CHARS_PER_TOKEN;
use engram_learning::memory::recalled::{self, DayFound, DayWords, Findings};
use engram_learning::memory::{Diary, Enrichment, MemoryQuery, PassageIndex, Recalled};
use engram_local_state::embedding_cache::EmbeddingCache;
use engram_local_state::snapshot::{Snapshot, SnapshotError, SnapshotReader, SnapshotWriter};
use engram_vector::{VectorConfig, VectorIndex};

use crate::fast_path_service::embed_text;
use engram_learning::embedder::{Calibration, Embedder};

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
    /// Each day's content words, kept with the entry so a recall counts
    /// keywords without normalising every entry again.
    words: HashMap<NaiveDate, DayWords>,
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
        recalled::by_cosine(&q, facts, vectors)
    }

    /// The answer to a question no tool matched, from what was said
    /// (`engram_learning::memory::recalled`, rule 6).
    pub fn answer_unplanned(&self, request: &str, recalled: &Recalled, lang: Lang) -> Option<String> {
        recalled::answer_unplanned(request, recalled, self.calibration().as_ref(), lang)
    }

    /// What the `recall` tool answers `query` with: the user's `facts`
    /// ranked by their cosine with it, the passage said that answers it
    /// best, then the rest of what was recalled
    /// (`engram_learning::memory::recalled`, rule 7).
    pub fn recall_lines(
        &self,
        query: &str,
        recalled: &Recalled,
        facts: Vec<String>,
        lang: Lang,
    ) -> (Vec<String>, Vec<String>) {
        let facts = self.score_facts(query, facts);
        recalled::recall_answer(recalled, facts, self.calibration().as_ref(), lang)
    }

    /// The embedding model's calibration; `None` without a model.
    fn calibration(&self) -> Option<Calibration> {
        self.embed.as_ref().map(|(e, _)| EmbeddingModel::calibration_for_id(e.model_id()))
    }

    /// Brings the words and the index up to date with the diary.
    fn refresh(&mut self) {
        for day in std::mem::take(&mut self.stale) {
            let Some(entry) = self.diary.entry(day) else {
                self.words.remove(&day);
                continue;
            };
            let text = entry.text.clone();
            self.words.insert(day, DayWords::of(entry));
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
        let cosines: HashMap<i32, f32> = match (&self.index, &query_vector) {
            (Some(index), Some(q)) => index
                .search_exact(q, index.len())
                .ok()
                .unwrap_or_default()
                .into_iter()
                .map(|h| (h.key, h.cosine))
                .collect(),
            _ => Default::default(),
        };
        let days = self
            .diary
            .entries()
            .map(|entry| DayFound {
                entry,
                words: self.words.get(&entry.date),
                cosine: cosines.get(&key(entry.date)).copied().unwrap_or(0.0),
            })
            .collect();
        recalled::assemble(Findings {
            enrichment,
            passages,
            days,
            world,
            min_cosine: self.calibration().map_or(f32::INFINITY, |c| c.recall),
            budget_chars: self.budget_chars,
        })
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
