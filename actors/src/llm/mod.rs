//! LLM adapters: one blocking chat API over Ollama and OpenAI-compatible
//! servers, so the actors (each on its own thread) never see a wire format.
//!
//! * [`LlmClient`] is what actors call; [`client_from_config`] builds one
//!   from `[llm]` (or none: offline mode).
//! * `ollama` and `openai` (feature `llm-http`) speak the two streaming
//!   protocols over one blocking transport; [`text_tools`] carries tools as
//!   text for models without native tool calling, chosen explicitly by
//!   `[llm] native_tools` ([`NativeTools`]), never guessed from an error.
//! * [`pair_tool_calls`] checks a history against the tool-call protocol
//!   and gives every call the id its answer quotes (docs/llm.md, "Protocol
//!   rules").
//! * [`pricing`] and [`record`] turn a call into an `llm.call_completed`
//!   event; [`contexts`] holds the prompts and output parsers of seed 002's
//!   contexts.

use std::time::Duration;

use engram_events::payloads::{LlmContext, LlmOutcome};

pub mod context_llm;
pub mod contexts;
pub mod health;
#[cfg(feature = "llm-http")]
pub(crate) mod http;
#[cfg(feature = "llm-http")]
pub mod ollama;
#[cfg(feature = "llm-http")]
pub mod openai;
pub mod pricing;
pub mod record;
pub mod section;
#[cfg(feature = "llm-http")]
mod servers;
pub mod speed;
pub mod structured;
pub mod text_tools;

pub use context_llm::ContextLlm;
pub use contexts::{ContextError, IntentJudgment};
pub use health::Guarded;
#[cfg(feature = "llm-http")]
pub use ollama::OllamaClient;
#[cfg(feature = "llm-http")]
pub use openai::OpenAiClient;
pub use pricing::{ModelPrice, PriceTable};
pub use record::call_completed;
pub use section::{is_small_model, LlmSection, ModelPriceSection, ModelServerSection, NativeTools};
#[cfg(feature = "llm-http")]
pub use servers::{client_from_config, client_from_config_with_env};
pub use speed::ModelSpeeds;

/// Who wrote a chat message; the adapters map it to each wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageRole {
    /// Instructions to the model.
    System,
    /// The user (or tool results in text tool-call mode).
    User,
    /// The model's earlier answers, with any tool calls it made.
    Assistant,
    /// A tool's result, answering the assistant's call.
    Tool,
}

impl MessageRole {
    /// The role's name on the wire (the same in both protocols).
    pub fn as_str(self) -> &'static str {
        match self {
            MessageRole::System => "system",
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
            MessageRole::Tool => "tool",
        }
    }
}

/// One message of a conversation sent to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: MessageRole,
    /// The text.
    pub content: String,
    /// Tool calls the assistant made in this message (assistant only), so a
    /// tool result can follow it.
    pub tool_calls: Vec<ToolCall>,
    /// The tool whose result this is (tool messages only).
    pub tool_name: Option<String>,
}

impl ChatMessage {
    fn new(role: MessageRole, content: impl Into<String>) -> Self {
        ChatMessage { role, content: content.into(), tool_calls: Vec::new(), tool_name: None }
    }

    /// A system message: instructions.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage::new(MessageRole::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::new(MessageRole::User, content)
    }

    /// An assistant message without tool calls (add them to `tool_calls`).
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage::new(MessageRole::Assistant, content)
    }

    /// An assistant message making `calls`: the one the tool messages that
    /// follow must answer, one each, for the history to follow the protocol.
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        ChatMessage { tool_calls: calls, ..ChatMessage::new(MessageRole::Assistant, content) }
    }

    /// A tool's result, naming the tool so the model can tell results apart.
    pub fn tool(name: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage { tool_name: Some(name.into()), ..ChatMessage::new(MessageRole::Tool, content) }
    }
}

/// A tool the model may call, described the way both protocols expect.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The tool (executor) name.
    pub name: String,
    /// One line on what it does: the model chooses by it.
    pub description: String,
    /// A JSON schema object for the arguments.
    pub parameters: serde_json::Value,
}

/// A tool call the model asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolCall {
    /// The tool name (not checked against the offered tools: callers do).
    pub name: String,
    /// The arguments object.
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// How one message of a history takes part in tool calling, as
/// [`pair_tool_calls`] reads it: what each wire format needs to link a
/// result to its call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolPairing {
    /// No tool calling in this message.
    None,
    /// An assistant message making calls with these ids, in order.
    Calls(Vec<String>),
    /// A tool message answering the call with this id, made to this tool.
    Answers {
        /// The call's id (OpenAI's `tool_call_id`).
        id: String,
        /// The tool called (Ollama's `tool_name`).
        name: String,
    },
}

