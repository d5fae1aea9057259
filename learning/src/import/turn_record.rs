//! The turn-record format (DESIGN, "Turn-record import format"): one
//! completed turn per JSON line, validated field by field so that every
//! error names its field.
//!
//! Validation is also where every value is range-checked, so that nothing
//! downstream — times derived by adding durations, costs summed over a
//! session, ids made from timestamps — can overflow or balloon on a record
//! that passed. The limits ([`limits`]) are documented in `docs/cli.md`;
//! a record beyond one is a line error like any other.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use engram_events::payloads::{PlanStep, SideEffectClass, StructuralFeatures, ToolArgs};
use engram_events::SessionId;
use rust_decimal::Decimal;
use serde_json::{Map, Value};

/// One completed turn as a host assistant logs it.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnRecord {
    /// Session id; sessions may interleave in a file.
    pub session: SessionId,
    /// 1-based turn number; (session, turn) is unique.
    pub turn: u32,
    /// When the turn started.
    pub at: DateTime<Utc>,
    /// The user's request.
    pub text: String,
    /// Tools executed, in order (may be empty).
    pub steps: Vec<PlanStep>,
    /// The LLM used; `None` for a fast-path turn.
    pub model: Option<String>,
    /// Planner wall time.
    pub planner_ms: u64,
    /// Utterance-to-reply wall time.
    pub latency_ms: u64,
    /// LLM cost of the turn.
    pub cost_usd: Decimal,
    /// Price table version of `cost_usd`.
    pub pricing_version: String,
    /// Verdict score, if the turn was judged.
    pub score: Option<f64>,
    /// Verdict confidence (1.0 when absent).
    pub score_confidence: f64,
    /// Seed 001 `workload_id`.
    pub workload: Option<String>,
    /// Explicit structural features; `None` means "compute from the record".
    pub features: Option<StructuralFeatures>,
}

/// A field that failed validation: the dotted path and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// `steps[1].tool`, `features.has_images`, or `-` for the line itself.
    pub field: String,
    /// What is wrong, in words.
    pub message: String,
}

/// The limits a turn record must keep to (see the module docs).
pub mod limits {
    use chrono::{DateTime, Utc};
    use rust_decimal::Decimal;

    /// Tool steps in one record (the live planner makes at most 5; an
    /// agentic turn a few more).
    pub const MAX_STEPS: usize = 64;
    /// Bytes of `text`.
    pub const MAX_TEXT_BYTES: usize = 64 * 1024;
    /// Bytes of an identifier or label: `session`, `model`, `workload`,
    /// `pricing_version`, a step's `tool`, a feature string.
    pub const MAX_NAME_BYTES: usize = 256;
    /// Bytes of one step's `args`, as JSON.
    pub const MAX_ARGS_BYTES: usize = 64 * 1024;
    /// `planner_ms` and `latency_ms`: seven days.
    pub const MAX_DURATION_MS: u64 = 7 * 24 * 60 * 60 * 1000;
    /// `cost_usd` of one turn.
    pub const MAX_COST_USD: Decimal = Decimal::from_parts(1_000_000, 0, 0, false, 0);
    /// Bytes of one line of an import file (the whole record).
    pub const MAX_LINE_BYTES: usize = 1024 * 1024;

    /// The earliest `at`: event ids carry their time as milliseconds since
    /// the Unix epoch, which has no earlier instant.
    pub fn min_at() -> DateTime<Utc> {
        DateTime::UNIX_EPOCH
    }

    /// The latest instant a record may reach, `at` plus its durations: the
    /// last one RFC 3339's four-digit years can write, so that every time
    /// engram exports reads back.
    pub fn max_at() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("9999-12-31T23:59:59.999Z").expect("a valid timestamp").to_utc()
    }
}

