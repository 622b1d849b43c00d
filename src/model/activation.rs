//! The non-linearity between GNN layers.
//!
//! SELU on the CPU backend (burn-flex) is one fused op with a hand-written backward pass
//! ([`SeluOps`]), equal to the composed form ([`selu_composed`], every other backend) to
//! the last bit in value and gradient. The composed form's six element passes, their
//! masks and a libm `exp` call per element took a quarter of a 2 × 16 SAGE run; the
//! fused kernels run without branches, vectorised, with glibc's own `expf` computation
//! inlined ([`expf_core`]).

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, unary};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Tensor, TensorData};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::expf::{MAY_UNDERFLOW, expf_core};
use super::propagate::Strategy;
use super::spmm::contiguous;

/// Non-linearity after every GNN layer except the one producing logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    Relu,
    /// LPGNN's choice.
    Selu,
}

impl Activation {
    pub fn apply(self, x: Tensor<2>) -> Tensor<2> {
        match self {
            Activation::Relu => burn::tensor::activation::relu(x),
            Activation::Selu if Strategy::for_device(&x.device()) == Strategy::Fused => {
                Tensor::from_dispatch(Dispatch::selu(x.into_dispatch()))
            }
            Activation::Selu => selu_composed(x),
        }
    }
}

const ALPHA: f64 = 1.673_263_242_354_377_3;
const GAMMA: f64 = 1.050_700_987_355_480_5;

/// log(2^-149), the least f32 subnormal: below it glibc's `expf` leaves its fast path for
/// an underflow handler that sets `errno` (`__math_may_uflowf`, `__math_uflowf`).
const EXP_UNDERFLOW: f64 = MAY_UNDERFLOW as f64; // −0x1.9d1d9ep6 ≈ −103.28

/// SELU written so that no branch ever evaluates `exp` of a large positive number:
/// Burn's `selu` computes exp(x) everywhere and masks it, and for large x the masked
/// branch's gradient becomes 0·∞ = NaN. Here γ·(relu(x) + α·(exp(clamp(x, L, 0)) − 1)).
/// The lower bound L = [`EXP_UNDERFLOW`] is for speed: LPGNN's multi-bit features
/// (scaled by ≈ 1 500 on Cora) put most pre-activations far below it, where `expf`'s
/// underflow handler took 45 % of a 2 × 16 SAGE run. Below L, exp(x) ≤ 2^-149: the
/// output (exp(x) − 1 = −1 in f32) is the same, and the gradient is the clamp's 0 for
/// one of at most |g|·2^-149, a subnormal that no sum with a normal number keeps.
fn selu_composed(x: Tensor<2>) -> Tensor<2> {
    let negative = x.clone().clamp(EXP_UNDERFLOW, 0.0).exp().sub_scalar(1.0).mul_scalar(ALPHA);
    (burn::tensor::activation::relu(x) + negative).mul_scalar(GAMMA)
}

/// SELU as one op: natively on burn-flex and, with its backward pass, on autodiff over
/// it. Other backends never call it (they compose it, [`selu_composed`]).
#[backend_extension(Flex, Autodiff)]
pub trait SeluOps: Backend {
    /// [`selu_composed`]'s value, element by element.
    fn selu(x: FloatTensor<Self>) -> FloatTensor<Self>;

    /// The gradient at `x` of [`selu`](SeluOps::selu) for the output gradient `g`, as
    /// the composed form's backward pass computes it.
    fn selu_backward(x: FloatTensor<Self>, g: FloatTensor<Self>) -> FloatTensor<Self>;
}

/// The float types the kernels run in. f32's `exp` is [`expf_core`], glibc's own computation
/// (what burn-flex's `exp` calls on glibc); f64's the standard library's.
trait SeluReal:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + burn::tensor::Element
    + bytemuck::Pod
{
    const ZERO: Self;
    const ONE: Self;
    /// A scalar as Burn's scalar ops convert it to the element type.
    fn of(v: f64) -> Self;
    fn exp(self) -> Self;
    /// `self` clamped to [lo, hi], NaN kept (as Burn's `clamp`).
    fn clamp_to(self, lo: Self, hi: Self) -> Self;
}

impl SeluReal for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    fn of(v: f64) -> f32 {
        v as f32
    }
    #[inline(always)]
    fn exp(self) -> f32 {
        expf_core(self)
    }
    #[inline(always)]
    fn clamp_to(self, lo: f32, hi: f32) -> f32 {
        self.clamp(lo, hi)
    }
}

impl SeluReal for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    fn of(v: f64) -> f64 {
        v
    }
    fn exp(self) -> f64 {
        f64::exp(self)
    }
    fn clamp_to(self, lo: f64, hi: f64) -> f64 {
        self.clamp(lo, hi)
    }
}

/// Elements per rayon task: a few ns each.
const MIN_TASK: usize = 4096;

