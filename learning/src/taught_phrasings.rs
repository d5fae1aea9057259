//! What the model taught the offline planner: the requests it answered
//! well, as example phrasings of the tools it answered them with.
//!
//! The offline planner knows a tool by its description, name and
//! parameters: words its author wrote, not the words people say. Every
//! request the model answered well with one tool is a phrasing of that
//! tool in the user's own words ("kill the lights in the sunroom" for
//! `HassTurnOff`), and with the model away the planner compares a request
//! with those too ([`crate::offline_planner`], its rule 11). Rules:
//!
//! 1. **One example per learnt phrasing.** The fast path's canonical
//!    queries hold one row per phrasing (canonical text, tool) the model
//!    taught; its example ([`CanonicalRow::example`], the request as first
//!    said, values and all) is embedded once. Three requests of one
//!    phrasing are one example: the words are what is learnt, not the
//!    values.
//! 2. **A rejected phrasing teaches nothing**, and one rejected after it
//!    taught is forgotten: a verdict below the learning bar takes back
//!    what the turn taught, here as in the fast path.
//! 3. **Nothing of its own is stored.** It is derived from the
//!    canonical-queries projection, itself a fold of the log: the router
//!    fills it from the rows it holds at start and from each learnt turn,
//!    so a replay or a rebuild teaches the same examples.
//! 4. **Keyed by tool name.** A tool the catalogue does not offer (an MCP
//!    server gone) keeps its examples; the planner compares only the tools
//!    it has, and they count again when the tool is back.

use std::collections::{HashMap, HashSet};

use crate::fast_path::decision::BatchEmbed;
use crate::projections::canonical_queries::CanonicalRow;

/// The example phrasings the model taught, by tool (module docs).
#[derive(Debug, Default)]
pub struct TaughtPhrasings {
    /// Tool → canonical text → the example's vector.
    by_tool: HashMap<String, HashMap<String, Vec<f32>>>,
}

impl TaughtPhrasings {
    /// Takes in `rows` (rules 1 and 2): a row not held yet is embedded
    /// with `embed` (its example, in one batch), a rejected one dropped.
    /// Returns how many examples were added. On an embedding error nothing
    /// of the batch is added, and the same rows may be given again.
    pub fn sync<'a, E>(
        &mut self,
        rows: impl IntoIterator<Item = &'a CanonicalRow>,
        embed: BatchEmbed<'_, E>,
    ) -> Result<usize, E> {
        let mut new: Vec<(&str, &str, String)> = Vec::new();
        // The rows this batch takes, once each, without a scan per row.
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        for r in rows {
            let held = self.by_tool.get(&r.executor).is_some_and(|t| t.contains_key(&r.canonical));
            if r.rejected {
                if let Some(t) = self.by_tool.get_mut(&r.executor) {
                    t.remove(&r.canonical);
                }
            } else if !held && seen.insert((&r.executor, &r.canonical)) {
                new.push((&r.executor, &r.canonical, r.example()));
            }
        }
        if new.is_empty() {
            return Ok(0);
        }
        let texts: Vec<&str> = new.iter().map(|(_, _, x)| x.as_str()).collect();
        let vectors = embed(&texts)?;
        let added = new.len().min(vectors.len());
        for ((tool, canonical, _), v) in new.into_iter().zip(vectors) {
            self.by_tool.entry(tool.to_owned()).or_default().insert(canonical.to_owned(), v);
        }
        Ok(added)
    }

    /// The best cosine of `v` (a unit vector) to an example of `tool`;
    /// `None` when it has none.
    pub fn nearest(&self, tool: &str, v: &[f32]) -> Option<f32> {
        let examples = self.by_tool.get(tool)?;
        examples.values().map(|e| e.iter().zip(v).map(|(a, b)| a * b).sum::<f32>()).reduce(f32::max)
    }

    /// Examples held, over every tool.
    pub fn len(&self) -> usize {
        self.by_tool.values().map(HashMap::len).sum()
    }

    /// Whether no example is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held (texts and vectors; [`engram_local_state::heap_bytes`]): what a soak
    /// sets beside RSS.
    pub fn heap_bytes(&self) -> usize {
        use engram_local_state::heap_bytes::string;
        self.by_tool
            .iter()
            .map(|(tool, rows)| {
                string(tool) + rows.iter().map(|(c, v)| string(c) + v.capacity() * 4 + 48).sum::<usize>()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::ToolArgs;

    fn row(canonical: &str, tool: &str, rejected: bool) -> CanonicalRow {
        CanonicalRow {
            canonical: canonical.into(),
            executor: tool.into(),
            args_observed: ToolArgs::default(),
            uses: 1,
            first_seq: 1,
            rejected,
            slots: ToolArgs::default(),
        }
    }

    /// A vector per text: the texts seen so far, one axis each.
    fn embedder(seen: &mut Vec<String>) -> impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>, ()> + '_ {
        move |texts: &[&str]| {
            Ok(texts
                .iter()
                .map(|t| {
                    seen.push(t.to_string());
                    let mut v = vec![0.0; 8];
                    v[seen.len() - 1] = 1.0;
                    v
                })
                .collect())
        }
    }

    #[test]
    fn each_phrasing_is_embedded_once_and_a_rejected_one_is_forgotten() {
        let mut taught = TaughtPhrasings::default();
        let mut seen = Vec::new();
        let rows = [row("kill the lights", "off", false), row("lights out", "off", false)];
        assert_eq!(taught.sync(&rows, &mut embedder(&mut seen)), Ok(2));
        assert_eq!(taught.sync(&rows, &mut embedder(&mut seen)), Ok(0), "held rows are not embedded again");
        assert_eq!(seen, ["kill the lights", "lights out"]);
        let mut axis = vec![0.0; 8];
        axis[1] = 1.0;
        assert_eq!(taught.nearest("off", &axis), Some(1.0));
        assert_eq!(taught.nearest("on", &axis), None);
        assert_eq!(taught.sync(&[row("lights out", "off", true)], &mut embedder(&mut seen)), Ok(0));
        assert_eq!(taught.nearest("off", &axis), Some(0.0), "the rejected example no longer counts");
        assert_eq!(taught.len(), 1);
    }

    #[test]
    fn a_failed_embedding_adds_nothing_and_the_rows_can_be_given_again() {
        let mut taught = TaughtPhrasings::default();
        let rows = [row("kill the lights", "off", false)];
        assert_eq!(taught.sync(&rows, &mut |_: &[&str]| Err::<Vec<Vec<f32>>, _>("down")), Err("down"));
        assert!(taught.is_empty());
        let mut seen = Vec::new();
        assert_eq!(taught.sync(&rows, &mut embedder(&mut seen)), Ok(1));
    }
}
