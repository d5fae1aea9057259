//! A model's plan, checked against the tools' schemas and the request
//! before it runs: a near-miss mended into the right call, anything else
//! refused — never run as a wrong call.
//!
//! A small model held to the plan's schema (`llm::structured`) picks a tool
//! of the catalogue and fills its arguments, but its values drift: a path
//! missing its leading folder (`todo.txt` for `~/Notes/todo.txt`), a number
//! with its unit as a string (`"5 minutes"`), a date it made up. The rules,
//! in order, per step:
//!
//! | # | rule |
//! |---|---|
//! | 1 | a step naming an earlier result (`"$0"`) is kept as it is: its value comes at run time |
//! | 2 | a path the request names in full replaces the model's when the model's is its tail (`todo.txt`, `Notes/todo.txt` for `~/Notes/todo.txt`) |
//! | 3 | a number or integer parameter given as text takes the number in it (`"5 minutes"` → 5); a boolean as text, `true`/`false`; an enum's value, the enum's spelling (`Celsius` → `celsius`) |
//! | 4 | a value of the wrong type that rule 3 cannot mend, a value outside its enum, or a required parameter missing refuses the plan |
//! | 5 | **grounded** (asked of small models, whose values drift): every text or number value must be one the request says (a path: whole; other text: its words, in any case; a number: its digits) — a required value made up refuses the plan |
//! | 6 | under rule 5, a path parameter whose value the request does not say takes the one path the request names, if it names exactly one: the user said which file |
//! | 7 | under rule 5, an optional value the request does not say is dropped, and the tool's default applies (SmolLM2-135M adds `"max_bytes": 1` to its file reads) |
//! | 8 | under rule 5, the tool itself is checked against the offline planner's plan of the same request ([`offline_agrees`]): a call left with no arguments must be a tool that plan has (nothing else ties it to the request); and a *tiny* model's call with arguments must not be a tool that plan passes over for another — shown the two nearest tools, it picks between them almost at random (measured: SmolLM2-135M chose `list_dir` for "read the file ~/Notes/todo.txt", the path then mended into a call that fails). A larger small model's call with arguments stands (a follow-up's `get_weather {"city": "it"}` after a weather turn, where the offline planner reads "tonight" as a date); so does any grounded call when the offline planner plans nothing |
//! | 9 | a *tiny* model's empty plan stands only when the offline planner plans nothing either ([`empty_plan_stands`]): its `[]` is no more a choice than its tools are (measured: SmolLM2-135M answered "list the files in ~/Notes" with `[]`, then in words with the prompt's own location line) |
//!
//! A refused plan goes where an unusable one goes: the offline planner plans
//! the turn, and when it plans nothing the model answers in words. The
//! caller decides which models are held to rules 5–9.

use engram_events::payloads::{PlanStep, ToolArgs};
use serde_json::Value;

/// What the check made of a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// Run it as it is, or as mended.
    Run(PlanStep),
    /// Do not run it: why, for the log.
    Refused(String),
}

/// Rule 8: whether a small model's checked `step` may run beside the
/// tools the offline planner plans for the same request (`offline`, in
/// its order); `tiny`: the model is under 1 B, and its choice of tool is
/// checked too. `Err`: why not, for the log.
pub fn offline_agrees(step: &PlanStep, offline: &[String], tiny: bool) -> Result<(), String> {
    if offline.contains(&step.tool) {
        return Ok(());
    }
    match (step.args.is_empty(), offline.first()) {
        (true, _) => {
            Err(format!("{}: a call with nothing from the request, of a tool the request is not about", step.tool))
        }
        (false, Some(other)) if tiny => Err(format!("{}: the request is about {other}", step.tool)),
        (false, _) => Ok(()),
    }
}

/// Rule 9: whether a tiny model's empty plan stands beside the tools the
/// offline planner plans for the same request (`offline`); `Err`: why
/// not, for the log.
pub fn empty_plan_stands(offline: &[String]) -> Result<(), String> {
    match offline.first() {
        Some(tool) => Err(format!("no step, for a request the offline planner plans {tool} for")),
        None => Ok(()),
    }
}

