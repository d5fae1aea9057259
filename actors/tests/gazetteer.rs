//! The gazetteer `scripts/fetch-models.sh` installs beside the models, as
//! the offline planner reads it: the embedder's opening gives its loader, and a
//! place goes to a tool in the form the tool's parameter asks for. Without
//! the installed files these tests fail, naming the script: they never
//! skip.

use chrono::{DateTime, FixedOffset};
use engram_actors::onnx_embedder::OnnxEmbedder;
use engram_learning::arguments::fill;
use engram_learning::embedder::EmbedderConfig;
use engram_learning::places;
use serde_json::{json, Value};

fn installed() {
    OnnxEmbedder::open(&EmbedderConfig::default()).unwrap_or_else(|e| panic!("run scripts/fetch-models.sh: {e}"));
    assert!(
        places::installed().is_some(),
        "no gazetteer in {}: run scripts/fetch-models.sh",
        EmbedderConfig::default().models_dir().join(places::DIR).display()
    );
}

fn now() -> DateTime<FixedOffset> {
    DateTime::parse_from_rfc3339("2026-03-02T10:00:00+01:00").unwrap()
}

fn place(description: &str, request: &str) -> Value {
    let schema = json!({"type": "object", "required": ["location"],
        "properties": {"location": {"type": "string", "description": description}}});
    fill(&schema, request, now()).args.0.get("location").cloned().unwrap_or(Value::Null)
}

const STATE: &str = "The city, in the format of 'City, State', such as 'Berkeley, CA' or 'New York, NY'.";
const EITHER: &str =
    "in the format of 'City, State' or 'City, Country' if the city does not locate in the United States";

#[test]
fn a_city_is_written_as_the_tool_asks() {
    installed();
    assert_eq!(place(STATE, "What's the weather today in Boston?"), json!("Boston, MA"));
    assert_eq!(place(STATE, "Find a hair stylist in Lafayette in Louisiana"), json!("Lafayette, LA"));
    assert_eq!(place(STATE, "a place to buy in San Leandro california"), json!("San Leandro, CA"));
    assert_eq!(place(STATE, "music events in New York this weekend"), json!("New York, NY"));
    assert_eq!(place(EITHER, "things to do in Milano"), json!("Milano, Italy"));
    assert_eq!(place(EITHER, "hotels in Hanoi"), json!("Hanoi, Vietnam"));
}

#[test]
fn what_the_gazetteer_cannot_place_stays_as_said() {
    installed();
    assert_eq!(place(STATE, "a drama at Regal Crow Canyon"), json!("Regal Crow Canyon"));
    assert_eq!(place("The city to search in.", "restaurants in Boston"), json!("Boston"));
}
