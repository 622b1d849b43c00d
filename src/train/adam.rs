//! Adam: burn's `Adam` step (no AMSGrad, optional L2 weight decay), in one pass over each
//! parameter on burn-flex.
//!
//! burn's step is thirteen element-wise ops, each a pass over the parameter (the decay,
//! both moments, the bias-corrected update, `p − update·lr`), most writing a fresh buffer.
//! A DP-GNN epoch takes one step per batch of 64 nodes, ≈ 30 a local epoch at EC-LDA's
//! widths (767 k parameters): there they were ≈ 19 % of the epoch. The fused step rounds
//! the same values in the same order per element — `p·wd + g`; `m·β₁ + g·(1 − β₁)`;
//! `v·β₂ + (g·g)·(1 − β₂)`; `(m·c) / (√v + ε·√(1 − β₂ᵗ))`; `p − u·lr` — with every
//! scalar rounded as burn rounds it (computed in f32, `lr` rounded to the parameter's
//! type), and writes into the buffers nothing else holds: the gradient's for the
//! parameter, the moments' own. Other backends take burn's `Adam`. The state is burn's
//! [`AdamState`], so saved optimizer states read either way.

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, Flex, TensorMetadata, backend_extension};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::{AdamConfig, AdamState, AdaptiveMomentumState, LearningRate, Optimizer};
use burn::tensor::{DType, Device, Tensor};

use super::sgd::{Float, owned};
use crate::model::Strategy;

/// One step's scalars, as burn's `Adam` computes them for step `time` (from 1).
#[derive(Clone, Copy, Debug)]
pub struct AdamScalars {
    beta_1: f32,
    beta_2: f32,
    /// `(1 − β₂ᵗ)^½ / (1 − β₁ᵗ)`: the bias corrections, on the first moment.
    combined: f32,
    /// `ε·(1 − β₂ᵗ)^½`, added to `√v`.
    epsilon: f32,
    /// The L2 penalty added to the gradient (`p·wd + g`), if any.
    weight_decay: Option<f32>,
    lr: f64,
    /// No moments yet: this step starts them from the (decayed) gradient alone.
    first: bool,
}

/// The extension, on burn-flex only: optimizer steps see the parameters' inner
/// (non-autodiff) tensors.
#[backend_extension(Flex)]
pub trait AdamOps: Backend {
    /// The stepped parameter and the two new moments. On the first step `m` and `v` are
    /// only read for their shape.
    fn adam_step(
        p: FloatTensor<Self>,
        g: FloatTensor<Self>,
        m: FloatTensor<Self>,
        v: FloatTensor<Self>,
        s: AdamScalars,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>);
}

/// The step over whole contiguous buffers of one shape and type `T`.
fn fused<T: Float>(p: FlexTensor, mut g: FlexTensor, m: FlexTensor, v: FlexTensor, s: AdamScalars) -> (FlexTensor, FlexTensor, FlexTensor) {
    let n = p.shape().num_elements();
    let (b1, b2) = (T::of_f32(s.beta_1), T::of_f32(s.beta_2));
    // burn computes `1 − β` in f32.
    let (f1, f2) = (T::of_f32(1.0 - s.beta_1), T::of_f32(1.0 - s.beta_2));
    let (c, eps, lr) = (T::of_f32(s.combined), T::of_f32(s.epsilon), T::of_lr(s.lr));
    let (wd, first) = (s.weight_decay.map(T::of_f32), s.first);
    let one = |p: T, g: T, m: &mut T, v: &mut T| -> T {
        let g = match wd {
            Some(wd) => p * wd + g,
            None => g,
        };
        if first {
            *m = g * f1;
            *v = (g * g) * f2;
        } else {
            *m = *m * b1 + g * f1;
            *v = *v * b2 + (g * g) * f2;
        }
        p - ((*m * c) / (v.sqrt() + eps)) * lr
    };
    // A first step only takes the moments' shape: its buffers are new.
    let (mut m, mut v) = if first {
        let zeros = || FlexTensor::from_data(burn::tensor::TensorData::new(vec![T::of_f32(0.0); n], p.shape()));
        (zeros(), zeros())
    } else {
        (owned::<T>(m, n), owned::<T>(v, n))
    };
    let ms = &mut m.try_storage_mut::<T>().expect("owned")[..n];
    let vs = &mut v.try_storage_mut::<T>().expect("owned")[..n];
    // The stepped parameter goes into the gradient's buffer, else the parameter's (or
    // its copy).
    let stepped = if let Some(gs) = g.try_storage_mut::<T>() {
        let ps = &p.storage::<T>()[..n];
        for (i, g) in gs[..n].iter_mut().enumerate() {
            *g = one(ps[i], *g, &mut ms[i], &mut vs[i]);
        }
        g
    } else {
        let mut p = owned::<T>(p, n);
        let gs = &g.storage::<T>()[..n];
        for (i, p) in p.try_storage_mut::<T>().expect("owned")[..n].iter_mut().enumerate() {
            *p = one(*p, gs[i], &mut ms[i], &mut vs[i]);
        }
        p
    };
    (stepped, m, v)
}

