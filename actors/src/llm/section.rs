//! `[llm]` of `engram.toml`: the model server (none: offline mode), the
//! candidates and their servers, their prices, and seed 002's per-context
//! models and timeouts.

use std::collections::BTreeMap;
use std::time::Duration;

use engram_events::payloads::LlmContext;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// `[llm]`: the model server (none: offline mode), its prices and the
/// per-context timeouts of seed 002.
///
/// ```toml
/// [llm]
/// provider = "openai"
/// base_url = "https://api.example.com"
/// model = "gpt-5-mini"
/// api_key_env = "OPENAI_API_KEY"
/// pricing_version = "2026-11"
///
/// [llm.prices.gpt-5-mini]
/// input_per_mtok = "0.15"
/// output_per_mtok = "0.60"
/// ```
///
/// With more than one model to choose from — the pattern store routes each
/// planner turn to the candidate that did best on similar past turns —
/// `candidates` lists them, each with its price, and a candidate on another
/// server than the one above gets its own `[llm.models.NAME]`:
///
/// ```toml
/// [llm]
/// provider = "ollama"
/// model = "qwen3:8b"
/// candidates = ["qwen3:8b", "gpt-5-mini"]
/// pricing_version = "2026-11"
///
/// [llm.models."gpt-5-mini"]
/// provider = "openai"
/// base_url = "https://api.example.com"
/// api_key_env = "OPENAI_API_KEY"
///
/// [llm.prices."qwen3:8b"]
/// input_per_mtok = "0"
/// output_per_mtok = "0"
///
/// [llm.prices."gpt-5-mini"]
/// input_per_mtok = "0.15"
/// output_per_mtok = "0.60"
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSection {
    /// `ollama`, `openai`, or empty for offline mode.
    pub provider: String,
    /// Server base URL.
    pub base_url: String,
    /// Model name, as the server knows it.
    pub model: String,
    /// Name of the environment variable holding the API key (the key
    /// itself is never in the file, the log or an event).
    pub api_key_env: String,
    /// Timeout in milliseconds for contexts without their own key below
    /// (graph extraction).
    pub timeout_ms: u64,
    /// Planner (#12) timeout: it gates the turn, so it is short and fails open.
    /// A model measured slower gets more, up to `planner_timeout_max_ms`
    /// (`engram_learning::model_budget`, rule 5): twice the time its
    /// measured speed predicts for the prompt.
    pub planner_timeout_ms: u64,
    /// The most a planner call may be given when the model's measured
    /// speed asks for more than `planner_timeout_ms`.
    pub planner_timeout_max_ms: u64,
    /// Whether the LLM planner (#12) runs; false: every planner turn gets
    /// the empty plan and the reply loop's model calls tools as it goes.
    /// (A request under 4 characters is never planned by the model.)
    pub planner_enabled: bool,
    /// Main reply loop (#1) timeout, per model turn.
    pub chat_timeout_ms: u64,
    /// The reply loop's budget for one reply, all its model turns together:
    /// each call gets what is left of it (at most `chat_timeout_ms`), and a
    /// reply that runs out answers from what the tools found, or from the
    /// offline planner's plan when no tool ran — a turn is bounded in
    /// seconds even when the model hangs.
    pub reply_budget_ms: u64,
    /// Intent judge (#2) and evaluator judge timeout.
    pub judge_timeout_ms: u64,
    /// Summariser (#9) timeout.
    pub summary_timeout_ms: u64,
    /// Memory enrichment (#3) timeout: it runs before the reply loop's
    /// first model turn, so it is short and fails open to the rule.
    pub enrichment_timeout_ms: u64,
    /// Timeout of the digests (#4 memory, #5 tool result, #6 max-turn
    /// loop), shared as in seed 002: each fails open to what it digests.
    pub digest_timeout_ms: u64,
    /// Memory digest (#4): recalled diary entries and facts condensed for
    /// the request before they reach the reply loop's model. Unset: on for
    /// a small model (≤ 7B by its name, [`is_small_model`]), off for others.
    pub memory_digest: Option<bool>,
    /// Tool-result digest (#5): a long tool result condensed for the
    /// request before it enters the reply loop's messages. Unset: as
    /// `memory_digest`.
    pub tool_result_digest: Option<bool>,
    /// Tool router (#7) timeout: it runs before the planner, so it is
    /// short and fails open to the embedding ranking.
    pub router_timeout_ms: u64,
    /// Model of the tool router (#7); empty: `intent_judge_model`, else
    /// `model`.
    pub tool_router_model: String,
    /// Model of the LLM intent judge (#2); empty: no LLM intent judge, the
    /// rule judge decides (a model call per utterance is opt-in).
    pub intent_judge_model: String,
    /// Model of the LLM evaluator judge, which grades each completed turn
    /// beside the heuristic judge; empty: off (it costs a call per turn).
    pub judge_model: String,
    /// Version of `prices`, recorded with every call's cost so a later
    /// price change never rewrites history.
    pub pricing_version: String,
    /// Model name → price per million tokens. Unlisted models cost 0.
    pub prices: BTreeMap<String, ModelPriceSection>,
    /// The models planner turns may be routed to (by the pattern store,
    /// exploration, a per-utterance `:model` or a sticky `:use`); empty:
    /// `model` alone.
    pub candidates: Vec<String>,
    /// Candidates served elsewhere than `provider` / `base_url`: model name
    /// → its server.
    pub models: BTreeMap<String, ModelServerSection>,
    /// How tools reach the model: natively, as text, or as the server says
    /// ([`NativeTools`]). Decided from this key or an explicit probe, never
    /// from an error message.
    pub native_tools: NativeTools,
}

