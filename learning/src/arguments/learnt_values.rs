//! Arguments from the values the model passed: with the model away, a
//! home's rooms, doors and speakers are known by the names the model gave
//! them ([`crate::taught_phrasings`], its rule 5), not only by where they
//! stand in the sentence ([`crate::spoken`]).
//!
//! The word-order rules read "make the bathroom a bit warmer" as no room
//! (no preposition of place, no kind word after it), and "lock the patio
//! door" as the door `patio` — one home's convention, where the model of
//! another passed `"patio door"`. The values the model passed say both.
//! Rules, for a plan of one call (a value said for one part of a split
//! request is no value of another's call):
//!
//! 1. **A parameter left out takes a value the model passed for it** when
//!    the request says that value (its words in a run, a plural or an
//!    Italian ending folded) outside the words of the call's other values.
//!    The longest said wins over the values inside it ("laundry room"
//!    over "room"); two values said apart ("the kitchen and the office")
//!    are two, and the call takes neither — the planner does not choose.
//!    Only string parameters without an enum: an enum's members are its
//!    vocabulary already.
//! 2. **A value keeps the head word the model kept.** A word the model's
//!    values end with (`door` in "front door", "garage door") or open with
//!    (`porta` in "porta del garage", "porta d'ingresso"), in two of them
//!    at least, is part of a value the request says it beside: "the
//!    laundry door" is the door `laundry door`, "la porta della cantina"
//!    the door `porta della cantina`. A home whose model passed `front`
//!    for "the front door" has no such word, and nothing changes.
//! 3. **As the model spells it.** A value built from the request's words
//!    (rule 2) is passed as the model passed its values: as said, or each
//!    word capitalised when that is what it did.
//! 4. **Where the model put it** ([`relabel`]). A value the call puts in a
//!    parameter the model never passed with this tool goes to another of
//!    its parameters, left out, that the model did pass with this tool
//!    and for which that very value was passed (here or as a parameter
//!    that means the same): "vacuum the hallway" read by the word order as
//!    the vacuum's `name`, where the model passed rooms as `area`. A new
//!    value stays where the planner put it: only what the model passed
//!    says which parameter it is.
//!
//! Which tools' values count for a parameter is the caller's (the offline
//! planner: the tool's own, and those of a parameter of the same name that
//! means the same — a place, or the same description).

use serde_json::Value;

use engram_events::payloads::ToolArgs;

use crate::fast_path::slots::{same_word, title};
use crate::spoken::{join, words};
use crate::taught_phrasings::LearntValues;

/// For a parameter's name and schema, the values (as said, as passed)
/// that count for it.
pub type Learnt<'a> = dyn Fn(&str, &Value) -> LearntValues + 'a;

/// A preposition between a head word and the rest of a value ("porta
/// *della* cantina", "door *of* the garage": [`crate::spoken::OF`]), or an
/// elided "di" ("porta *d'*ingresso").
fn joins_head(w: &str) -> bool {
    crate::spoken::OF.contains(&w) || w == "d"
}

/// Completes `args` (a call of the tool whose parameters are `schema`)
/// from `request` by the values the model passed (module docs): `learnt`
/// gives, for a parameter's name and schema, the values (as said, as
/// passed) that count for it.
pub fn complete(schema: &Value, args: &mut ToolArgs, request: &str, learnt: &Learnt<'_>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return };
    let ws = words(request);
    for (k, spec) in props {
        if !open_string(spec) {
            continue;
        }
        let values = learnt(k, spec);
        if values.is_empty() {
            continue;
        }
        match args.0.get(k).and_then(Value::as_str) {
            // Rule 1.
            None if !args.0.contains_key(k) => {
                let taken = taken_words(&ws, args);
                if let Some(v) = said_value(&ws, &taken, &values) {
                    args.0.insert(k.clone(), v);
                }
            }
            // Rules 2 and 3.
            Some(filled) => {
                if let Some(v) = with_head_word(&ws, filled, &values) {
                    args.0.insert(k.clone(), v);
                }
            }
            None => {}
        }
    }
}

/// Rule 4: moves each string value of `args` (a call of the tool whose
/// parameters are `schema`) from a parameter the model never passed with
/// the tool (`passed` says which it did) to the one left out that it did
/// pass and whose values (`learnt`) hold that value as said.
pub fn relabel(schema: &Value, args: &mut ToolArgs, passed: &dyn Fn(&str) -> bool, learnt: &Learnt<'_>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return };
    let misplaced: Vec<(String, String)> = args
        .0
        .iter()
        .filter(|(k, _)| !passed(k))
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
        .collect();
    for (from, said) in misplaced {
        let ws = words(&said);
        let to = props.iter().filter(|(k, spec)| open_string(spec) && passed(k) && !args.0.contains_key(*k)).find_map(
            |(k, spec)| {
                // A value the model passed, said as the whole of this one.
                let same = |s: &String| run_of(&ws, &words(s)) == Some((0, ws.len()));
                learnt(k, spec).iter().find(|(s, _)| same(s)).map(|(_, v)| (k.clone(), v.clone()))
            },
        );
        if let Some((to, value)) = to {
            args.0.remove(&from);
            args.0.insert(to, value);
        }
    }
}