/// Pairs every tool result in `messages` with the call it answers, so both
/// wire formats link them as their protocols require, and refuses a history
/// no strict server accepts: a tool message must answer a call of the
/// assistant message before it (the first unanswered call to the tool it
/// names, else the first unanswered one), and every call must be answered
/// before the next non-tool message or the end. Call ids are
/// `call_<message>_<call>`: unique within the request and stable as the
/// history grows, so a server's prompt cache keeps matching.
pub fn pair_tool_calls(messages: &[ChatMessage]) -> Result<Vec<ToolPairing>, LlmError> {
    let mut open: Vec<(String, String)> = Vec::new();
    let mut opened_by = 0;
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        if m.role == MessageRole::Tool {
            let tool = m.tool_name.as_deref();
            let Some(at) = open.iter().position(|(_, name)| tool.is_none_or(|t| t == name)) else {
                return Err(LlmError::Protocol(format!(
                    "message {i} is the result of tool {:?} but answers no call of a preceding assistant message",
                    tool.unwrap_or("?")
                )));
            };
            let (id, name) = open.remove(at);
            out.push(ToolPairing::Answers { id, name });
            continue;
        }
        if let Some((id, name)) = open.first() {
            return Err(LlmError::Protocol(format!(
                "call {id} to {name} of message {opened_by} is not answered before message {i}"
            )));
        }
        if m.role != MessageRole::Assistant || m.tool_calls.is_empty() {
            out.push(ToolPairing::None);
            continue;
        }
        opened_by = i;
        open = m.tool_calls.iter().enumerate().map(|(j, c)| (format!("call_{i}_{j}"), c.name.clone())).collect();
        out.push(ToolPairing::Calls(open.iter().map(|(id, _)| id.clone()).collect()));
    }
    match open.first() {
        Some((id, name)) => {
            Err(LlmError::Protocol(format!("call {id} to {name} of message {opened_by} is never answered")))
        }
        None => Ok(out),
    }
}

/// One chat call.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    /// The model, as the server names it.
    pub model: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Tools offered (empty: none, and no tool fields are sent).
    pub tools: Vec<ToolSpec>,
    /// The seed-002 context the call serves (recorded, not sent).
    pub context: LlmContext,
    /// Bounds the whole call: connect, request and the whole stream.
    pub timeout: Duration,
    /// A JSON schema the answer's text must follow (`None`: free text).
    /// Sent as OpenAI's `response_format` (`json_schema`; llama.cpp's
    /// server turns it into a grammar) or Ollama's `format`, so the server
    /// constrains the model's decoding to it — a small model that writes
    /// prose when asked for a plan writes a plan. A server that refuses it
    /// (HTTP 400) is asked again without it, and not asked with it again
    /// for that model ([`structured`]); the text is parsed either way.
    pub answer_schema: Option<serde_json::Value>,
    /// At most this many tokens in the answer (`None`: the server's
    /// default): a plan is short, and a model that rambles should not
    /// spend the turn's budget doing it.
    pub max_tokens: Option<u32>,
    /// The sampling temperature (`None`: the server's default). The
    /// planner asks 0: a plan is rule-following, as seed 002 has its
    /// rule-following calls at 0, and the same prompt should get the same
    /// plan — measured with SmolLM2-135M at the server's default, one
    /// prompt was planned right twice and left empty once.
    pub temperature: Option<f32>,
}

/// A complete (non-streamed) answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatResponse {
    /// The text, concatenated from the stream.
    pub content: String,
    /// Tool calls, native or parsed from text.
    pub tool_calls: Vec<ToolCall>,
    /// Prompt tokens as the server counted them (0 if it did not say).
    pub input_tokens: u32,
    /// Completion tokens as the server counted them (0 if it did not say).
    pub output_tokens: u32,
    /// Wall time of the call, retries included.
    pub latency_ms: u64,
    /// The tools went as text guidance, not natively: `native_tools = "off"`,
    /// or the server said the model has no tool calling (see [`text_tools`]).
    pub text_tool_fallback: bool,
    /// The answer was decoded under the request's `answer_schema`: the
    /// server took it (`false` when none was asked, or it was refused).
    pub structured: bool,
}

