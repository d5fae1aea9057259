//! `engram.toml`: the runtime's configuration, with `ENGRAM_*` environment
//! overrides — the loader. Each section is defined beside what it
//! configures: `[fast_path]` and `[multi_tool_fast_path]` in
//! `engram_learning::fast_path`, `[pattern]` in `engram_learning::patterns`,
//! `[embedder]` in `engram_learning::embedder`, `[storage]` in
//! `engram_storage::backend`, `[llm]` in [`crate::llm::section`], `[tools]`
//! in [`crate::tools`], `[mcp]` in [`crate::tools::mcp`], `[memory]` in
//! [`crate::recollection`], `[reply_loop]` in [`crate::roles::reply_loop`],
//! `[planner]` in `engram_learning::model_budget`, `[dialogue]` in
//! `engram_learning::memory::dialogue`, `[routing]` in
//! `engram_learning::routing`. Two are here: `[metrics]`
//! ([`MetricsSection`]), since the metrics themselves are an optional
//! feature and the key must parse in every build, and `[runtime]`
//! ([`RuntimeSection`]), the runtime's own knobs, since the runtime is
//! built from a [`Config`] (defined there, the two modules would import
//! each other).
//!
//! Keys that moved to their component's section (`[runtime]
//! agentic_max_turns` is `[reply_loop] max_turns`, …: [`MOVED`]) are still
//! read where they were, in the file and as `ENGRAM_RUNTIME_*`, with a
//! warning naming the new place; set in both places they are an error.
//!
//! Precedence, per key: an environment variable beats the file, the file
//! beats the default in code (seed 000). The variable for a key is
//! `ENGRAM_<SECTION>_<KEY>` in capitals — `[fast_path]
//! canonical_query_threshold` is `ENGRAM_FAST_PATH_CANONICAL_QUERY_THRESHOLD`.
//! Unknown sections or keys in the file are errors naming them, so a typo
//! never silently leaves a default in place.
//!
//! ```toml
//! [fast_path]
//! canonical_query_enabled = true
//! canonical_query_min_uses = 3
//! canonical_query_threshold = 0.85
//!
//! [multi_tool_fast_path]
//! enabled = true          # engram's default (the seed ships it off)
//! threshold = 0.85
//! ttl_active_days = 30
//!
//! [pattern]
//! cost_weight = 0.05
//!
//! [tools]
//! location = "Rome, Italy"
//! file_roots = ["/home/anna/Documents", "/home/anna/Notes"]
//!
//! [runtime]
//! session_idle_secs = 1800
//!
//! [reply_loop]
//! max_turns = 8
//!
//! [routing]
//! model_rules = { doc = "qwen3:32b" }   # intent tag → model (routing slot 3)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engram_learning::embedder::{Calibration, EmbedderConfig, EmbeddingModel};
use engram_learning::fast_path::{FastPathConfig, MultiToolConfig};
use engram_learning::patterns::PatternSection;
use engram_storage::StorageSection;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use engram_learning::memory::dialogue::DialogueSection;
use engram_learning::model_budget::PlannerSection;
use engram_learning::routing::RoutingSection;

use crate::llm::LlmSection;
use crate::roles::reply_loop::ReplyLoopSection;
use crate::tools::mcp::McpSection;
use crate::tools::ToolsSection;
use engram_learning::memory::MemorySection;

/// The `ENGRAM_*` variables that are not configuration keys: the data dir,
/// the configuration file, the log filter, and where the embedding model
/// and ONNX Runtime are.
pub const OTHER_VARS: &[&str] =
    &["ENGRAM_DATA", "ENGRAM_CONFIG", "ENGRAM_LOG", "ENGRAM_MODELS_DIR", "ENGRAM_ORT_LIBRARY"];

/// Configuration errors, naming the file and line or the variable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this configuration.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong and where (line, column, key).
        message: String,
    },
    /// An `ENGRAM_*` variable that is neither a configuration key nor one
    /// of [`OTHER_VARS`] (a typo would otherwise leave a default in place,
    /// as an unknown key in the file would). Its value is not repeated: it
    /// may be a secret.
    #[error("{var}: unknown engram variable: configuration keys are ENGRAM_<SECTION>_<KEY> (e.g. ENGRAM_LLM_MODEL); the others are {}", OTHER_VARS.join(", "))]
    UnknownEnv {
        /// The variable.
        var: String,
    },
    /// An environment override has the wrong type.
    #[error("{var}={value:?}: {message}")]
    Env {
        /// The variable.
        var: String,
        /// Its value.
        value: String,
        /// What was expected.
        message: String,
    },
}