/// Whether a parameter takes free strings: a string without an enum (an
/// enum's members are its vocabulary already).
fn open_string(spec: &Value) -> bool {
    spec.get("type").and_then(Value::as_str) == Some("string") && spec.get("enum").is_none()
}

/// Where `value`'s words stand in `ws`, first run.
fn run_of(ws: &[String], value: &[String]) -> Option<(usize, usize)> {
    if value.is_empty() || value.len() > ws.len() {
        return None;
    }
    (0..=ws.len() - value.len())
        .find(|&i| value.iter().enumerate().all(|(j, v)| same_word(&ws[i + j], v)))
        .map(|i| (i, i + value.len()))
}

/// The words of `ws` the call's string values stand on.
fn taken_words(ws: &[String], args: &ToolArgs) -> Vec<bool> {
    let mut taken = vec![false; ws.len()];
    for v in args.0.values().filter_map(Value::as_str) {
        if let Some((a, b)) = run_of(ws, &words(v)) {
            taken[a..b].iter_mut().for_each(|t| *t = true);
        }
    }
    taken
}

/// Rule 1: the one value of `values` the request says outside `taken`,
/// as passed; `None` when it says none, or two apart.
fn said_value(ws: &[String], taken: &[bool], values: &[(String, Value)]) -> Option<Value> {
    // (start, end, passed) of every value said, longest first.
    let mut said: Vec<(usize, usize, &Value)> = values
        .iter()
        .filter_map(|(s, v)| run_of(ws, &words(s)).map(|(a, b)| (a, b, v)))
        .filter(|(a, b, _)| !taken[*a..*b].iter().any(|t| *t))
        .collect();
    said.sort_by_key(|(a, b, _)| (std::cmp::Reverse(b - a), *a));
    let mut kept: Vec<(usize, usize, &Value)> = Vec::new();
    for (a, b, v) in said {
        let inside = kept.iter().any(|(ka, kb, _)| a < *kb && *ka < b);
        if !inside && !kept.iter().any(|(_, _, kv)| *kv == v) {
            kept.push((a, b, v));
        }
    }
    match kept.as_slice() {
        [(_, _, v)] => Some((*v).clone()),
        _ => None,
    }
}

/// Rule 2: the head words of `values` — a word two of them or more end
/// with (`last`) or open with (not `last`).
fn heads(values: &[(String, Value)], last: bool) -> Vec<String> {
    let edge = |s: &str| {
        let ws = words(s);
        (ws.len() >= 2).then(|| if last { ws.last().cloned() } else { ws.first().cloned() }).flatten()
    };
    let edges: Vec<String> = values.iter().filter_map(|(s, _)| edge(s)).collect();
    let mut out: Vec<String> = Vec::new();
    for e in &edges {
        let n = edges.iter().filter(|x| same_word(x, e)).count();
        if n >= 2 && !out.iter().any(|o| same_word(o, e)) {
            out.push(e.clone());
        }
    }
    out
}