/// A string field that is an identifier or label: not too long, and no
/// control characters (they would reach terminals raw through `replay`
/// and `inspect`).
fn check_name(field: &str, s: &str, errors: &mut Vec<FieldError>) {
    if s.len() > limits::MAX_NAME_BYTES {
        errors.push(FieldError::new(field, format!("longer than {} bytes ({})", limits::MAX_NAME_BYTES, s.len())));
    }
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        errors.push(FieldError::new(field, format!("contains a control character ({:?})", c)));
    }
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { field: field.into(), message: message.into() }
    }
}

const FIELDS: &[&str] = &[
    "session",
    "turn",
    "at",
    "text",
    "steps",
    "model",
    "planner_ms",
    "latency_ms",
    "cost_usd",
    "pricing_version",
    "score",
    "score_confidence",
    "workload",
    "features",
];

const FEATURE_FIELDS: &[&str] = &[
    "intent_tags",
    "file_extensions",
    "tool_names",
    "file_path_buckets",
    "side_effect_classes",
    "estimated_input_tokens_bucket",
    "has_images",
    "has_tool_calls_in_history",
];

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expected(field: &str, what: &str, got: &Value) -> FieldError {
    FieldError::new(field, format!("expected {what}, got {}", type_name(got)))
}

/// Parses and validates one line. Every problem on the line is reported,
/// not just the first.
pub fn parse_line(line: &str) -> Result<TurnRecord, Vec<FieldError>> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| vec![FieldError::new("-", format!("invalid JSON: {e}"))])?;
    let Value::Object(obj) = value else {
        return Err(vec![FieldError::new("-", format!("expected a JSON object, got {}", type_name(&value)))]);
    };
    let mut errors = Vec::new();
    for key in obj.keys() {
        if !FIELDS.contains(&key.as_str()) {
            errors.push(FieldError::new(key.clone(), "unknown field"));
        }
    }
    let mut v = Validator { obj: &obj, errors: &mut errors };
    let session = v.session();
    let turn = v.turn();
    let at = v.at();
    let text = v.text();
    let steps = v.required("steps").and_then(|x| parse_steps(x, v.errors));
    let model = v.optional_name("model");
    let planner_ms = v.optional_duration("planner_ms");
    let latency_ms = v.optional_duration("latency_ms");
    if let Some(at) = at {
        v.check_ends(at, [("planner_ms", &planner_ms), ("latency_ms", &latency_ms)]);
    }
    let cost_usd = v.cost_usd();
    let pricing_version = v.optional_name("pricing_version");
    let score = v.optional_unit("score");
    let score_confidence = v.optional_unit("score_confidence");
    let workload = v.optional_name("workload");
    let features = v.features();
    if !errors.is_empty() {
        return Err(errors);
    }
    // Every `None` above pushed an error, so these are all present.
    match (session, turn, at, text, steps, cost_usd, features) {
        (Some(session), Some(turn), Some(at), Some(text), Some(steps), Some(cost_usd), Some(features)) => {
            Ok(TurnRecord {
                session: SessionId::new(session),
                turn,
                at,
                text,
                steps,
                model: model.flatten(),
                planner_ms: planner_ms.flatten().unwrap_or(0),
                latency_ms: latency_ms.flatten().unwrap_or(0),
                cost_usd,
                pricing_version: pricing_version.flatten().unwrap_or_else(|| "unknown".to_owned()),
                score: score.flatten(),
                score_confidence: score_confidence.flatten().unwrap_or(1.0),
                workload: workload.flatten(),
                features: features.map(StructuralFeatures::normalized),
            })
        }
        _ => Err(vec![FieldError::new("-", "invalid record")]),
    }
}

