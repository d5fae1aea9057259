//! Rule 5b of the argument filler: a list for an array property — one the
//! request writes in brackets ("the numbers [1, 54, 3]", "categories:
//! ['red', 'blue']"), its items of the array's item type. Separate: a
//! list is read as a whole, not value by value as the other rules read.

use serde_json::Value;

use super::{overlaps, Said, Taken};
use crate::fast_path::extract::SlotKind;

/// Rule 5b: the first bracketed list of the request no property took whose
/// every item is of `spec`'s item type (`number`, `integer`, `string`;
/// strings unquoted), as a JSON array.
pub(super) fn take_list(spec: &Value, said: &Said<'_>, taken: &mut Taken) -> Option<Value> {
    let item = spec.get("items").and_then(|i| i.get("type")).and_then(Value::as_str).unwrap_or("string");
    let (i, items) = bracketed(&said.ex.text)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !taken.lists.contains(i))
        .find_map(|(i, (_, raw))| typed(&raw, item).map(|items| (i, items)))?;
    taken.lists.push(i);
    Some(Value::Array(items))
}

/// The number slots inside a bracketed list, when the schema has an array
/// to take it: a list's numbers are no count for another property.
pub(super) fn listed_numbers(properties: &serde_json::Map<String, Value>, said: &Said<'_>) -> Vec<usize> {
    if !properties.values().any(|spec| spec.get("type").and_then(Value::as_str) == Some("array")) {
        return Vec::new();
    }
    let lists = bracketed(&said.ex.text);
    let listed = |span: (usize, usize)| lists.iter().any(|(l, _)| overlaps(*l, span));
    (0..said.ex.slots.len())
        .filter(|k| said.ex.slots[*k].kind == SlotKind::Number && listed(said.ex.slots[*k].span))
        .collect()
}

/// The request's bracketed texts, with their spans (brackets included),
/// not nested.
fn bracketed(text: &str) -> Vec<((usize, usize), String)> {
    let mut out = Vec::new();
    let mut open = None;
    for (at, c) in text.char_indices() {
        match (c, open) {
            ('[', _) => open = Some(at),
            (']', Some(start)) => {
                out.push(((start, at + 1), text[start + 1..at].to_owned()));
                open = None;
            }
            _ => {}
        }
    }
    out
}

/// The items of a bracketed text, each of `item` type; `None` when one is
/// not, or there are none.
fn typed(raw: &str, item: &str) -> Option<Vec<Value>> {
    let parts: Vec<&str> = raw.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return None;
    }
    parts
        .iter()
        .map(|p| match item {
            "number" => p.parse::<f64>().ok().map(Value::from),
            "integer" => p.parse::<i64>().ok().map(Value::from),
            "string" => {
                let unquoted = p.trim_matches(|c| matches!(c, '\'' | '"' | '‘' | '’' | '“' | '”'));
                (!unquoted.is_empty() && unquoted.parse::<f64>().is_err()).then(|| Value::from(unquoted))
            }
            _ => None,
        })
        .collect()
}