/// `[llm] native_tools`: whether tools go to the model natively (the
/// protocol's `tools` field) or as text guidance ([`crate::llm::text_tools`]).
/// A server's 400 never changes it: that is an error for that call only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NativeTools {
    /// As the server says: Ollama's `/api/show` lists the model's
    /// capabilities (probed per model, logged, re-asked after a while);
    /// OpenAI-compatible servers have no such signal, so native.
    #[default]
    Auto,
    /// Always native.
    On,
    /// Always as text: for a server or model without tool calling.
    Off,
}

/// Whether `model` is small — at most 7 billion parameters by the size its
/// name gives: seed 002's SMALL tier, whose context window the digests
/// (#4, #5) protect. A name without a size (`gpt-5-mini`) is taken for a
/// large model: the digests stay off unless `[llm]` turns them on. The
/// reading of sizes is [`engram_learning::model_budget`]'s.
pub use engram_learning::model_budget::is_small_model;

/// `[llm.models.NAME]`: the server of one candidate model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelServerSection {
    /// `ollama` or `openai`.
    pub provider: String,
    /// Server base URL (`ollama`: its default when empty).
    pub base_url: String,
    /// Name of the environment variable holding this server's API key.
    pub api_key_env: String,
    /// This server's `native_tools`; unset: `[llm]`'s.
    pub native_tools: Option<NativeTools>,
}

/// One model's price per million tokens, as decimal strings (`"0.15"`), so
/// money never passes through a float.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPriceSection {
    /// USD per million prompt tokens.
    #[serde(with = "decimal_text")]
    pub input_per_mtok: Decimal,
    /// USD per million completion tokens.
    #[serde(with = "decimal_text")]
    pub output_per_mtok: Decimal,
}

/// Decimals as strings only: `rust_decimal`'s own deserialiser also takes a
/// TOML float, which would let a price pass through `f64`.
mod decimal_text {
    use rust_decimal::Decimal;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(d)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
        let text = String::deserialize(d)?;
        text.trim().parse().map_err(|e| serde::de::Error::custom(format!("{text:?} is not a decimal: {e}")))
    }
}

impl Default for LlmSection {
    fn default() -> Self {
        LlmSection {
            provider: String::new(),
            base_url: String::new(),
            model: String::new(),
            api_key_env: String::new(),
            timeout_ms: 30_000,
            planner_timeout_ms: 6_000,
            planner_timeout_max_ms: 12_000,
            planner_enabled: true,
            chat_timeout_ms: 45_000,
            reply_budget_ms: 20_000,
            judge_timeout_ms: 15_000,
            summary_timeout_ms: 30_000,
            enrichment_timeout_ms: 8_000,
            digest_timeout_ms: 8_000,
            memory_digest: None,
            tool_result_digest: None,
            router_timeout_ms: 6_000,
            tool_router_model: String::new(),
            intent_judge_model: String::new(),
            judge_model: String::new(),
            pricing_version: "none".into(),
            prices: BTreeMap::new(),
            candidates: Vec::new(),
            models: BTreeMap::new(),
            native_tools: NativeTools::Auto,
        }
    }
}

impl LlmSection {
    /// The timeout for a call serving `context`, so every caller applies
    /// the same per-context budget.
    pub fn timeout(&self, context: LlmContext) -> Duration {
        let ms = match context {
            LlmContext::Planner | LlmContext::StepResolver => self.planner_timeout_ms,
            LlmContext::ReplyLoop => self.chat_timeout_ms,
            LlmContext::IntentJudge | LlmContext::Judge => self.judge_timeout_ms,
            LlmContext::Summariser => self.summary_timeout_ms,
            LlmContext::Enrichment => self.enrichment_timeout_ms,
            LlmContext::MemoryDigest | LlmContext::ToolDigest | LlmContext::LoopDigest => self.digest_timeout_ms,
            LlmContext::ToolRouter => self.router_timeout_ms,
            _ => self.timeout_ms,
        };
        Duration::from_millis(ms)
    }