/// `[metrics]`: the Prometheus endpoint (off by default).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSection {
    /// Where to serve `/metrics`, e.g. `127.0.0.1:9898`; empty: not
    /// served (a host can still register the metrics in its own registry).
    pub listen: String,
}

/// `[runtime]`: the live runtime's own knobs (seed 002) — when a session
/// ends on its own, how often actors save their state, how long an
/// utterance may be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeSection {
    /// A session with no utterance for this long is ended (`session.ended`
    /// with reason `idle`), so the pattern store records it and the
    /// summariser writes its summary; 0 never ends one on its own.
    pub session_idle_secs: u64,
    /// How often, in events of the log, each actor saves a snapshot of
    /// its folded state, so a start reads the state and the log's tail
    /// instead of folding the log from seq 1 (a shutdown saves one too once
    /// a quarter of this has passed); 0: never.
    pub snapshot_every: u64,
    /// Most bytes of one utterance: a longer one is refused before
    /// anything is recorded ([`crate::RuntimeError::UtteranceTooLong`];
    /// `engram run` names its line and goes on). At most what `engram
    /// import` reads back as a turn's text (64 KiB, the default), so that
    /// every log exports and imports again; a voice assistant may set far
    /// less.
    pub max_utterance_bytes: usize,
}

impl RuntimeSection {
    /// Checks what serde cannot: `max_utterance_bytes` within import's
    /// limit (`Err` says which key and why).
    pub fn check(&self) -> Result<(), String> {
        let most = engram_learning::import::turn_record::limits::MAX_TEXT_BYTES;
        match self.max_utterance_bytes {
            0 => Err("runtime.max_utterance_bytes: 0 would refuse every utterance".into()),
            n if n > most => Err(format!(
                "runtime.max_utterance_bytes: {n} is more than a turn's text may be when the log is imported \
                 again ({most} bytes)"
            )),
            _ => Ok(()),
        }
    }
}

impl Default for RuntimeSection {
    fn default() -> Self {
        RuntimeSection {
            session_idle_secs: 30 * 60,
            snapshot_every: 4096,
            max_utterance_bytes: engram_learning::import::turn_record::limits::MAX_TEXT_BYTES,
        }
    }
}

/// A key that moved out of `[runtime]` to the section of the component it
/// configures: (old key in `[runtime]`, new section, new key). The old
/// place is still read, with a warning.
pub const MOVED: &[(&str, &str, &str)] = &[
    ("agentic_max_turns", "reply_loop", "max_turns"),
    ("max_reply_bytes", "reply_loop", "max_reply_bytes"),
    ("model_rules", "routing", "model_rules"),
    ("dialogue_window_secs", "dialogue", "window_secs"),
    ("dialogue_max_turns", "dialogue", "max_turns"),
    ("planner_max_tools", "planner", "max_tools"),
];

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// L0 / L1.
    pub fast_path: FastPathConfig,
    /// L2.
    pub multi_tool_fast_path: MultiToolConfig,
    /// The pattern store.
    pub pattern: PatternSection,
    /// The embedder.
    pub embedder: EmbedderConfig,
    /// The LLM.
    pub llm: LlmSection,
    /// The log.
    pub storage: StorageSection,
    /// The built-in tools.
    pub tools: ToolsSection,
    /// The live runtime.
    pub runtime: RuntimeSection,
    /// The reply loop.
    pub reply_loop: ReplyLoopSection,
    /// The planner's prompt.
    pub planner: PlannerSection,
    /// The conversation the planner and the reply loop see.
    pub dialogue: DialogueSection,
    /// The routing chain's rules.
    pub routing: RoutingSection,
    /// The metrics endpoint.
    pub metrics: MetricsSection,
    /// MCP servers whose tools join the catalogue (`[mcp.servers.NAME]`).
    pub mcp: McpSection,
    /// Recalled memory's share of a prompt.
    pub memory: MemorySection,
}

/// Moves each [`MOVED`] key found in `table`'s `[runtime]` to its new
/// place, warning for each (`path` names the file); an error if the new
/// place is set too. Returns how many moved.
fn move_runtime_keys(table: &mut toml::Table, path: &Path) -> Result<usize, ConfigError> {
    let mut moved = 0;
    for (old, section, key) in MOVED {
        let Some(value) = table.get_mut("runtime").and_then(|r| r.as_table_mut()).and_then(|r| r.remove(*old)) else {
            continue;
        };
        let parse = |message: String| ConfigError::Parse { path: path.to_owned(), message };
        let target = table.entry(*section).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let Some(target) = target.as_table_mut() else {
            return Err(parse(format!("{section}: expected a table")));
        };
        if target.contains_key(*key) {
            return Err(parse(format!("runtime.{old} is {section}.{key} now, and both are set: keep {section}.{key}")));
        }
        tracing::warn!(
            "{}: [runtime] {old} is deprecated: write it as [{section}] {key} (read as that for now)",
            path.display()
        );
        target.insert((*key).to_owned(), value);
        moved += 1;
    }
    Ok(moved)
}

