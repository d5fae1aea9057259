//! L2: a request against the recorded pipelines (each tried in order,
//! every placeholder resolved from the request), and L2's rows from the
//! `pipelines` projection. Apart from L1 because L2 has no slots,
//! vocabularies or action bars: a pipeline serves as recorded, its
//! placeholders resolved.

use std::collections::HashMap;

use engram_events::payloads::{PlanStep, RouteLayer};

use super::{Decision, FastPath, L2Row};
use crate::fast_path::{placeholder, Extracted, MultiToolConfig};

impl FastPath {
    pub(super) fn try_l2<E>(
        &self,
        canon: &str,
        ex: &Extracted,
        q: Option<&[f32]>,
        refusals: &mut Vec<(f64, String)>,
        embed: &mut dyn FnMut(&str) -> Result<Vec<f32>, E>,
    ) -> Option<Decision> {
        let threshold = self.bar(self.multi.l2_threshold());
        for (text, pipelines, cos) in self.l2.candidates(canon, q) {
            let cos = f64::from(cos);
            if cos < threshold {
                refusals.push((cos, format!("L2: best match {text:?} at cosine {cos:.3} < {threshold}")));
                break;
            }
            if let Err(m) = self.gate(canon, super::asked(ex), text, None, embed) {
                refusals.push((cos, format!("L2: {text:?} refused by the gate: {m}")));
                continue;
            }
            'pipelines: for pipeline in pipelines {
                let mut steps = Vec::with_capacity(pipeline.len());
                for s in pipeline {
                    match placeholder::resolve(&s.args, ex) {
                        Ok(args) => steps.push(PlanStep { tool: s.tool.clone(), args }),
                        Err(e) => {
                            refusals.push((cos, format!("L2: {text:?}: {e}")));
                            continue 'pipelines;
                        }
                    }
                }
                let reason = format!("L2: cosine {cos:.3} ≥ {threshold}, gate passed, placeholders resolved");
                return Some(Decision::served(RouteLayer::L2, steps, Some(cos), text.to_owned(), reason));
            }
        }
        None
    }
}

/// L2's rows: the candidate pipelines of each canonical text among `rows`,
/// in the projection's order.
pub(super) fn l2_rows<'a>(
    multi: &MultiToolConfig,
    rows: impl Iterator<Item = &'a crate::projections::pipelines::PipelineRow>,
) -> HashMap<String, L2Row> {
    let mut out: HashMap<String, L2Row> = HashMap::new();
    if multi.enabled {
        for p in rows.filter(|p| p.uses >= multi.min_uses && !p.rejected) {
            out.entry(p.canonical.clone()).or_default().push(p.steps.clone());
        }
    }
    out
}
