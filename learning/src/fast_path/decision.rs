//! The fast-path decision (seed 000): L0, then L1, then L2, then the
//! planner — strictly in that order, the first layer that answers wins.
//!
//! [`FastPath`] is built from the `canonical_queries` and `pipelines`
//! projections (candidates only: rows seen `min_uses` times) and the
//! vectors of their canonical texts; [`FastPath::route`] decides one
//! request. A cosine above the layer's threshold is necessary, not
//! sufficient: the match must also pass the replay [`super::gate`]
//! and every argument placeholder must resolve from the new request —
//! otherwise the request goes to the planner, with the reason.

use std::collections::HashMap;

use chrono::{DateTime, FixedOffset};
use engram_events::payloads::{PlanStep, RouteLayer, ToolArgs};
use serde::Serialize;

use super::{canonical, gate, placeholder, Extracted, L0Table};
use crate::config::{FastPathConfig, MultiToolConfig};
use crate::projections::{CanonicalQueries, Pipelines};

/// Nearest-neighbour search over a layer's row vectors (unit length): row
/// index and cosine, best first.
pub trait VectorSearch: Send + Sync {
    /// The `k` rows nearest to `query`.
    fn search(&self, query: &[f32], k: usize) -> Vec<(usize, f32)>;
}

/// Embeds a batch of texts (one vector per text, unit length).
pub type BatchEmbed<'a, E> = &'a mut dyn FnMut(&[&str]) -> Result<Vec<Vec<f32>>, E>;

/// Builds a [`VectorSearch`] over rows' vectors (row index = position).
pub type IndexFactory<'a> = &'a dyn Fn(Vec<Vec<f32>>) -> Box<dyn VectorSearch>;

/// How many neighbours each layer examines before giving up.
const CANDIDATES: usize = 5;

/// What the fast path decided for one request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// `L0`, `L1`, `L2` or `planner`.
    pub layer: RouteLayer,
    /// The steps to run (empty for the planner).
    pub steps: Vec<PlanStep>,
    /// Cosine of the match (L1/L2), or of the best refused candidate.
    pub similarity: Option<f64>,
    /// The canonical text (or L0 phrase) matched.
    pub matched: Option<String>,
    /// Why this layer answered, or why none did.
    pub reason: String,
    /// With `chain_to_planner`: the part of the request left for the planner
    /// after an L2 prefix replay.
    pub residual: Option<String>,
    /// The request's canonical form (empty when L0 answered).
    pub canonical: String,
    /// Every candidate examined and what became of it, in order (for
    /// `engram route --explain`).
    pub trace: Vec<String>,
}

impl Decision {
    /// L0's answer for `text`, if the literal table has it.
    pub fn from_l0(l0: &L0Table, text: &str) -> Option<Self> {
        let (tool, phrase) = l0.lookup(text)?;
        Some(Decision {
            layer: RouteLayer::L0,
            steps: vec![PlanStep { tool: tool.to_owned(), args: ToolArgs::default() }],
            similarity: None,
            matched: Some(phrase),
            reason: "L0: literal phrase".into(),
            residual: None,
            canonical: String::new(),
            trace: Vec::new(),
        })
    }

    /// The planner answers, for `reason`.
    pub fn planner(reason: String, similarity: Option<f64>) -> Self {
        Decision {
            layer: RouteLayer::Planner,
            steps: Vec::new(),
            similarity,
            matched: None,
            reason,
            residual: None,
            canonical: String::new(),
            trace: Vec::new(),
        }
    }
}

struct L1Row {
    canonical: String,
    executor: String,
    args: ToolArgs,
}

struct L2Row {
    canonical: String,
    steps: Vec<PlanStep>,
}

/// The router's fast-path tables, ready to answer.
pub struct FastPath {
    l0: L0Table,
    fast: FastPathConfig,
    multi: MultiToolConfig,
    l1: Vec<L1Row>,
    l1_index: Option<Box<dyn VectorSearch>>,
    /// Canonical text → L1 row: an exact repeat is found without relying on
    /// the (approximate, above a few thousand rows) vector search.
    l1_exact: HashMap<String, usize>,
    l2: Vec<L2Row>,
    l2_index: Option<Box<dyn VectorSearch>>,
    /// Canonical text → L2 row (the first recorded).
    l2_exact: HashMap<String, usize>,
}

