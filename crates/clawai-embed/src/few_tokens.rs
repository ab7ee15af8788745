//! A query's pass through the encoder: its few tokens through products that skip the
//! general product's packing, from weights kept in 8 bits, with the attention, norms and
//! activation written out on plain vectors.
//!
//! Why, measured on a query of 9 tokens (all-MiniLM-L6-v2, this machine, `cargo run
//! --release -p clawai-embed --example query_cost`):
//! - candle's product (gemm) copies the whole weight matrix into its own layout on every
//!   call, so that a large batch runs at full speed; for a handful of tokens that copy
//!   was most of the cost (perf: 57 % of a query in gemm's packing, 9 % in its kernels).
//!   Here each block of four weight rows is read once and multiplied with every token.
//! - Read in place, the f32 weights (42 MB) came from memory on every query and bounded
//!   it; bfloat16 (21 MB) still did. In 8 bits with a scale for every 32 weights (the
//!   layout of llama.cpp's Q8_0) they take 12 MB and stay in cache between queries. One
//!   scale a row was faster still but moved a one-word query's vector to a cosine of
//!   0.9985 from the f32 one; with a scale per 32 the tested queries stay above 0.9996.
//! - The attention's products and the norms went to rayon's thread pool (gemm's and
//!   candle-nn's), whose hand-offs were a fifth of a query's time for so little work.
//!
//! Kernels are chosen at run time: AVX-512 (four rows, three tokens, 29 of its 32
//! registers), AVX2 with FMA (four rows, two tokens), or a plain loop. The catalog's
//! texts, embedded in batches, keep candle's f32 path, so a text gets the same vector in
//! any batch.

use candle_core::{Result, Tensor};
use candle_nn::{Linear, Module};

/// At most this many tokens take this product; more go to gemm, which the copy pays for.
pub(crate) const FEW_TOKENS: usize = 64;

/// Which product a pass takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Products {
    /// candle's, in f32: the catalog's texts, embedded in batches. A text gets the same
    /// vector in any batch.
    Batched,
    /// This module's, from 8-bit weights, when the pass is one text of few tokens: a query.
    FewTokens,
}

/// A linear layer that takes this product for a query's few tokens and candle's
/// otherwise.
pub(crate) struct Dense {
    linear: Linear,
    /// The number of outputs and of inputs.
    shape: (usize, usize),
    /// The weights `(n, k)`, row-major, each row in 8-bit steps of its own scale.
    rows: Quantized,
    bias: Option<Vec<f32>>,
}

impl Dense {
    pub(crate) fn new(linear: Linear) -> Result<Dense> {
        let bias = linear.bias().map(Tensor::to_vec1::<f32>).transpose()?;
        let shape = linear.weight().dims2()?;
        let rows = Quantized::new(&linear.weight().flatten_all()?.to_vec1::<f32>()?, shape.1);
        Ok(Dense { linear, shape, rows, bias })
    }

    /// `x` `(tokens, k)` times the weights, plus the bias: `(tokens, n)`.
    pub(crate) fn few(&self, x: &[f32], tokens: usize) -> Vec<f32> {
        let (n, k) = self.shape;
        product(x, tokens, &self.rows, n, k, self.bias.as_deref())
    }

    /// `input` `(batch, tokens, k)` times the weights `(n, k)`, plus the bias.
    pub(crate) fn forward(&self, input: &Tensor, products: Products) -> Result<Tensor> {
        let (batch, tokens, k) = input.dims3()?;
        if products == Products::Batched || batch * tokens > FEW_TOKENS {
            return self.linear.forward(input);
        }
        debug_assert_eq!(k, self.shape.1);
        let x = input.flatten_all()?.to_vec1::<f32>()?;
        let out = self.few(&x, batch * tokens);
        Tensor::from_vec(out, (batch, tokens, self.shape.0), input.device())
    }
}