/// Checks `step` against its tool's parameter `schema` (JSON Schema, an
/// object's) and the `request` it was planned for; `grounded`: rule 5.
pub fn check_step(step: &PlanStep, schema: &Value, request: &str, grounded: bool) -> Checked {
    let properties = schema.get("properties").and_then(Value::as_object);
    let mut args = step.args.0.clone();
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in &required {
        if args.get(*name).is_none_or(Value::is_null) {
            return Checked::Refused(format!("{}: required argument {name:?} missing", step.tool));
        }
    }
    let mut dropped = Vec::new();
    for (name, value) in args.iter_mut() {
        // Rule 1: an earlier result, filled in at run time.
        if value.as_str().is_some_and(|s| s.trim_start().starts_with('$')) {
            continue;
        }
        let property = properties.and_then(|p| p.get(name));
        match mend(name, value, property, request) {
            Ok(Some(mended)) => *value = mended,
            Ok(None) => {}
            Err(why) => return Checked::Refused(format!("{}: argument {name:?} {why}", step.tool)),
        }
        // A path is said whole; other text, word by word.
        let path = is_path_parameter(name, property).then(|| value.as_str()).flatten();
        let is_said = match path {
            Some(path) => request.to_lowercase().contains(&path.trim().to_lowercase()),
            None => said(value, request),
        };
        if grounded && !is_said {
            // Rule 6: the one path the request names, for a path parameter.
            if let Some(only) = path.and(the_only_path(request)) {
                *value = Value::from(only);
                continue;
            }
            if required.contains(&name.as_str()) {
                return Checked::Refused(format!("{}: argument {name:?} = {value} is not in the request", step.tool));
            }
            dropped.push(name.clone()); // rule 7
        }
    }
    for name in dropped {
        args.remove(&name);
    }
    Checked::Run(PlanStep { tool: step.tool.clone(), args: ToolArgs(args) })
}

/// Rules 2–4 for one value: `Ok(Some(v))` mended, `Ok(None)` as it is.
fn mend(name: &str, value: &Value, property: Option<&Value>, request: &str) -> Result<Option<Value>, String> {
    let kind = property.and_then(|p| p.get("type")).and_then(Value::as_str);
    let enumerated = property.and_then(|p| p.get("enum")).and_then(Value::as_array);
    let text = value.as_str();
    if kind == Some("string") && is_path_parameter(name, property) {
        if let Some(full) = text.and_then(|t| full_path(t, request)) {
            return Ok(Some(Value::from(full)));
        }
    }
    // `Some(None)`: a mend was due and could not be made.
    let due: Option<Option<Value>> = match (kind, text) {
        (Some("integer"), Some(t)) => Some(first_number(t).filter(|n| n.fract() == 0.0).map(|n| Value::from(n as i64))),
        (Some("integer"), None) if value.is_f64() => {
            Some(value.as_f64().filter(|n| n.fract() == 0.0).map(|n| Value::from(n as i64)))
        }
        (Some("number"), Some(t)) => Some(first_number(t).and_then(serde_json::Number::from_f64).map(Value::Number)),
        (Some("boolean"), Some(t)) => Some(match t.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => Some(Value::Bool(true)),
            "false" | "no" => Some(Value::Bool(false)),
            _ => None,
        }),
        _ => None,
    };
    let mended = match due {
        Some(Some(v)) => Some(v),
        Some(None) => return Err(format!("is not a {}: {value}", kind.unwrap_or("value"))),
        None => None,
    };
    let current = mended.as_ref().unwrap_or(value);
    if !fits_type(current, kind) {
        return Err(format!("is not a {}: {current}", kind.unwrap_or("value")));
    }
    if let Some(options) = enumerated {
        if options.contains(current) {
            return Ok(mended);
        }
        let spelt = current.as_str().and_then(|t| {
            options.iter().find(|o| o.as_str().is_some_and(|o| o.eq_ignore_ascii_case(t.trim()))).cloned()
        });
        return match spelt {
            Some(option) => Ok(Some(option)),
            None => Err(format!("{current} is none of {}", Value::Array(options.clone()))),
        };
    }
    Ok(mended)
}

/// Why `step`'s arguments do not fit its tool's parameter `schema`: the
/// first value not of its property's type (a whole number counts as an
/// integer however it is stored) — rule 4 without mending, for calls
/// made from the user's words (the fast path's), where a value of the
/// wrong type is a misreading ("two and a half minutes" is no integer
/// of minutes). `None`: they fit.
pub fn misfit(step: &PlanStep, schema: &Value) -> Option<String> {
    let properties = schema.get("properties").and_then(Value::as_object)?;
    step.args.0.iter().find_map(|(name, value)| {
        let kind = properties.get(name).and_then(|p| p.get("type")).and_then(Value::as_str);
        let whole = kind == Some("integer") && value.as_f64().is_some_and(|f| f.fract() == 0.0);
        (!whole && !fits_type(value, kind))
            .then(|| format!("{}: argument {name:?} is no {}: {value}", step.tool, kind.unwrap_or("value")))
    })
}

