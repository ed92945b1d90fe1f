//! Recipes: named engine configurations under `_vance/recipes/<name>.yaml` (reference §1).

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Token prices of a recipe's model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Prices {
    /// Price of a million prompt (input) tokens.
    #[serde(default)]
    pub input_per_m_tok_usd: f64,
    /// Price of a million completion (output) tokens.
    #[serde(default)]
    pub output_per_m_tok_usd: f64,
}

impl Prices {
    /// What `prompt` input and `completion` output tokens cost.
    pub fn cost_usd(&self, prompt: u64, completion: u64) -> f64 {
        (prompt as f64 * self.input_per_m_tok_usd + completion as f64 * self.output_per_m_tok_usd)
            / 1_000_000.0
    }
}

/// A named engine configuration, read from `_vance/recipes/<name>.yaml` by the cascade.
///
/// The fields the built-in engines understand are typed; anything else stays in
/// [`Recipe::extra`] for host engines (the built-in engines reject unknown fields, so a typo
/// such as `apikeyEnv` is an error rather than an unauthenticated call).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Recipe {
    /// The engine that runs the recipe: `jeltz`, `chat`, or a host engine's name.
    pub engine: String,
    /// The wire protocol of the built-in engines; only `openai` (chat completions).
    #[serde(default)]
    pub provider: Option<String>,
    /// The endpoint's base URL, e.g. `https://api.openai.com/v1`; the built-in engines POST
    /// to `{baseUrl}/chat/completions`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The model.
    #[serde(default)]
    pub model: Option<String>,
    /// The environment variable the API key is read from at call time. The key itself is never
    /// part of a recipe, a task input or the journal.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Upper bound on completion tokens (`max_tokens`).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The attempt's time limit when the state declares no `timeoutSeconds`.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    /// Token prices; with them each reply's usage is priced into `costUsd`.
    #[serde(default)]
    pub prices: Option<Prices>,
    /// The system message.
    #[serde(default)]
    pub system: Option<String>,
    /// Whether to send `response_format: {type: json_object}` (Jeltz only; default `true`).
    #[serde(default)]
    pub json_mode: Option<bool>,
    /// The registered tools offered to the model (built-in engines: the OpenAI `tools`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// The reference's spelling for tools a recipe adds to its pool (`allowedToolsAdd:
    /// [workflow_start]`): offered as `tools:` are, after them. The tool permission cascade
    /// applies to both.
    #[serde(default)]
    pub allowed_tools_add: Vec<String>,
    /// How many rounds of tool calls the model may make (default 8); one more is a
    /// `technical_error`.
    #[serde(default)]
    pub max_tool_rounds: Option<u32>,
    /// Engine-specific fields the built-in engines do not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Recipe {
    /// Parses a recipe document; `label` (its path) goes into the error message.
    pub fn parse(label: &str, text: &str) -> Result<Self, String> {
        let value: Value = crate::yaml_text::from_str(text)
            .map_err(|e| format!("[MAG-AG002] invalid recipe {label}: {e}"))?;
        if !value.is_object() {
            return Err(format!(
                "[MAG-AG002] invalid recipe {label}: expected a mapping with at least `engine:`"
            ));
        }
        let mut recipe: Recipe = serde_json::from_value(value)
            .map_err(|e| format!("[MAG-AG002] invalid recipe {label}: {e}"))?;
        for tool in std::mem::take(&mut recipe.allowed_tools_add) {
            if !recipe.tools.contains(&tool) {
                recipe.tools.push(tool);
            }
        }
        if recipe.engine.trim().is_empty() {
            return Err(format!(
                "[MAG-AG002] invalid recipe {label}: `engine:` is empty"
            ));
        }
        if let Some(t) = recipe.timeout_seconds
            && !(t.is_finite() && t > 0.0)
        {
            return Err(format!(
                "[MAG-AG002] invalid recipe {label}: `timeoutSeconds` must be a positive number"
            ));
        }
        Ok(recipe)
    }

    /// [`Recipe::timeout_seconds`] as a duration.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_seconds.map(crate::saturating_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_recipe_parses_and_keeps_unknown_fields_aside() {
        let r = Recipe::parse(
            "r.yaml",
            "engine: jeltz\nprovider: openai\nbaseUrl: http://x/v1\nmodel: m\napiKeyEnv: K\n\
             temperature: 0\ntimeoutSeconds: 60\nprices: { inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 }\n\
             system: hi\nflavour: spicy\n",
        )
        .unwrap();
        assert_eq!(r.engine, "jeltz");
        assert_eq!(r.api_key_env.as_deref(), Some("K"));
        assert_eq!(r.timeout(), Some(Duration::from_secs(60)));
        let p = r.prices.unwrap();
        assert!((p.cost_usd(1_000_000, 1_000_000) - 0.75).abs() < 1e-12);
        assert_eq!(r.extra.get("flavour"), Some(&Value::from("spicy")));
    }

    /// The reference's `allowedToolsAdd` adds tools to those the recipe offers, once each.
    #[test]
    fn allowed_tools_add_offers_its_tools_after_the_recipes_own() {
        let r = Recipe::parse(
            "r.yaml",
            "engine: chat\ntools: [doc_read]\nallowedToolsAdd: [workflow_start, doc_read]\n",
        )
        .unwrap();
        assert_eq!(r.tools, ["doc_read", "workflow_start"]);
        assert!(r.extra.is_empty(), "{:?}", r.extra);
    }

    #[test]
    fn a_recipe_without_engine_or_with_bad_types_is_rejected() {
        for bad in [
            "model: m\n",
            "engine: [a]\n",
            "- a\n",
            "engine: j\ntimeoutSeconds: -1\n",
        ] {
            let err = Recipe::parse("r.yaml", bad).unwrap_err();
            assert!(
                err.contains("[MAG-AG002]") && err.contains("r.yaml"),
                "{bad}: {err}"
            );
        }
    }
}
