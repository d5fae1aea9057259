//! Fingerprints: the shape of a turn that the pattern store keys outcomes
//! on (seed 001 §4-§5).
//!
//! A structural fingerprint's identity is its *structural signature* — a
//! BLAKE3 hash of the canonical (normalized) features and the workload — so
//! every turn of the same shape lands in the same outcome rows, in every
//! data dir, on every rebuild.
//!
//! A hybrid fingerprint (v2) also carries an embedding of the user's
//! request, and is a *neighbourhood of meaning* inside its **family** (the
//! turns of one signature whose vectors come from one model,
//! [`Fingerprint::family`]): two requests of identical structure — no tags,
//! no tools, no files — that mean different things ("translate good night
//! into Portuguese", "how do I make risotto") are different fingerprints.
//! A hybrid's id hashes its family and the vector of the request that
//! *founded* it; which fingerprint a later turn joins (the nearest of its
//! family by cosine, if it means the same kind of thing) is decided by the
//! pattern reactor and written in `pattern.recorded`, so a rebuild folds
//! ids and never compares vectors (`crate::reactors::patterns`, "Meaning").

use std::sync::Arc;

use engram_events::payloads::{FingerprintKind, StructuralFeatures};
use engram_events::FingerprintId;
use ulid::Ulid;

/// An embedding vector and the model that produced it. Vectors of different
/// providers (or dimensions) are never compared.
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding {
    /// Stable provider id, e.g. `local:all-MiniLM-L6-v2:int8`.
    pub provider: Arc<str>,
    /// L2-normalised components.
    pub vector: Arc<[f32]>,
}

impl Embedding {
    /// An embedding by `provider`.
    pub fn new(provider: &str, vector: Vec<f32>) -> Self {
        Embedding { provider: provider.into(), vector: vector.into() }
    }

    /// Whether cosine between the two means anything: same provider, same
    /// dimension.
    pub fn comparable(&self, other: &Embedding) -> bool {
        self.provider == other.provider && self.vector.len() == other.vector.len()
    }
}

/// How much of a turn its features can know.
///
/// A turn is routed *before* it runs: the tools the model will call, what
/// they may change and the directories they touch are unknown then, and
/// they depend on the model chosen (a wrong model runs another tool). A
/// turn is recorded *after*: all of it is known. A route-time query must
/// not count those fields as mismatches against recorded rows — that would
/// file one kind of request under a different cluster per model, and an
/// explored candidate's samples would never be seen by the next query of
/// the same kind. So similarity skips the run-time fields whenever either
/// side is [`Stage::Route`] (see [`super::similarity::structural_at`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Before planning: intent tags, file extensions, token bucket and
    /// images are known; tools, side effects and path buckets are not.
    Route,
    /// After the turn ran (and every imported record): all fields known.
    #[default]
    Recorded,
}

/// A turn's fingerprint: structural features, the caller's workload tag,
/// and (v2) an embedding.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fingerprint {
    /// Normalized structural features.
    pub features: StructuralFeatures,
    /// Seed 001 `workload_id`: a near-keyed partition when both sides set it.
    pub workload: Option<String>,
    /// The request's embedding (hybrid fingerprints only).
    pub embedding: Option<Embedding>,
    /// What the features can know; not part of the identity (a route-time
    /// shape and a recorded one with no run-time fields are the same shape).
    pub stage: Stage,
}

impl Fingerprint {
    /// A v1 structural fingerprint (features are normalized here).
    pub fn structural(features: StructuralFeatures) -> Self {
        Fingerprint { features: features.normalized(), workload: None, embedding: None, stage: Stage::Recorded }
    }

    /// The same fingerprint as a route-time query: its run-time fields
    /// (tools, side effects, path buckets) are not yet known and are
    /// skipped by similarity, whatever they hold.
    pub fn at_route(mut self) -> Self {
        self.stage = Stage::Route;
        self
    }