impl AdamOps for Flex {
    fn adam_step(p: FlexTensor, g: FlexTensor, m: FlexTensor, v: FlexTensor, s: AdamScalars) -> (FlexTensor, FlexTensor, FlexTensor) {
        // A view not starting at its buffer's start is copied out in logical order first.
        let whole = |t: FlexTensor| match t.layout().contiguous_offsets() {
            Some((0, _)) => t,
            _ => FlexTensor::from_data(t.into_data()),
        };
        let (p, g, m, v) = (whole(p), whole(g), whole(m), whole(v));
        match p.dtype() {
            DType::F32 => fused::<f32>(p, g, m, v, s),
            DType::F64 => fused::<f64>(p, g, m, v, s),
            other => unreachable!("fused Adam on {other:?}: `Adam::step` only fuses f32 and f64"),
        }
    }
}

/// Adam for [`ModuleOptimizer`](burn::optim::ModuleOptimizer): burn's `Adam` (β₁, β₂, ε
/// as configured, no AMSGrad, no gradient clipping) step for step the same values and
/// the same state.
#[derive(Clone)]
pub struct Adam {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    weight_decay: Option<f32>,
    /// burn's own, for other backends and layouts.
    burns: burn::optim::Adam,
}

impl Adam {
    /// PyTorch's defaults as fgl-sim uses them: β = (0.9, 0.999), ε = 1e-8; `weight_decay`
    /// the L2 penalty added to the gradient.
    pub fn new(weight_decay: Option<f32>) -> Self {
        let (beta_1, beta_2, epsilon) = (0.9, 0.999, 1e-8);
        let config = AdamConfig::new()
            .with_beta_1(beta_1)
            .with_beta_2(beta_2)
            .with_epsilon(epsilon)
            .with_weight_decay(weight_decay.map(WeightDecayConfig::new));
        Self { beta_1, beta_2, epsilon, weight_decay, burns: config.build() }
    }

    /// Step `time`'s scalars, computed as burn computes them.
    fn scalars(&self, time: usize, lr: f64, first: bool) -> AdamScalars {
        let time = time as i32;
        let bias_correction2_sqrt = (1.0 - self.beta_2.powi(time)).sqrt();
        let combined = bias_correction2_sqrt / (1.0 - self.beta_1.powi(time));
        AdamScalars {
            beta_1: self.beta_1,
            beta_2: self.beta_2,
            combined,
            epsilon: self.epsilon * bias_correction2_sqrt,
            weight_decay: self.weight_decay,
            lr,
            first,
        }
    }
}

