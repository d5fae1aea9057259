//! The lexical half of rule 2: the terms BM25 counts and BM25's ranking
//! over the postings. Apart from the vector half: the two rank on their
//! own and only their ranks are fused.

use std::collections::HashMap;

use super::{top, MemoryQuery, PassageIndex};
use crate::text::{is_stop_word, normalize, words, Negations};

/// BM25's term-frequency saturation and length normalisation (the usual
/// defaults).
const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

/// The terms BM25 counts: the words of the normalised text that are not
/// stop words, cut to their first six characters — a crude stem that
/// treats "restaurants"/"restaurant" and "cartelle"/"cartella" as one
/// term in either language, without a word list per language.
pub fn terms(text: &str) -> Vec<String> {
    let n = normalize(text);
    words(&n)
        .filter(|w| !is_stop_word(w, Negations::Drop))
        .map(|w| {
            let w = w.trim_matches('\'');
            match w.char_indices().nth(6) {
                Some((i, _)) if !w.chars().all(|c| c.is_ascii_digit()) => w[..i].to_owned(),
                _ => w.to_owned(),
            }
        })
        .filter(|w| !w.is_empty())
        .collect()
}

impl PassageIndex {
    /// BM25's ranking of the live passages in range, best first.
    pub fn lexical(&self, q: &MemoryQuery<'_>, k: usize) -> Vec<(u32, f32)> {
        if self.live == 0 {
            return Vec::new();
        }
        let mut query_terms = terms(q.text);
        query_terms.sort();
        query_terms.dedup();
        let n = self.live as f32;
        let avg = (self.live_terms as f32 / n).max(1.0);
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for t in &query_terms {
            let Some(list) = self.postings.get(t) else { continue };
            let live: Vec<&(u32, u16)> = list.iter().filter(|(s, _)| self.passages[*s as usize].is_some()).collect();
            if live.is_empty() {
                continue;
            }
            let df = live.len() as f32;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &&(slot, tf) in &live {
                if !self.in_range(slot, q) {
                    continue;
                }
                let tf = tf as f32;
                let len = self.lengths[slot as usize] as f32;
                let s = idf * tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * (1.0 - BM25_B + BM25_B * len / avg));
                *scores.entry(slot).or_default() += s;
            }
        }
        top(scores.into_iter().collect(), k)
    }
}