impl FastPath {
    /// Builds the tables: L0 from the built-ins plus `fast.l0_extra`; L1 and
    /// L2 from the projections' candidates, their canonical texts embedded
    /// by `embed` (batch) and indexed by `make_index`.
    pub fn build<E>(
        fast: &FastPathConfig,
        multi: &MultiToolConfig,
        canonical: &CanonicalQueries,
        pipelines: &Pipelines,
        embed: BatchEmbed<'_, E>,
        make_index: IndexFactory<'_>,
    ) -> Result<FastPath, E> {
        // One executor per canonical text: the most used (ties: first seen).
        let mut l1: Vec<(&str, &crate::projections::canonical_queries::CanonicalRow)> = Vec::new();
        if fast.canonical_query_enabled {
            for row in canonical.candidates(fast.canonical_query_min_uses) {
                // Rows come sorted by canonical text: duplicates are adjacent.
                match l1.last_mut().filter(|(c, _)| *c == row.canonical) {
                    Some(slot)
                        if (row.uses, std::cmp::Reverse(row.first_seq))
                            > (slot.1.uses, std::cmp::Reverse(slot.1.first_seq)) =>
                    {
                        *slot = (&row.canonical, row)
                    }
                    Some(_) => {}
                    None => l1.push((&row.canonical, row)),
                }
            }
        }
        let l1: Vec<L1Row> = l1
            .into_iter()
            .map(|(_, r)| L1Row {
                canonical: r.canonical.clone(),
                executor: r.executor.clone(),
                args: r.args_observed.clone(),
            })
            .collect();
        let l2: Vec<L2Row> = if multi.enabled {
            pipelines
                .candidates(multi.min_uses)
                .map(|p| L2Row { canonical: p.canonical.clone(), steps: p.steps.clone() })
                .collect()
        } else {
            Vec::new()
        };
        let index = |texts: Vec<&str>, embed: BatchEmbed<'_, E>| {
            if texts.is_empty() {
                Ok(None)
            } else {
                embed(&texts).map(|v| Some(make_index(v)))
            }
        };
        let l1_index = index(l1.iter().map(|r| r.canonical.as_str()).collect(), embed)?;
        let l2_index = index(l2.iter().map(|r| r.canonical.as_str()).collect(), embed)?;
        let l1_exact = l1.iter().enumerate().map(|(i, r)| (r.canonical.clone(), i)).collect();
        let mut l2_exact = HashMap::new();
        for (i, r) in l2.iter().enumerate() {
            l2_exact.entry(r.canonical.clone()).or_insert(i);
        }
        Ok(FastPath {
            l0: L0Table::from_config(fast),
            fast: fast.clone(),
            multi: multi.clone(),
            l1,
            l1_index,
            l1_exact,
            l2,
            l2_index,
            l2_exact,
        })
    }

    /// L1 rows and L2 pipelines held.
    pub fn sizes(&self) -> (usize, usize) {
        (self.l1.len(), self.l2.len())
    }

    /// Decides `text`, said at `now` (the user's local time). `embed` is
    /// called at most twice (the request, and with `chain_to_planner` its
    /// prefix), never when L0 answers or no layer has candidates.
    pub fn route<E>(
        &self,
        text: &str,
        now: DateTime<FixedOffset>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Result<Decision, E> {
        if let Some(d) = Decision::from_l0(&self.l0, text) {
            return Ok(d);
        }
        if self.l1_index.is_none() && self.l2_index.is_none() {
            return Ok(Decision::planner("no fast-path candidates yet".into(), None));
        }
        let (canon, ex) = canonical(text, now);
        if canon.is_empty() {
            return Ok(Decision::planner("empty request".into(), None));
        }
        let q = embed(&canon)?;
        let mut refusals: Vec<(f64, String)> = Vec::new();
        let finish = |mut d: Decision, refusals: &[(f64, String)], canon: &str| {
            d.canonical = canon.to_owned();
            d.trace = refusals.iter().map(|(_, why)| why.clone()).collect();
            d
        };
        if let Some(d) = self.try_l1(&canon, &ex, &q, &mut refusals) {
            return Ok(finish(d, &refusals, &canon));
        }
        if let Some(d) = self.try_l2(&canon, &ex, &q, &mut refusals) {
            return Ok(finish(d, &refusals, &canon));
        }
        if self.multi.chain_to_planner && self.l2_index.is_some() {
            if let Some((prefix, rest)) = split_continuation(text) {
                let (pcanon, pex) = canonical(&prefix, now);
                let pq = embed(&pcanon)?;
                if let Some(mut d) = self.try_l2(&pcanon, &pex, &pq, &mut refusals) {
                    d.reason = format!("{}; the rest goes to the planner", d.reason);
                    d.residual = Some(rest);
                    return Ok(finish(d, &refusals, &canon));
                }
            }
        }
        let best = refusals.iter().max_by(|a, b| a.0.total_cmp(&b.0)).cloned();
        let d = match best {
            Some((sim, why)) => Decision::planner(why, Some(sim)),
            None => Decision::planner("no candidate close enough".into(), None),
        };
        Ok(finish(d, &refusals, &canon))
    }

    fn try_l1(&self, canon: &str, ex: &Extracted, q: &[f32], refusals: &mut Vec<(f64, String)>) -> Option<Decision> {
        let index = self.l1_index.as_ref()?;
        let threshold = self.fast.canonical_query_threshold;
        for (row, cos) in candidates(self.l1_exact.get(canon).copied(), index.as_ref(), q) {
            let cos = f64::from(cos);
            let r = &self.l1[row];
            if cos < threshold {
                refusals.push((cos, format!("L1: best match {:?} at cosine {cos:.3} < {threshold}", r.canonical)));
                break;
            }
            if let Err(m) = gate::check(canon, &r.canonical) {
                refusals.push((cos, format!("L1: {:?} refused by the gate: {m}", r.canonical)));
                continue;
            }
            match placeholder::resolve(&r.args, ex) {
                Ok(args) => {
                    return Some(Decision {
                        layer: RouteLayer::L1,
                        steps: vec![PlanStep { tool: r.executor.clone(), args }],
                        similarity: Some(cos),
                        matched: Some(r.canonical.clone()),
                        reason: format!("L1: cosine {cos:.3} ≥ {threshold}, gate passed"),
                        residual: None,
                        canonical: String::new(),
                        trace: Vec::new(),
                    })
                }
                Err(e) => refusals.push((cos, format!("L1: {:?}: {e}", r.canonical))),
            }
        }
        None
    }

    fn try_l2(&self, canon: &str, ex: &Extracted, q: &[f32], refusals: &mut Vec<(f64, String)>) -> Option<Decision> {
        let index = self.l2_index.as_ref()?;
        let threshold = self.multi.threshold;
        'rows: for (row, cos) in candidates(self.l2_exact.get(canon).copied(), index.as_ref(), q) {
            let cos = f64::from(cos);
            let r = &self.l2[row];
            if cos < threshold {
                refusals.push((cos, format!("L2: best match {:?} at cosine {cos:.3} < {threshold}", r.canonical)));
                break;
            }
            if let Err(m) = gate::check(canon, &r.canonical) {
                refusals.push((cos, format!("L2: {:?} refused by the gate: {m}", r.canonical)));
                continue;
            }
            let mut steps = Vec::with_capacity(r.steps.len());
            for s in &r.steps {
                match placeholder::resolve(&s.args, ex) {
                    Ok(args) => steps.push(PlanStep { tool: s.tool.clone(), args }),
                    Err(e) => {
                        refusals.push((cos, format!("L2: {:?}: {e}", r.canonical)));
                        continue 'rows;
                    }
                }
            }
            return Some(Decision {
                layer: RouteLayer::L2,
                steps,
                similarity: Some(cos),
                matched: Some(r.canonical.clone()),
                reason: format!("L2: cosine {cos:.3} ≥ {threshold}, gate passed, placeholders resolved"),
                residual: None,
                canonical: String::new(),
                trace: Vec::new(),
            });
        }
        None
    }
}