/// A layer norm for a few tokens, on plain vectors: candle's spreads its rows over
/// rayon's threads, and for a query's few rows the hand-off cost more than the work.
pub(crate) struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl Norm {
    pub(crate) fn new(norm: &candle_nn::LayerNorm, eps: f64) -> Result<Norm> {
        let gamma = norm.weight().to_vec1::<f32>()?;
        let beta = match norm.bias() {
            Some(bias) => bias.to_vec1::<f32>()?,
            None => vec![0.0; gamma.len()],
        };
        Ok(Norm { gamma, beta, eps: eps as f32 })
    }

    /// Normalizes each row of `rows` (rows of `gamma.len()` values) in place.
    pub(crate) fn apply(&self, rows: &mut [f32]) {
        let width = self.gamma.len();
        for row in rows.chunks_exact_mut(width) {
            let mean = row.iter().sum::<f32>() / width as f32;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
            let scale = 1.0 / (variance + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = (*v - mean) * scale * g + b;
            }
        }
    }
}

/// GELU (the erf form), as candle computes it.
pub(crate) fn gelu(values: &mut [f32]) {
    for v in values {
        *v = (candle_core::cpu::erf::erf_f32(*v * std::f32::consts::FRAC_1_SQRT_2) + 1.0) * 0.5 * *v;
    }
}

/// Self-attention over one text's `tokens` (no padding, so no mask): `q`, `k`, `v` are
/// `(tokens, hidden)`, split into `heads` heads; the context is `(tokens, hidden)`. A
/// query's few tokens make these products tiny: written out here, they cost less than
/// handing each to gemm's thread pool, which was a fifth of a query's time.
pub(crate) fn attention(q: &[f32], k: &[f32], v: &[f32], tokens: usize, heads: usize) -> Vec<f32> {
    let hidden = q.len() / tokens.max(1);
    let size = hidden / heads;
    let scale = 1.0 / (size as f32).sqrt();
    let mut context = vec![0.0f32; tokens * hidden];
    let mut weights = vec![0.0f32; tokens];
    let head_of = |token: usize, head: usize| token * hidden + head * size..token * hidden + (head + 1) * size;
    for head in 0..heads {
        for i in 0..tokens {
            let query = &q[head_of(i, head)];
            for (j, weight) in weights.iter_mut().enumerate() {
                *weight = query.iter().zip(&k[head_of(j, head)]).map(|(a, b)| a * b).sum::<f32>() * scale;
            }
            let top = weights.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            weights.iter_mut().for_each(|w| *w = (*w - top).exp());
            let total: f32 = weights.iter().sum();
            let out = head_of(i, head);
            for (j, weight) in weights.iter().enumerate() {
                let value = &v[head_of(j, head)];
                for (o, x) in context[out.clone()].iter_mut().zip(value) {
                    *o += weight / total * x;
                }
            }
        }
    }
    context
}

/// The weights a scale is shared by: 32, as llama.cpp's 8-bit format has it. One scale a
/// row lost too much for the shortest queries (a cosine of 0.9985 to the f32 vector for
/// a query of one word).
pub(crate) const GROUP: usize = 32;

/// A weight matrix in 8 bits: each group of [`GROUP`] weights of a row as whole steps of
/// its own scale (the group's largest magnitude divided by 127).
pub(crate) struct Quantized {
    steps: Vec<i8>,
    /// One per group, row after row (`k.div_ceil(GROUP)` a row).
    scales: Vec<f32>,
}

impl Quantized {
    /// `rows` of `k` values each.
    pub(crate) fn new(rows: &[f32], k: usize) -> Quantized {
        let mut steps = Vec::with_capacity(rows.len());
        let mut scales = Vec::with_capacity(rows.len() / GROUP + 1);
        for row in rows.chunks_exact(k) {
            for group in row.chunks(GROUP) {
                let largest = group.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
                steps.extend(group.iter().map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8));
                scales.push(scale);
            }
        }
        Quantized { steps, scales }
    }

    /// The weight at row `j`, column `i` of rows of `k`.
    fn weight(&self, j: usize, i: usize, k: usize) -> f32 {
        f32::from(self.steps[j * k + i]) * self.scales[j * k.div_ceil(GROUP) + i / GROUP]
    }
}

/// The ways this machine can run the product, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// Sixteen lanes and 32 registers (checked at run time).
    Avx512,
    /// Eight lanes and fused multiply-adds (checked at run time).
    Avx2,
    /// A plain loop: any machine, any shape.
    Portable,
}

/// The kernels this machine has, best first (the portable loop last).
fn kernels() -> Vec<Kernel> {
    let mut kernels = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            kernels.push(Kernel::Avx512);
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            kernels.push(Kernel::Avx2);
        }
    }
    kernels.push(Kernel::Portable);
    kernels
}