/// `elementwise!((a: &[T], …) |a, …, out| body)`: a fresh output filled by the kernel
/// `body` over blocks of [`MIN_TASK`] elements of the inputs in parallel, compiled for
/// AVX-512F or AVX2 with FMA where [`crate::simd::Isa::current`] allows (the same values:
/// every operation rounds once).
macro_rules! elementwise {
    (($($arg:ident: &[T]),*) $body:expr) => {{
        #[inline(always)]
        fn plain<T: SeluReal>($($arg: &[T],)* out: &mut [T]) {
            $body($($arg,)* out)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,fma")]
        unsafe fn avx512<T: SeluReal>($($arg: &[T],)* out: &mut [T]) {
            plain($($arg,)* out)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: SeluReal>($($arg: &[T],)* out: &mut [T]) {
            plain($($arg,)* out)
        }
        let n = [$($arg.len()),*][0];
        let isa = crate::simd::Isa::current();
        let mut out = vec![T::ZERO; n];
        out.par_chunks_mut(MIN_TASK).enumerate().for_each(|(i, out)| {
            let range = i * MIN_TASK..i * MIN_TASK + out.len();
            $(let $arg = &$arg[range.clone()];)*
            #[cfg(target_arch = "x86_64")]
            match isa {
                // SAFETY: the CPU has AVX-512F and FMA (part of the set it has).
                crate::simd::Isa::Avx512 => return unsafe { avx512($($arg,)* out) },
                // SAFETY: the CPU has AVX2 and FMA (as above).
                crate::simd::Isa::Avx2 => return unsafe { avx2($($arg,)* out) },
                crate::simd::Isa::Portable => {}
            }
            plain($($arg,)* out)
        });
        out
    }};
}

/// The composed form's forward pass per element, in its order of operations:
/// s = relu(x) + α·(exp(c) − 1) with c = clamp(x, L, 0), out = γ·s. Without branches:
/// both sides computed, one kept.
fn forward<T: SeluReal>(x: &[T]) -> Vec<T> {
    elementwise!((x: &[T]) |x: &[T], out: &mut [T]| {
        let (alpha, gamma, low) = (T::of(ALPHA), T::of(GAMMA), T::of(EXP_UNDERFLOW));
        let at_zero = (T::ZERO.exp() - T::ONE) * alpha;
        for (o, &x) in out.iter_mut().zip(x) {
            let negative = (x.clamp_to(low, T::ZERO).exp() - T::ONE) * alpha;
            *o = if x > T::ZERO { (x + at_zero) * gamma } else { (T::ZERO + negative) * gamma };
        }
    })
}

/// The composed form's backward pass per element: g·γ into both branches; relu's passes
/// where x > 0, the exponential's is ((g·γ)·α)·exp(x) where the clamp passes (L ≤ x ≤ 0)
/// and 0 elsewhere; the two added.
fn backward<T: SeluReal>(x: &[T], g: &[T]) -> Vec<T> {
    elementwise!((x: &[T], g: &[T]) |x: &[T], g: &[T], out: &mut [T]| {
        let (alpha, gamma, low) = (T::of(ALPHA), T::of(GAMMA), T::of(EXP_UNDERFLOW));
        for ((o, &x), &g) in out.iter_mut().zip(x).zip(g) {
            let through = g * gamma;
            let relu = if x > T::ZERO { through } else { T::ZERO };
            let e = x.clamp_to(low, T::ZERO).exp();
            let exponential = if x > T::ZERO || x < low { T::ZERO } else { through * alpha * e };
            *o = relu + exponential;
        }
    })
}

impl SeluOps for Flex {
    fn selu(x: FlexTensor) -> FlexTensor {
        let x = contiguous(&x);
        let shape = x.shape();
        let out = match x.dtype() {
            DType::F32 => TensorData::new(forward(x.as_slice::<f32>().expect("f32")), shape),
            DType::F64 => TensorData::new(forward(x.as_slice::<f64>().expect("f64")), shape),
            other => panic!("SELU runs in f32 or f64, not {other:?}"),
        };
        FlexTensor::from_data(out)
    }

    fn selu_backward(x: FlexTensor, g: FlexTensor) -> FlexTensor {
        let (x, g) = (contiguous(&x), contiguous(&g));
        assert_eq!(x.shape(), g.shape(), "SELU's gradient has the input's shape");
        let shape = x.shape();
        let out = match x.dtype() {
            DType::F32 => TensorData::new(backward(x.as_slice::<f32>().expect("f32"), g.as_slice::<f32>().expect("f32")), shape),
            DType::F64 => TensorData::new(backward(x.as_slice::<f64>().expect("f64"), g.as_slice::<f64>().expect("f64")), shape),
            other => panic!("SELU runs in f32 or f64, not {other:?}"),
        };
        FlexTensor::from_data(out)
    }
}

impl<B: Backend + SeluOps, C: CheckpointStrategy> SeluOps for Autodiff<B, C> {
    fn selu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        /// d out / d x from the input, kept as the state.
        #[derive(Debug)]
        struct Selu;

        impl<B: Backend + SeluOps> Backward<B, 1> for Selu {
            type State = FloatTensor<B>;

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
                let x = ops.state;
                unary::<B, _>(ops.parents, ops.node, grads, |grad| B::selu_backward(x, grad));
            }
        }

        let (x, node) = x.into_parts();
        match Selu.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(x.clone(), B::selu(x)),
            OpsKind::UnTracked(prep) => prep.finish(B::selu(x)),
        }
    }

    fn selu_backward(x: FloatTensor<Self>, g: FloatTensor<Self>) -> FloatTensor<Self> {
        let _ = (x, g);
        panic!("selu_backward is not differentiable: it is called only inside backward passes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::expf::tests::libm_is_glibcs_fma_variant;
    use crate::model::tests::support::{cpu, random_values};
    use burn::tensor::TensorCreationOptions;

    /// Inputs of every kind the branches tell apart: far below L, at and around L, the
    /// range where exp − 1 rounds to −1, ordinary negatives, ±0, positives large and
    /// small; then uniform ones at three scales.
    fn inputs() -> Vec<f64> {
        let mut v = vec![-1e4, -1500.0, EXP_UNDERFLOW - 0.5, EXP_UNDERFLOW, EXP_UNDERFLOW + 1e-4, -103.9, -90.0, -20.0, -17.3];
        v.extend([-2.0, -0.5, -1e-7, -0.0, 0.0, 1e-7, 0.3, 2.0, 88.0, 1e4]);
        for scale in [1.0, 30.0, 2000.0] {
            v.extend(random_values(9, 5000).into_iter().map(|x| x * scale));
        }
        v.truncate(v.len() / 7 * 7);
        v
    }

    /// The fused op against the composed form, in f32 and f64: the same outputs and the
    /// same input gradients, bit for bit (with a random output gradient), tracked or not.
    /// In f32 the composed form's `exp` is libm's: bit for bit where that is glibc's FMA
    /// variant, else within 4 ulps (an `exp` an ulp apart, through two products).
    #[test]
    fn fused_selu_equals_the_composed_form_bit_for_bit() {
        let v = inputs();
        let n = v.len();
        let dy = random_values(10, n);
        for dtype in [DType::F32, DType::F64] {
            let ad = TensorCreationOptions::new(cpu().autodiff()).with_dtype(dtype);
            let bits = |t: Tensor<2>| -> Vec<u64> {
                match dtype {
                    DType::F32 => t.into_data().try_to_vec::<f32>().unwrap().into_iter().map(|x| u64::from(x.to_bits())).collect(),
                    _ => t.into_data().try_to_vec::<f64>().unwrap().into_iter().map(f64::to_bits).collect(),
                }
            };
            let run = |fused: bool| {
                let x = Tensor::<2>::from_data(TensorData::new(v.clone(), [n / 7, 7]).convert_dtype(dtype), ad.clone()).require_grad();
                let y = if fused { Activation::Selu.apply(x.clone()) } else { selu_composed(x.clone()) };
                let g = Tensor::<2>::from_data(TensorData::new(dy.clone(), [n / 7, 7]).convert_dtype(dtype), ad.clone());
                let grads = (y.clone() * g).sum().backward();
                (bits(y.inner()), bits(x.grad(&grads).unwrap()))
            };
            let (fused, composed) = (run(true), run(false));
            let ulps = if dtype == DType::F32 && !libm_is_glibcs_fma_variant() { 4 } else { 0 };
            let differ = |a: &[u64], b: &[u64]| a.iter().zip(b).filter(|(a, b)| a.abs_diff(**b) > ulps).count();
            assert_eq!(differ(&fused.0, &composed.0), 0, "{dtype:?}: outputs differ");
            assert_eq!(differ(&fused.1, &composed.1), 0, "{dtype:?}: gradients differ");
            // Untracked (evaluation): the same values.
            let x = Tensor::<2>::from_data(TensorData::new(v.clone(), [n / 7, 7]).convert_dtype(dtype), ad.clone());
            assert_eq!(bits(Activation::Selu.apply(x).inner()), fused.0);
        }
    }

    /// The fused kernels give the same bits on every instruction set this CPU can run
    /// (the test above checks the best one against the composed form).
    #[test]
    fn selu_kernels_agree_on_every_instruction_set() {
        let v = inputs();
        let g = random_values(10, v.len());
        let (v32, g32): (Vec<f32>, Vec<f32>) = (v.iter().map(|&x| x as f32).collect(), g.iter().map(|&x| x as f32).collect());
        let runs = crate::simd::on_each_isa(|_| {
            let mut b: Vec<u64> = forward(&v).into_iter().chain(backward(&v, &g)).map(f64::to_bits).collect();
            b.extend(forward(&v32).into_iter().chain(backward(&v32, &g32)).map(|x| u64::from(x.to_bits())));
            b
        });
        for (isa, b) in &runs[1..] {
            assert!(b == &runs[0].1, "{isa:?} differs from {:?}", runs[0].0);
        }
    }
}
