//! A BERT encoder (the architecture of all-MiniLM-L6-v2 and most sentence-transformers),
//! written over candle-nn's layers rather than taken from candle-transformers: the few
//! lines below are all a sentence encoder needs, and candle-transformers would build a
//! hundred other models with them.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, VarBuilder};

use crate::few_tokens::{Dense, FEW_TOKENS, Norm, Products};
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
    embeddings_norm_few: Norm,
    layers: Vec<Layer>,
    heads: usize,
}

struct Layer {
    query: Dense,
    key: Dense,
    value: Dense,
    attention_out: Dense,
    attention_norm: LayerNorm,
    intermediate: Dense,
    output: Dense,
    output_norm: LayerNorm,
    /// The two norms again, for a query's few tokens.
    few_norms: [Norm; 2],
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
        let embeddings_norm = candle_nn::layer_norm(hidden, eps, embeddings.pp("LayerNorm"))?;
        Ok(Bert {
            words: candle_nn::embedding(config.vocab_size, hidden, embeddings.pp("word_embeddings"))?,
            positions: candle_nn::embedding(
                config.max_position_embeddings,
                hidden,
                embeddings.pp("position_embeddings"),
            )?,
            token_types: candle_nn::embedding(config.type_vocab_size, hidden, embeddings.pp("token_type_embeddings"))?,
            embeddings_norm_few: Norm::new(&embeddings_norm, eps)?,
            embeddings_norm,
            layers,
            heads: config.num_attention_heads,
        })
    }

    /// Token vectors `(batch, tokens, hidden)` for `ids` `(batch, tokens)`; `mask` is 1.0
    /// for a real token and 0.0 for padding.
    pub(crate) fn forward(&self, ids: &Tensor, mask: &Tensor, products: Products) -> Result<Tensor> {
        let (_, tokens) = ids.dims2()?;
        let positions = Tensor::arange(0u32, tokens as u32, ids.device())?.unsqueeze(0)?;
        let types = ids.zeros_like()?;
        let embedded = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&positions)?)?
            .add(&self.token_types.forward(&types)?)?;
        let (batch, _) = ids.dims2()?;
        if products == Products::FewTokens && batch == 1 && tokens <= FEW_TOKENS {
            let mut hidden = embedded.flatten_all()?.to_vec1::<f32>()?;
            self.embeddings_norm_few.apply(&mut hidden);
            for layer in &self.layers {
                hidden = layer.forward_few(&hidden, tokens, self.heads);
            }
            return Tensor::from_vec(hidden, embedded.shape(), ids.device());
        }
        let mut hidden = self.embeddings_norm.forward(&embedded)?;
        // Padding gets a large negative score before the softmax: (batch, 1, 1, tokens).
        let bias = ((mask.ones_like()? - mask)? * -10_000.0)?.unsqueeze(1)?.unsqueeze(1)?;
        for layer in &self.layers {
            hidden = layer.forward(&hidden, &bias, self.heads, products)?;
        }
        Ok(hidden)
    }
}

impl Layer {
    fn new(config: &BertConfig, vb: VarBuilder<'_>) -> Result<Layer> {
        let (hidden, inner, eps) = (config.hidden_size, config.intermediate_size, config.layer_norm_eps);
        let attention = vb.pp("attention");
        let dense =
            |inputs: usize, outputs: usize, vb: VarBuilder<'_>| Dense::new(candle_nn::linear(inputs, outputs, vb)?);
        let attention_norm = candle_nn::layer_norm(hidden, eps, attention.pp("output.LayerNorm"))?;
        let output_norm = candle_nn::layer_norm(hidden, eps, vb.pp("output.LayerNorm"))?;
        let few_norms = [Norm::new(&attention_norm, eps)?, Norm::new(&output_norm, eps)?];
        Ok(Layer {
            query: dense(hidden, hidden, attention.pp("self.query"))?,
            key: dense(hidden, hidden, attention.pp("self.key"))?,
            value: dense(hidden, hidden, attention.pp("self.value"))?,
            attention_out: dense(hidden, hidden, attention.pp("output.dense"))?,
            attention_norm,
            intermediate: dense(hidden, inner, vb.pp("intermediate.dense"))?,
            output: dense(inner, hidden, vb.pp("output.dense"))?,
            output_norm,
            few_norms,
        })
    }

    fn forward(&self, input: &Tensor, bias: &Tensor, heads: usize, products: Products) -> Result<Tensor> {
        let (batch, tokens, hidden) = input.dims3()?;
        let head_size = hidden / heads;
        let split = |t: Tensor| t.reshape((batch, tokens, heads, head_size))?.transpose(1, 2)?.contiguous();
        let query = split(self.query.forward(input, products)?)?;
        let key = split(self.key.forward(input, products)?)?;
        let value = split(self.value.forward(input, products)?)?;
        let scores = (query.matmul(&key.t()?)? / (head_size as f64).sqrt())?.broadcast_add(bias)?;
        let weights = candle_nn::ops::softmax_last_dim(&scores)?;
        let context = weights.matmul(&value)?.transpose(1, 2)?.reshape((batch, tokens, hidden))?;
        let attended = self.attention_norm.forward(&(self.attention_out.forward(&context, products)? + input)?)?;
        let inner = self.intermediate.forward(&attended, products)?.gelu_erf()?;
        self.output_norm.forward(&(self.output.forward(&inner, products)? + &attended)?)
    }

    /// The same for one text of a few tokens (a query, no padding), on plain vectors:
    /// the products, the attention, the norms and the activation of `few_tokens`.
    fn forward_few(&self, x: &[f32], tokens: usize, heads: usize) -> Vec<f32> {
        let (query, key, value) = (self.query.few(x, tokens), self.key.few(x, tokens), self.value.few(x, tokens));
        let context = crate::few_tokens::attention(&query, &key, &value, tokens, heads);
        let mut attended = self.attention_out.few(&context, tokens);
        attended.iter_mut().zip(x).for_each(|(sum, x)| *sum += x);
        self.few_norms[0].apply(&mut attended);
        let mut inner = self.intermediate.few(&attended, tokens);
        crate::few_tokens::gelu(&mut inner);
        let mut out = self.output.few(&inner, tokens);
        out.iter_mut().zip(&attended).for_each(|(sum, a)| *sum += a);
        self.few_norms[1].apply(&mut out);
        out
    }
}
