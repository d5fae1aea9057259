//! The clients `[llm]` describes (feature `llm-http`): one per server,
//! with the API key from the environment, and one in front of several when
//! candidates live on different servers.

use std::sync::Arc;

use crate::llm::LlmSection;

use super::ollama::{self, OllamaClient};
use super::openai::OpenAiClient;
use super::{ApiKey, ChatRequest, ChatResponse, LlmClient, LlmError, NativeTools};

/// Builds the client `[llm]` describes: `None` for an empty provider
/// (offline mode). The API key comes from the environment variable named by
/// `api_key_env`.
pub fn client_from_config(section: &LlmSection) -> Result<Option<Arc<dyn LlmClient>>, LlmError> {
    client_from_config_with_env(section, |name| std::env::var(name).ok())
}

/// [`client_from_config`] with the environment as a function, so tests need
/// not mutate the process environment.
pub fn client_from_config_with_env(
    section: &LlmSection,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Arc<dyn LlmClient>>, LlmError> {
    let default =
        server(&section.provider, &section.base_url, &section.api_key_env, section.native_tools, "llm", &env)?;
    if section.models.is_empty() {
        return Ok(default);
    }
    let mut by_model = std::collections::HashMap::new();
    for (name, m) in &section.models {
        let native_tools = m.native_tools.unwrap_or(section.native_tools);
        let client =
            server(&m.provider, &m.base_url, &m.api_key_env, native_tools, &format!("llm.models.{name}"), &env)?
                .ok_or_else(|| LlmError::Config(format!("llm.models.{name}.provider is empty")))?;
        by_model.insert(name.clone(), client);
    }
    Ok(Some(Arc::new(ModelServers { default, by_model })))
}

/// One server's client: `None` for an empty provider (offline). `section`
/// names the config section in errors; `native_tools` is how it sends tools.
fn server(
    provider: &str,
    base_url: &str,
    api_key_env: &str,
    native_tools: NativeTools,
    section: &str,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Option<Arc<dyn LlmClient>>, LlmError> {
    let provider = provider.trim();
    if provider.is_empty() {
        return Ok(None);
    }
    let key = match api_key_env.trim() {
        "" => None,
        var => Some(env(var).and_then(ApiKey::new).ok_or_else(|| {
            LlmError::Config(format!("{section}.api_key_env names {var}, which is not set in the environment"))
        })?),
    };
    let base = base_url.trim();
    match provider {
        "ollama" => {
            let base = if base.is_empty() { ollama::DEFAULT_BASE_URL } else { base };
            Ok(Some(Arc::new(OllamaClient::new(base, key)?.with_native_tools(native_tools))))
        }
        "openai" => {
            if base.is_empty() {
                return Err(LlmError::Config(format!("{section}.base_url is required for provider \"openai\"")));
            }
            Ok(Some(Arc::new(OpenAiClient::new(base, key)?.with_native_tools(native_tools))))
        }
        other => Err(LlmError::Config(format!(
            "unknown {section}.provider {other:?} (expected \"ollama\", \"openai\" or empty for offline mode)"
        ))),
    }
}

/// The clients of several servers behind one: each request goes to the
/// server of its model (`[llm.models.NAME]`), any other model to the
/// `[llm]` server.
struct ModelServers {
    default: Option<Arc<dyn LlmClient>>,
    by_model: std::collections::HashMap<String, Arc<dyn LlmClient>>,
}

impl LlmClient for ModelServers {
    fn provider(&self) -> &str {
        self.default.as_ref().map_or("mixed", |c| c.provider())
    }

    fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        match self.by_model.get(&req.model).or(self.default.as_ref()) {
            Some(client) => client.chat(req),
            None => Err(LlmError::Config(format!(
                "model {:?} has no server: [llm] has no provider and there is no [llm.models.{:?}]",
                req.model, req.model
            ))),
        }
    }
}
