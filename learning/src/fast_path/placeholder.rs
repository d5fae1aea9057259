//! Argument placeholders: how a recorded step forgets the values that came
//! from its request, and how a replay fills them from the new one.
//!
//! A step recorded for "download https://a.org and describe it" keeps
//! `{"url": "{url}"}`; replayed for "download https://b.org and describe
//! it" it becomes `{"url": "https://b.org"}`. The n-th value of a kind is
//! `{kind:n}` (the first is plain `{kind}`). A placeholder the new request
//! cannot fill fails the replay — closed, back to the planner.

use engram_events::payloads::ToolArgs;
use serde_json::Value;

use super::extract::{Extracted, SlotKind};

/// A placeholder the request could not fill.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the request carries no {kind} #{index} for placeholder {placeholder}")]
pub struct Unresolved {
    /// The placeholder text.
    pub placeholder: String,
    /// Its kind's name.
    pub kind: &'static str,
    /// Which value of the kind (0-based).
    pub index: usize,
}

/// `{kind}` / `{kind:n}`; with `text`, `{kind.text}` / `{kind:n.text}`:
/// the value as the user *said* it ("yesterday"), for arguments recorded
/// in that form rather than the extracted one ("2026-11-22").
fn placeholder(kind: SlotKind, index: usize, text: bool) -> String {
    let suffix = if text { ".text" } else { "" };
    if index == 0 {
        format!("{{{}{suffix}}}", kind.name())
    } else {
        format!("{{{}:{index}{suffix}}}", kind.name())
    }
}

fn parse(s: &str) -> Option<(SlotKind, usize, bool)> {
    let inner = s.strip_prefix('{')?.strip_suffix('}')?;
    let (inner, text) = match inner.strip_suffix(".text") {
        Some(i) => (i, true),
        None => (inner, false),
    };
    let (name, index) = match inner.split_once(':') {
        Some((n, i)) => (n, i.parse().ok()?),
        None => (inner, 0),
    };
    Some((SlotKind::from_name(name)?, index, text))
}

/// The n-th slot of `kind` as written in the request.
fn source_text(ex: &Extracted, kind: SlotKind, index: usize) -> Option<&str> {
    ex.slots.iter().filter(|s| s.kind == kind).nth(index).map(|s| &ex.text[s.span.0..s.span.1])
}

/// `args` with every value the request carried replaced by its placeholder.
pub fn templatize(args: &ToolArgs, ex: &Extracted) -> ToolArgs {
    fn walk(v: &Value, ex: &Extracted) -> Value {
        for kind in SlotKind::ALL {
            if let Some(i) = ex.of(kind).position(|x| x == v) {
                return Value::String(placeholder(kind, i, false));
            }
        }
        if let Some(said) = v.as_str() {
            for kind in SlotKind::ALL {
                let n = ex.of(kind).count();
                if let Some(i) =
                    (0..n).find(|i| source_text(ex, kind, *i).is_some_and(|t| t.eq_ignore_ascii_case(said.trim())))
                {
                    return Value::String(placeholder(kind, i, true));
                }
            }
        }
        match v {
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, ex)).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), walk(x, ex))).collect()),
            other => other.clone(),
        }
    }
    ToolArgs(args.0.iter().map(|(k, v)| (k.clone(), walk(v, ex))).collect())
}

