//! Reading a tool's arguments (the built-ins' and any host tool's): typed getters that fail with
//! [`ToolError::BadArgs`] naming the tool and the field, and a check that
//! refuses arguments a tool does not take (a misspelt `max_byte` must not
//! silently fall back to a default).

use engram_events::payloads::ToolArgs;
use serde_json::Value;

use super::ToolError;

fn bad(tool: &str, field: &str, message: impl Into<String>) -> ToolError {
    ToolError::BadArgs { tool: tool.to_owned(), field: field.to_owned(), message: message.into() }
}

/// Refuses any argument not in `allowed`.
pub fn only(args: &ToolArgs, tool: &str, allowed: &[&str]) -> Result<(), ToolError> {
    match args.0.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) if allowed.is_empty() => Err(bad(tool, k, "this tool takes no arguments")),
        Some(k) => Err(bad(tool, k, format!("unknown argument (expected: {})", allowed.join(", ")))),
    }
}

/// An optional string argument (`null` counts as absent).
pub fn opt_str<'a>(args: &'a ToolArgs, tool: &str, field: &str) -> Result<Option<&'a str>, ToolError> {
    match args.0.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(bad(tool, field, format!("expected a string, got {other}"))),
    }
}

/// A required string argument.
pub fn req_str<'a>(args: &'a ToolArgs, tool: &str, field: &str) -> Result<&'a str, ToolError> {
    opt_str(args, tool, field)?.ok_or_else(|| bad(tool, field, "missing"))
}

/// An optional integer argument; a whole number written as a string
/// (`"3"`, as an extractor or an LLM may pass it) is accepted too.
pub fn opt_int(args: &ToolArgs, tool: &str, field: &str) -> Result<Option<i64>, ToolError> {
    match args.0.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            n.as_i64().map(Some).ok_or_else(|| bad(tool, field, format!("expected a whole number, got {n}")))
        }
        Some(Value::String(s)) => {
            s.trim().parse().map(Some).map_err(|_| bad(tool, field, format!("expected a whole number, got {s:?}")))
        }
        Some(other) => Err(bad(tool, field, format!("expected a whole number, got {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(json: &str) -> ToolArgs {
        ToolArgs::from_json(json).unwrap()
    }

    #[test]
    fn typed_getters_name_the_field() {
        let a = args(r#"{"s":"x","n":3,"ns":" -2 ","f":1.5,"b":true,"z":null}"#);
        assert_eq!(opt_str(&a, "t", "s").unwrap(), Some("x"));
        assert_eq!(opt_str(&a, "t", "z").unwrap(), None);
        assert_eq!(opt_str(&a, "t", "missing").unwrap(), None);
        assert_eq!(opt_int(&a, "t", "n").unwrap(), Some(3));
        assert_eq!(opt_int(&a, "t", "ns").unwrap(), Some(-2));
        let e = opt_int(&a, "t", "f").unwrap_err().to_string();
        assert!(e.contains("\"f\"") && e.contains("whole number"), "{e}");
        let e = req_str(&a, "t", "b").unwrap_err().to_string();
        assert!(e.starts_with("t: argument \"b\"") && e.contains("string"), "{e}");
        assert!(req_str(&a, "t", "missing").unwrap_err().to_string().contains("missing"));
    }

    #[test]
    fn only_refuses_unknown_arguments() {
        assert!(only(&args("{}"), "get_now", &[]).is_ok());
        let e = only(&args(r#"{"tz":"x"}"#), "get_now", &[]).unwrap_err().to_string();
        assert!(e.contains("takes no arguments"), "{e}");
        assert!(only(&args(r#"{"path":"a"}"#), "read_file", &["path", "max_bytes"]).is_ok());
        let e = only(&args(r#"{"max_byte":1}"#), "read_file", &["path", "max_bytes"]).unwrap_err().to_string();
        assert!(e.contains("max_byte") && e.contains("path, max_bytes"), "{e}");
    }
}