impl Optimizer for Adam {
    type State<const D: usize> = AdamState<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<AdamState<D>>,
    ) -> (Tensor<D>, Option<AdamState<D>>) {
        // One shape and float type, and moments without AMSGrad's maximum.
        let fusable = Strategy::for_device(&tensor.device()) == Strategy::Fused
            && tensor.shape() == grad.shape()
            && tensor.dtype() == grad.dtype()
            && matches!(tensor.dtype(), DType::F32 | DType::F64)
            && state.as_ref().is_none_or(|s| s.momentum.max_moment_2.is_none());
        if !fusable {
            return self.burns.step(lr, tensor, grad, state);
        }
        let (time, m, v, first) = match state {
            Some(s) => (s.momentum.time + 1, s.momentum.moment_1, s.momentum.moment_2, false),
            // Placeholders of the shape, not read: the parameter's, so that the gradient's
            // buffer stays held once and takes the stepped values.
            None => (1, tensor.clone(), tensor.clone(), true),
        };
        let s = self.scalars(time, lr, first);
        let (p, m, v) = Dispatch::adam_step(tensor.into_dispatch(), grad.into_dispatch(), m.into_dispatch(), v.into_dispatch(), s);
        let (p, m, v) = (Tensor::from_dispatch(p), Tensor::from_dispatch(m), Tensor::from_dispatch(v));
        (p, Some(AdamState::new(AdaptiveMomentumState::new(time, m, v))))
    }

    fn to_device<const D: usize>(state: AdamState<D>, device: &Device) -> AdamState<D> {
        burn::optim::Adam::to_device(state, device)
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{TensorCreationOptions, TensorData};

    use super::*;
    use crate::model::tests::support::{bits, cpu, random_values};

    /// The fused step gives burn's `Adam` values bit for bit — the parameter and both
    /// moments, over 300 steps (the bias corrections change each step), in f32 and f64,
    /// with and without weight decay, at learning rates f32 cannot hold exactly, whichever
    /// buffers it may write into: all held once, the gradient held elsewhere too, the
    /// gradient and the parameter held, the moments held (a saved state), and a
    /// transposed (non-contiguous) parameter; nothing held changes. Gradients are drawn
    /// anew each step, some exactly zero (the zero-gradient rows of a sparse layer).
    #[test]
    fn adam_steps_as_burns_adam() {
        for dtype in [DType::F32, DType::F64] {
            let options = TensorCreationOptions::new(cpu()).with_dtype(dtype);
            let make = |seed: u64, shape: [usize; 2], zeros: bool| {
                let v: Vec<f64> = random_values(seed, shape[0] * shape[1])
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| if zeros && i % 7 == 0 { 0.0 } else { x * 3.0 })
                    .collect();
                Tensor::<2>::from_data(TensorData::new(v, shape).convert_dtype(dtype), options.clone())
            };
            for wd in [None, Some(5e-4_f32)] {
                let burns = AdamConfig::new().with_epsilon(1e-8).with_weight_decay(wd.map(WeightDecayConfig::new)).build();
                let ours = Adam::new(wd);
                for (lr, case) in [(0.01, "unique"), (0.37, "grad held"), (1e-3, "both held"), (0.01, "state held"), (0.1, "transposed")] {
                    let mut p = if case == "transposed" { make(1, [37, 23], false).transpose() } else { make(1, [23, 37], false) };
                    let mut want_p = p.clone();
                    let (mut state, mut want_state) = (None::<AdamState<2>>, None::<AdamState<2>>);
                    for step in 0..300u64 {
                        let g = make(2 + step, [23, 37], true);
                        let (want, ws) = burns.step(lr, want_p, g.clone(), want_state);
                        let held: Vec<Tensor<2>> = match case {
                            "grad held" => vec![g.clone()],
                            "both held" => vec![g.clone(), p.clone()],
                            "state held" => state
                                .iter()
                                .flat_map(|s: &AdamState<2>| [s.momentum.moment_1.clone(), s.momentum.moment_2.clone()])
                                .collect(),
                            _ => vec![],
                        };
                        let before: Vec<Vec<u64>> = held.iter().map(|t| bits(t.clone())).collect();
                        let (stepped, s) = ours.step(lr, p, g, state);
                        let s = s.expect("a state");
                        let w = ws.as_ref().expect("burn's state");
                        let what = format!("{dtype:?}, wd {wd:?}, lr {lr}, {case}, step {}", step + 1);
                        assert_eq!(s.momentum.time, w.momentum.time, "{what}: time");
                        assert!(bits(stepped.clone()) == bits(want.clone()), "{what}: the parameter differs from burn's step");
                        assert!(bits(s.momentum.moment_1.clone()) == bits(w.momentum.moment_1.clone()), "{what}: the first moment differs");
                        assert!(
                            bits(s.momentum.moment_2.clone()) == bits(w.momentum.moment_2.clone()),
                            "{what}: the second moment differs"
                        );
                        for (t, b) in held.into_iter().zip(before) {
                            assert!(bits(t) == b, "{what}: a held tensor changed");
                        }
                        (p, state, want_p, want_state) = (stepped, Some(s), want, ws);
                    }
                }
            }
        }
    }
}
