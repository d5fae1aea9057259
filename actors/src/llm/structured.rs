//! Structured output: the answer's JSON schema sent with the request, so
//! the server constrains the model's decoding to it.
//!
//! Rules:
//!
//! 1. **Asked for where it is wanted** — the planner's call, whose answer
//!    must be a plan (`ChatRequest::answer_schema`); every other call is
//!    free text.
//! 2. **Learnt per server and model, never assumed.** No protocol says
//!    whether a server has structured output, so the first call asks with
//!    the schema. A server that refuses it (HTTP 400: a strict server's
//!    "unrecognized field", an old llama.cpp's grammar error) is asked
//!    again at once without it, in what is left of the call's budget, and
//!    that model is not asked with a schema again by this client (logged
//!    once, naming the server). A 400 that the call without the schema
//!    gets too was not the schema's: it stays the call's error, and
//!    nothing is learnt.
//! 3. **The text is parsed either way**: a schema only makes a right
//!    answer likelier; the caller checks the answer as it always did.
//! 4. **The response says which it was** (`ChatResponse::structured`).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde_json::{json, Value};

use super::{ChatRequest, ChatResponse, LlmError, ToolSpec};

/// The models a server refused a schema for (rule 2).
#[derive(Debug, Default)]
pub struct SchemaSupport {
    refused: Mutex<HashSet<String>>,
}

impl SchemaSupport {
    /// Sends `req` through `send` by rules 2 and 4; `server` names the
    /// server in the log line.
    pub fn send(
        &self,
        server: &str,
        req: &ChatRequest,
        send: impl Fn(&ChatRequest) -> Result<ChatResponse, LlmError>,
    ) -> Result<ChatResponse, LlmError> {
        let refused = || self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if req.answer_schema.is_none() {
            return send(req);
        }
        let without = |req: &ChatRequest, started: Instant| ChatRequest {
            answer_schema: None,
            timeout: req.timeout.saturating_sub(started.elapsed()),
            ..req.clone()
        };
        if refused().contains(&req.model) {
            return send(&without(req, Instant::now()));
        }
        let started = Instant::now();
        match send(req) {
            Ok(mut resp) => {
                resp.structured = true;
                Ok(resp)
            }
            Err(LlmError::Http { status: 400, body }) => {
                let resp = send(&without(req, started))?;
                if refused().insert(req.model.clone()) {
                    tracing::info!(
                        server,
                        model = %req.model,
                        answer = %body,
                        "LLM server refused the answer's JSON schema (structured output); this model is asked without one from now on"
                    );
                }
                Ok(resp)
            }
            Err(e) => Err(e),
        }
    }
}

/// The JSON schema of a plan over `tools`: the array the planner's prompt
/// asks for (an array at the root, which llama.cpp, Ollama and vLLM take;
/// a server that wants an object there refuses it, and rule 2 applies), at
/// most `max_steps` steps, each `{"tool": NAME, "args": {...}}` with the tool's
/// own argument schema — one alternative per tool, so a constrained model
/// can only name a tool the catalogue has and give it arguments of the
/// right shape. A step's argument may also be an earlier step's result
/// (`"$0"`), which the tool's schema may not allow: the planner's prompt
/// says when; the schema keeps the tool's own types.
pub fn plan_schema(tools: &[ToolSpec], max_steps: usize) -> Value {
    let steps: Vec<Value> = tools
        .iter()
        .map(|t| {
            let args = match t.parameters.get("type").and_then(Value::as_str) {
                Some("object") => t.parameters.clone(),
                _ => json!({"type": "object"}),
            };
            // Only `tool` required: a server that turns the schema into a
            // grammar (llama.cpp) writes required properties first, so the
            // model names the tool before it fills arguments (with both
            // required it writes them in key order, `args` first, and
            // SmolLM2-135M filled `get_date`'s arguments for every request,
            // measured). Missing arguments are `{}` to the parser.
            json!({
                "type": "object",
                "properties": {"tool": {"type": "string", "enum": [t.name]}, "args": args},
                "required": ["tool"],
            })
        })
        .collect();
    let item = match steps.len() {
        1 => steps.into_iter().next().unwrap_or_default(),
        _ => json!({"anyOf": steps}),
    };
    json!({"type": "array", "items": item, "maxItems": max_steps})
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::LlmContext;
    use std::cell::Cell;
    use std::time::Duration;

    fn request(schema: bool) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: Vec::new(),
            tools: Vec::new(),
            context: LlmContext::Planner,
            timeout: Duration::from_secs(5),
            answer_schema: schema.then(|| json!({"type": "object"})),
            max_tokens: None,
            temperature: None,
        }
    }

    fn refuse_schemas(calls: &Cell<usize>) -> impl Fn(&ChatRequest) -> Result<ChatResponse, LlmError> + '_ {
        move |r| {
            calls.set(calls.get() + 1);
            match r.answer_schema {
                Some(_) => Err(LlmError::Http { status: 400, body: "unrecognized field response_format".into() }),
                None => Ok(ChatResponse { content: "[]".into(), ..ChatResponse::default() }),
            }
        }
    }

    #[test]
    fn a_refused_schema_is_asked_again_without_and_not_asked_for_that_model_again() {
        let support = SchemaSupport::default();
        let calls = Cell::new(0);
        let resp = support.send("s", &request(true), refuse_schemas(&calls)).unwrap();
        assert!(!resp.structured);
        assert_eq!(calls.get(), 2, "asked with the schema, then without");
        support.send("s", &request(true), refuse_schemas(&calls)).unwrap();
        assert_eq!(calls.get(), 3, "the model is asked without a schema from then on");
    }

    #[test]
    fn a_schema_taken_is_said_and_a_400_of_the_call_itself_learns_nothing() {
        let support = SchemaSupport::default();
        let taken = support.send("s", &request(true), |_| Ok(ChatResponse::default())).unwrap();
        assert!(taken.structured);
        let bad = |_: &ChatRequest| Err(LlmError::Http { status: 400, body: "bad history".into() });
        assert!(matches!(support.send("s", &request(true), bad), Err(LlmError::Http { status: 400, .. })));
        assert!(support.refused.lock().unwrap().is_empty(), "the 400 was not the schema's");
        let free = support.send("s", &request(false), |_| Ok(ChatResponse::default())).unwrap();
        assert!(!free.structured, "no schema asked");
    }

    #[test]
    fn a_plan_schema_names_only_the_catalogues_tools_with_their_arguments() {
        let tool = |name: &str| ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        };
        let schema = plan_schema(&[tool("read_file"), tool("list_dir")], 4);
        let alternatives = &schema["items"]["anyOf"];
        assert_eq!(alternatives[0]["properties"]["tool"]["enum"], json!(["read_file"]));
        assert_eq!(alternatives[1]["properties"]["args"]["properties"]["path"]["type"], "string");
        assert_eq!(schema["maxItems"], 4);
    }
}
