//! What a sentence-transformers directory must hold, checked before anything is loaded.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::bert::BertConfig;
use crate::error::EmbedError;

/// How token vectors become one sentence vector (`1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the token vectors (all-MiniLM-L6-v2 and most sentence-transformers).
    Mean,
    /// The first (`[CLS]`) token's vector.
    Cls,
}

/// The checked files of a model directory.
pub(crate) struct ModelFiles {
    pub(crate) config: BertConfig,
    pub(crate) weights: PathBuf,
    pub(crate) tokenizer: PathBuf,
    pub(crate) pooling: Pooling,
    pub(crate) max_tokens: usize,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
}

#[derive(Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

/// sentence-transformers' default when `sentence_bert_config.json` does not say.
const DEFAULT_MAX_TOKENS: usize = 256;

impl ModelFiles {
    pub(crate) fn read(dir: &Path) -> Result<ModelFiles, EmbedError> {
        if !dir.is_dir() {
            return Err(EmbedError::Missing { path: dir.to_owned(), what: "not a directory".to_owned() });
        }
        let required = |name: &str| {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                Err(EmbedError::Missing { path, what: format!("{name} is missing") })
            }
        };
        let config_path = required("config.json")?;
        let weights = required("model.safetensors")?;
        let tokenizer = required("tokenizer.json")?;
        let config: BertConfig = read_json(&config_path)?;
        config.check(&config_path)?;
        let pooling = match read_optional::<PoolingConfig>(&dir.join("1_Pooling/config.json"))? {
            Some(PoolingConfig { pooling_mode_cls_token: true, pooling_mode_mean_tokens: false }) => Pooling::Cls,
            _ => Pooling::Mean,
        };
        let max_tokens = read_optional::<SentenceConfig>(&dir.join("sentence_bert_config.json"))?
            .and_then(|c| c.max_seq_length)
            .unwrap_or(DEFAULT_MAX_TOKENS)
            .max(1);
        Ok(ModelFiles { config, weights, tokenizer, pooling, max_tokens })
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, EmbedError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| EmbedError::Missing { path: path.to_owned(), what: format!("unreadable: {error}") })?;
    serde_json::from_str(&text)
        .map_err(|error| EmbedError::Invalid { path: path.to_owned(), what: format!("not the expected JSON: {error}") })
}

fn read_optional<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, EmbedError> {
    if path.exists() { read_json(path).map(Some) } else { Ok(None) }
}