/// The fields of a record, each checked on its own; every problem is
/// pushed to `errors` and its field comes back `None`.
impl Validator<'_> {
    /// `session`: a non-empty id a host may use.
    fn session(&mut self) -> Option<String> {
        let session = self.required_string("session");
        match session.as_deref() {
            Some("") => self.errors.push(FieldError::new("session", "must not be empty")),
            Some(id) => {
                if let Err(e) = SessionId::parse(id) {
                    self.errors.push(FieldError::new("session", e.to_string()));
                }
            }
            None => {}
        }
        session
    }

    /// `turn`: an integer from 1.
    fn turn(&mut self) -> Option<u32> {
        let x = self.required("turn")?;
        match x.as_u64() {
            Some(n) if (1..=u32::MAX as u64).contains(&n) => Some(n as u32),
            _ if x.is_number() => {
                self.errors.push(FieldError::new("turn", format!("must be an integer >= 1, got {x}")));
                None
            }
            _ => {
                self.errors.push(expected("turn", "an integer >= 1", x));
                None
            }
        }
    }

    /// `at`: an RFC 3339 time an event can carry.
    fn at(&mut self) -> Option<DateTime<Utc>> {
        let s = self.required_string("at")?;
        match DateTime::parse_from_rfc3339(&s) {
            Ok(t) if t < limits::min_at() => {
                self.errors.push(FieldError::new("at", format!("before 1970-01-01T00:00:00Z: {s:?}")));
                None
            }
            Ok(t) if t > limits::max_at() => {
                self.errors.push(FieldError::new("at", format!("after 9999-12-31T23:59:59.999Z: {s:?}")));
                None
            }
            Ok(t) => Some(t.with_timezone(&Utc)),
            Err(e) => {
                self.errors.push(FieldError::new("at", format!("not an RFC 3339 timestamp ({e}): {s:?}")));
                None
            }
        }
    }

    /// `text`, within [`limits::MAX_TEXT_BYTES`] (reported, and still
    /// returned: the line fails on the error).
    fn text(&mut self) -> Option<String> {
        let text = self.required_string("text");
        if let Some(t) = &text {
            if t.len() > limits::MAX_TEXT_BYTES {
                let message = format!("longer than {} bytes ({})", limits::MAX_TEXT_BYTES, t.len());
                self.errors.push(FieldError::new("text", message));
            }
        }
        text
    }

    /// The times a turn's events carry are `at` plus these durations: they
    /// must stay within what an event's time can be.
    fn check_ends(&mut self, at: DateTime<Utc>, durations: [(&str, &Option<Option<u64>>); 2]) {
        for (field, ms) in durations {
            let Some(Some(ms)) = ms else { continue };
            if after(at, *ms) > limits::max_at() {
                self.errors.push(FieldError::new(field, format!("at + {field} is after 9999-12-31T23:59:59.999Z")));
            }
        }
    }

    /// `cost_usd`: a decimal string, not negative, within
    /// [`limits::MAX_COST_USD`]; absent: zero.
    fn cost_usd(&mut self) -> Option<Decimal> {
        match self.obj.get("cost_usd") {
            None | Some(Value::Null) => Some(Decimal::ZERO),
            Some(Value::String(s)) => match Decimal::from_str(s) {
                Ok(d) if d.is_sign_negative() && !d.is_zero() => {
                    self.errors.push(FieldError::new("cost_usd", format!("must not be negative, got {s:?}")));
                    None
                }
                Ok(d) if d > limits::MAX_COST_USD => {
                    let message = format!("more than {} per turn: {s:?}", limits::MAX_COST_USD);
                    self.errors.push(FieldError::new("cost_usd", message));
                    None
                }
                Ok(d) => Some(d),
                Err(e) => {
                    self.errors.push(FieldError::new("cost_usd", format!("not a decimal number ({e}): {s:?}")));
                    None
                }
            },
            Some(x) => {
                self.errors.push(expected("cost_usd", "a decimal string such as \"0.0012\"", x));
                None
            }
        }
    }

    /// `features`: the structural features, when the record gives them
    /// (`Some(None)`: it does not).
    fn features(&mut self) -> Option<Option<StructuralFeatures>> {
        match self.obj.get("features") {
            None | Some(Value::Null) => Some(None),
            Some(Value::Object(f)) => parse_features(f, self.errors).map(Some),
            Some(x) => {
                self.errors.push(expected("features", "an object", x));
                None
            }
        }
    }
}