/// The rows to examine: the exact canonical match first (cosine 1), then
/// the vector search's nearest.
fn candidates(exact: Option<usize>, index: &dyn VectorSearch, q: &[f32]) -> Vec<(usize, f32)> {
    let mut out: Vec<(usize, f32)> = exact.map(|i| (i, 1.0)).into_iter().collect();
    out.extend(index.search(q, CANDIDATES).into_iter().filter(|(r, _)| Some(*r) != exact));
    out
}

/// Conjunctions after which a further action may follow.
const CONTINUATIONS: &[&str] =
    &[" and then ", ", then ", " then ", " and also ", " e poi ", ", poi ", " poi ", " e anche ", " and ", " e "];

/// The continuation detector: splits "download X and describe it and then
/// mail me the summary" into the known prefix and the residual intent, at
/// the last conjunction followed by an action verb.
pub fn split_continuation(text: &str) -> Option<(String, String)> {
    // ASCII lowercasing keeps byte offsets valid in `text`.
    let lower = text.to_ascii_lowercase();
    // (start, end) of the chosen conjunction: the one before the last
    // action, and the longest one ending there ("and then", not "then").
    let mut best: Option<(usize, usize)> = None;
    for c in CONTINUATIONS {
        for (i, _) in lower.match_indices(c) {
            let end = i + c.len();
            let verb = lower[end..].split_whitespace().next().unwrap_or("");
            if gate::is_action(verb) && best.is_none_or(|(bi, be)| end > be || (end == be && i < bi)) {
                best = Some((i, end));
            }
        }
    }
    let (i, end) = best?;
    let (prefix, rest) = (text[..i].trim(), text[end..].trim());
    (!prefix.is_empty() && !rest.is_empty()).then(|| (prefix.to_owned(), rest.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search that misses (as an approximate graph can): always the last row.
    struct Misses(usize);

    impl VectorSearch for Misses {
        fn search(&self, _: &[f32], _: usize) -> Vec<(usize, f32)> {
            vec![(self.0 - 1, 0.99)]
        }
    }

    #[test]
    fn an_exact_repeat_is_found_even_when_the_vector_search_misses_it() {
        use crate::projections::CanonicalQueries;
        use engram_events::payloads::CanonicalRecorded;
        use engram_events::{ActorKind, Envelope};
        use engram_storage::projector::Projection;
        let mut canonical = CanonicalQueries::default();
        for (text, tool) in [("describe path", "describe_file"), ("summarize path", "summarize_file")] {
            for _ in 0..3 {
                let e = CanonicalRecorded {
                    canonical: text.into(),
                    executor: tool.into(),
                    args_observed: ToolArgs::from_json(r#"{"path":"{path}"}"#).unwrap(),
                };
                canonical.apply(&Envelope::new(ActorKind::Router, e));
            }
        }
        let mut embed = |texts: &[&str]| Ok::<_, ()>(texts.iter().map(|_| vec![1.0f32]).collect());
        let make = |rows: Vec<Vec<f32>>| -> Box<dyn VectorSearch> { Box::new(Misses(rows.len())) };
        let fp = FastPath::build(
            &FastPathConfig::default(),
            &MultiToolConfig::default(),
            &canonical,
            &Pipelines::default(),
            &mut embed,
            &make,
        )
        .unwrap();
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap();
        let d = fp.route("describe ~/x.md", now, &mut |_| Ok::<_, ()>(vec![1.0])).unwrap();
        assert_eq!(d.layer, RouteLayer::L1);
        assert_eq!(d.steps[0].tool, "describe_file", "{d:?}");
        assert_eq!(d.similarity, Some(1.0));
    }

    #[test]
    fn continuation_detector() {
        assert_eq!(
            split_continuation("download https://a.org and describe it and then send me the summary by email"),
            Some(("download https://a.org and describe it".into(), "send me the summary by email".into()))
        );
        assert_eq!(
            split_continuation("scarica https://a.org e riassumila e poi mandami il riassunto"),
            Some(("scarica https://a.org e riassumila".into(), "mandami il riassunto".into()))
        );
        assert_eq!(split_continuation("find the photos of anna and marco"), None);
        assert_eq!(split_continuation("what time is it"), None);
    }
}
