//! [`FnTool`]: a tool made of a function.
//!
//! Most tools a host adds are one function of their arguments: a name, a
//! line of description, the arguments it takes, and the call. `FnTool`
//! holds those as values and the call as a closure, so such a tool is one
//! expression rather than a type with five trait methods — the demo's
//! tools, the benchmark's and every test's are built this way. A tool with
//! state of its own to manage (the built-ins' file roots, undo stacks) is
//! still better as its own [`Tool`] impl.

use engram_events::payloads::{SideEffectClass, ToolArgs};
use serde_json::{json, Map, Value};

use super::{Tool, ToolContext, ToolError, ToolOutput};

/// The call of an [`FnTool`].
type Call = dyn Fn(&ToolArgs, &ToolContext) -> Result<ToolOutput, ToolError> + Send + Sync;

/// A [`Tool`] made of a function (see the module docs).
///
/// ```
/// use engram_actors::tools::{args, FnTool, ToolOutput};
///
/// let shout = FnTool::new("shout", "say a text out loud, in capitals", |a, _ctx| {
///     Ok(ToolOutput::trusted(args::req_str(a, "shout", "text")?.to_uppercase()))
/// })
/// .with_arg("text", "what to say");
/// # use engram_actors::tools::Tool;
/// assert_eq!(shout.parameters()["required"][0], "text");
/// ```
pub struct FnTool {
    name: String,
    description: String,
    properties: Map<String, Value>,
    required: Vec<String>,
    parameters: Option<Value>,
    side_effect: SideEffectClass,
    call: Box<Call>,
}

impl FnTool {
    /// A tool called `name`, described by `description` (what the offline
    /// planner compares requests with: write it the way users ask), that
    /// takes no arguments, only reads ([`SideEffectClass::Read`]) and
    /// answers with `call`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        call: impl Fn(&ToolArgs, &ToolContext) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
    ) -> FnTool {
        FnTool {
            name: name.into(),
            description: description.into(),
            properties: Map::new(),
            required: Vec::new(),
            parameters: None,
            side_effect: SideEffectClass::Read,
            call: Box::new(call),
        }
    }

    /// This tool taking one more argument, a required string. Named after
    /// one of the argument extractor's slots (`path`, `url`, `date`, `ext`,
    /// …), the offline planner fills it from the request.
    pub fn with_arg(mut self, name: &str, description: &str) -> FnTool {
        self.properties.insert(name.to_owned(), json!({"type": "string", "description": description}));
        self.required.push(name.to_owned());
        self
    }

    /// This tool with `schema` (a JSON-schema object) as its parameters,
    /// for arguments [`FnTool::with_arg`] cannot say; it replaces those.
    pub fn with_schema(mut self, schema: Value) -> FnTool {
        self.parameters = Some(schema);
        self
    }

    /// This tool declaring what a call may do to the world.
    pub fn with_side_effect(mut self, class: SideEffectClass) -> FnTool {
        self.side_effect = class;
        self
    }
}

impl Tool for FnTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        match &self.parameters {
            Some(schema) => schema.clone(),
            None => json!({"type": "object", "properties": self.properties, "required": self.required}),
        }
    }

    fn side_effect(&self) -> SideEffectClass {
        self.side_effect
    }

    fn call(&self, args: &ToolArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.call)(args, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::SessionId;

    fn ctx() -> ToolContext {
        ToolContext::new(SessionId::new("s"), chrono::Utc::now().fixed_offset())
    }

    #[test]
    fn arguments_become_a_schema_and_reach_the_call() {
        let t = FnTool::new("greet", "greet someone", |a, _| {
            Ok(ToolOutput::trusted(format!("hello {}", super::super::args::req_str(a, "greet", "who")?)))
        })
        .with_arg("who", "the person");
        assert_eq!(t.name(), "greet");
        assert_eq!(t.side_effect(), SideEffectClass::Read);
        assert_eq!(
            t.parameters(),
            json!({"type": "object", "properties": {"who": {"type": "string", "description": "the person"}},
                   "required": ["who"]})
        );
        let out = t.call(&ToolArgs::from_json(r#"{"who":"Ada"}"#).unwrap(), &ctx()).unwrap();
        assert_eq!(out.text, "hello Ada");
        let e = t.call(&ToolArgs::from_json("{}").unwrap(), &ctx()).unwrap_err().to_string();
        assert!(e.contains("greet") && e.contains("who") && e.contains("missing"), "{e}");
    }

    #[test]
    fn a_schema_and_a_side_effect_can_be_given() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let t = FnTool::new("bump", "add one", |_, _| Ok(ToolOutput::trusted("ok")))
            .with_arg("ignored", "replaced by the schema")
            .with_schema(schema.clone())
            .with_side_effect(SideEffectClass::Write);
        assert_eq!(t.parameters(), schema);
        assert_eq!(t.side_effect(), SideEffectClass::Write);
    }
}