/// Why a call failed. No variant ever holds the API key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The call did not finish within the request's timeout.
    #[error("LLM call timed out after {after_ms} ms")]
    Timeout {
        /// The timeout that fired.
        after_ms: u64,
    },
    /// The server answered with a non-2xx status.
    #[error("LLM server answered HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the response body (truncated, key redacted).
        body: String,
    },
    /// The answer did not follow the protocol.
    #[error("malformed LLM answer: {0}")]
    Malformed(String),
    /// No connection (refused, DNS, TLS, reset).
    #[error("LLM server unreachable: {0}")]
    Unreachable(String),
    /// The conversation breaks the tool-call protocol (a tool result that
    /// answers no call, a call left unanswered): a caller's bug, refused
    /// before it reaches a server that would answer 400.
    #[error("the conversation breaks the tool-call protocol: {0}")]
    Protocol(String),
    /// `[llm]` does not describe a usable client.
    #[error("[llm] configuration: {0}")]
    Config(String),
}

impl LlmError {
    /// The outcome recorded in `llm.call_completed`. A protocol error is
    /// one (the request was refused before it was sent); a configuration
    /// error never reached a server, so it counts as unreachable.
    pub fn outcome(&self) -> LlmOutcome {
        match self {
            LlmError::Timeout { .. } => LlmOutcome::Timeout,
            LlmError::Http { .. } => LlmOutcome::HttpError,
            LlmError::Malformed(_) => LlmOutcome::Malformed,
            LlmError::Protocol(_) => LlmOutcome::ProtocolError,
            LlmError::Unreachable(_) | LlmError::Config(_) => LlmOutcome::Unreachable,
        }
    }
}

/// A chat model behind some server. Blocking: each actor calls it from its
/// own thread, and the request's timeout bounds the wait.
///
/// One of a host's two extension points (the other is
/// [`Embedder`](engram_learning::embedder::Embedder)): with the
/// `llm-http` feature engram brings Ollama and OpenAI-compatible clients
/// built from `[llm]`; a host with another server, an in-process model or
/// a test script implements this and passes it to
/// [`RuntimeBuilder::llm`](crate::runtime::RuntimeBuilder::llm). Every
/// context of seed 002 arrives here ([`ChatRequest::context`]: the planner,
/// the reply loop, the judge, the summariser, …); an error fails that
/// context towards offline — the offline planner plans, the heuristic
/// judge judges — so a client may serve only the contexts it wants.
///
/// A client that plans nothing (an empty plan, `[]`) and answers in words,
/// with a host's own embedder, in a runtime that starts in a temporary
/// data dir:
///
/// ```
/// use std::sync::Arc;
/// use engram_actors::llm::{ChatRequest, ChatResponse, LlmClient, LlmError};
/// use engram_actors::Runtime;
/// use engram_events::payloads::LlmContext;
/// use engram_events::SessionId;
/// use engram_learning::embedder::{EmbedError, Embedder};
///
/// /// The host's model: here, a script.
/// struct Scripted;
///
/// impl LlmClient for Scripted {
///     fn provider(&self) -> &str {
///         "scripted" // recorded as `scripted:<model>` in llm.call_completed
///     }
///
///     fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
///         let content = match req.context {
///             // The plan is a JSON list of steps; none is needed here.
///             LlmContext::Planner => "[]".to_owned(),
///             LlmContext::ReplyLoop => "Rain taps the window / the kettle hums".to_owned(),
///             // The judge, the summariser, …: they fail open to their rules.
///             _ => return Err(LlmError::Unreachable("not served by this host".into())),
///         };
///         Ok(ChatResponse { content, input_tokens: 12, output_tokens: 8, ..ChatResponse::default() })
///     }
/// }
///
/// /// Any embedder does for the example (see `Embedder`'s own).
/// struct Letters;
///
/// impl Embedder for Letters {
///     fn model_id(&self) -> &str {
///         "letters-v1"
///     }
///     fn dim(&self) -> usize {
///         26
///     }
///     fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
///         let mut v = vec![0.0f32; 26];
///         for c in text.to_lowercase().chars().filter(char::is_ascii_lowercase) {
///             v[(c as u8 - b'a') as usize] += 1.0;
///         }
///         let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::EPSILON);
///         Ok(v.into_iter().map(|x| x / norm).collect())
///     }
///     fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         texts.iter().map(|t| self.embed(t)).collect()
///     }
/// }
///
/// let data = tempfile::tempdir()?;
/// let rt = Runtime::builder()
///     .data_dir(data.path())
///     .embedder(Arc::new(Letters))
///     .llm(Arc::new(Scripted))
///     .start()?;
/// assert!(rt.is_online());
/// let reply = rt.handle_utterance(&SessionId::new("s-1"), "write me a haiku about rain")?;
/// assert_eq!(reply.text, "Rain taps the window / the kettle hums");
/// assert_eq!(reply.model.as_deref(), Some("default"), "no [llm] model: the server's default");
/// rt.shutdown()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait LlmClient: Send + Sync {
    /// `ollama` or `openai`: the provider half of the canonical
    /// `provider:model` name recorded in events.
    fn provider(&self) -> &str;

    /// Sends `req` and reads the whole streamed answer.
    fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;
}