/// Whether `value` is of the schema's `kind` (no kind: anything).
fn fits_type(value: &Value, kind: Option<&str>) -> bool {
    match kind {
        Some("string") => value.is_string(),
        Some("integer") => value.as_i64().is_some() || value.as_u64().is_some(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("array") => value.is_array(),
        Some("object") => value.is_object(),
        _ => true,
    }
}

/// A parameter that takes a path: so named, or so described.
fn is_path_parameter(name: &str, property: Option<&Value>) -> bool {
    let name = name.to_ascii_lowercase();
    let described = property
        .and_then(|p| p.get("description"))
        .and_then(Value::as_str)
        .is_some_and(|d| d.to_ascii_lowercase().contains("path"));
    name.contains("path") || name == "file" || name == "dir" || name == "directory" || described
}

/// Rule 2: the path the request names whose tail `given` is, when it is
/// not the request's own already. `None`: keep `given`.
fn full_path(given: &str, request: &str) -> Option<String> {
    let given = given.trim();
    let tail = given.trim_start_matches("./").trim_start_matches('/');
    if tail.is_empty() {
        return None;
    }
    paths_in(request).filter(|w| *w != given).find(|w| w.ends_with(&format!("/{tail}"))).map(str::to_owned)
}

/// The paths `request` names: its words with a `/` in them (no URLs),
/// quotes and closing punctuation trimmed.
fn paths_in(request: &str) -> impl Iterator<Item = &str> {
    request
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | ',' | ';' | '?' | '!' | '(' | ')')))
        .map(|w| w.strip_suffix('.').filter(|s| s.contains('/')).unwrap_or(w))
        .filter(|w| w.contains('/') && !w.contains("://"))
}

/// The one path `request` names (a word with a `/` in it), if it names
/// exactly one.
fn the_only_path(request: &str) -> Option<String> {
    let mut paths = paths_in(request);
    let first = paths.next()?;
    paths.next().is_none().then(|| first.to_owned())
}

/// The first number written in `text` (`"5 minutes"` → 5, `"-2.5"`).
fn first_number(text: &str) -> Option<f64> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let start = if start > 0 && text.as_bytes()[start - 1] == b'-' { start - 1 } else { start };
    let digits: String = text[start..]
        .chars()
        .enumerate()
        .take_while(|(i, c)| c.is_ascii_digit() || *c == '.' || (*i == 0 && *c == '-'))
        .map(|(_, c)| c)
        .collect();
    digits.trim_end_matches('.').parse().ok()
}

