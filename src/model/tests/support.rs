//! Shared test fixtures: devices, tiny graphs, tensor read-back and the finite-difference
//! gradient checker.

use burn::module::{Param, ParamId};
use burn::tensor::{DType, Device, Tensor, TensorCreationOptions, TensorData};
use rand::Rng as _;

use crate::data::features::{CsrMatrix, Features};
use crate::data::graph::Graph;
use crate::rng;

/// The CPU device the tests run on: burn-flex, what `backend: cpu` uses.
pub fn cpu() -> Device {
    Device::flex()
}

/// f64 tensors on the plain CPU device.
pub fn f64_cpu() -> TensorCreationOptions {
    TensorCreationOptions::new(cpu()).with_dtype(DType::F64)
}

/// f64 tensors on the CPU device with autodiff.
pub fn f64_ad() -> TensorCreationOptions {
    TensorCreationOptions::new(cpu().autodiff()).with_dtype(DType::F64)
}

/// 6 nodes: triangle 0-1-2, path 2-3-4, node 5 isolated.
pub fn tiny_graph() -> Graph {
    Graph::from_edges(6, [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4)], "test").unwrap().0
}

/// Values of any float tensor as f64, row-major.
pub fn values<const D: usize>(x: Tensor<D>) -> Vec<f64> {
    x.into_data().convert::<f64>().try_to_vec::<f64>().unwrap()
}

pub fn scalar(x: Tensor<1>) -> f64 {
    values(x)[0]
}

/// Uniform(−1, 1) values from a fixed stream.
pub fn random_values(seed: u64, count: usize) -> Vec<f64> {
    let mut r = rng::derive(seed, "model-test", &[]);
    (0..count).map(|_| 2.0 * r.random::<f64>() - 1.0).collect()
}

pub fn tensor<const D: usize>(v: Vec<f64>, shape: [usize; D], options: &TensorCreationOptions) -> Tensor<D> {
    Tensor::from_data(TensorData::new(v, shape), options.clone())
}

/// Wrap a (possibly non-leaf) tensor as a parameter without touching its gradient
/// setting, so that gradients flow back to the leaf it was computed from.
pub fn param<const D: usize>(x: Tensor<D>) -> Param<Tensor<D>> {
    Param::initialized(ParamId::new(), x)
}

/// A sparse `rows × cols` feature matrix with about `density` non-zeros, values in (−1, 1).
pub fn sparse_features(seed: u64, rows: usize, cols: usize, density: f64) -> Features {
    let mut r = rng::derive(seed, "model-test-sparse", &[]);
    let mut indptr = vec![0];
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    for _ in 0..rows {
        for c in 0..cols {
            if r.random::<f64>() < density {
                indices.push(c as u32);
                values.push((2.0 * r.random::<f64>() - 1.0) as f32);
            }
        }
        indptr.push(indices.len());
    }
    Features::Sparse(CsrMatrix { rows, cols, indptr, indices, values })
}

/// The scalar loss used by the gradient checks: Σ C⊙Y + ½ Σ Y² with C fixed random,
/// so that every output entry gets a different, non-trivial upstream gradient.
pub fn loss(y: Tensor<2>) -> Tensor<1> {
    let dims = y.dims();
    let c = tensor(random_values(99, dims[0] * dims[1]), dims, &TensorCreationOptions::new(y.device()).with_dtype(y.dtype()));
    (y.clone() * c).sum() + y.powf_scalar(2.0).sum().mul_scalar(0.5)
}

/// Compare autodiff gradients of `f` (a scalar built from flat leaf tensors) with
/// central finite differences, in f64. Returns the largest error
/// |g_autodiff − g_fd| / max(1, |g_fd|) over every entry of every leaf.
///
/// `f` must build everything it needs on the device of the leaves it receives.
pub fn gradient_error(leaves: &[Vec<f64>], f: impl Fn(&[Tensor<1>]) -> Tensor<1>) -> f64 {
    const H: f64 = 1e-6;
    let ad = f64_ad();
    let tracked: Vec<Tensor<1>> = leaves.iter().map(|v| tensor(v.clone(), [v.len()], &ad).require_grad()).collect();
    let grads = f(&tracked).backward();
    let plain = f64_cpu();
    let eval = |vals: &[Vec<f64>]| -> f64 {
        let t: Vec<Tensor<1>> = vals.iter().map(|v| tensor(v.clone(), [v.len()], &plain)).collect();
        scalar(f(&t))
    };
    let mut worst: f64 = 0.0;
    for (i, leaf) in tracked.iter().enumerate() {
        let auto = leaf.grad(&grads).map(values).unwrap_or_else(|| vec![0.0; leaves[i].len()]);
        for k in 0..leaves[i].len() {
            let mut up = leaves.to_vec();
            up[i][k] += H;
            let mut down = leaves.to_vec();
            down[i][k] -= H;
            let fd = (eval(&up) - eval(&down)) / (2.0 * H);
            worst = worst.max((auto[k] - fd).abs() / fd.abs().max(1.0));
        }
    }
    worst
}

/// Creation options matching a tensor's device and dtype.
pub fn options_of<const D: usize>(x: &Tensor<D>) -> TensorCreationOptions {
    TensorCreationOptions::new(x.device()).with_dtype(x.dtype())
}

pub fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}[{i}]: got {g}, want {w} (tol {tol})");
    }
}

/// Each value's bits (f32 widened), to compare tensors exactly.
pub fn bits<const D: usize>(t: Tensor<D>) -> Vec<u64> {
    let data = t.into_data();
    match data.dtype() {
        DType::F32 => data.try_to_vec::<f32>().unwrap().into_iter().map(|x| u64::from(x.to_bits())).collect(),
        _ => data.try_to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect(),
    }
}
