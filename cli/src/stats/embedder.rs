//! Which embedding model the data dir's stored vectors come from, beside
//! the one configured. The hybrid fingerprints of the pattern store carry
//! theirs (by model id); fast-path rows and diary entries are embedded from
//! their text by the configured model at start, so only the fingerprints
//! can be another model's.

use std::collections::BTreeMap;
use std::path::Path;

use engram::learning::embedder::EmbeddingModel;
use engram::learning::projections::PatternOutcomes;
use engram::local_state::projector::Projector;

/// The configured model and the stored fingerprint vectors by model.
pub(super) struct Vectors {
    /// The model `engram.toml` (or its default) configures.
    pub(super) configured: EmbeddingModel,
    /// Fingerprint vectors by the name of the model that made them.
    pub(super) by_model: BTreeMap<String, u64>,
    /// Fingerprint vectors made by a model other than the configured one.
    pub(super) of_other_models: u64,
}

/// Counts the fingerprint vectors in the pattern store by model, against
/// the model configured for `data`.
pub(super) fn vectors(data: &Path, projector: &Projector) -> Vectors {
    let configured = crate::load_config(data).map(|c| c.embedder.model).unwrap_or_default();
    let mut by_model: BTreeMap<String, u64> = BTreeMap::new();
    if let Some(store) = projector.get::<PatternOutcomes>("pattern_outcomes") {
        for (_, row) in store.fingerprints() {
            if let Some(e) = &row.embedding {
                let name = EmbeddingModel::from_id(&e.provider).map_or(e.provider.clone(), |m| m.name().to_owned());
                *by_model.entry(name).or_default() += 1;
            }
        }
    }
    let of_other_models = by_model.iter().filter(|(m, _)| **m != configured.name()).map(|(_, n)| n).sum();
    Vectors { configured, by_model, of_other_models }
}