/// Rule 5: whether the request says `value` — each word of a text (any
/// case), the digits of a number; booleans and the empty text say nothing
/// that could be made up.
fn said(value: &Value, request: &str) -> bool {
    let request = request.to_lowercase();
    match value {
        Value::String(text) => {
            let text = text.to_lowercase();
            let words = crate::text::normalize(&request);
            let said: Vec<&str> = crate::text::words(&words).collect();
            request.contains(text.trim())
                || crate::text::words(&crate::text::normalize(&text)).all(|w| said.contains(&w))
        }
        // A number's digits anywhere in the request (a decimal's too).
        Value::Number(n) => {
            let spelt = n.to_string();
            request.contains(spelt.strip_suffix(".0").unwrap_or(&spelt))
        }
        Value::Array(items) => items.iter().all(|v| said(v, &request)),
        Value::Object(fields) => fields.values().all(|v| said(v, &request)),
        Value::Bool(_) | Value::Null => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A call read from the user's words fits its schema or is a
    /// misreading: half a minute is no integer of minutes, a whole
    /// number stored as a float is.
    #[test]
    fn a_value_not_of_its_type_is_a_misfit() {
        let schema = json!({"properties": {"minutes": {"type": "integer"}, "name": {"type": "string"}}});
        assert!(misfit(&step("HassStartTimer", json!({"minutes": 2.5})), &schema).is_some());
        assert!(misfit(&step("HassStartTimer", json!({"name": 3})), &schema).is_some());
        assert_eq!(misfit(&step("HassStartTimer", json!({"minutes": 20.0, "name": "pasta"})), &schema), None);
    }

    #[test]
    fn a_small_models_tool_must_not_contradict_the_offline_plan() {
        let read = vec!["read_file".to_owned()];
        let path = serde_json::json!({"path": "~/Notes/todo.txt"});
        assert!(offline_agrees(&step("read_file", path.clone()), &read, true).is_ok());
        let why = offline_agrees(&step("list_dir", path.clone()), &read, true).unwrap_err();
        assert!(why.contains("read_file"), "{why}");
        // A larger small model's choice of tool stands.
        assert!(offline_agrees(&step("list_dir", path.clone()), &read, false).is_ok());
        // Nothing planned offline: a grounded call stands, a bare one not.
        assert!(offline_agrees(&step("list_dir", path), &[], true).is_ok());
        assert!(empty_plan_stands(&[]).is_ok() && empty_plan_stands(&read).is_err());
        for tiny in [true, false] {
            assert!(offline_agrees(&step("get_now", serde_json::json!({})), &[], tiny).is_err());
            assert!(offline_agrees(&step("get_now", serde_json::json!({})), &["get_now".into()], tiny).is_ok());
        }
    }

    fn step(tool: &str, args: Value) -> PlanStep {
        PlanStep { tool: tool.into(), args: ToolArgs(args.as_object().unwrap().clone()) }
    }

    fn read_file() -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "the file's path"},
            "max_bytes": {"type": "integer"}
        }, "required": ["path"]})
    }

    fn timer() -> Value {
        json!({"type": "object", "properties": {
            "minutes": {"type": "integer"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        }, "required": ["minutes"]})
    }

    #[test]
    fn a_path_the_request_names_in_full_mends_the_models_tail() {
        let request = "read the file ~/Notes/todo.txt";
        for given in ["todo.txt", "Notes/todo.txt", "/todo.txt"] {
            let got = check_step(&step("read_file", json!({"path": given})), &read_file(), request, true);
            assert_eq!(got, Checked::Run(step("read_file", json!({"path": "~/Notes/todo.txt"}))), "{given}");
        }
        // The request's own path is kept; another file is no tail of it.
        let same = step("read_file", json!({"path": "~/Notes/todo.txt"}));
        assert_eq!(check_step(&same, &read_file(), request, true), Checked::Run(same.clone()));
        // Another file, from a small model: the one path the request names
        // (rule 6); from a large one, as it came.
        let other = step("read_file", json!({"path": "todos.txt", "max_bytes": 1}));
        let want = step("read_file", json!({"path": "~/Notes/todo.txt"}));
        assert_eq!(check_step(&other, &read_file(), request, true), Checked::Run(want), "max_bytes dropped (rule 7)");
        assert_eq!(check_step(&other, &read_file(), request, false), Checked::Run(other.clone()));
        // With two paths named, none is the one: refused.
        let two = "read ~/Notes/todo.txt and ~/Notes/garden.md";
        assert!(matches!(check_step(&other, &read_file(), two, true), Checked::Refused(_)));
    }

    #[test]
    fn a_number_with_its_unit_becomes_the_number_and_an_enum_its_spelling() {
        let request = "set a timer for 5 minutes in Celsius";
        let got =
            check_step(&step("timer", json!({"minutes": "5 minutes", "unit": "Celsius"})), &timer(), request, true);
        assert_eq!(got, Checked::Run(step("timer", json!({"minutes": 5, "unit": "celsius"}))));
        let kelvin = step("timer", json!({"minutes": 5, "unit": "kelvin"}));
        assert!(
            matches!(check_step(&kelvin, &timer(), request, false), Checked::Refused(why) if why.contains("none of"))
        );
        let words = step("timer", json!({"minutes": "a few"}));
        assert!(
            matches!(check_step(&words, &timer(), request, false), Checked::Refused(why) if why.contains("integer"))
        );
    }

    #[test]
    fn a_required_argument_missing_or_a_value_made_up_refuses_the_plan() {
        let missing = step("read_file", json!({}));
        assert!(
            matches!(check_step(&missing, &read_file(), "read my file", false), Checked::Refused(w) if w.contains("missing"))
        );
        // The live small model's answer to "read the file ~/Notes/todo.txt".
        let date = json!({"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]});
        let made_up = step("get_date", json!({"date": "2022-01-23T17:17:43"}));
        let request = "read the file ~/Notes/todo.txt";
        assert!(
            matches!(check_step(&made_up, &date, request, true), Checked::Refused(w) if w.contains("not in the request"))
        );
        // Optional, it is dropped (rule 7): a call with nothing of the
        // request in it, which the caller ties to the request or refuses.
        let optional = json!({"type": "object", "properties": {"date": {"type": "string"}}});
        assert_eq!(check_step(&made_up, &optional, request, true), Checked::Run(step("get_date", json!({}))));
        // A large model's value stands: rule 5 is the caller's to ask.
        assert!(matches!(check_step(&made_up, &date, request, false), Checked::Run(_)));
        // A number the request says is grounded; one it does not, not.
        let seven = step("timer", json!({"minutes": 7}));
        assert!(matches!(check_step(&seven, &timer(), "imposta un timer di 7 minuti", true), Checked::Run(_)));
        assert!(matches!(check_step(&seven, &timer(), "set a timer", true), Checked::Refused(_)));
        // An earlier result is filled in at run time.
        let chained = step("read_file", json!({"path": "$0"}));
        assert_eq!(check_step(&chained, &read_file(), "read it", true), Checked::Run(chained));
    }
}
