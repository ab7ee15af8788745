//! Sentence embeddings from a local model directory, for `search_tools`.
//!
//! [`Embedder::load`] reads a sentence-transformers directory (all-MiniLM-L6-v2 class: a
//! BERT encoder in `model.safetensors`, its `config.json`, a `tokenizer.json`, and the
//! optional `1_Pooling/config.json` and `sentence_bert_config.json`) and runs it on the CPU
//! with candle, in pure Rust. Nothing is ever downloaded: a directory that lacks a file or
//! holds the wrong kind of model is an [`EmbedError`] naming the path and what to do.
//!
//! [`Embedder::embed`] turns texts into unit-length vectors (mean- or CLS-pooled, then
//! L2-normalised, as sentence-transformers does), so the dot product of two of them is their
//! cosine similarity.
//!
//! Why a crate of its own: candle, gemm and tokenizers are most of a megabyte of code and
//! minutes of build; only the gateway's search needs them, so the proxy does not link them.

mod bert;
mod error;
mod few_tokens;
mod model_dir;

use few_tokens::Products;

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use tokenizers::Tokenizer;

use bert::{Bert, BertConfig};
pub use error::EmbedError;
pub use model_dir::Pooling;

/// The most tokens of a text the model reads: all-MiniLM-L6-v2 was trained on 128-token
/// inputs, a tool's name and description come first, and the cost grows with the length
/// (5,000 tools must embed within a minute on two cores).
const MAX_TOKENS: usize = 128;

/// Texts embedded in one forward pass: large enough to keep the matrix products busy,
/// small enough that the padding of a batch sorted by length stays small.
const BATCH: usize = 32;

/// Vectors by the position of their text.
type Embedded = Vec<(usize, Vec<f32>)>;

/// A loaded sentence-embedding model.
pub struct Embedder {
    model: Bert,
    tokenizer: Tokenizer,
    pooling: Pooling,
    /// Longest input in tokens (longer texts are cut, as sentence-transformers does).
    max_tokens: usize,
    dimension: usize,
    device: Device,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("dimension", &self.dimension).field("max_tokens", &self.max_tokens).finish()
    }
}

/// Checks that `dir` holds a model [`Embedder::load`] can run, reading only its small
/// files: fast enough for start-up, which must not wait for the weights.
pub fn check(dir: &Path) -> Result<(), EmbedError> {
    model_dir::ModelFiles::read(dir).map(drop)
}

