//! What can go wrong loading a model or embedding a text. A leaf.

use std::path::PathBuf;

/// Why a model directory could not be loaded or a text not embedded.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The directory, or a file the model needs, is missing or unreadable.
    #[error(
        "embedding model {}: {what}: point --embeddings (or \"search\": {{\"embeddings\": ...}}) at a \
         sentence-transformers directory with config.json, tokenizer.json and model.safetensors",
        path.display()
    )]
    Missing {
        /// The path that is missing or unreadable.
        path: PathBuf,
        /// What was wrong with it.
        what: String,
    },
    /// A file is there but is not what a BERT sentence-transformer ships.
    #[error("embedding model {}: {what}", path.display())]
    Invalid {
        /// The file at fault.
        path: PathBuf,
        /// What it should have held.
        what: String,
    },
    /// The model failed while embedding (a tensor shape or arithmetic error).
    #[error("embedding failed: {0}")]
    Inference(#[from] candle_core::Error),
    /// The tokenizer failed on a text.
    #[error("tokenizing failed: {0}")]
    Tokenize(String),
}