/// The best kernel, looked up once.
static BEST: std::sync::LazyLock<Kernel> = std::sync::LazyLock::new(|| kernels()[0]);

/// `x` `(m, k)` times `w` `(n, k)` transposed, plus `bias`: `(m, n)`, row-major.
pub(crate) fn product(x: &[f32], m: usize, w: &Quantized, n: usize, k: usize, bias: Option<&[f32]>) -> Vec<f32> {
    // SAFETY: BEST is one of `kernels()`, which this machine has.
    unsafe { product_with(*BEST, x, m, w, n, k, bias) }
}

/// The product with `kernel`.
///
/// # Safety
/// `kernel` is one of [`kernels`]: the machine has its instructions.
unsafe fn product_with(
    kernel: Kernel,
    x: &[f32],
    m: usize,
    w: &Quantized,
    n: usize,
    k: usize,
    bias: Option<&[f32]>,
) -> Vec<f32> {
    assert!(x.len() >= m * k && w.steps.len() >= n * k, "the product's operands have their shapes");
    let mut out = vec![0.0f32; m * n];
    let kernel = if k.is_multiple_of(GROUP) && n.is_multiple_of(4) { kernel } else { Kernel::Portable };
    match kernel {
        // SAFETY: the CPU has the kernel's features (the caller's promise), the shapes
        // are the kernel's (checked above), and the slices have the lengths the kernel
        // reads and writes (asserted above; `out` is m × n).
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { avx512::product(x, m, w, n, k, &mut out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { avx2::product(x, m, w, n, k, &mut out) },
        _ => {
            for (t, row) in out.chunks_exact_mut(n).enumerate() {
                let token = &x[t * k..(t + 1) * k];
                for (j, sum) in row.iter_mut().enumerate() {
                    *sum = token.iter().enumerate().map(|(i, a)| a * w.weight(j, i, k)).sum();
                }
            }
        }
    }
    if let Some(bias) = bias {
        for row in out.chunks_exact_mut(n) {
            row.iter_mut().zip(bias).for_each(|(sum, b)| *sum += b);
        }
    }
    out
}

/// Calls `block(j, t, count)` for every four weight rows `j..j + 4` and, for each, the
/// tokens `t..t + count`, at most `tokens` at a time: each block of rows meets every
/// token while it is in the first-level cache, so the weights are read from memory once
/// a product.
#[cfg(target_arch = "x86_64")]
fn in_blocks(m: usize, n: usize, tokens: usize, mut block: impl FnMut(usize, usize, usize)) {
    for j in (0..n).step_by(4) {
        let mut t = 0;
        while t < m {
            let count = (m - t).min(tokens);
            block(j, t, count);
            t += count;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{GROUP, Quantized};

    /// # Safety
    /// The CPU has AVX2 and FMA; `k` is a multiple of [`GROUP`] and `n` of 4; `x` holds
    /// `m × k`, `w` `n × k` and `out` `m × n` values.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn product(x: &[f32], m: usize, w: &Quantized, n: usize, k: usize, out: &mut [f32]) {
        debug_assert!(x.len() >= m * k && w.steps.len() >= n * k && out.len() >= m * n && k.is_multiple_of(GROUP));
        super::in_blocks(m, n, 2, |j, t, step| {
            // SAFETY: as the caller promised, for rows j..j + 4 and tokens t..t + step.
            unsafe {
                match step {
                    2 => block::<2>(x, t, w, j, n, k, out),
                    _ => block::<1>(x, t, w, j, n, k, out),
                }
            }
        });
    }

    /// Rows `j..j + 4` times tokens `t0..t0 + T`: eight sums (at most) in registers, beside
    /// the tokens, a row and its scale (three tokens spilled AVX2's sixteen registers).
    #[target_feature(enable = "avx2,fma")]
    unsafe fn block<const T: usize>(
        x: &[f32],
        t0: usize,
        w: &Quantized,
        j: usize,
        n: usize,
        k: usize,
        out: &mut [f32],
    ) {
        let (xs, ws, scales) = (x.as_ptr(), w.steps.as_ptr(), w.scales.as_ptr());
        let groups = k / GROUP;
        let mut sums = [[_mm256_setzero_ps(); T]; 4];
        let mut at = 0;
        while at < k {
            let mut tokens = [_mm256_setzero_ps(); T];
            let mut i = 0;
            while i < T {
                // SAFETY: token t0 + i < m and at + 8 <= k: within x.
                tokens[i] = unsafe { _mm256_loadu_ps(xs.add((t0 + i) * k + at)) };
                i += 1;
            }
            let mut r = 0;
            while r < 4 {
                // SAFETY: row j + r < n and at + 8 <= k: within w and its scales.
                // Eight steps become eight f32, times their group's scale.
                let (steps, scale) = unsafe {
                    (
                        _mm_loadl_epi64(ws.add((j + r) * k + at).cast()),
                        _mm256_broadcast_ss(&*scales.add((j + r) * groups + at / GROUP)),
                    )
                };
                let row = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(steps)), scale);
                let mut i = 0;
                while i < T {
                    sums[r][i] = _mm256_fmadd_ps(row, tokens[i], sums[r][i]);
                    i += 1;
                }
                r += 1;
            }
            at += 8;
        }
        let mut r = 0;
        while r < 4 {
            let mut i = 0;
            while i < T {
                out[(t0 + i) * n + j + r] = sum_of(sums[r][i]);
                i += 1;
            }
            r += 1;
        }
    }

    /// The sum of a register's eight values.
    #[target_feature(enable = "avx2,fma")]
    fn sum_of(v: __m256) -> f32 {
        let halves = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let pairs = _mm_add_ps(halves, _mm_movehl_ps(halves, halves));
        _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)))
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{GROUP, Quantized};

    /// # Safety
    /// The CPU has AVX-512F; `k` is a multiple of [`GROUP`] and `n` of 4; `x` holds
    /// `m × k`, `w` `n × k` and `out` `m × n` values.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn product(x: &[f32], m: usize, w: &Quantized, n: usize, k: usize, out: &mut [f32]) {
        debug_assert!(x.len() >= m * k && w.steps.len() >= n * k && out.len() >= m * n && k.is_multiple_of(GROUP));
        super::in_blocks(m, n, 3, |j, t, step| {
            // SAFETY: as the caller promised, for rows j..j + 4 and tokens t..t + step.
            unsafe {
                match step {
                    3 => block::<3>(x, t, w, j, n, k, out),
                    2 => block::<2>(x, t, w, j, n, k, out),
                    _ => block::<1>(x, t, w, j, n, k, out),
                }
            }
        });
    }

    /// Rows `j..j + 4` times tokens `t0..t0 + T`, a group of 32 weights at a time: the
    /// group's sums in registers, then scaled into the totals (29 of the 32 registers).
    #[target_feature(enable = "avx512f")]
    unsafe fn block<const T: usize>(
        x: &[f32],
        t0: usize,
        w: &Quantized,
        j: usize,
        n: usize,
        k: usize,
        out: &mut [f32],
    ) {
        let (xs, ws, scales) = (x.as_ptr(), w.steps.as_ptr(), w.scales.as_ptr());
        let groups = k / GROUP;
        let mut sums = [[_mm512_setzero_ps(); T]; 4];
        let mut group = 0;
        while group < groups {
            let mut in_group = [[_mm512_setzero_ps(); T]; 4];
            let mut half = 0;
            while half < GROUP / 16 {
                let at = group * GROUP + half * 16;
                let mut tokens = [_mm512_setzero_ps(); T];
                let mut i = 0;
                while i < T {
                    // SAFETY: token t0 + i < m and at + 16 <= k: within x.
                    tokens[i] = unsafe { _mm512_loadu_ps(xs.add((t0 + i) * k + at)) };
                    i += 1;
                }
                let mut r = 0;
                while r < 4 {
                    // SAFETY: row j + r < n and at + 16 <= k: within w.
                    let steps = unsafe { _mm_loadu_si128(ws.add((j + r) * k + at).cast()) };
                    let row = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(steps));
                    let mut i = 0;
                    while i < T {
                        in_group[r][i] = _mm512_fmadd_ps(row, tokens[i], in_group[r][i]);
                        i += 1;
                    }
                    r += 1;
                }
                half += 1;
            }
            let mut r = 0;
            while r < 4 {
                // SAFETY: row j + r < n, group < groups: within the scales.
                let scale = _mm512_set1_ps(unsafe { *scales.add((j + r) * groups + group) });
                let mut i = 0;
                while i < T {
                    sums[r][i] = _mm512_fmadd_ps(in_group[r][i], scale, sums[r][i]);
                    i += 1;
                }
                r += 1;
            }
            group += 1;
        }
        let mut r = 0;
        while r < 4 {
            let mut i = 0;
            while i < T {
                out[(t0 + i) * n + j + r] = _mm512_reduce_add_ps(sums[r][i]);
                i += 1;
            }
            r += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The product as written in the textbook, in f64, with the weights as 8 bits hold them.
    fn reference(x: &[f32], m: usize, w: &[f32], n: usize, k: usize, bias: &[f32]) -> Vec<f32> {
        let quantized = Quantized::new(w, k);
        let w: Vec<f32> = (0..n * k).map(|at| quantized.weight(at / k, at % k, k)).collect();
        let mut out = vec![0.0; m * n];
        for t in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|i| f64::from(x[t * k + i]) * f64::from(w[j * k + i])).sum();
                out[t * n + j] = (dot + f64::from(bias[j])) as f32;
            }
        }
        out
    }

    #[test]
    fn attention_weighs_the_values_by_the_softmax_of_the_scores() {
        // Two tokens, two heads of size two. Head 0: the keys are equal, so each token
        // takes the mean of the values. Head 1: the first token's query matches the
        // second key by far, so it takes the second value.
        let q = [1.0, 1.0, 100.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        let k = [2.0, 2.0, 0.0, 0.0, 2.0, 2.0, 1.0, 0.0];
        let v = [1.0, 3.0, 5.0, 7.0, 3.0, 5.0, 9.0, 11.0];
        let context = attention(&q, &k, &v, 2, 2);
        let close = |a: f32, b: f32| (a - b).abs() < 1e-4;
        assert!(close(context[0], 2.0) && close(context[1], 4.0), "{context:?}");
        assert!(close(context[2], 9.0) && close(context[3], 11.0), "{context:?}");
        assert!(close(context[4], 2.0) && close(context[5], 4.0), "{context:?}");
        // The second token's query is zero on head 1: equal weights, the mean.
        assert!(close(context[6], 7.0) && close(context[7], 9.0), "{context:?}");
    }

    #[test]
    fn each_group_of_weights_keeps_its_own_scale() {
        // A large weight in one group does not coarsen the small ones of the next.
        let mut row = vec![0.001f32; 64];
        row[0] = 100.0;
        let quantized = Quantized::new(&row, 64);
        assert_eq!(quantized.weight(0, 0, 64), 100.0);
        for i in 32..64 {
            assert!((quantized.weight(0, i, 64) - 0.001).abs() < 0.001 / 127.0, "{i}");
        }
        // A row of zeros stays zeros; the last group of a row may be short.
        let quantized = Quantized::new(&[0.0, 0.0, 0.5, -0.25, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0], 5);
        assert_eq!(quantized.weight(0, 1, 5), 0.0);
        assert!((quantized.weight(0, 3, 5) + 0.25).abs() < 1.0 / 254.0);
        assert_eq!(quantized.weight(1, 0, 5), 0.0);
    }

    #[test]
    fn the_product_for_few_tokens_is_the_textbook_one() {
        let values = |count: usize, seed: u32| -> Vec<f32> {
            (0..count as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0).collect()
        };
        // Every number of tokens up to seven (blocks of three, two and one), and shapes
        // the kernel takes (k a multiple of 32, n of 4) and shapes it leaves to the loop.
        for (n, k) in [(384, 384), (1536, 384), (384, 1536), (8, 64), (8, 16), (6, 10)] {
            for m in 1..=7 {
                let (x, w, bias) = (values(m * k, 1), values(n * k, 2), values(n, 3));
                let want = reference(&x, m, &w, n, k, &bias);
                for kernel in kernels() {
                    // SAFETY: a kernel `kernels` found on this machine.
                    let got = unsafe { product_with(kernel, &x, m, &Quantized::new(&w, k), n, k, Some(&bias)) };
                    for (g, e) in got.iter().zip(&want) {
                        assert!((g - e).abs() <= 1e-3 * (1.0 + e.abs()), "{kernel:?}, {m} tokens, {n}×{k}: {g} vs {e}");
                    }
                }
            }
        }
    }
}
