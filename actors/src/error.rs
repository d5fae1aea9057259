//! What can go wrong running the runtime.

use engram_storage::LogError;

/// Why the runtime could not start or could not take a turn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The builder was not told where the data lives.
    #[error("no data dir: call RuntimeBuilder::data_dir")]
    NoDataDir,
    /// No embedder was given, and this build has no local one (the `onnx`
    /// feature is off).
    #[error("no embedder: give one with RuntimeBuilder::embedder, or build engram with the `onnx` feature")]
    NoEmbedder,
    /// The log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The embedder could not be opened.
    #[error(transparent)]
    Embed(#[from] engram_learning::embedder::EmbedError),
    /// The configuration is unusable.
    #[error("config: {0}")]
    Config(String),
    /// The LLM configuration is unusable.
    #[error("llm: {0}")]
    Llm(String),
    /// The session id is not one a host may use.
    #[error("session id {id:?}: {reason}")]
    BadSession {
        /// The id, as given.
        id: String,
        /// What is wrong with it.
        reason: engram_events::InvalidSessionId,
    },
    /// A model choice names no candidate.
    #[error("model {model:?} is not one of the candidates {candidates:?} ([llm] candidates)")]
    UnknownModel {
        /// The model asked for.
        model: String,
        /// The candidates.
        candidates: Vec<String>,
    },
    /// An utterance longer than `[runtime] max_utterance_bytes` (at most a
    /// turn's text as import reads it, the default): refused before
    /// anything is recorded. What the log holds must read back through
    /// `engram import` (a turn's `text` is at most
    /// `engram_learning::import::turn_record::limits::MAX_TEXT_BYTES`), and
    /// no one speaks 64 KiB in one breath — a pasted file is read as a
    /// file.
    #[error(
        "an utterance of {bytes} bytes is longer than the {max} an utterance may be ([runtime] max_utterance_bytes); \
         nothing was recorded"
    )]
    UtteranceTooLong {
        /// Its length in bytes.
        bytes: usize,
        /// The most there may be.
        max: usize,
    },
    /// The session was ended; a new one needs a new id.
    #[error("session {0:?} has ended; start a new session id")]
    SessionEnded(String),
    /// An actor failed while handling the request.
    #[error("the {0} actor failed; see the error log")]
    ActorFailed(&'static str),
    /// The turn took longer than the runtime waits.
    #[error("turn {turn} not completed within {secs} s (it goes on; its events will be in the log)")]
    TurnTimeout {
        /// The turn.
        turn: String,
        /// How long was waited.
        secs: u64,
    },
    /// The runtime is shut down.
    #[error("the runtime is shut down")]
    Stopped,
    /// A thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
    /// Nothing was forgotten ([`crate::Runtime::forget`]).
    #[error(transparent)]
    Forget(#[from] engram_learning::memory::ForgetError),
}
