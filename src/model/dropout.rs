//! Inverted dropout with masks drawn from an explicit host RNG.
//!
//! Burn's `Dropout` samples from the device's global RNG, so two clients training on
//! one device in parallel would interleave draws and lose reproducibility. Masks drawn
//! from a stream derived from (seed, client, round) do not, and are the same on every
//! backend.

use burn::tensor::{Tensor, TensorData};
use rand::Rng as _;

use super::propagate::like;
use crate::rng::Rng;

/// Zero each entry with probability `p` and scale the rest by 1/(1−p). Identity when
/// `rng` is `None` (evaluation) or `p == 0`.
pub fn dropout(x: Tensor<2>, p: f64, rng: Option<&mut Rng>) -> Tensor<2> {
    let Some(rng) = rng else { return x };
    if p <= 0.0 {
        return x;
    }
    let dims = x.dims();
    let keep = 1.0 - p;
    let scale = (1.0 / keep) as f32;
    let mask: Vec<f32> =
        (0..dims[0] * dims[1]).map(|_| if rng.random::<f64>() < keep { scale } else { 0.0 }).collect();
    let mask = Tensor::from_data(TensorData::new(mask, dims), like(&x));
    x * mask
}