/// Renames each `ENGRAM_RUNTIME_*` variable of a [`MOVED`] key to its new
/// name, warning for each; an error if the new one is set too.
fn move_runtime_vars(env: &mut BTreeMap<String, String>) -> Result<(), ConfigError> {
    for (old, section, key) in MOVED {
        let old_var = format!("ENGRAM_RUNTIME_{}", old.to_uppercase());
        let Some(value) = env.remove(&old_var) else { continue };
        let new_var = format!("ENGRAM_{}_{}", section.to_uppercase(), key.to_uppercase());
        if env.contains_key(&new_var) {
            return Err(ConfigError::Env {
                var: old_var,
                value,
                message: format!("this is {new_var} now, and both are set: keep {new_var}"),
            });
        }
        tracing::warn!("{old_var} is deprecated: set {new_var} (read as that for now)");
        env.insert(new_var, value);
    }
    Ok(())
}

/// A TOML error without the excerpt of the file it quotes (`3 | api_key =
/// …`): where (line and column of `text`) and what, never the text.
fn unquoted(e: &toml::de::Error, text: &str) -> String {
    let what = e.message().trim();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: {what}")
        }
        None => what.to_owned(),
    }
}

/// The `section.key` of the first key of a section that looks like a
/// secret, other than `api_key_env` (which names a variable). Only a
/// section's own keys: the maps below them (`l0_extra` phrases,
/// `model_rules` tags) are the user's words, not settings.
fn secret_key(table: &toml::Table) -> Option<String> {
    for (section, value) in table {
        let toml::Value::Table(keys) = value else { continue };
        for key in keys.keys() {
            let lower = key.to_ascii_lowercase();
            let looks_secret = ["key", "token", "secret", "password", "passwd"].iter().any(|w| lower.contains(w));
            if looks_secret && lower != "api_key_env" {
                return Some(format!("[{section}] {key}"));
            }
        }
    }
    None
}

impl Config {
    /// Fills every threshold the configuration leaves unset with the
    /// calibration of the model whose vectors it will compare (`model_id`,
    /// the embedder's; the default model's for an id engram does not know).
    /// A threshold the user set is kept: it is theirs.
    pub fn calibrate_for(&mut self, model_id: &str) {
        let cal: Calibration = EmbeddingModel::calibration_for_id(model_id);
        self.fast_path.calibrate(&cal);
        self.multi_tool_fast_path.calibrate(&cal);
        self.pattern.calibrate(&cal);
    }

