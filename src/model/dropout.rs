//! Inverted dropout with masks drawn from an explicit host RNG.
//!
//! Burn's `Dropout` samples from the device's global RNG, so two clients training on
//! one device in parallel would interleave draws and lose reproducibility. Masks drawn
//! from a stream derived from (seed, client, round) do not, and are the same on every
//! backend.

use burn::tensor::{Tensor, TensorData};

use super::propagate::like;
use crate::rng::Rng;

/// Zero each entry with probability `p` and scale the rest by 1/(1−p). Identity when
/// `rng` is `None` (evaluation) or `p == 0`.
///
/// Each entry costs one 32-bit draw, kept when below round((1−p)·2³²): the keep
/// probability is 1−p to within 2⁻³³, and the draws fill the buffer in bulk (sixteen
/// ChaCha8 blocks at a time on AVX-512, [`crate::rng::fill_u32`]), which matters at a
/// million entries per epoch.
pub fn dropout(x: Tensor<2>, p: f64, rng: Option<&mut Rng>) -> Tensor<2> {
    let Some(rng) = rng else { return x };
    if p <= 0.0 {
        return x;
    }
    let dims = x.dims();
    let keep = 1.0 - p;
    let scale = (1.0 / keep) as f32;
    let threshold = (keep * 4_294_967_296.0).round() as u64;
    let mut bits = vec![0u32; dims[0] * dims[1]];
    crate::rng::fill_u32(rng, &mut bits);
    let mask: Vec<f32> = bits.into_iter().map(|b| if u64::from(b) < threshold { scale } else { 0.0 }).collect();
    let mask = Tensor::from_data(TensorData::new(mask, dims), like(&x));
    x * mask
}
