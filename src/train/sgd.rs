//! Plain SGD (no momentum, no weight decay): burn's `Sgd` step, `p − g·lr`, in one pass
//! over each parameter on burn-flex.
//!
//! burn's step takes two element-wise ops: `g·lr` (in place when `g` is held once), then
//! `p − (g·lr)`, copying `p` first while the round's global model still shares its
//! buffer. Together ≈ 10 % of a plain EC-LDA run (GCN 1433 → 512 → 64). The fused step
//! computes the same two roundings per element (`g·lr` in the parameter's float type,
//! `lr` rounded to it first as burn-flex does, then the difference; Rust never fuses
//! them into one FMA) and writes them into the gradient's buffer, which nothing else
//! holds. Other backends take burn's ops.

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, Flex, TensorMetadata, backend_extension};
use burn::optim::{LearningRate, Optimizer, SgdState};
use burn::tensor::{DType, Device, Tensor};

use crate::model::Strategy;

/// The extension, on burn-flex only: optimizer steps see the parameters' inner
/// (non-autodiff) tensors.
#[backend_extension(Flex)]
pub trait SgdOps: Backend {
    /// `p − g·lr`, element by element, as burn-flex's `mul_scalar` then `sub` round it.
    fn sgd_step(p: FloatTensor<Self>, g: FloatTensor<Self>, lr: f64) -> FloatTensor<Self>;
}

/// The float types the fused steps (this one and [`super::adam`]'s) run in: each op
/// rounds once, in `Self`, as burn-flex's element-wise ops do (Rust never contracts
/// them into fused multiply-adds).
pub(super) trait Float:
    Copy
    + std::ops::Mul<Output = Self>
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Div<Output = Self>
    + bytemuck::Pod
    + burn::tensor::Element
{
    /// A scalar burn holds in f32, in `Self` (exactly).
    fn of_f32(x: f32) -> Self;
    /// The learning rate, rounded to `Self` as burn-flex's `mul_scalar` rounds it.
    fn of_lr(lr: f64) -> Self;
    fn sqrt(self) -> Self;
}

impl Float for f32 {
    fn of_f32(x: f32) -> f32 {
        x
    }
    fn of_lr(lr: f64) -> f32 {
        lr as f32
    }
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
}

impl Float for f64 {
    fn of_f32(x: f32) -> f64 {
        f64::from(x)
    }
    fn of_lr(lr: f64) -> f64 {
        lr
    }
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
}

/// `t` (whole, contiguous, `n` values of type `T`) with a buffer nothing else holds: its
/// own, else a copy.
pub(super) fn owned<T: Float>(mut t: FlexTensor, n: usize) -> FlexTensor {
    if t.try_storage_mut::<T>().is_some() {
        return t;
    }
    let values = t.storage::<T>()[..n].to_vec();
    FlexTensor::from_data(burn::tensor::TensorData::new(values, t.shape()))
}

/// The step written into whichever of the two buffers nothing else holds (the
/// gradient's first, else the parameter's, else a copy of the parameter). Both are
/// contiguous from their start, of one shape and of type `T`.
fn fused<T: Float>(p: FlexTensor, mut g: FlexTensor, lr: f64) -> FlexTensor {
    let lr = T::of_lr(lr);
    let n = p.shape().num_elements();
    if let Some(gs) = g.try_storage_mut::<T>() {
        let ps = &p.storage::<T>()[..n];
        for (g, &p) in gs[..n].iter_mut().zip(ps) {
            *g = p - *g * lr;
        }
        return g;
    }
    let mut p = owned::<T>(p, n);
    let gs = &g.storage::<T>()[..n];
    for (p, &g) in p.try_storage_mut::<T>().expect("owned")[..n].iter_mut().zip(gs) {
        *p = *p - g * lr;
    }
    p
}

