//! Seeded parameter initialisation, drawn on the host.
//!
//! Burn 0.22 draws initial weights from the device's global RNG, lazily, when a
//! parameter is first touched. That makes the values depend on access order, on other
//! threads using the same device, and on the backend (CPU and GPU generators differ).
//! Drawing here from a ChaCha stream derived from an explicit seed gives the same model
//! on every backend and thread count; the values are then uploaded once.

use burn::module::Param;
use burn::tensor::{Tensor, TensorCreationOptions, TensorData};
use rand::Rng as _;

use crate::rng::{self, Rng};

/// Source of initial parameter values for one model.
pub struct Init {
    rng: Rng,
    options: TensorCreationOptions,
}

impl Init {
    /// Parameters for the model seeded by `seed`, created with `options` (device and
    /// float dtype).
    pub fn new(seed: u64, options: impl Into<TensorCreationOptions>) -> Init {
        Init { rng: rng::derive(seed, "model-init", &[]), options: options.into() }
    }

    /// U(−bound, bound) in f64, converted to the model dtype on upload.
    fn uniform_values(&mut self, count: usize, bound: f64) -> Vec<f64> {
        (0..count).map(|_| (2.0 * self.rng.random::<f64>() - 1.0) * bound).collect()
    }

    fn param<const D: usize>(&self, values: Vec<f64>, shape: [usize; D]) -> Param<Tensor<D>> {
        Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), self.options.clone()))
    }

    /// Uniform(−bound, bound) parameter.
    pub fn uniform<const D: usize>(&mut self, shape: [usize; D], bound: f64) -> Param<Tensor<D>> {
        let values = self.uniform_values(shape.iter().product(), bound);
        self.param(values, shape)
    }

    /// Glorot/Xavier uniform, bound sqrt(6 / (fan_in + fan_out)) (PyG `glorot`).
    pub fn glorot<const D: usize>(&mut self, shape: [usize; D], fan_in: usize, fan_out: usize) -> Param<Tensor<D>> {
        self.uniform(shape, (6.0 / (fan_in + fan_out) as f64).sqrt())
    }

    /// torch's default for `nn.Linear` weights and biases (Kaiming uniform with a = √5):
    /// bound 1/sqrt(fan_in).
    pub fn torch_linear<const D: usize>(&mut self, shape: [usize; D], fan_in: usize) -> Param<Tensor<D>> {
        self.uniform(shape, 1.0 / (fan_in.max(1) as f64).sqrt())
    }

    pub fn zeros<const D: usize>(&mut self, shape: [usize; D]) -> Param<Tensor<D>> {
        self.param(vec![0.0; shape.iter().product()], shape)
    }
}