struct Validator<'a> {
    obj: &'a Map<String, Value>,
    errors: &'a mut Vec<FieldError>,
}

impl<'a> Validator<'a> {
    fn required(&mut self, field: &str) -> Option<&'a Value> {
        let got = self.obj.get(field);
        if got.is_none() {
            self.errors.push(FieldError::new(field, "missing required field"));
        }
        got
    }

    fn required_string(&mut self, field: &str) -> Option<String> {
        match self.required(field)? {
            Value::String(s) => Some(s.clone()),
            x => {
                let e = expected(field, "a string", x);
                self.errors.push(e);
                None
            }
        }
    }

    /// `Some(None)`: absent or null; `None`: invalid (error recorded).
    fn optional_string(&mut self, field: &str) -> Option<Option<String>> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(s.clone())),
            Some(x) => {
                self.errors.push(expected(field, "a string or null", x));
                None
            }
        }
    }

    /// [`Validator::optional_string`] of an identifier or label.
    fn optional_name(&mut self, field: &str) -> Option<Option<String>> {
        let got = self.optional_string(field);
        if let Some(Some(s)) = &got {
            check_name(field, s, self.errors);
        }
        got
    }

    /// A duration in milliseconds, at most [`limits::MAX_DURATION_MS`].
    fn optional_duration(&mut self, field: &str) -> Option<Option<u64>> {
        match self.optional_u64(field) {
            Some(Some(ms)) if ms > limits::MAX_DURATION_MS => {
                self.errors.push(FieldError::new(
                    field,
                    format!("more than seven days ({} ms), got {ms}", limits::MAX_DURATION_MS),
                ));
                None
            }
            other => other,
        }
    }

    fn optional_u64(&mut self, field: &str) -> Option<Option<u64>> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Some(None),
            Some(x) => match x.as_u64() {
                Some(n) => Some(Some(n)),
                None => {
                    let msg = if x.is_number() {
                        format!("must be an integer >= 0, got {x}")
                    } else {
                        format!("expected an integer >= 0, got {}", type_name(x))
                    };
                    self.errors.push(FieldError::new(field, msg));
                    None
                }
            },
        }
    }

    fn optional_unit(&mut self, field: &str) -> Option<Option<f64>> {
        match self.obj.get(field) {
            None | Some(Value::Null) => Some(None),
            Some(x) => match x.as_f64() {
                Some(f) if (0.0..=1.0).contains(&f) => Some(Some(f)),
                Some(_) => {
                    self.errors.push(FieldError::new(field, format!("must be in [0, 1], got {x}")));
                    None
                }
                None => {
                    self.errors.push(expected(field, "a number in [0, 1]", x));
                    None
                }
            },
        }
    }
}