impl SgdOps for Flex {
    fn sgd_step(p: FlexTensor, g: FlexTensor, lr: f64) -> FlexTensor {
        use burn::backend::ops::FloatTensorOps;
        // Other layouts (a view not starting at its buffer's start) take burn's ops.
        let whole = |t: &FlexTensor| matches!(t.layout().contiguous_offsets(), Some((0, _)));
        let fusable = whole(&p) && whole(&g) && p.shape() == g.shape() && p.dtype() == g.dtype();
        match p.dtype() {
            DType::F32 if fusable => fused::<f32>(p, g, lr),
            DType::F64 if fusable => fused::<f64>(p, g, lr),
            _ => Flex::float_sub(p, Flex::float_mul_scalar(g, lr.into())),
        }
    }
}

/// Plain SGD for [`ModuleOptimizer`](burn::optim::ModuleOptimizer): burn's `Sgd` without
/// momentum or weight decay, step for step the same values, and the same (empty) state,
/// so that saved optimizer states read either way.
#[derive(Clone, Debug)]
pub struct PlainSgd;

impl Optimizer for PlainSgd {
    type State<const D: usize> = SgdState<D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        _: Option<SgdState<D>>,
    ) -> (Tensor<D>, Option<SgdState<D>>) {
        let stepped = if Strategy::for_device(&tensor.device()) == Strategy::Fused {
            Tensor::from_dispatch(Dispatch::sgd_step(tensor.into_dispatch(), grad.into_dispatch(), lr))
        } else {
            tensor - grad.mul_scalar(lr)
        };
        (stepped, Some(SgdState::new(None)))
    }

    fn to_device<const D: usize>(state: SgdState<D>, _: &Device) -> SgdState<D> {
        state
    }
}

#[cfg(test)]
mod tests {
    use burn::optim::SgdConfig;
    use burn::tensor::{TensorCreationOptions, TensorData};

    use super::*;
    use crate::model::tests::support::{bits, cpu, random_values};

    /// The fused step gives burn's `Sgd` values bit for bit, in f32 and f64, at learning
    /// rates f32 cannot hold exactly, whichever buffer it may write into: both held
    /// once, the gradient held elsewhere too, both held elsewhere, and a transposed
    /// (non-contiguous) parameter that takes burn's ops; neither a held gradient nor a
    /// held parameter changes.
    #[test]
    fn plain_sgd_steps_as_burns_sgd() {
        let burns = SgdConfig::new().build();
        for dtype in [DType::F32, DType::F64] {
            let options = TensorCreationOptions::new(cpu()).with_dtype(dtype);
            let make = |seed: u64, shape: [usize; 2]| {
                let v: Vec<f64> = random_values(seed, shape[0] * shape[1]).into_iter().map(|x| x * 3.0).collect();
                Tensor::<2>::from_data(TensorData::new(v, shape).convert_dtype(dtype), options.clone())
            };
            for lr in [0.1, 0.37, 1e-3] {
                for case in ["unique", "grad held", "both held", "transposed"] {
                    let p = if case == "transposed" { make(1, [37, 23]).transpose() } else { make(1, [23, 37]) };
                    let g = make(2, [23, 37]);
                    let (p_before, g_before) = (bits(p.clone()), bits(g.clone()));
                    let want = bits(burns.step(lr, p.clone(), g.clone(), None).0);
                    let held = match case {
                        "grad held" => vec![g.clone()],
                        "both held" => vec![g.clone(), p.clone()],
                        _ => vec![],
                    };
                    let (stepped, state) = PlainSgd.step(lr, p, g, None);
                    let differ = bits(stepped).iter().zip(&want).filter(|(a, b)| a != b).count();
                    assert_eq!(differ, 0, "{dtype:?}, lr {lr}, {case}: entries differ from burn's step");
                    assert!(state.is_some_and(|s| s.momentum.is_none()));
                    for (t, before) in held.into_iter().zip([g_before, p_before]) {
                        assert!(bits(t) == before, "{dtype:?}, lr {lr}, {case}: a held tensor changed");
                    }
                }
            }
        }
    }
}