    /// The same fingerprint with a workload tag.
    pub fn with_workload(mut self, workload: Option<String>) -> Self {
        self.workload = workload;
        self
    }

    /// The same fingerprint with an embedding (making it hybrid).
    pub fn with_embedding(mut self, embedding: Option<Embedding>) -> Self {
        self.embedding = embedding;
        self
    }

    /// Structural or hybrid.
    pub fn kind(&self) -> FingerprintKind {
        if self.embedding.is_some() {
            FingerprintKind::Hybrid
        } else {
            FingerprintKind::Structural
        }
    }

    /// The structural signature: BLAKE3 of the canonical JSON of the
    /// normalized features, then the workload.
    pub fn signature(&self) -> [u8; 32] {
        let canon = self.features.clone().normalized();
        let json = serde_json::to_vec(&canon).expect("features serialise");
        let mut h = blake3::Hasher::new();
        h.update(b"engram.fingerprint.v1\0");
        h.update(&(json.len() as u64).to_le_bytes());
        h.update(&json);
        match &self.workload {
            Some(w) => {
                h.update(&[1]);
                h.update(w.as_bytes());
            }
            None => {
                h.update(&[0]);
            }
        }
        *h.finalize().as_bytes()
    }

    /// The fingerprint's family: its signature (and, for hybrids, the
    /// embedding provider) folded into a ULID. A structural fingerprint's id
    /// is its family; hybrids of one family are told apart by meaning.
    pub fn family(&self) -> FingerprintId {
        let mut h = blake3::Hasher::new();
        h.update(&self.signature());
        if let Some(e) = &self.embedding {
            h.update(e.provider.as_bytes());
        }
        let bytes: [u8; 16] = h.finalize().as_bytes()[..16].try_into().expect("16 bytes");
        FingerprintId(Ulid(u128::from_be_bytes(bytes)))
    }

    /// The fingerprint's id: its [family](Fingerprint::family) for a
    /// structural one (equal shapes share one id); for a hybrid, the id of
    /// the neighbourhood this request would *found* — its family and its
    /// vector hashed. (A turn whose request means what a stored fingerprint
    /// of its family means joins that one instead: the pattern reactor's
    /// rule.)
    pub fn id(&self) -> FingerprintId {
        let Some(e) = &self.embedding else { return self.family() };
        let mut h = blake3::Hasher::new();
        h.update(b"engram.fingerprint.meaning\0");
        h.update(&self.family().0 .0.to_be_bytes());
        for x in e.vector.iter() {
            h.update(&x.to_le_bytes());
        }
        let bytes: [u8; 16] = h.finalize().as_bytes()[..16].try_into().expect("16 bytes");
        FingerprintId(Ulid(u128::from_be_bytes(bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(tags: &[&str]) -> StructuralFeatures {
        StructuralFeatures { intent_tags: tags.iter().map(|s| s.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn identity_is_the_structural_signature() {
        // Order, case and duplicates do not change the shape.
        let a = Fingerprint::structural(features(&["Debug", "doc"]));
        let b = Fingerprint::structural(features(&["doc", "debug", "doc"]));
        assert_eq!(a.id(), b.id());
        let c = Fingerprint::structural(features(&["doc"]));
        assert_ne!(a.id(), c.id());
        // The workload is part of the shape.
        assert_ne!(a.id(), a.clone().with_workload(Some("w".into())).id());
        // Hybrids of one signature and provider are one family, and each
        // meaning founds its own id.
        let h1 = a.clone().with_embedding(Some(Embedding::new("p", vec![1.0, 0.0])));
        let h2 = a.clone().with_embedding(Some(Embedding::new("p", vec![0.0, 1.0])));
        assert_eq!(h1.family(), h2.family());
        assert_ne!(h1.id(), h2.id());
        assert_ne!(h1.family(), a.family());
        assert_eq!(a.id(), a.family());
        assert_eq!(h1.kind(), FingerprintKind::Hybrid);
        assert_eq!(a.kind(), FingerprintKind::Structural);
    }
}