fn parse_steps(value: &Value, errors: &mut Vec<FieldError>) -> Option<Vec<PlanStep>> {
    let Value::Array(items) = value else {
        errors.push(expected("steps", "an array of {tool, args}", value));
        return None;
    };
    let before = errors.len();
    if items.len() > limits::MAX_STEPS {
        errors.push(FieldError::new("steps", format!("more than {} steps ({})", limits::MAX_STEPS, items.len())));
        return None;
    }
    let mut steps = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("steps[{i}]");
        let Value::Object(step) = item else {
            errors.push(expected(&path, "an object {tool, args}", item));
            continue;
        };
        for key in step.keys() {
            if key != "tool" && key != "args" {
                errors.push(FieldError::new(format!("{path}.{key}"), "unknown field"));
            }
        }
        let tool = match step.get("tool") {
            Some(Value::String(s)) if !s.is_empty() => {
                check_name(&format!("{path}.tool"), s, errors);
                Some(s.clone())
            }
            Some(Value::String(_)) => {
                errors.push(FieldError::new(format!("{path}.tool"), "must not be empty"));
                None
            }
            Some(x) => {
                errors.push(expected(&format!("{path}.tool"), "a string", x));
                None
            }
            None => {
                errors.push(FieldError::new(format!("{path}.tool"), "missing required field"));
                None
            }
        };
        let args = match step.get("args") {
            None | Some(Value::Null) => Some(ToolArgs::default()),
            Some(Value::Object(a)) => {
                check_refs(a, i, &format!("{path}.args"), errors);
                let bytes = serde_json::to_string(a).map_or(0, |j| j.len());
                if bytes > limits::MAX_ARGS_BYTES {
                    errors.push(FieldError::new(
                        format!("{path}.args"),
                        format!("longer than {} bytes as JSON ({bytes})", limits::MAX_ARGS_BYTES),
                    ));
                }
                Some(ToolArgs(a.clone()))
            }
            Some(x) => {
                errors.push(expected(&format!("{path}.args"), "an object", x));
                None
            }
        };
        if let (Some(tool), Some(args)) = (tool, args) {
            steps.push(PlanStep { tool, args });
        }
    }
    (errors.len() == before).then_some(steps)
}

/// `at` plus `ms` milliseconds, saturating at the latest time chrono holds:
/// the one way a record's derived times (`at + planner_ms`, `at +
/// latency_ms`) are computed, here to check them and in
/// [`super::turn_events`] to stamp the events.
pub fn after(at: DateTime<Utc>, ms: u64) -> DateTime<Utc> {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::TimeDelta::try_milliseconds)
        .and_then(|d| at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// `"$N"` may only name an earlier step.
fn check_refs(args: &Map<String, Value>, step: usize, path: &str, errors: &mut Vec<FieldError>) {
    for (key, value) in args {
        if let Value::String(s) = value {
            if let Some(n) = s.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                if n >= step {
                    errors.push(FieldError::new(
                        format!("{path}.{key}"),
                        format!("{s:?} refers to step {n}, but only steps before {step} have results"),
                    ));
                }
            }
        }
    }
}

