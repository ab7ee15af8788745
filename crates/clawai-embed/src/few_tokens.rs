//! The linear layers' matrix product for a few tokens (a search query), without the
//! general product's packing, from weights kept in bfloat16.
//!
//! candle's product (gemm) copies the whole weight matrix into its own layout on every
//! call, so that a large batch runs at full speed; a query has a handful of tokens, and
//! that copy was most of its cost (perf: 57 % of a query in gemm's packing loop, 9 % in
//! its kernels). Here each weight row is read once and multiplied with every token at
//! once: with AVX2 and FMA (checked at run time), four rows and up to three tokens a
//! step, twelve sums in registers; elsewhere a plain loop.
//!
//! Read in place, the f32 weights (42 MB for all-MiniLM-L6-v2's layers) then came from
//! memory on every query, which bounded it (65 % of its time in this product, under one
//! multiply-add a cycle). In bfloat16 they take 21 MB and stay in a 32 MB cache between
//! queries. bfloat16 keeps f32's range and 8 bits of each weight's mantissa: a query's
//! vector is the f32 one to within a cosine of 0.9999 (tested with the real model), and
//! the tools' vectors, embedded in batches by gemm, keep f32.

use candle_core::{Result, Tensor};
use candle_nn::{Linear, Module};

/// At most this many tokens take this product; more go to gemm, which the copy pays for.
const FEW_TOKENS: usize = 64;

/// Which product a pass takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Products {
    /// candle's, in f32: the catalog's texts, embedded in batches. A text gets the same
    /// vector in any batch.
    Batched,
    /// This module's, from bfloat16 weights, when the pass has few tokens: a query.
    FewTokens,
}

/// A linear layer that takes this product for a query's few tokens and candle's
/// otherwise.
pub(crate) struct Dense {
    linear: Linear,
    /// The weights `(n, k)`, row-major, in bfloat16 (the high half of each f32, rounded).
    rows: Vec<u16>,
    bias: Option<Vec<f32>>,
}

impl Dense {
    pub(crate) fn new(linear: Linear) -> Result<Dense> {
        let bias = linear.bias().map(Tensor::to_vec1::<f32>).transpose()?;
        let rows = linear.weight().flatten_all()?.to_vec1::<f32>()?.into_iter().map(bfloat16).collect();
        Ok(Dense { linear, rows, bias })
    }

    /// `input` `(batch, tokens, k)` times the weights `(n, k)`, plus the bias.
    pub(crate) fn forward(&self, input: &Tensor, products: Products) -> Result<Tensor> {
        let (batch, tokens, k) = input.dims3()?;
        if products == Products::Batched || batch * tokens > FEW_TOKENS {
            return self.linear.forward(input);
        }
        let n = self.linear.weight().dim(0)?;
        let x = input.flatten_all()?.to_vec1::<f32>()?;
        let out = product(&x, batch * tokens, &self.rows, n, k, self.bias.as_deref());
        Tensor::from_vec(out, (batch, tokens, n), input.device())
    }
}

