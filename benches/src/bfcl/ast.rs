//! BFCL's AST check of one call against its possible answer, as
//! `bfcl_eval/eval_checker/ast_eval/ast_checker.py` (`simple_function_checker`,
//! Python) does it, on JSON values:
//!
//! 1. every parameter the function's schema requires is given;
//! 2. every parameter given is in the schema and in the possible answer (no
//!    unexpected ones);
//! 3. each value has the schema's type (Python's: an `integer` is a whole
//!    JSON number, a `float` takes an integer too, a `boolean` is no
//!    number); an answer written with another type (a "variable") accepts
//!    a value of that type, compared as it is;
//! 4. each value is among the allowed ones: strings after BFCL's
//!    standardisation (lower case, without spaces and `,./-_*^`), lists item
//!    by item so, dicts key by key, numbers by value;
//! 5. every parameter of the possible answer is given, unless `""` is among
//!    its allowed values (an optional one that may be left out).

use serde_json::{Map, Value};

/// Why a call is not the expected one (`None` from [`check`]: it is).
pub type Mismatch = String;

/// Checks `args`, the arguments of a call of the function `function` (BFCL's
/// own description: `parameters` with BFCL's types), against `answer`: per
/// parameter, its allowed values.
pub fn check(function: &Value, args: &Map<String, Value>, answer: &Map<String, Value>) -> Option<Mismatch> {
    let params = &function["parameters"];
    let details = params["properties"].as_object().cloned().unwrap_or_default();
    for req in params["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if !args.contains_key(req) {
            return Some(format!("missing required {req:?}"));
        }
    }
    for (name, value) in args {
        let (Some(spec), Some(allowed)) = (details.get(name), answer.get(name).and_then(Value::as_array)) else {
            return Some(format!("unexpected {name:?}"));
        };
        let ty = spec["type"].as_str().unwrap_or("any");
        let items = spec["items"]["type"].as_str();
        if let Some(why) = param(name, value, ty, items, allowed) {
            return Some(why);
        }
    }
    for (name, allowed) in answer {
        let optional = allowed.as_array().is_some_and(|a| a.iter().any(|v| v.as_str() == Some("")));
        if !args.contains_key(name) && !optional {
            return Some(format!("{name:?} left out, expected one of {allowed}"));
        }
    }
    None
}

/// A value's Python type, as BFCL names types.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Py {
    Str,
    Int,
    Float,
    Bool,
    List,
    Dict,
    None,
}

fn py(v: &Value) -> Py {
    match v {
        Value::String(_) => Py::Str,
        Value::Number(n) if n.is_f64() => Py::Float,
        Value::Number(_) => Py::Int,
        Value::Bool(_) => Py::Bool,
        Value::Array(_) => Py::List,
        Value::Object(_) => Py::Dict,
        Value::Null => Py::None,
    }
}

/// BFCL's type names to Python's (`PYTHON_TYPE_MAPPING`).
fn expected(ty: &str) -> Py {
    match ty {
        "integer" => Py::Int,
        "float" | "number" => Py::Float,
        "boolean" => Py::Bool,
        "array" | "tuple" => Py::List,
        "dict" | "object" => Py::Dict,
        _ => Py::Str,
    }
}

/// The type the possible answer is written in: its first value that is not
/// the optional marker `""`.
fn answer_type(allowed: &[Value]) -> Option<Py> {
    allowed.iter().find(|v| v.as_str() != Some("")).map(py)
}

fn param(name: &str, value: &Value, ty: &str, items: Option<&str>, allowed: &[Value]) -> Option<Mismatch> {
    let want = expected(ty);
    let mut got = py(value);
    // Python converts an int to a float for a float parameter.
    if want == Py::Float && got == Py::Int {
        got = Py::Float;
    }
    let written = answer_type(allowed);
    let variable = if got == want {
        if let (Some(items), Value::Array(values)) = (items, value) {
            // As BFCL checks one level down: some possible answer that is
            // not a list (the optional marker), or one whose items' type
            // each value's type is or the item type says.
            let inner = expected(items);
            let fits = |a: &Value| match a.as_array() {
                None => true,
                Some(a) => values.iter().all(|v| py(v) == inner || answer_type(a) == Some(py(v))),
            };
            if !allowed.iter().any(fits) {
                return Some(format!("{name:?}: items of the wrong type in {value}"));
            }
        }
        written.is_some_and(|w| w != want)
    } else if written == Some(got) {
        true
    } else {
        return Some(format!("{name:?}: expected type {ty}, got {value}"));
    };
    let ok = if variable {
        allowed.iter().any(|a| same_number_or_value(a, value))
    } else {
        match want {
            Py::Dict => dict_ok(value, allowed),
            Py::List if items.map(expected) == Some(Py::Dict) => list_of_dicts_ok(value, allowed),
            Py::Str => {
                let v = standardize(value.as_str().unwrap_or(""));
                allowed.iter().filter_map(Value::as_str).any(|a| standardize(a) == v)
            }
            Py::List => {
                let v = standardize_list(value);
                // The optional marker `""` reads as an empty list in BFCL.
                allowed.iter().filter(|a| a.is_array() || a.as_str() == Some("")).any(|a| standardize_list(a) == v)
            }
            _ => allowed.iter().any(|a| same_number_or_value(a, value)),
        }
    };
    (!ok).then(|| format!("{name:?}: {value} not among {}", Value::Array(allowed.to_vec())))
}

/// Python's `==` on JSON values: numbers by value (`600 == 600.0`), the
/// rest as they are.
fn same_number_or_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_number_or_value(x, y))
        }
        _ => a == b,
    }
}