fn parse_features(f: &Map<String, Value>, errors: &mut Vec<FieldError>) -> Option<StructuralFeatures> {
    let before = errors.len();
    for key in f.keys() {
        if !FEATURE_FIELDS.contains(&key.as_str()) {
            errors.push(FieldError::new(format!("features.{key}"), "unknown field"));
        }
    }
    let strings = |name: &str, errors: &mut Vec<FieldError>| -> Vec<String> {
        match f.get(name) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(i, x)| match x {
                    Value::String(s) => {
                        check_name(&format!("features.{name}[{i}]"), s, errors);
                        Some(s.clone())
                    }
                    other => {
                        errors.push(expected(&format!("features.{name}[{i}]"), "a string", other));
                        None
                    }
                })
                .collect(),
            Some(x) => {
                errors.push(expected(&format!("features.{name}"), "an array of strings", x));
                Vec::new()
            }
        }
    };
    let flag = |name: &str, errors: &mut Vec<FieldError>| -> bool {
        match f.get(name) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(x) => {
                errors.push(expected(&format!("features.{name}"), "a boolean", x));
                false
            }
        }
    };
    let intent_tags = strings("intent_tags", errors);
    let file_extensions = strings("file_extensions", errors);
    let tool_names = strings("tool_names", errors);
    let file_path_buckets = strings("file_path_buckets", errors);
    let side_effect_classes = strings("side_effect_classes", errors)
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| match SideEffectClass::from_str(&s) {
            Ok(c) => Some(c),
            Err(msg) => {
                errors.push(FieldError::new(format!("features.side_effect_classes[{i}]"), msg));
                None
            }
        })
        .collect();
    let estimated_input_tokens_bucket = match f.get("estimated_input_tokens_bucket") {
        None | Some(Value::Null) => 0,
        Some(x) => match x.as_u64() {
            Some(n @ 0..=3) => n as u8,
            _ => {
                errors.push(FieldError::new(
                    "features.estimated_input_tokens_bucket",
                    format!("must be an integer 0-3, got {x}"),
                ));
                0
            }
        },
    };
    let has_images = flag("has_images", errors);
    let has_tool_calls_in_history = flag("has_tool_calls_in_history", errors);
    (errors.len() == before).then_some(StructuralFeatures {
        intent_tags,
        file_extensions,
        tool_names,
        file_path_buckets,
        side_effect_classes,
        estimated_input_tokens_bucket,
        has_images,
        has_tool_calls_in_history,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"session":"s-001","turn":1,"at":"2026-11-20T09:15:02Z","text":"download https://example.org/a and describe it","steps":[{"tool":"get_urls","args":{"url":"https://example.org/a"}},{"tool":"describe_entries","args":{"entries":"$0"}}],"model":"ollama:gemma4:26b","planner_ms":11800,"latency_ms":14200,"cost_usd":"0.0012","pricing_version":"2026-11","score":0.9,"score_confidence":0.8,"workload":null,"features":{"intent_tags":["doc"],"tool_names":["get_urls"]}}"#;

    fn fields(line: &str) -> Vec<String> {
        parse_line(line).unwrap_err().into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn the_design_example_parses() {
        let r = parse_line(GOOD).unwrap();
        assert_eq!(r.turn, 1);
        assert_eq!(r.steps.len(), 2);
        assert_eq!(r.cost_usd, Decimal::from_str("0.0012").unwrap());
        assert_eq!(r.score, Some(0.9));
        assert_eq!(r.features.unwrap().intent_tags, vec!["doc"]);
    }

    #[test]
    fn defaults_apply() {
        let r =
            parse_line(r#"{"session":"s","turn":2,"at":"2026-11-20T09:15:02+01:00","text":"hi","steps":[]}"#).unwrap();
        assert_eq!(r.model, None);
        assert_eq!(r.cost_usd, Decimal::ZERO);
        assert_eq!(r.pricing_version, "unknown");
        assert_eq!(r.score_confidence, 1.0);
        assert_eq!(r.at.to_rfc3339(), "2026-11-20T08:15:02+00:00");
    }

    #[test]
    fn every_bad_field_is_named() {
        assert_eq!(fields(&GOOD.replace("\"turn\":1", "\"turn\":0")), vec!["turn"]);
        assert_eq!(fields(&GOOD.replace("\"turn\":1", "\"turn\":\"1\"")), vec!["turn"]);
        assert_eq!(fields(&GOOD.replace("0.0012", "0.00.12")), vec!["cost_usd"]);
        assert_eq!(fields(&GOOD.replace("\"0.0012\"", "0.0012")), vec!["cost_usd"]);
        assert_eq!(fields(&GOOD.replace("\"score\":0.9", "\"score\":1.5")), vec!["score"]);
        assert_eq!(fields(&GOOD.replace("2026-11-20T09:15:02Z", "yesterday")), vec!["at"]);
        assert_eq!(fields(&GOOD.replace("\"workload\"", "\"wrokload\"")), vec!["wrokload"]);
        assert_eq!(fields(&GOOD.replace("\"$0\"", "\"$1\"")), vec!["steps[1].args.entries"]);
        assert_eq!(fields(&GOOD.replace("\"tool\":\"get_urls\"", "\"tool\":7")), vec!["steps[0].tool"]);
        assert_eq!(fields(&GOOD.replace("\"intent_tags\"", "\"intent\"")), vec!["features.intent"]);
        assert_eq!(fields(&GOOD.replace("\"planner_ms\":11800", "\"planner_ms\":-1")), vec!["planner_ms"]);
        assert_eq!(fields(r#"{"turn":1}"#), vec!["session", "at", "text", "steps"]);
        assert_eq!(fields(&GOOD[..GOOD.len() - 10]), vec!["-"]);
        assert_eq!(fields("[1,2]"), vec!["-"]);
    }
}
