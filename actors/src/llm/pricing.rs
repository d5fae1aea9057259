//! What a call cost: a versioned price table from `[llm]`, in exact
//! `Decimal` arithmetic (money never passes through a float).
//!
//! An unlisted model costs 0. Whether that 0 is true shows in
//! [`PriceTable::version_for`]: `local` for a local provider (Ollama: free),
//! `unpriced` for a paid provider's unlisted model, so reports can tell a
//! free call from an unknown price.

use std::collections::BTreeMap;

use crate::llm::LlmSection;
use rust_decimal::Decimal;

/// Providers that run on this machine: their calls cost nothing.
const LOCAL_PROVIDERS: &[&str] = &["ollama"];

/// One model's price, USD per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelPrice {
    /// Per million prompt tokens.
    pub input_per_mtok: Decimal,
    /// Per million completion tokens.
    pub output_per_mtok: Decimal,
}

/// The prices of one provider's models under one version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PriceTable {
    /// The provider (`ollama`, `openai`): the prefix of canonical model
    /// names, and whether unlisted models are free.
    pub provider: String,
    /// The version recorded with each cost.
    pub version: String,
    /// Model name (as the server knows it) → price.
    pub prices: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// The table `[llm]` describes.
    pub fn from_config(section: &LlmSection) -> PriceTable {
        PriceTable {
            provider: section.provider.trim().to_owned(),
            version: section.pricing_version.clone(),
            prices: section
                .prices
                .iter()
                .map(|(model, p)| {
                    (model.clone(), ModelPrice { input_per_mtok: p.input_per_mtok, output_per_mtok: p.output_per_mtok })
                })
                .collect(),
        }
    }

    /// The cost of a call, exact; 0 for an unlisted model. Saturates at
    /// `Decimal::MAX` instead of panicking on an absurd price.
    pub fn cost(&self, model: &str, input_tokens: u32, output_tokens: u32) -> Decimal {
        let Some(p) = self.prices.get(model) else { return Decimal::ZERO };
        let part = |tokens: u32, per_mtok: Decimal| {
            Decimal::from(tokens).checked_mul(per_mtok).map(|d| d / Decimal::from(1_000_000u32))
        };
        part(input_tokens, p.input_per_mtok)
            .zip(part(output_tokens, p.output_per_mtok))
            .and_then(|(i, o)| i.checked_add(o))
            .unwrap_or(Decimal::MAX)
            .normalize()
    }

    /// The pricing version to record with `model`'s cost: the table's
    /// version when the model is listed, `local` for an unlisted model of a
    /// local provider, `unpriced` otherwise.
    pub fn version_for(&self, model: &str) -> String {
        if self.prices.contains_key(model) {
            self.version.clone()
        } else if LOCAL_PROVIDERS.contains(&self.provider.as_str()) {
            "local".into()
        } else {
            "unpriced".into()
        }
    }

    /// The canonical `provider:model` name events record.
    pub fn canonical_model(&self, model: &str) -> String {
        match self.provider.as_str() {
            "" => model.to_owned(),
            p => format!("{p}:{model}"),
        }
    }
}
