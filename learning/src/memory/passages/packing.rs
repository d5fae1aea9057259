//! Recalled passages packed into a prompt's budget, with rule 6's mark
//! on the latest of each subject. Apart from the search: what is found is
//! ranked there, and only what fits is dated and compared here.

use chrono::NaiveDate;
use engram_events::payloads::Speaker;

use super::vectors::dequantize;
use super::{PassageIndex, Remembered};

/// Cosine above which two recalled passages are taken to be about one
/// subject (rule 6). Measured on the memory fixture's dev split with the
/// default multilingual model: see docs/memory.md.
pub const SAME_SUBJECT: f32 = 0.6;

/// Characters a token stands for, to pack passages into a token budget
/// without a tokenizer: 4 is the usual figure for English and Italian BPE
/// vocabularies.
pub const CHARS_PER_TOKEN: usize = 4;

/// A passage recalled for a request, in the order it goes into a prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct RecalledPassage {
    /// The day it was said, at the user's offset.
    pub day: NaiveDate,
    /// Who said it.
    pub speaker: Speaker,
    /// The words.
    pub text: String,
    /// The latest of several recalled passages on one subject (rule 6).
    pub latest: bool,
    /// Its cosine with the request, when both have a vector.
    pub cosine: Option<f32>,
    /// The question these words answer (rule 7).
    pub asked: Option<String>,
}

impl RecalledPassage {
    /// One line, dated, for a prompt or the `recall` tool.
    pub fn line(&self) -> String {
        let who = match self.speaker {
            Speaker::User => "the user said",
            Speaker::Assistant => "the assistant replied",
        };
        let latest = if self.latest { " (the latest on this)" } else { "" };
        let asked = match &self.asked {
            Some(q) => format!("asked \"{q}\", "),
            None => String::new(),
        };
        format!("{} ({}), {asked}{who}{latest}: \"{}\"", self.day, self.day.format("%a"), self.text)
    }
}

impl PassageIndex {
    /// `slots` (best first) packed into `budget_chars`: each passage whole
    /// or not at all, a repeat of one already packed skipped; then rule 6
    /// marks the latest of each subject. `query`: the request's vector, for
    /// each passage's cosine.
    pub fn pack(&self, slots: &[u32], budget_chars: usize, query: Option<&[f32]>) -> Vec<RecalledPassage> {
        let mut used = 0;
        let mut chosen: Vec<(u32, &Remembered)> = Vec::new();
        for &slot in slots {
            let Some(p) = self.get(slot) else { continue };
            let cost = p.text.chars().count() + p.asked.as_ref().map_or(0, |q| q.chars().count() + 10) + 40;
            if used + cost > budget_chars {
                continue;
            }
            if chosen.iter().any(|(_, c)| c.text == p.text) {
                continue;
            }
            used += cost;
            chosen.push((slot, p));
        }
        let vectors: Vec<Option<Vec<f32>>> =
            chosen.iter().map(|(_, p)| p.vector.as_ref().map(dequantize).map(unit)).collect();
        let mut latest = vec![false; chosen.len()];
        for i in 0..chosen.len() {
            let Some(vi) = &vectors[i] else { continue };
            let mut older = false;
            let mut newer = false;
            for j in 0..chosen.len() {
                let Some(vj) = &vectors[j] else { continue };
                if i == j || chosen[i].1.at == chosen[j].1.at {
                    continue;
                }
                let cos: f32 = vi.iter().zip(vj).map(|(a, b)| a * b).sum();
                if cos >= SAME_SUBJECT {
                    if chosen[j].1.at < chosen[i].1.at {
                        older = true;
                    } else {
                        newer = true;
                    }
                }
            }
            latest[i] = older && !newer;
        }
        let query = query.map(|q| unit(q.to_vec()));
        chosen
            .into_iter()
            .zip(latest)
            .zip(vectors)
            .map(|(((_, p), latest), v)| RecalledPassage {
                day: self.day_of(p.at),
                speaker: p.speaker,
                text: p.text.clone(),
                latest,
                cosine: query.as_ref().zip(v).map(|(q, v)| q.iter().zip(&v).map(|(a, b)| a * b).sum()),
                asked: p.asked.clone(),
            })
            .collect()
    }
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    engram_vector::normalize(&mut v);
    v
}