/// BFCL's `standardize_string`: lower case, without spaces and `,./-_*^`,
/// single quotes as double.
pub fn standardize(s: &str) -> String {
    s.chars().filter(|c| !" ,./-_*^".contains(*c)).collect::<String>().to_lowercase().replace('\'', "\"")
}

/// A list with its strings standardised (compared in order).
fn standardize_list(v: &Value) -> Vec<Value> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|x| match x {
            Value::String(s) => Value::String(standardize(s)),
            other => other.clone(),
        })
        .collect()
}

/// BFCL's `dict_checker`: some possible dict has every key given, each value
/// among its allowed ones, and no key left out that is not optional.
fn dict_ok(value: &Value, allowed: &[Value]) -> bool {
    let Some(given) = value.as_object() else { return false };
    allowed.iter().filter_map(Value::as_object).any(|possible| {
        let values_ok = given.iter().all(|(k, v)| {
            possible.get(k).and_then(Value::as_array).is_some_and(|a| {
                let v = match v {
                    Value::String(s) => Value::String(standardize(s)),
                    other => other.clone(),
                };
                a.iter().any(|x| match x {
                    Value::String(s) => Value::String(standardize(s)) == v,
                    other => same_number_or_value(other, &v),
                })
            })
        });
        let none_left_out = possible.iter().all(|(k, a)| {
            given.contains_key(k) || a.as_array().is_some_and(|a| a.iter().any(|x| x.as_str() == Some("")))
        });
        values_ok && none_left_out
    })
}

/// BFCL's `list_dict_checker`: as many dicts as some possible list, each
/// matching its counterpart.
fn list_of_dicts_ok(value: &Value, allowed: &[Value]) -> bool {
    let Some(given) = value.as_array() else { return false };
    allowed.iter().filter_map(Value::as_array).any(|possible| {
        possible.len() == given.len() && given.iter().zip(possible).all(|(g, p)| dict_ok(g, std::slice::from_ref(p)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ride() -> Value {
        json!({"name": "uber.ride", "parameters": {"type": "dict", "required": ["loc", "type", "time"], "properties": {
            "loc": {"type": "string"},
            "type": {"type": "string", "enum": ["plus", "comfort", "black"]},
            "time": {"type": "integer"},
            "tip": {"type": "float", "default": 0.0},
            "stops": {"type": "array", "items": {"type": "string"}}
        }}})
    }

    fn answer() -> Map<String, Value> {
        json!({"loc": ["2020 Addison Street, Berkeley, CA, USA"], "type": ["comfort"], "time": [600], "tip": ["", 0.0],
               "stops": ["", ["Oxford St"]]})
        .as_object()
        .unwrap()
        .clone()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn strings_are_standardised_numbers_compared_by_value_optionals_may_be_left_out() {
        let right = args(json!({"loc": "2020 addison street berkeley CA USA", "type": "Comfort", "time": 600}));
        assert_eq!(check(&ride(), &right, &answer()), None);
        let tipped = args(json!({"loc": "2020 Addison Street, Berkeley, CA, USA", "type": "comfort", "time": 600,
                                  "tip": 0, "stops": ["oxford st"]}));
        assert_eq!(check(&ride(), &tipped, &answer()), None, "an int for a float, a list standardised");
    }

    #[test]
    fn a_wrong_value_type_or_parameter_is_a_miss() {
        let cases = [
            json!({"loc": "2020 Addison Street, Berkeley", "type": "comfort", "time": 600}),
            json!({"loc": "2020 Addison Street, Berkeley, CA, USA", "type": "comfort", "time": 600.0}),
            json!({"loc": "2020 Addison Street, Berkeley, CA, USA", "type": "comfort", "time": "600"}),
            json!({"loc": "2020 Addison Street, Berkeley, CA, USA", "type": "comfort"}),
            json!({"loc": "2020 Addison Street, Berkeley, CA, USA", "type": "comfort", "time": 600, "note": "x"}),
            json!({"loc": "2020 Addison Street, Berkeley, CA, USA", "type": "comfort", "time": 600, "stops": ["Elm St"]}),
        ];
        for c in cases {
            assert!(check(&ride(), &args(c.clone()), &answer()).is_some(), "{c}");
        }
        // A possible answer's parameter that is not optional must be given.
        let mut strict = answer();
        strict.insert("tip".into(), json!([5.0]));
        let plain = args(json!({"loc": "2020 Addison Street, Berkeley, CA, USA", "type": "comfort", "time": 600}));
        assert!(check(&ride(), &plain, &strict).is_some());
    }

    #[test]
    fn dicts_key_by_key_and_variables_as_written() {
        let f = json!({"parameters": {"type": "dict", "required": ["q"], "properties": {
            "q": {"type": "dict", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
            "n": {"type": "integer"}
        }}});
        let answer = json!({"q": [{"city": ["Paris"], "days": ["", 3]}], "n": ["", "count"]});
        let answer = answer.as_object().unwrap();
        assert_eq!(check(&f, &args(json!({"q": {"city": "paris"}})), answer), None);
        assert!(check(&f, &args(json!({"q": {"city": "paris", "days": 4}})), answer).is_some());
        // An integer written as a string in the answer: a variable's name.
        assert_eq!(check(&f, &args(json!({"q": {"city": "paris"}, "n": "count"})), answer), None);
        assert!(check(&f, &args(json!({"q": {"city": "paris"}, "n": "Count"})), answer).is_some());
    }
}