impl Embedder {
    /// Loads the model in `dir`; every failure names the file at fault.
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        let files = model_dir::ModelFiles::read(dir)?;
        let device = Device::Cpu;
        let tensors = candle_core::safetensors::load(&files.weights, &device).map_err(|error| EmbedError::Invalid {
            path: files.weights.clone(),
            what: format!("not a readable safetensors file: {error}"),
        })?;
        let config: BertConfig = files.config;
        let model = Bert::new(&config, tensors, &device).map_err(|error| EmbedError::Invalid {
            path: files.weights.clone(),
            what: format!("not the weights of a BERT encoder matching config.json: {error}"),
        })?;
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer).map_err(|error| EmbedError::Invalid {
            path: files.tokenizer.clone(),
            what: format!("not a tokenizers JSON file: {error}"),
        })?;
        // Padding is ours (to the longest text of a batch); truncation is set below.
        tokenizer.with_padding(None);
        let max_tokens = files.max_tokens.min(config.max_position_embeddings).min(MAX_TOKENS);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams { max_length: max_tokens, ..Default::default() }))
            .map_err(|error| EmbedError::Tokenize(error.to_string()))?;
        Ok(Embedder { model, tokenizer, pooling: files.pooling, max_tokens, dimension: config.hidden_size, device })
    }

    /// The length of every vector [`Embedder::embed`] returns.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The unit-length embedding of a search query. A query has a few tokens, and takes
    /// a path made for that, from the weights in 8 bits (`few_tokens`): half the time
    /// of [`Embedder::embed`], whose vector for the same text it matches to within a
    /// cosine of 0.999 (0.9996 or closer on the queries tested).
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let encoding = self.tokenizer.encode(text, true).map_err(|error| EmbedError::Tokenize(error.to_string()))?;
        let mut vectors = self.embed_batch(&[encoding.get_ids()], Products::FewTokens)?;
        Ok(vectors.pop().unwrap_or_default())
    }

    /// Unit-length embeddings of `texts`, in order (a text gets the same vector in any
    /// batch).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|error| EmbedError::Tokenize(error.to_string()))?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let batches: Vec<&[usize]> = order.chunks(BATCH).collect();
        // One forward pass per core at a time: candle's matrix products on a batch of
        // short texts keep little more than one core busy.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(batches.len()).max(1);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done: Vec<Result<Embedded, EmbedError>> = std::thread::scope(|scope| {
            let work = || {
                let mut out = Vec::new();
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(batch) = batches.get(n) else { return Ok(out) };
                    let ids: Vec<&[u32]> = batch.iter().map(|&i| encodings[i].get_ids()).collect();
                    out.extend(batch.iter().copied().zip(self.embed_batch(&ids, Products::Batched)?));
                }
            };
            let handles: Vec<_> = (1..workers).map(|_| scope.spawn(work)).collect();
            let mut done = vec![work()];
            done.extend(handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))));
            done
        });
        let mut vectors = vec![Vec::new(); texts.len()];
        for part in done {
            for (i, vector) in part? {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    /// One forward pass over token ids, padded to the longest.
    fn embed_batch(&self, ids: &[&[u32]], products: Products) -> Result<Vec<Vec<f32>>, EmbedError> {
        let longest = ids.iter().map(|t| t.len()).max().unwrap_or(0).clamp(1, self.max_tokens);
        let mut flat_ids = Vec::with_capacity(ids.len() * longest);
        let mut flat_mask = Vec::with_capacity(ids.len() * longest);
        for tokens in ids {
            let kept = &tokens[..tokens.len().min(longest)];
            flat_ids.extend_from_slice(kept);
            flat_mask.extend(std::iter::repeat_n(1f32, kept.len()));
            flat_ids.extend(std::iter::repeat_n(0u32, longest - kept.len()));
            flat_mask.extend(std::iter::repeat_n(0f32, longest - kept.len()));
        }
        let shape = (ids.len(), longest);
        let input = Tensor::from_vec(flat_ids, shape, &self.device)?;
        let mask = Tensor::from_vec(flat_mask, shape, &self.device)?;
        let hidden = self.model.forward(&input, &mask, products)?;
        let pooled = match self.pooling {
            Pooling::Mean => {
                let summed = hidden.broadcast_mul(&mask.unsqueeze(2)?)?.sum(1)?;
                let counts = mask.sum_keepdim(1)?.clamp(1e-9, f64::MAX)?;
                summed.broadcast_div(&counts)?
            }
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
        };
        let norms = pooled.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        let unit = pooled.broadcast_div(&norms)?.to_dtype(DType::F32)?;
        Ok(unit.to_vec2()?)
    }
}

/// Gives the memory an embedding pass freed back to the system. A pass allocates tens
/// of MiB of activations on its worker threads, and glibc keeps what each thread's arena
/// freed for that thread's next allocation: measured on 5,000 tools, the gateway stayed
/// at 367 MiB after the pass instead of 186. Elsewhere (musl, other systems) nothing is
/// kept that way, and this does nothing.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks glibc's own heaps; it takes no pointer of ours.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Caps glibc's malloc arenas at two for the rest of the process, to be called at start
/// when a model will run. Each thread that allocates may otherwise get an arena of its
/// own (up to 8 per core), and an embedding pass leaves tens of MiB free in each: with
/// 5,000 tools the gateway's RSS after the pass was 276 MiB (freed memory given back)
/// and 185 MiB with two arenas, whose pass was also faster (57 s against 84 s, fewer
/// pages faulted in). Does nothing outside glibc.
pub fn few_allocator_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets one of glibc's allocator parameters; it takes no pointer.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// The dot product of two vectors; for [`Embedder::embed`]'s unit vectors, their cosine.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