    /// Parses TOML text (`path` names it in errors), without overrides.
    ///
    /// Errors name the line, column and key but never quote the file's
    /// text: a line of it may hold a secret. A key that looks like one
    /// (`api_key`, `token`, `password`, …) is refused outright: secrets are
    /// read from the environment (`[llm] api_key_env`), not from files.
    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let parse_error =
            |e: toml::de::Error| ConfigError::Parse { path: path.to_owned(), message: unquoted(&e, text) };
        let mut table: toml::Table = toml::from_str(text).map_err(parse_error)?;
        if let Some(key) = secret_key(&table) {
            return Err(ConfigError::Parse {
                path: path.to_owned(),
                message: format!(
                    "{key}: secrets are not kept in configuration files (nor printed): put the key in an \
                     environment variable and name that variable in [llm] api_key_env"
                ),
            });
        }
        let config: Config = if move_runtime_keys(&mut table, path)? == 0 {
            toml::from_str(text).map_err(parse_error)?
        } else {
            // Read from the table the keys moved in: no line numbers then,
            // the key path still named.
            let message = |e: toml::de::Error| ConfigError::Parse {
                path: path.to_owned(),
                message: e.message().trim().to_owned(),
            };
            toml::Value::Table(table).try_into().map_err(message)?
        };
        config.llm.check().map_err(|message| ConfigError::Parse { path: path.to_owned(), message })?;
        config.mcp.check().map_err(|message| ConfigError::Parse { path: path.to_owned(), message })?;
        config.runtime.check().map_err(|message| ConfigError::Parse { path: path.to_owned(), message })?;
        Ok(config)
    }

    /// Loads `path` (which must exist) or, with `None`, the defaults; then
    /// applies `ENGRAM_*` overrides from `env`.
    pub fn load(path: Option<&Path>, env: impl IntoIterator<Item = (String, String)>) -> Result<Config, ConfigError> {
        let base = match path {
            Some(p) => {
                let text =
                    std::fs::read_to_string(p).map_err(|source| ConfigError::Read { path: p.to_owned(), source })?;
                Config::from_toml(&text, p)?
            }
            None => Config::default(),
        };
        base.with_env(env)
    }

    /// Where the configuration file is: `$ENGRAM_CONFIG`, else
    /// `<data>/engram.toml`, else `$XDG_CONFIG_HOME/engram/engram.toml`
    /// (`~/.config/...`), the first that is there — in any form: a
    /// directory, a dangling symlink or a symlink loop in its place is
    /// returned too, so that [`Config::load`] names it, rather than passed
    /// over in silence for the next one.
    pub fn locate(data_dir: &Path) -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("ENGRAM_CONFIG") {
            return Some(PathBuf::from(p));
        }
        let there = |p: &Path| p.symlink_metadata().is_ok();
        let in_data = data_dir.join("engram.toml");
        if there(&in_data) {
            return Some(in_data);
        }
        let config_home = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        let p = config_home.join("engram").join("engram.toml");
        there(&p).then_some(p)
    }

    /// This configuration with `ENGRAM_<SECTION>_<KEY>` variables applied.
    /// Any other `ENGRAM_*` variable is an error unless it is one of
    /// [`OTHER_VARS`] or the one `[llm] api_key_env` names.
    pub fn with_env(self, env: impl IntoIterator<Item = (String, String)>) -> Result<Config, ConfigError> {
        let mut env: BTreeMap<String, String> = env.into_iter().filter(|(k, _)| k.starts_with("ENGRAM_")).collect();
        move_runtime_vars(&mut env)?;
        let api_key_env = self.llm.api_key_env.clone();
        let credentials_env = self.storage.credentials_env.clone();
        let mut tree = serde_json::to_value(&self).expect("config serialises");
        let sections = tree.as_object_mut().expect("an object");
        let mut applied: Vec<(String, String)> = Vec::new();
        for (section, keys) in sections.iter_mut() {
            let Some(keys) = keys.as_object_mut() else { continue };
            for (key, value) in keys.iter_mut() {
                let var = format!("ENGRAM_{}_{}", section.to_uppercase(), key.to_uppercase());
                let Some(raw) = env.get(&var) else { continue };
                let bad = |message: &str| ConfigError::Env {
                    var: var.clone(),
                    value: raw.clone(),
                    message: message.to_owned(),
                };
                *value = match value {
                    Value::Bool(_) => Value::Bool(match raw.to_ascii_lowercase().as_str() {
                        "1" | "true" | "yes" | "on" => true,
                        "0" | "false" | "no" | "off" => false,
                        _ => return Err(bad("expected true or false")),
                    }),
                    Value::Number(n) if n.is_u64() => {
                        Value::from(raw.trim().parse::<u64>().map_err(|_| bad("expected a whole number"))?)
                    }
                    Value::Number(_) => Value::from(raw.trim().parse::<f64>().map_err(|_| bad("expected a number"))?),
                    Value::Object(_) => serde_json::from_str(raw).map_err(|_| bad("expected a JSON object"))?,
                    // Lists (of paths): a JSON array, or `:`-separated like `$PATH`.
                    Value::Array(_) if raw.trim_start().starts_with('[') => {
                        serde_json::from_str(raw).map_err(|_| bad("expected a JSON array"))?
                    }
                    Value::Array(_) => Value::Array(
                        std::env::split_paths(raw)
                            .filter(|p| !p.as_os_str().is_empty())
                            .map(|p| Value::String(p.to_string_lossy().into_owned()))
                            .collect(),
                    ),
                    // An unset optional key (a threshold left to the model's
                    // calibration, a digest switch): a number or a boolean as
                    // written, anything else a string.
                    Value::Null => match raw.trim().to_ascii_lowercase().as_str() {
                        "true" | "yes" | "on" => Value::Bool(true),
                        "false" | "no" | "off" => Value::Bool(false),
                        t => t.parse::<f64>().map(Value::from).unwrap_or_else(|_| Value::String(raw.clone())),
                    },
                    _ => Value::String(raw.clone()),
                };
                applied.push((var, raw.clone()));
            }
        }
        if let Some(var) = env.keys().find(|var| {
            !applied.iter().any(|(a, _)| a == *var)
                && !OTHER_VARS.contains(&var.as_str())
                && **var != api_key_env
                && **var != credentials_env
        }) {
            return Err(ConfigError::UnknownEnv { var: var.clone() });
        }
        let out: Config = serde_json::from_value(tree).map_err(|e| {
            let (var, value) = applied.last().cloned().unwrap_or_default();
            ConfigError::Env { var, value, message: e.to_string() }
        })?;
        for (var, value) in &applied {
            tracing::debug!(%var, %value, "configuration override from the environment");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_events::payloads::LlmContext;
    use engram_learning::patterns::{PatternCaps, PatternConfig};
    use rust_decimal::Decimal;
    use std::time::Duration;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn defaults_match_the_seed_except_l2_on() {
        let c = Config::default();
        assert_eq!(c.fast_path.canonical_query_min_uses, 3);
        assert!(c.fast_path.canonical_query_enabled);
        assert!(!c.fast_path.canonical_query_args_llm);
        assert!(c.multi_tool_fast_path.enabled, "DESIGN: L2 on by default");
        assert!(!c.multi_tool_fast_path.chain_to_planner);
        assert_eq!(c.multi_tool_fast_path.min_uses, 3);
        assert_eq!(c.multi_tool_fast_path.ttl_active_days, 30);
        assert_eq!(c.multi_tool_fast_path.k_synth, 50);
        assert_eq!(c.pattern.config(), PatternConfig::default());
        assert_eq!(c.pattern.caps(), PatternCaps::default());
    }

    #[test]
    fn an_unknown_engram_variable_is_an_error_that_does_not_echo_its_value() {
        let e = Config::default().with_env(env(&[("ENGRAM_LLM_MODLE", "secret-ish")])).unwrap_err().to_string();
        assert!(e.starts_with("ENGRAM_LLM_MODLE: unknown engram variable"), "{e}");
        assert!(!e.contains("secret-ish"), "{e}");
        // The others, and the variable api_key_env names, are not config keys and are fine.
        let mut c = Config::default();
        c.llm.api_key_env = "ENGRAM_MY_KEY".into();
        c.with_env(env(&[("ENGRAM_DATA", "/d"), ("ENGRAM_LOG", "debug"), ("ENGRAM_MY_KEY", "k")])).unwrap();
    }

    #[test]
    fn an_inline_key_is_refused_and_no_error_quotes_the_file() {
        let p = Path::new("/etc/engram.toml");
        let e = Config::from_toml("[llm]\nprovider = \"openai\"\napi_key = \"sk-live-SECRET\"\n", p).unwrap_err();
        let e = e.to_string();
        assert!(e.contains("[llm] api_key") && e.contains("api_key_env"), "{e}");
        assert!(!e.contains("SECRET"), "{e}");
        // A typo'd key or a syntax error near a secret: named by line, never quoted.
        for text in ["[llm]\nmodle = \"SECRET-1\"\n", "[llm]\nmodel = \"SECRET-2\n"] {
            let e = Config::from_toml(text, p).unwrap_err().to_string();
            assert!(e.contains("line 2"), "{e}");
            assert!(!e.contains("SECRET"), "{e}");
        }
        // Phrases in l0_extra are the user's words, not settings.
        let c = Config::from_toml("[fast_path]\nl0_extra = { \"where is my key\" = \"get_location\" }\n", p).unwrap();
        assert_eq!(c.fast_path.l0_extra.len(), 1);
    }

    #[test]
    fn env_beats_toml_beats_default() {
        let toml = "[fast_path]\ncanonical_query_min_uses = 5\ncanonical_query_threshold = 0.93\n\n[multi_tool_fast_path]\nenabled = false\n";
        let file = Config::from_toml(toml, Path::new("engram.toml")).unwrap();
        assert_eq!(file.fast_path.canonical_query_min_uses, 5);
        assert!(!file.multi_tool_fast_path.enabled);
        assert_eq!(file.multi_tool_fast_path.k_synth, 50, "untouched keys keep their defaults");
        let c = file
            .with_env(env(&[
                ("ENGRAM_FAST_PATH_CANONICAL_QUERY_THRESHOLD", "0.97"),
                ("ENGRAM_MULTI_TOOL_FAST_PATH_ENABLED", "true"),
                ("ENGRAM_PATTERN_MIN_SAMPLE_SIZE", "9"),
                ("ENGRAM_LLM_PROVIDER", "ollama"),
                ("ENGRAM_FAST_PATH_L0_EXTRA", r#"{"which day is it":"get_date"}"#),
                ("ENGRAM_DATA", "/ignored"),
                ("OTHER", "x"),
            ]))
            .unwrap();
        assert_eq!(c.fast_path.canonical_query_threshold, Some(0.97));
        assert_eq!(c.fast_path.canonical_query_min_uses, 5, "the file's value stays");
        assert!(c.multi_tool_fast_path.enabled);
        assert_eq!(c.pattern.min_sample_size, 9);
        assert_eq!(c.llm.provider, "ollama");
        assert_eq!(c.fast_path.l0_extra.get("which day is it").map(String::as_str), Some("get_date"));
    }

    #[test]
    fn thresholds_left_unset_follow_the_embedding_model() {
        let p = Path::new("engram.toml");
        let c = Config::from_toml("[embedder]\nmodel = \"minilm-l6-v2\"\n", p).unwrap();
        assert_eq!(c.embedder.model, EmbeddingModel::MiniLmL6V2);
        assert_eq!(Config::default().embedder.model, EmbeddingModel::UseMultilingualV3);
        let e = Config::from_toml("[embedder]\nmodel = \"bge-m3\"\n", p).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("use-multilingual-v3"), "{e}");

        // Unset: the calibration of the model the vectors come from.
        let minilm = EmbeddingModel::MiniLmL6V2.spec();
        let mut c = Config::default();
        c.calibrate_for(minilm.id);
        assert_eq!(c.fast_path.l1_threshold(), minilm.calibration.l1);
        assert_eq!(c.multi_tool_fast_path.l2_threshold(), minilm.calibration.l2);
        assert_eq!(c.pattern.config().min_hybrid_similarity, minilm.calibration.hybrid_floor);
        // Set (in the file or the environment): the user's, whatever the model.
        let mut c = Config::default()
            .with_env(env(&[
                ("ENGRAM_FAST_PATH_CANONICAL_QUERY_THRESHOLD", "0.61"),
                ("ENGRAM_LLM_MEMORY_DIGEST", "on"),
            ]))
            .unwrap();
        c.calibrate_for(EmbeddingModel::UseMultilingualV3.spec().id);
        assert_eq!(c.fast_path.l1_threshold(), 0.61);
        assert_eq!(c.llm.memory_digest, Some(true));
    }

    #[test]
    fn tools_section_from_file_and_env() {
        let c = Config::default();
        assert_eq!(c.tools, ToolsSection::default());
        assert!(c.tools.location.is_empty() && c.tools.file_roots.is_empty());
        let toml = "[tools]\nlocation = \"Rome, Italy\"\nfile_roots = [\"/home/a/Docs\"]\n";
        let file = Config::from_toml(toml, Path::new("engram.toml")).unwrap();
        assert_eq!(file.tools.location, "Rome, Italy");
        assert_eq!(file.tools.file_roots, vec![PathBuf::from("/home/a/Docs")]);
        let c = file
            .clone()
            .with_env(env(&[("ENGRAM_TOOLS_LOCATION", "Milan"), ("ENGRAM_TOOLS_FILE_ROOTS", "/x:/y/z")]))
            .unwrap();
        assert_eq!(c.tools.location, "Milan");
        assert_eq!(c.tools.file_roots, vec![PathBuf::from("/x"), PathBuf::from("/y/z")]);
        let c = file.with_env(env(&[("ENGRAM_TOOLS_FILE_ROOTS", r#"["/a b", "/c"]"#)])).unwrap();
        assert_eq!(c.tools.file_roots, vec![PathBuf::from("/a b"), PathBuf::from("/c")]);
        let e = Config::default().with_env(env(&[("ENGRAM_TOOLS_FILE_ROOTS", "[oops")])).unwrap_err();
        assert!(e.to_string().contains("ENGRAM_TOOLS_FILE_ROOTS") && e.to_string().contains("JSON array"), "{e}");
        let e = Config::from_toml("[tools]\nroots = []\n", Path::new("x.toml")).unwrap_err().to_string();
        assert!(e.contains("roots"), "unknown keys are refused: {e}");
    }

    #[test]
    fn errors_name_the_key_or_variable() {
        let e = Config::from_toml("[fast_path]\ncanonical_query_treshold = 0.9\n", Path::new("/etc/engram.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/etc/engram.toml") && e.contains("canonical_query_treshold"), "{e}");
        let e = Config::from_toml("[fast_path]\ncanonical_query_min_uses = \"three\"\n", Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") || e.contains("canonical_query_min_uses"), "{e}");
        let e = Config::default()
            .with_env(env(&[("ENGRAM_MULTI_TOOL_FAST_PATH_MIN_USES", "lots")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ENGRAM_MULTI_TOOL_FAST_PATH_MIN_USES") && e.contains("whole number"), "{e}");
        let e = Config::default().with_env(env(&[("ENGRAM_FAST_PATH_CANONICAL_QUERY_ENABLED", "maybe")])).unwrap_err();
        assert!(e.to_string().contains("true or false"));
        let missing = Config::load(Some(Path::new("/nonexistent/engram.toml")), env(&[])).unwrap_err().to_string();
        assert!(missing.contains("/nonexistent/engram.toml"), "{missing}");
    }

    #[test]
    fn llm_prices_and_timeouts_load_and_scalar_llm_keys_take_env_overrides() {
        let toml = "[llm]\nprovider = \"openai\"\nmodel = \"gpt-5-mini\"\npricing_version = \"2026-11\"\n\n\
                    [llm.prices.gpt-5-mini]\ninput_per_mtok = \"0.15\"\noutput_per_mtok = \"0.60\"\n";
        let c = Config::from_toml(toml, Path::new("engram.toml")).unwrap();
        let price = &c.llm.prices["gpt-5-mini"];
        assert_eq!(price.input_per_mtok, Decimal::new(15, 2));
        assert_eq!(price.output_per_mtok, Decimal::new(60, 2));
        assert_eq!(c.llm.timeout(LlmContext::Planner), Duration::from_millis(6_000));
        assert_eq!(c.llm.timeout(LlmContext::ReplyLoop), Duration::from_millis(45_000));
        assert_eq!(c.llm.timeout(LlmContext::IntentJudge), Duration::from_millis(15_000));
        assert_eq!(c.llm.timeout(LlmContext::Summariser), Duration::from_millis(30_000));
        assert_eq!(c.llm.model_for(LlmContext::IntentJudge), "gpt-5-mini", "no judge model: the main one");
        assert!(!c.llm.intent_judge_enabled() && !c.llm.judge_enabled(), "both LLM judges are opt-in");
        let c = c
            .with_env(env(&[
                ("ENGRAM_LLM_PLANNER_TIMEOUT_MS", "2500"),
                ("ENGRAM_LLM_INTENT_JUDGE_MODEL", "gemma4:e2b"),
                ("ENGRAM_LLM_JUDGE_MODEL", "qwen3:4b"),
                ("ENGRAM_LLM_PRICING_VERSION", "2026-12"),
            ]))
            .unwrap();
        assert!(c.llm.intent_judge_enabled() && c.llm.judge_enabled());
        assert_eq!(c.llm.model_for(LlmContext::Judge), "qwen3:4b");
        assert_eq!(c.llm.timeout(LlmContext::Planner), Duration::from_millis(2_500));
        assert_eq!(c.llm.model_for(LlmContext::IntentJudge), "gemma4:e2b");
        assert_eq!(c.llm.model_for(LlmContext::Planner), "gpt-5-mini");
        assert_eq!(c.llm.pricing_version, "2026-12");
        assert_eq!(
            c.llm.prices["gpt-5-mini"].output_per_mtok,
            Decimal::new(60, 2),
            "the table survives the round trip"
        );
    }

    #[test]
    fn judge_model_is_a_known_llm_key() {
        let c = Config::from_toml("[llm]\njudge_model = \"gemma4:e2b\"\n", Path::new("engram.toml")).unwrap();
        assert_eq!(c.llm.model_for(LlmContext::Judge), "gemma4:e2b");
        assert_eq!(c.llm.model_for(LlmContext::IntentJudge), "", "the judge model is not the intent judge's");
        let e = Config::from_toml("[llm]\njudge_modle = \"x\"\n", Path::new("engram.toml")).unwrap_err();
        assert!(e.to_string().contains("judge_modle"), "{e}");
    }

    #[test]
    fn llm_prices_must_be_decimal_strings() {
        let toml = "[llm.prices.m]\ninput_per_mtok = 0.15\noutput_per_mtok = \"0.60\"\n";
        let e = Config::from_toml(toml, Path::new("engram.toml")).unwrap_err().to_string();
        assert!(e.contains("input_per_mtok") || e.contains("string"), "{e}");
        let toml = "[llm.prices.m]\ninput_per_mtok = \"cheap\"\noutput_per_mtok = \"0.60\"\n";
        assert!(Config::from_toml(toml, Path::new("engram.toml")).is_err());
    }

    #[test]
    fn candidates_are_checked_against_servers_and_prices() {
        let load = |toml: &str| Config::from_toml(toml, Path::new("engram.toml")).map_err(|e| e.to_string());
        let priced = "[llm.prices.a]\ninput_per_mtok = \"1\"\noutput_per_mtok = \"1\"\n\
                      [llm.prices.b]\ninput_per_mtok = \"2\"\noutput_per_mtok = \"2\"\n";
        let ok = load(&format!(
            "[llm]\nprovider = \"ollama\"\nmodel = \"a\"\ncandidates = [\"a\", \"b\"]\npricing_version = \"v\"\n\
             [llm.models.b]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:9\"\n{priced}"
        ))
        .unwrap();
        assert_eq!(ok.llm.candidate_models(), ["a", "b"]);
        // The default: the one model.
        assert_eq!(Config::default().llm.candidate_models(), Vec::<String>::new());
        let one = load("[llm]\nprovider = \"ollama\"\nmodel = \"a\"\n").unwrap();
        assert_eq!(one.llm.candidate_models(), ["a"]);
        for (toml, key) in [
            ("[llm]\ncandidates = [\"a\", \"a\"]\n", "llm.candidates"),
            ("[llm]\ncandidates = [\"a\"]\n[llm.models.c]\nprovider = \"ollama\"\n", "llm.models.c"),
            ("[llm]\ncandidates = [\"a\"]\n[llm.models.a]\nprovider = \"grpc\"\n", "llm.models.a.provider"),
            ("[llm]\ncandidates = [\"a\", \"c\"]\npricing_version = \"v\"\n[llm.prices.a]\ninput_per_mtok = \"1\"\noutput_per_mtok = \"1\"\n", "\"c\" has no"),
        ] {
            let e = load(toml).unwrap_err();
            assert!(e.contains(key) && e.contains("engram.toml"), "{key}: {e}");
        }
    }

    #[test]
    fn keys_moved_out_of_runtime_are_read_where_they_were() {
        let p = Path::new("engram.toml");
        let old = "[runtime]\nagentic_max_turns = 3\nmax_reply_bytes = 2000\nmodel_rules = { doc = \"big\" }\n\
                   dialogue_window_secs = 60\ndialogue_max_turns = 2\nplanner_max_tools = 5\nsession_idle_secs = 7\n";
        let c = Config::from_toml(old, p).unwrap();
        assert_eq!((c.reply_loop.max_turns, c.reply_loop.max_reply_bytes), (3, 2000));
        assert_eq!(c.routing.model_rules.get("doc").map(String::as_str), Some("big"));
        assert_eq!((c.dialogue.window_secs, c.dialogue.max_turns), (60, 2));
        assert_eq!(c.planner.max_tools, 5);
        assert_eq!(c.runtime.session_idle_secs, 7, "a key that stayed stays");
        let new = "[runtime]\nsession_idle_secs = 7\n[reply_loop]\nmax_turns = 3\nmax_reply_bytes = 2000\n\
                   [routing]\nmodel_rules = { doc = \"big\" }\n[dialogue]\nwindow_secs = 60\nmax_turns = 2\n\
                   [planner]\nmax_tools = 5\n";
        assert_eq!(Config::from_toml(new, p).unwrap(), c, "the old place reads as the new");
        // Both places: which one the user meant is theirs to say.
        let e = Config::from_toml("[runtime]\nplanner_max_tools = 5\n[planner]\nmax_tools = 6\n", p).unwrap_err();
        assert!(e.to_string().contains("runtime.planner_max_tools is planner.max_tools now"), "{e}");
        // A typo beside a moved key is still named.
        let e = Config::from_toml("[runtime]\nplanner_max_tools = 5\nsesion_idle_secs = 1\n", p).unwrap_err();
        assert!(e.to_string().contains("sesion_idle_secs"), "{e}");
        // The environment too.
        let c = Config::default().with_env(env(&[("ENGRAM_RUNTIME_AGENTIC_MAX_TURNS", "4")])).unwrap();
        assert_eq!(c.reply_loop.max_turns, 4);
        let both = env(&[("ENGRAM_RUNTIME_AGENTIC_MAX_TURNS", "4"), ("ENGRAM_REPLY_LOOP_MAX_TURNS", "5")]);
        let e = Config::default().with_env(both).unwrap_err();
        assert!(e.to_string().contains("ENGRAM_REPLY_LOOP_MAX_TURNS"), "{e}");
    }
}
