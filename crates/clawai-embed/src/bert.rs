//! A BERT encoder (the architecture of all-MiniLM-L6-v2 and most sentence-transformers),
//! written over candle-nn's layers rather than taken from candle-transformers: the few
//! lines below are all a sentence encoder needs, and candle-transformers would build a
//! hundred other models with them.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

use crate::error::EmbedError;

/// The parts of a Hugging Face `config.json` a BERT encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct BertConfig {
    #[serde(default)]
    model_type: Option<String>,
    vocab_size: usize,
    pub(crate) hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    pub(crate) max_position_embeddings: usize,
    #[serde(default = "two")]
    type_vocab_size: usize,
    #[serde(default = "bert_eps")]
    layer_norm_eps: f64,
    #[serde(default = "gelu")]
    hidden_act: String,
}

fn two() -> usize {
    2
}
fn bert_eps() -> f64 {
    1e-12
}
fn gelu() -> String {
    "gelu".to_owned()
}

impl BertConfig {
    /// Refuses a model this encoder would run wrongly rather than fail on.
    pub(crate) fn check(&self, path: &Path) -> std::result::Result<(), EmbedError> {
        let invalid = |what: String| Err(EmbedError::Invalid { path: path.to_owned(), what });
        if let Some(kind) = &self.model_type
            && kind != "bert"
        {
            return invalid(format!("model_type is {kind:?}; only BERT sentence-transformers are supported"));
        }
        if self.hidden_act != "gelu" {
            return invalid(format!("hidden_act is {:?}; only \"gelu\" is supported", self.hidden_act));
        }
        if self.num_attention_heads == 0 || !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return invalid("hidden_size is not a multiple of num_attention_heads".to_owned());
        }
        Ok(())
    }
}

/// The encoder: embeddings, then `num_hidden_layers` transformer layers.
pub(crate) struct Bert {
    words: Embedding,
    positions: Embedding,
    token_types: Embedding,
    embeddings_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

impl Bert {
    /// Builds the encoder from the tensors of `model.safetensors`; names may carry a
    /// `bert.` prefix (as `BertModel` checkpoints saved from a task head do).
    pub(crate) fn new(config: &BertConfig, tensors: HashMap<String, Tensor>, device: &Device) -> Result<Bert> {
        let prefixed = tensors.keys().any(|k| k.starts_with("bert."));
        let root = VarBuilder::from_tensors(tensors, DType::F32, device);
        let root = if prefixed { root.pp("bert") } else { root };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps;
        let embeddings = root.pp("embeddings");
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::new(config, root.pp(format!("encoder.layer.{i}"))))
            .collect::<Result<_>>()?;
        Ok(Bert {
            words: candle_nn::embedding(config.vocab_size, hidden, embeddings.pp("word_embeddings"))?,
            positions: candle_nn::embedding(
                config.max_position_embeddings,
                hidden,
                embeddings.pp("position_embeddings"),
            )?,
            token_types: candle_nn::embedding(config.type_vocab_size, hidden, embeddings.pp("token_type_embeddings"))?,
            embeddings_norm: candle_nn::layer_norm(hidden, eps, embeddings.pp("LayerNorm"))?,
            layers,
            heads: config.num_attention_heads,
        })
    }

    /// Token vectors `(batch, tokens, hidden)` for `ids` `(batch, tokens)`; `mask` is 1.0
    /// for a real token and 0.0 for padding.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (_, tokens) = ids.dims2()?;
        let positions = Tensor::arange(0u32, tokens as u32, ids.device())?.unsqueeze(0)?;
        let types = ids.zeros_like()?;
        let embedded = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&positions)?)?
            .add(&self.token_types.forward(&types)?)?;
        let mut hidden = self.embeddings_norm.forward(&embedded)?;
        // Padding gets a large negative score before the softmax: (batch, 1, 1, tokens).
        let bias = ((mask.ones_like()? - mask)? * -10_000.0)?.unsqueeze(1)?.unsqueeze(1)?;
        for layer in &self.layers {
            hidden = layer.forward(&hidden, &bias, self.heads)?;
        }
        Ok(hidden)
    }
}

impl Layer {
    fn new(config: &BertConfig, vb: VarBuilder<'_>) -> Result<Layer> {
        let (hidden, inner, eps) = (config.hidden_size, config.intermediate_size, config.layer_norm_eps);
        let attention = vb.pp("attention");
        Ok(Layer {
            query: candle_nn::linear(hidden, hidden, attention.pp("self.query"))?,
            key: candle_nn::linear(hidden, hidden, attention.pp("self.key"))?,
            value: candle_nn::linear(hidden, hidden, attention.pp("self.value"))?,
            attention_out: candle_nn::linear(hidden, hidden, attention.pp("output.dense"))?,
            attention_norm: candle_nn::layer_norm(hidden, eps, attention.pp("output.LayerNorm"))?,
            intermediate: candle_nn::linear(hidden, inner, vb.pp("intermediate.dense"))?,
            output: candle_nn::linear(inner, hidden, vb.pp("output.dense"))?,
            output_norm: candle_nn::layer_norm(hidden, eps, vb.pp("output.LayerNorm"))?,
        })
    }

    fn forward(&self, input: &Tensor, bias: &Tensor, heads: usize) -> Result<Tensor> {
        let (batch, tokens, hidden) = input.dims3()?;
        let head_size = hidden / heads;
        let split = |t: Tensor| t.reshape((batch, tokens, heads, head_size))?.transpose(1, 2)?.contiguous();
        let query = split(self.query.forward(input)?)?;
        let key = split(self.key.forward(input)?)?;
        let value = split(self.value.forward(input)?)?;
        let scores = (query.matmul(&key.t()?)? / (head_size as f64).sqrt())?.broadcast_add(bias)?;
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = weights.matmul(&value)?.transpose(1, 2)?.reshape((batch, tokens, hidden))?;
        let attended = self.attention_norm.forward(&(self.attention_out.forward(&context)? + input)?)?;
        let inner = self.intermediate.forward(&attended)?.gelu_erf()?;
        self.output_norm.forward(&(self.output.forward(&inner)? + &attended)?)
    }
}