/// Rules 2 and 3: `filled` with the head word the request says beside it,
/// as the model spells its values; `None` when nothing changes.
fn with_head_word(ws: &[String], filled: &str, values: &[(String, Value)]) -> Option<Value> {
    let own = words(filled);
    let (a, b) = run_of(ws, &own)?;
    let (last, first) = (heads(values, true), heads(values, false));
    let is = |hs: &[String], w: &str| hs.iter().any(|h| same_word(h, w));
    if own.iter().any(|w| is(&last, w) || is(&first, w)) {
        return None;
    }
    let span = if ws.get(b).is_some_and(|w| is(&last, w)) {
        (a, b + 1)
    } else if a >= 1 && is(&first, &ws[a - 1]) {
        (a - 1, b)
    } else if a >= 2 && joins_head(&ws[a - 1]) && is(&first, &ws[a - 2]) {
        (a - 2, b)
    } else {
        return None;
    };
    let said = join(ws, span);
    let titled = values.iter().all(|(s, v)| v.as_str() == Some(title(s).as_str()) && v.as_str() != Some(s));
    Some(Value::String(if titled { title(&said) } else { said }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "room": {"type": "string", "description": "Room the device is in"},
            "door": {"type": "string", "description": "Name of the door or gate"},
            "kind": {"type": "string", "enum": ["light", "heater"]},
            "degrees": {"type": "number"}
        }})
    }

    fn learnt(rooms: &[&str], doors: &[&str]) -> impl Fn(&str, &Value) -> Vec<(String, Value)> {
        let pairs = |xs: &[&str]| xs.iter().map(|x| (x.to_string(), json!(x))).collect::<Vec<_>>();
        let (rooms, doors) = (pairs(rooms), pairs(doors));
        move |k: &str, _: &Value| match k {
            "room" => rooms.clone(),
            "door" => doors.clone(),
            _ => Vec::new(),
        }
    }

    fn completed(args: Value, request: &str, rooms: &[&str], doors: &[&str]) -> Value {
        let mut args = ToolArgs::from_json(&args.to_string()).unwrap();
        complete(&schema(), &mut args, request, &learnt(rooms, doors));
        serde_json::to_value(&args.0).unwrap()
    }

    #[test]
    fn a_room_left_out_is_the_learnt_one_the_request_says() {
        let rooms = ["bathroom", "laundry room", "office"];
        assert_eq!(
            completed(json!({"degrees": 24}), "make the bathroom a bit warmer like 24 degrees", &rooms, &[]),
            json!({"degrees": 24, "room": "bathroom"})
        );
        // The longest said, not the value inside it.
        assert_eq!(
            completed(json!({}), "heating laundry rooms twenty", &["room", "laundry room"], &[]),
            json!({"room": "laundry room"})
        );
        // Two said apart: neither.
        assert_eq!(completed(json!({}), "heat the bathroom and the office", &rooms, &[]), json!({}));
        // Never a word another value stands on, never a value not learnt.
        assert_eq!(completed(json!({"door": "office"}), "lock the office", &rooms, &[]), json!({"door": "office"}));
        assert_eq!(completed(json!({}), "warm up the garage", &rooms, &[]), json!({}));
    }

    #[test]
    fn a_value_keeps_the_head_word_the_model_kept() {
        let doors = ["front door", "garage door", "porta d'ingresso", "porta del garage"];
        assert_eq!(
            completed(json!({"door": "patio"}), "lock the patio door", &[], &doors),
            json!({"door": "patio door"})
        );
        assert_eq!(
            completed(json!({"door": "cantina"}), "sblocca la porta della cantina", &[], &doors),
            json!({"door": "porta della cantina"})
        );
        // A home whose model passed the door without its noun: as read.
        assert_eq!(
            completed(json!({"door": "patio"}), "lock the patio door", &[], &["front", "garage"]),
            json!({"door": "patio"})
        );
        // No head word beside it: as read.
        assert_eq!(
            completed(json!({"door": "cancello"}), "sblocca il cancello", &[], &doors),
            json!({"door": "cancello"})
        );
    }

    #[test]
    fn a_value_goes_to_the_parameter_the_model_passed_it_as() {
        let moved = |args: Value, passed: &[&str], rooms: &[&str]| {
            let mut args = ToolArgs::from_json(&args.to_string()).unwrap();
            let passed = |p: &str| passed.contains(&p);
            relabel(&schema(), &mut args, &passed, &learnt(rooms, &[]));
            serde_json::to_value(&args.0).unwrap()
        };
        // The model passed rooms as `room`, never `door`, with this tool.
        let rooms = ["hallway", "laundry room"];
        assert_eq!(moved(json!({"door": "hallway"}), &["room"], &rooms), json!({"room": "hallway"}));
        assert_eq!(moved(json!({"door": "Laundry Rooms"}), &["room"], &rooms), json!({"room": "laundry room"}));
        // A value the model never passed stays where it was read.
        assert_eq!(moved(json!({"door": "garage"}), &["room"], &rooms), json!({"door": "garage"}));
        // The model passed that parameter too, or never the other: stays.
        assert_eq!(moved(json!({"door": "hallway"}), &["room", "door"], &rooms), json!({"door": "hallway"}));
        assert_eq!(moved(json!({"door": "hallway"}), &[], &rooms), json!({"door": "hallway"}));
        // The other parameter already has a value: stays.
        assert_eq!(
            moved(json!({"door": "hallway", "room": "office"}), &["room"], &rooms),
            json!({"door": "hallway", "room": "office"})
        );
    }

    #[test]
    fn a_value_built_from_the_request_is_spelt_as_the_model_spells() {
        let mut args = ToolArgs::from_json(r#"{"door": "patio"}"#).unwrap();
        let titled = |_: &str, _: &Value| {
            vec![("front door".to_owned(), json!("Front Door")), ("garage door".to_owned(), json!("Garage Door"))]
        };
        complete(&schema(), &mut args, "lock the patio door", &titled);
        assert_eq!(args.0.get("door"), Some(&json!("Patio Door")));
    }
}