/// An API key read from the environment. Its `Debug` is redacted so it can
/// sit inside structs that derive or print `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (empty: none).
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let key = key.into();
        (!key.trim().is_empty()).then(|| ApiKey(key.trim().to_owned()))
    }

    /// The secret, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with the key replaced by `<redacted>` in every form a server
    /// could echo it: as it is, JSON-escaped once or twice (with or without
    /// `\/`; a body that quotes a JSON request is escaped twice), and
    /// percent-encoded (upper- or lower-case hex). Everything a server
    /// sends passes through here before it can reach an error, a log line
    /// or an event.
    pub fn scrub<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        let forms = self.forms();
        if !forms.iter().any(|f| text.contains(f.as_str())) {
            return std::borrow::Cow::Borrowed(text);
        }
        let mut out = text.to_owned();
        for f in &forms {
            out = out.replace(f.as_str(), "<redacted>");
        }
        std::borrow::Cow::Owned(out)
    }

    /// The key's spellings [`ApiKey::scrub`] looks for, longest first (so a
    /// form that contains another is replaced whole).
    fn forms(&self) -> Vec<String> {
        let raw = self.0.clone();
        let escape = |s: &str| {
            let quoted = serde_json::to_string(s).expect("a string serialises");
            quoted[1..quoted.len() - 1].to_owned()
        };
        let json = escape(&raw);
        let json_slash = json.replace('/', "\\/");
        let twice = escape(&json);
        let twice_slash = escape(&json_slash);
        let percent = |upper: bool| -> String {
            raw.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                    _ if upper => format!("%{b:02X}"),
                    _ => format!("%{b:02x}"),
                })
                .collect()
        };
        let (upper, lower) = (percent(true), percent(false));
        let mut forms = vec![raw, json, json_slash, twice, twice_slash, upper, lower];
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        forms.dedup();
        forms
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Without the `llm-http` feature there is no client to build: an `[llm]`
/// that names a server is refused rather than silently offline; a host may
/// still give its own client ([`crate::RuntimeBuilder::llm`]).
#[cfg(not(feature = "llm-http"))]
pub fn client_from_config(section: &crate::llm::LlmSection) -> Result<Option<std::sync::Arc<dyn LlmClient>>, LlmError> {
    match section.provider.trim().is_empty() && section.models.is_empty() {
        true => Ok(None),
        false => Err(LlmError::Config(
            "[llm] names a model server, and this engram was built without the `llm-http` feature".to_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str) -> ToolCall {
        ToolCall { name: name.into(), ..ToolCall::default() }
    }

    #[test]
    fn results_pair_with_the_open_call_to_their_tool_in_any_order() {
        let messages = vec![
            ChatMessage::user("q"),
            ChatMessage::assistant_calls("", vec![call("a"), call("b"), call("a")]),
            ChatMessage::tool("b", "1"),
            ChatMessage::tool("a", "2"),
            ChatMessage { tool_name: None, ..ChatMessage::tool("a", "3") },
        ];
        let answers = |id: &str, name: &str| ToolPairing::Answers { id: id.into(), name: name.into() };
        assert_eq!(
            pair_tool_calls(&messages).unwrap(),
            vec![
                ToolPairing::None,
                ToolPairing::Calls(vec!["call_1_0".into(), "call_1_1".into(), "call_1_2".into()]),
                answers("call_1_1", "b"),
                answers("call_1_0", "a"),
                answers("call_1_2", "a"),
            ]
        );
        let mut twice = messages.clone();
        twice.push(ChatMessage::tool("a", "4"));
        assert!(matches!(pair_tool_calls(&twice), Err(LlmError::Protocol(m)) if m.contains("message 5")));
    }
}