/// `value` in bfloat16, rounded to the nearest (ties to even).
fn bfloat16(value: f32) -> u16 {
    let bits = value.to_bits();
    if value.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let rounding = 0x7FFF + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

/// The f32 a bfloat16 stands for.
fn from_bfloat16(half: u16) -> f32 {
    f32::from_bits(u32::from(half) << 16)
}

/// `x` `(m, k)` times `w` `(n, k)` transposed, plus `bias`: `(m, n)`, row-major.
pub(crate) fn product(x: &[f32], m: usize, w: &[u16], n: usize, k: usize, bias: Option<&[f32]>) -> Vec<f32> {
    assert!(x.len() >= m * k && w.len() >= n * k, "the product's operands have their shapes");
    let mut out = vec![0.0f32; m * n];
    #[cfg(target_arch = "x86_64")]
    let done = if k.is_multiple_of(8)
        && n.is_multiple_of(4)
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
    {
        // SAFETY: the CPU has AVX2 and FMA (checked above), and the slices have the
        // lengths the kernel reads and writes (asserted above; `out` is m × n).
        unsafe { avx2::product(x, m, w, n, k, &mut out) };
        true
    } else {
        false
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = false;
    if !done {
        for (t, row) in out.chunks_exact_mut(n).enumerate() {
            let token = &x[t * k..(t + 1) * k];
            for (j, sum) in row.iter_mut().enumerate() {
                *sum = token.iter().zip(&w[j * k..(j + 1) * k]).map(|(a, &b)| a * from_bfloat16(b)).sum();
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU has AVX2 and FMA; `k` is a multiple of 8 and `n` of 4; `x` holds `m × k`,
    /// `w` `n × k` and `out` `m × n` values.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn product(x: &[f32], m: usize, w: &[u16], n: usize, k: usize, out: &mut [f32]) {
        debug_assert!(x.len() >= m * k && w.len() >= n * k && out.len() >= m * n);
        let mut t = 0;
        while t < m {
            let step = (m - t).min(3);
            // SAFETY: as the caller promised, for tokens t..t + step.
            unsafe {
                match step {
                    3 => tokens::<3>(x, t, w, n, k, out),
                    2 => tokens::<2>(x, t, w, n, k, out),
                    _ => tokens::<1>(x, t, w, n, k, out),
                }
            }
            t += step;
        }
    }

    /// Tokens `t0..t0 + T` times every weight row, four rows a step.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn tokens<const T: usize>(x: &[f32], t0: usize, w: &[u16], n: usize, k: usize, out: &mut [f32]) {
        let (x, w) = (x.as_ptr(), w.as_ptr());
        let mut j = 0;
        while j < n {
            let mut sums = [[_mm256_setzero_ps(); T]; 4];
            let mut at = 0;
            while at < k {
                let mut tokens = [_mm256_setzero_ps(); T];
                let mut i = 0;
                while i < T {
                    // SAFETY: token t0 + i < m and at + 8 <= k: within x.
                    tokens[i] = unsafe { _mm256_loadu_ps(x.add((t0 + i) * k + at)) };
                    i += 1;
                }
                let mut r = 0;
                while r < 4 {
                    // SAFETY: row j + r < n and at + 8 <= k: within w. Eight bfloat16
                    // become eight f32: each the high half of a 32-bit lane.
                    let halves = unsafe { _mm_loadu_si128(w.add((j + r) * k + at).cast()) };
                    let row = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16));
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
            j += 4;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The product as written in the textbook, in f64, with the weights as bfloat16 holds them.
    fn reference(x: &[f32], m: usize, w: &[f32], n: usize, k: usize, bias: &[f32]) -> Vec<f32> {
        let w: Vec<f32> = w.iter().map(|&v| from_bfloat16(bfloat16(v))).collect();
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
    fn bfloat16_rounds_to_the_nearest() {
        for value in [0.0f32, -0.0, 1.0, -2.5, 1.0e-30, 1.0e38, f32::INFINITY, 0.1, -123.456] {
            let back = from_bfloat16(bfloat16(value));
            assert!((back - value).abs() <= value.abs() / 256.0 || back == value, "{value} -> {back}");
        }
        // Halfway between two bfloat16 values: to the even one.
        assert_eq!(bfloat16(f32::from_bits(0x3F80_8000)), 0x3F80);
        assert_eq!(bfloat16(f32::from_bits(0x3F81_8000)), 0x3F82);
        assert!(from_bfloat16(bfloat16(f32::NAN)).is_nan());
    }

    #[test]
    fn the_product_for_few_tokens_is_the_textbook_one() {
        let values = |count: usize, seed: u32| -> Vec<f32> {
            (0..count as u32).map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0).collect()
        };
        // Every number of tokens up to seven (blocks of three, two and one), and shapes
        // the kernel takes (k a multiple of 8, n of 4) and shapes it leaves to the loop.
        for (n, k) in [(384, 384), (1536, 384), (384, 1536), (8, 16), (6, 10)] {
            for m in 1..=7 {
                let (x, w, bias) = (values(m * k, 1), values(n * k, 2), values(n, 3));
                let halves: Vec<u16> = w.iter().copied().map(bfloat16).collect();
                let got = product(&x, m, &halves, n, k, Some(&bias));
                let want = reference(&x, m, &w, n, k, &bias);
                for (g, e) in got.iter().zip(&want) {
                    assert!((g - e).abs() <= 1e-3 * (1.0 + e.abs()), "{m} tokens, {n}×{k}: {g} vs {e}");
                }
            }
        }
    }
}