    /// The model for a call serving `context`: the intent judge uses
    /// `intent_judge_model` and the evaluator's judge `judge_model` when
    /// set, every other context `model`.
    pub fn model_for(&self, context: LlmContext) -> &str {
        match context {
            // The max-turn digest prefers the small intent model (seed
            // 002 #6): it only condenses what the loop already found.
            LlmContext::IntentJudge | LlmContext::LoopDigest if !self.intent_judge_model.is_empty() => {
                &self.intent_judge_model
            }
            LlmContext::Judge if !self.judge_model.is_empty() => &self.judge_model,
            // The router classifies; seed 002 #7's chain.
            LlmContext::ToolRouter if !self.tool_router_model.is_empty() => &self.tool_router_model,
            LlmContext::ToolRouter if !self.intent_judge_model.is_empty() => &self.intent_judge_model,
            _ => &self.model,
        }
    }

    /// Whether the memory digest (#4) runs for a turn on `model`.
    pub fn memory_digest_for(&self, model: &str) -> bool {
        self.memory_digest.unwrap_or_else(|| is_small_model(model))
    }

    /// Whether the tool-result digest (#5) runs for a turn on `model`.
    pub fn tool_result_digest_for(&self, model: &str) -> bool {
        self.tool_result_digest.unwrap_or_else(|| is_small_model(model))
    }

    /// The models planner turns may be routed to: `candidates`, or `model`
    /// alone when that is empty (none in offline mode).
    pub fn candidate_models(&self) -> Vec<String> {
        if self.candidates.is_empty() {
            Some(self.model.trim().to_owned()).filter(|m| !m.is_empty()).into_iter().collect()
        } else {
            self.candidates.clone()
        }
    }

    /// Checks `candidates`, `models` and `prices` against each other: a
    /// duplicate or empty candidate, a server for a model that is no
    /// candidate, or — with a `pricing_version` set — a listed candidate
    /// without a price. The error names the key.
    pub fn check(&self) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for c in &self.candidates {
            if c.trim().is_empty() {
                return Err("llm.candidates: an empty model name".into());
            }
            if !seen.insert(c.as_str()) {
                return Err(format!("llm.candidates: {c:?} is listed twice"));
            }
        }
        let candidates = self.candidate_models();
        for name in self.models.keys() {
            if !candidates.contains(name) {
                return Err(format!("llm.models.{name}: {name:?} is not one of llm.candidates {candidates:?}"));
            }
        }
        for (name, server) in &self.models {
            if !matches!(server.provider.trim(), "ollama" | "openai") {
                return Err(format!(
                    "llm.models.{name}.provider: {:?} (expected \"ollama\" or \"openai\")",
                    server.provider
                ));
            }
        }
        if self.pricing_version.trim() != "none" {
            if let Some(c) = self.candidates.iter().find(|c| !self.prices.contains_key(*c)) {
                return Err(format!(
                    "llm.candidates: {c:?} has no [llm.prices.{c:?}] (pricing_version {:?} is set, so every \
                     candidate's cost must be known)",
                    self.pricing_version
                ));
            }
        }
        Ok(())
    }

    /// Whether the LLM intent judge runs (given a client): only when
    /// `intent_judge_model` names a model.
    pub fn intent_judge_enabled(&self) -> bool {
        !self.intent_judge_model.trim().is_empty()
    }

    /// Whether the LLM evaluator judge runs (given a client): only when
    /// `judge_model` names a model.
    pub fn judge_enabled(&self) -> bool {
        !self.judge_model.trim().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digests_follow_the_model_size() {
        let c = LlmSection { memory_digest: Some(true), ..LlmSection::default() };
        assert!(c.memory_digest_for("gpt-5") && !c.tool_result_digest_for("gpt-5"));
        assert!(c.tool_result_digest_for("gemma3:4b"));
    }

    #[test]
    fn native_tools_is_a_key_with_an_env_override_and_a_closed_set_of_values() {
        use crate::config::Config;
        let path = std::path::Path::new("engram.toml");
        assert_eq!(LlmSection::default().native_tools, NativeTools::Auto);
        let c = Config::from_toml("[llm]\nnative_tools = \"off\"\n", path).unwrap();
        assert_eq!(c.llm.native_tools, NativeTools::Off);
        let c = Config::from_toml("[llm.models.m]\nprovider = \"ollama\"\nnative_tools = \"on\"\n", path);
        let e = c.expect_err("m is no candidate").to_string();
        assert!(e.contains("llm.models.m"), "{e}");
        let c = Config::from_toml(
            "[llm]\nmodel = \"m\"\n[llm.models.m]\nprovider = \"ollama\"\nnative_tools = \"on\"\n",
            path,
        )
        .unwrap();
        assert_eq!(c.llm.models["m"].native_tools, Some(NativeTools::On));
        let e = Config::from_toml("[llm]\nnative_tools = \"maybe\"\n", path).unwrap_err().to_string();
        assert!(e.contains("maybe") || e.contains("native_tools"), "{e}");
        let env = [("ENGRAM_LLM_NATIVE_TOOLS".to_owned(), "on".to_owned())];
        assert_eq!(Config::default().with_env(env).unwrap().llm.native_tools, NativeTools::On);
        let env = [("ENGRAM_LLM_NATIVE_TOOLS".to_owned(), "sometimes".to_owned())];
        assert!(Config::default().with_env(env).is_err());
    }
}