/// Whether `args` (a row's steps, templatized) take every value of `kind`
/// the request carried. A row that does not take a value must not replay
/// for another one: "remind me to call Mom" run as `remind {"text": "call
/// Mom"}` never serves "remind me to call Ada".
pub fn takes_every<'a>(args: impl IntoIterator<Item = &'a ToolArgs>, ex: &Extracted, kind: SlotKind) -> bool {
    fn walk(v: &Value, kind: SlotKind, seen: &mut [bool]) {
        match v {
            Value::String(s) => {
                if let Some((_, i, _)) = parse(s).filter(|(k, _, _)| *k == kind) {
                    if let Some(x) = seen.get_mut(i) {
                        *x = true;
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, kind, seen)),
            Value::Object(o) => o.values().for_each(|x| walk(x, kind, seen)),
            _ => {}
        }
    }
    let mut seen = vec![false; ex.of(kind).count()];
    for a in args {
        a.0.values().for_each(|v| walk(v, kind, &mut seen));
    }
    seen.into_iter().all(|x| x)
}

/// `args` with every placeholder filled from the request.
pub fn resolve(args: &ToolArgs, ex: &Extracted) -> Result<ToolArgs, Unresolved> {
    fn walk(v: &Value, ex: &Extracted) -> Result<Value, Unresolved> {
        match v {
            Value::String(s) => match parse(s) {
                Some((kind, index, text)) => {
                    let found = if text {
                        source_text(ex, kind, index).map(|t| Value::String(t.to_owned()))
                    } else {
                        ex.of(kind).nth(index).cloned()
                    };
                    found.ok_or_else(|| Unresolved { placeholder: s.clone(), kind: kind.name(), index })
                }
                None => Ok(v.clone()),
            },
            Value::Array(a) => a.iter().map(|x| walk(x, ex)).collect::<Result<_, _>>().map(Value::Array),
            Value::Object(o) => {
                o.iter().map(|(k, x)| walk(x, ex).map(|x| (k.clone(), x))).collect::<Result<_, _>>().map(Value::Object)
            }
            other => Ok(other.clone()),
        }
    }
    args.0.iter().map(|(k, v)| walk(v, ex).map(|v| (k.clone(), v))).collect::<Result<_, _>>().map(ToolArgs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast_path::extract::extract;
    use chrono::DateTime;

    fn args(json: &str) -> ToolArgs {
        ToolArgs::from_json(json).unwrap()
    }

    #[test]
    fn round_trip_with_new_values() {
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap();
        let first = extract("download https://a.org/x and mail it to bob@example.org", now);
        let t = templatize(&args(r#"{"url":"https://a.org/x","to":"bob@example.org","mode":"full"}"#), &first);
        assert_eq!(t, args(r#"{"url":"{url}","to":"{email}","mode":"full"}"#));
        let next = extract("download https://b.org/y and mail it to ann@example.org", now);
        assert_eq!(
            resolve(&t, &next).unwrap(),
            args(r#"{"url":"https://b.org/y","to":"ann@example.org","mode":"full"}"#)
        );
        // No URL in the new request: the replay fails closed.
        let missing = extract("download it and mail it to ann@example.org", now);
        let e = resolve(&t, &missing).unwrap_err();
        assert_eq!((e.kind, e.index), ("url", 0));
    }

    #[test]
    fn values_recorded_as_said_resolve_as_said() {
        // A planner that passed "yesterday" rather than an ISO date: a replay
        // for "today" must pass "today", never the recorded "yesterday".
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap();
        let first = extract("find the photos from yesterday and list them", now);
        let t = templatize(&args(r#"{"date":"yesterday","extension":"*.jpg"}"#), &first);
        assert_eq!(t, args(r#"{"date":"{date.text}","extension":"*.jpg"}"#));
        let next = extract("find the photos from today and list them", now);
        assert_eq!(resolve(&t, &next).unwrap(), args(r#"{"date":"today","extension":"*.jpg"}"#));
        assert!(resolve(&t, &extract("find the photos and list them", now)).is_err());
    }

    #[test]
    fn ordinals_nesting_and_references() {
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap();
        let ex = extract("copy ~/a.txt to ~/b.txt", now);
        let t = templatize(&args(r#"{"from":"~/a.txt","to":"~/b.txt","then":["$0",{"p":"~/b.txt"}]}"#), &ex);
        assert_eq!(t, args(r#"{"from":"{path}","to":"{path:1}","then":["$0",{"p":"{path:1}"}]}"#));
        let ex2 = extract("copy ~/c to ~/d", now);
        assert_eq!(resolve(&t, &ex2).unwrap(), args(r#"{"from":"~/c","to":"~/d","then":["$0",{"p":"~/d"}]}"#));
        // Dates resolve relative to the new request's day.
        let d = templatize(&args(r#"{"day":"2026-11-24"}"#), &extract("appointments tomorrow", now));
        assert_eq!(d, args(r#"{"day":"{date}"}"#));
        let later = DateTime::parse_from_rfc3339("2026-12-01T09:00:00+01:00").unwrap();
        assert_eq!(resolve(&d, &extract("appointments for today", later)).unwrap(), args(r#"{"day":"2026-12-01"}"#));
    }

    #[test]
    fn a_proper_noun_the_call_takes_is_a_slot_and_one_it_does_not_is_not() {
        let now = DateTime::parse_from_rfc3339("2026-11-23T10:00:00+01:00").unwrap();
        let first = extract("what's the weather in Innsbruck", now);
        let t = templatize(&args(r#"{"city":"innsbruck"}"#), &first);
        assert!(takes_every([&t], &first, SlotKind::ProperName));
        let next = extract("what's the weather in Bologna", now);
        assert_eq!(resolve(&t, &next).unwrap(), args(r#"{"city":"Bologna"}"#));
        assert!(resolve(&t, &extract("what's the weather here", now)).is_err(), "no name: no replay");
        // A call that does not take the name.
        let mom = extract("remind me to call Mom", now);
        let t = templatize(&args(r#"{"text":"call Mom"}"#), &mom);
        assert!(!takes_every([&t], &mom, SlotKind::ProperName));
    }
}
