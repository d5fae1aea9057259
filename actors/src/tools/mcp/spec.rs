//! What a server says of one tool, as engram keeps it (rules 1 and 2 of
//! the module docs).

use engram_events::payloads::SideEffectClass;

/// The longest description kept whole (rule 1); a longer one is cut there
/// with `…`.
pub const DESCRIPTION_MAX_CHARS: usize = 500;

/// The side effect of an MCP tool from its annotations (rule 2):
/// `readOnlyHint: true` → `Read`; else `openWorldHint: true` → `Network`;
/// anything else, unannotated included → `Write`.
pub fn side_effect_from_hints(read_only: Option<bool>, open_world: Option<bool>) -> SideEffectClass {
    if read_only == Some(true) {
        SideEffectClass::Read
    } else if open_world == Some(true) {
        SideEffectClass::Network
    } else {
        SideEffectClass::Write
    }
}

/// What a server says of one tool, as engram keeps it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct McpToolSpec {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) parameters: serde_json::Value,
    pub(super) side_effect: SideEffectClass,
}

impl McpToolSpec {
    pub(super) fn from_rmcp(t: &rmcp::model::Tool) -> McpToolSpec {
        let (read_only, open_world) =
            t.annotations.as_ref().map_or((None, None), |a| (a.read_only_hint, a.open_world_hint));
        let description =
            t.description.as_deref().map(str::trim).filter(|d| !d.is_empty()).or(t.title.as_deref()).unwrap_or("");
        McpToolSpec {
            name: t.name.to_string(),
            description: cut_chars(description, DESCRIPTION_MAX_CHARS),
            parameters: serde_json::Value::Object((*t.input_schema).clone()),
            side_effect: side_effect_from_hints(read_only, open_world),
        }
    }
}

pub(super) fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}
