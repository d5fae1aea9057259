//! Value types shared by several payloads.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// A tool call's arguments: a JSON object with sorted keys. Values may
/// reference an earlier step's result as `"$0"`, `"$1"`, ...
///
/// In JSON (and any human-readable format) the object itself; in a binary
/// format (an actor's snapshot) its JSON text, since JSON values can only
/// be read back by a format that describes its own types.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolArgs(pub serde_json::Map<String, serde_json::Value>);

impl Serialize for ToolArgs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            self.0.serialize(s)
        } else {
            self.to_json().serialize(s)
        }
    }
}

impl<'de> Deserialize<'de> for ToolArgs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if d.is_human_readable() {
            serde_json::Map::deserialize(d).map(ToolArgs)
        } else {
            let text = String::deserialize(d)?;
            ToolArgs::from_json(&text).map_err(serde::de::Error::custom)
        }
    }
}

impl ToolArgs {
    /// Canonical JSON text (keys sorted, no whitespace): the archived form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_else(|_| "{}".to_owned())
    }

    /// Parses JSON text holding an object.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text).map(ToolArgs)
    }

    /// True when there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

payload! {
    /// One step of a plan or pipeline: a tool and its arguments.
    pub struct PlanStep {
        /// The tool (executor) name, e.g. `get_urls`.
        pub tool: String,
        /// Arguments; may reference earlier results (`"$0"`).
        #[serde(default)]
        #[rkyv(with = crate::payloads::common::ToolArgsDef)]
        pub args: ToolArgs,
    }
}

closed_enum! {
    /// Where a turn was answered: a fast-path layer or the planner (L3).
    pub enum RouteLayer {
        /// The closed literal table.
        L0 => "L0",
        /// A canonical query seen `min_uses` times.
        L1 => "L1",
        /// A memoised multi-tool pipeline.
        L2 => "L2",
        /// The LLM (or offline) planner.
        Planner => "planner",
    }
}

closed_enum! {
    /// Side-effect class of a tool (seed 001 `StructuralFeatures`).
    pub enum SideEffectClass {
        /// Reads local state only.
        Read => "read",
        /// Writes local state.
        Write => "write",
        /// Runs a program.
        Execute => "execute",
        /// Talks to the network.
        Network => "network",
    }
}

payload! {
    /// The deterministic, observable shape of a turn (seed 001 §4): the v1
    /// fingerprint and the structural half of a v2 hybrid. Sets are kept
    /// sorted and de-duplicated by [`StructuralFeatures::normalized`].
    #[derive(Default)]
    pub struct StructuralFeatures {
        /// Heuristic intent tags (`commit`, `refactor`, `doc`, ...).
        #[serde(default)]
        pub intent_tags: Vec<String>,
        /// Lowercase extensions with the dot (`.py`).
        #[serde(default)]
        pub file_extensions: Vec<String>,
        /// Tools used in the turn.
        #[serde(default)]
        pub tool_names: Vec<String>,
        /// Top-level directories touched.
        #[serde(default)]
        pub file_path_buckets: Vec<String>,
        /// What the turn's tools may do to the world.
        #[serde(default)]
        pub side_effect_classes: Vec<SideEffectClass>,
        /// log10 bucket of input tokens: 0 = <1k, 1 = 1k-10k, 2 = 10k-100k, 3 = 100k+.
        #[serde(default)]
        pub estimated_input_tokens_bucket: u8,
        /// Whether the turn carried images.
        #[serde(default)]
        pub has_images: bool,
        /// Whether earlier turns of the session called tools.
        #[serde(default)]
        pub has_tool_calls_in_history: bool,
    }
}

impl StructuralFeatures {
    /// The canonical form: every set sorted and de-duplicated, tags and
    /// extensions lowercased. Equal shapes compare equal after this.
    pub fn normalized(mut self) -> Self {
        fn canon(v: &mut Vec<String>, lower: bool) {
            if lower {
                for s in v.iter_mut() {
                    *s = s.to_lowercase();
                }
            }
            v.sort();
            v.dedup();
        }
        canon(&mut self.intent_tags, true);
        canon(&mut self.file_extensions, true);
        canon(&mut self.tool_names, false);
        canon(&mut self.file_path_buckets, false);
        self.side_effect_classes.sort();
        self.side_effect_classes.dedup();
        self
    }
}

payload! {
    /// One ranked model in a pattern recommendation (seed 001 `ModelOption`).
    pub struct ModelOption {
        /// Canonical `provider:name`.
        pub model: String,
        /// Aggregate score (routing §5.5).
        pub score: f64,
        /// Σ sample_size of this model's rows in the K-cluster.
        pub sample_size: u64,
        /// Mean session cost.
        #[serde(with = "rust_decimal::serde::str")]
        #[rkyv(with = crate::remote::DecimalDef)]
        pub avg_cost_usd: Decimal,
        /// Sample-size-weighted success mean.
        pub success_score_mean: f64,
    }
}

/// Archived layout of [`ToolArgs`]: canonical JSON text.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
#[rkyv(remote = ToolArgs)]
pub struct ToolArgsDef {
    #[rkyv(getter = ToolArgs::to_json)]
    json: String,
}

impl From<ToolArgsDef> for ToolArgs {
    fn from(value: ToolArgsDef) -> Self {
        // The text was written by `ToolArgs::to_json` and is covered by the
        // frame CRC, so it parses; an empty map is the defensive fallback.
        ToolArgs::from_json(&value.json).unwrap_or_default()
    }
}
