//! Dense products on the CPU backend (burn-flex): the first layer's with a dense feature
//! matrix, with a backward pass that computes only what training needs, and every hidden
//! layer's X·W through the same gemm call as burn-flex's but into an output of our own
//! ([`flex_matmul`]).
//!
//! Node features are constants: the gradient of X·W goes to W alone, as Xᵀ·G. For a
//! narrow layer (16 columns on 20 000 × 500 features) gemm runs that product, whose
//! output is only d × 16, on one thread and at half the speed of the forward X·W, which
//! reads the same 40 MB. The kernel here streams X once, in fixed blocks of rows whose
//! partial sums (each summed in row order, kept in cache) run in parallel and are then
//! added in block order: the result is the same to the last bit whatever the number of
//! threads. 2 threads, 20 000 × 500 → 16: 2.4–2.9 ms against gemm's 3.4–3.8 ms (forward:
//! 1.6–1.8 ms); → 32: 3.8–4.1 against 4.4–4.7 ms; from 64 columns on gemm is faster,
//! and wider products go to it.

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Tensor, TensorData};
use rayon::prelude::*;

/// Output widths up to this many columns take [`transposed_product`]; wider ones gemm
/// (measured at 16, 32, 64 and 128 columns: the kernel wins up to 32).
pub const NARROW: usize = 32;

/// The extension: natively on burn-flex and, with its backward pass, on autodiff over
/// it. Other backends never call it (see [`super::Strategy`]).
#[backend_extension(Flex, Autodiff)]
pub trait DenseOps: Backend {
    /// `x·w` (`[N, d]`·`[d, c]`). When `x` needs no gradient, the backward pass gives `w`
    /// the gradient `xᵀ·g` from [`transposed_matmul`](DenseOps::transposed_matmul);
    /// otherwise both sides get Burn's matmul gradients, bit for bit.
    fn input_matmul(x: FloatTensor<Self>, w: FloatTensor<Self>) -> FloatTensor<Self>;

    /// `xᵀ·g`: `[N, d]`, `[N, c]` → `[d, c]`.
    fn transposed_matmul(x: FloatTensor<Self>, g: FloatTensor<Self>) -> FloatTensor<Self>;
}

/// [`DenseOps::input_matmul`] on dispatch tensors.
pub fn input_matmul(x: Tensor<2>, w: Tensor<2>) -> Tensor<2> {
    Tensor::from_dispatch(Dispatch::input_matmul(x.into_dispatch(), w.into_dispatch()))
}

/// Rows of `x` per partial sum. Fixed, so that the result does not depend on the number
/// of threads: partial sums over consecutive blocks of this many rows are computed in
/// parallel, then added in block order.
const BLOCK_ROWS: usize = 1024;

/// `xᵀ·g`: each block of [`BLOCK_ROWS`] rows streams through once (rows read whole, in
/// order) into a partial `[d, c]` sum that stays in cache; the partials are added in
/// block order.
fn transposed_product<T>(x: &[T], d: usize, g: &[T], c: usize) -> Vec<T>
where
    T: Copy + Default + Send + Sync + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let n = x.len().checked_div(d).unwrap_or(0);
    if n == 0 || c == 0 {
        return vec![T::default(); d * c];
    }
    let partial = |block: usize| {
        let rows = block * BLOCK_ROWS..((block + 1) * BLOCK_ROWS).min(n);
        let (x, g) = (&x[rows.start * d..rows.end * d], &g[rows.start * c..rows.end * c]);
        let mut out = vec![T::default(); d * c];
        #[cfg(target_arch = "x86_64")]
        match crate::simd::Isa::current() {
            // SAFETY: the CPU has AVX-512F (part of the set it has).
            crate::simd::Isa::Avx512 => unsafe { rows_avx512(x, d, g, c, &mut out) },
            // SAFETY: the CPU has AVX2 (as above).
            crate::simd::Isa::Avx2 => unsafe { rows_avx2(x, d, g, c, &mut out) },
            crate::simd::Isa::Portable => add_rows(x, d, g, c, &mut out),
        }
        #[cfg(not(target_arch = "x86_64"))]
        add_rows(x, d, g, c, &mut out);
        out
    };
    let partials: Vec<Vec<T>> = (0..n.div_ceil(BLOCK_ROWS)).into_par_iter().map(partial).collect();
    let mut partials = partials.into_iter();
    let mut out = partials.next().expect("at least one block");
    for p in partials {
        for (o, v) in out.iter_mut().zip(p) {
            *o = *o + v;
        }
    }
    out
}

/// Rows of `x` added per pass over the output (each row still added in turn).
const ROWS: usize = 4;

/// Output columns summed together in registers.
const LANES: usize = 16;

/// `out += xᵀ·g` over the rows of `x`, in row order for every entry. No fused
/// multiply-add (it rounds differently, and results must not depend on the CPU model).
#[inline(always)]
fn add_rows<T>(x: &[T], d: usize, g: &[T], c: usize, out: &mut [T])
where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let n = x.len() / d;
    let lanes = c / LANES * LANES;
    let mut r = 0;
    while r + ROWS <= n {
        let gs: [&[T]; ROWS] = std::array::from_fn(|i| &g[(r + i) * c..(r + i + 1) * c]);
        let xs: [&[T]; ROWS] = std::array::from_fn(|i| &x[(r + i) * d..(r + i + 1) * d]);
        // Rows 16 ahead, fetched a cache line at a time while this block is summed: four
        // interleaved row streams are more than the hardware prefetcher follows. Measured
        // on a loaded machine (another tenant using memory bandwidth), the kernel took
        // 2.8× the forward product's time with 8 rows a block fetched one block ahead,
        // 1.4× with this (4 rows, 4 blocks ahead; 8 blocks ahead: 1.6×).
        let ahead = x.get((r + 4 * ROWS) * d..((r + 5 * ROWS) * d).min(x.len())).unwrap_or(&[]);
        for (j, acc) in out.chunks_exact_mut(c).enumerate() {
            if j % (64 / size_of::<T>()) == 0 {
                for i in 0..ROWS {
                    prefetch(ahead.get(i * d + j));
                }
            }
            let v: [T; ROWS] = std::array::from_fn(|i| xs[i][j]);
            let (head, tail) = acc.split_at_mut(lanes);
            for (q, a) in head.chunks_exact_mut(LANES).enumerate() {
                let a: &mut [T; LANES] = a.try_into().expect("a full block");
                let gq: [&[T; LANES]; ROWS] = std::array::from_fn(|i| gs[i][q * LANES..(q + 1) * LANES].try_into().expect("a full block"));
                let mut s = *a;
                for i in 0..ROWS {
                    for l in 0..LANES {
                        s[l] = s[l] + v[i] * gq[i][l];
                    }
                }
                *a = s;
            }
            for (k, a) in tail.iter_mut().enumerate() {
                let mut s = *a;
                for i in 0..ROWS {
                    s = s + v[i] * gs[i][lanes + k];
                }
                *a = s;
            }
        }
        r += ROWS;
    }
    for r in r..n {
        let (gr, xr) = (&g[r * c..(r + 1) * c], &x[r * d..(r + 1) * d]);
        for (acc, &v) in out.chunks_exact_mut(c).zip(xr) {
            for (a, &gk) in acc.iter_mut().zip(gr) {
                *a = *a + v * gk;
            }
        }
    }
}

/// A hint to bring `at`'s cache line into L1 (nothing when `None` or off x86-64).
#[inline(always)]
fn prefetch<T>(at: Option<&T>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(p) = at {
        // SAFETY: a prefetch never faults and `p` is a valid reference.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((p as *const T).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn rows_avx512<T>(x: &[T], d: usize, g: &[T], c: usize, out: &mut [T])
where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    add_rows(x, d, g, c, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2<T>(x: &[T], d: usize, g: &[T], c: usize, out: &mut [T])
where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    add_rows(x, d, g, c, out)
}

fn dims2(x: &FlexTensor) -> [usize; 2] {
    let shape = x.shape();
    assert_eq!(shape.num_dims(), 2, "dense products take 2-d tensors, got shape {shape:?}");
    [shape[0], shape[1]]
}

/// burn-flex's 2-d product (`matmul_2d_strided` in 0.22.1: the same `gemm::gemm` call,
/// strides as the layouts give them, α = 0, β = 1, its parallelism rule), into an output
/// allocated as a vector: `FlexTensor::empty` zero-fills a byte vector and copies it into
/// an aligned allocation, ≈ 3 % of an RGNN run for the 2.9 MB weight gradient. The same
/// products, so the same bits; other dtypes go to burn-flex.
fn flex_matmul(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    match lhs.dtype() {
        DType::F32 if rhs.dtype() == DType::F32 => gemm_2d::<f32>(&lhs, &rhs, 0.0, 1.0),
        DType::F64 if rhs.dtype() == DType::F64 => gemm_2d::<f64>(&lhs, &rhs, 0.0, 1.0),
        _ => <Flex as burn::backend::ops::FloatTensorOps<Flex>>::float_matmul(lhs, rhs),
    }
}

/// burn-flex's `PARALLEL_THRESHOLD`: from m·n·k = 192³ on, gemm on every thread of the pool.
const GEMM_PARALLEL_FROM: usize = 192 * 192 * 192;

fn gemm_2d<T: burn::tensor::Element + bytemuck::Pod>(lhs: &FlexTensor, rhs: &FlexTensor, zero: T, one: T) -> FlexTensor {
    let ([m, k], [k2, n]) = (dims2(lhs), dims2(rhs));
    assert_eq!(k, k2, "matmul: inner dimensions must match");
    let strides = |t: &FlexTensor| (t.layout().strides()[0], t.layout().strides()[1]);
    let ((lhs_rs, lhs_cs), (rhs_rs, rhs_cs)) = (strides(lhs), strides(rhs));
    let lhs_ptr = lhs.storage::<T>()[lhs.layout().start_offset()..].as_ptr();
    let rhs_ptr = rhs.storage::<T>()[rhs.layout().start_offset()..].as_ptr();
    let mut out = vec![zero; m * n];
    let parallelism =
        if m.saturating_mul(n).saturating_mul(k) >= GEMM_PARALLEL_FROM { gemm::Parallelism::Rayon(0) } else { gemm::Parallelism::None };
    // SAFETY: the pointers and strides are the layouts' own (every element they reach lies
    // in its storage, as burn-flex's call relies on), `out` holds m × n row-major values.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            lhs_ptr,
            lhs_cs,
            lhs_rs,
            rhs_ptr,
            rhs_cs,
            rhs_rs,
            zero,
            one,
            false,
            false,
            false,
            parallelism,
        );
    }
    FlexTensor::from_data(TensorData::new(out, [m, n]))
}

impl DenseOps for Flex {
    fn input_matmul(x: FlexTensor, w: FlexTensor) -> FlexTensor {
        flex_matmul(x, w)
    }

    fn transposed_matmul(x: FlexTensor, g: FlexTensor) -> FlexTensor {
        let ([n, d], [n2, c]) = (dims2(&x), dims2(&g));
        assert_eq!(n, n2, "xᵀ·g: x has {n} rows, g {n2}");
        if c > NARROW {
            let xt = <Flex as burn::backend::ops::FloatTensorOps<Flex>>::float_transpose(x);
            return flex_matmul(xt, g);
        }
        let (x, g) = (super::spmm::contiguous(&x), super::spmm::contiguous(&g));
        match x.dtype() {
            DType::F32 => {
                let out = transposed_product(x.as_slice::<f32>().expect("f32"), d, g.as_slice::<f32>().expect("f32"), c);
                FlexTensor::from_data(TensorData::new(out, [d, c]))
            }
            DType::F64 => {
                let out = transposed_product(x.as_slice::<f64>().expect("f64"), d, g.as_slice::<f64>().expect("f64"), c);
                FlexTensor::from_data(TensorData::new(out, [d, c]))
            }
            other => panic!("dense products run in f32 or f64, not {other:?}"),
        }
    }
}

impl<B: Backend + DenseOps, C: CheckpointStrategy> DenseOps for Autodiff<B, C> {
    fn input_matmul(x: FloatTensor<Self>, w: FloatTensor<Self>) -> FloatTensor<Self> {
        /// d/dw = xᵀ·g; x is a constant.
        #[derive(Debug)]
        struct InputMatmul;

        impl<B: Backend + DenseOps> Backward<B, 1> for InputMatmul {
            type State = FloatTensor<B>;

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
                let grad = grads.consume::<B>(&ops.node);
                if let [Some(node)] = ops.parents {
                    grads.register::<B>(node.id, B::transposed_matmul(ops.state, grad));
                }
            }
        }

        if x.is_tracked() {
            // An input that needs a gradient itself (a hidden layer's output, a gradient
            // check): both sides differentiable.
            return matmul_both::<B, C>(x, w);
        }
        let x = x.into_primitive();
        let (w, node) = w.into_parts();
        match InputMatmul.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(x.clone(), B::input_matmul(x, w)),
            OpsKind::UnTracked(prep) => prep.finish(B::input_matmul(x, w)),
        }
    }

    fn transposed_matmul(x: FloatTensor<Self>, g: FloatTensor<Self>) -> FloatTensor<Self> {
        let _ = (x, g);
        panic!("transposed_matmul is not differentiable: it is called only inside backward passes")
    }
}

/// `x·w` with both sides differentiable: burn-autodiff's `Matmul` (gradients g·wᵀ and
/// xᵀ·g, each side's partner kept only when the other needs a gradient), its products
/// taken by `B::input_matmul` — on burn-flex [`flex_matmul`], burn-flex's own gemm call
/// into an output of ours, so the same bits without `FlexTensor::empty`'s zero-fill and
/// copy (≈ 4.6 % of a plain EC-LDA run, whose hidden layers all come here).
fn matmul_both<B: Backend + DenseOps, C: CheckpointStrategy>(
    x: FloatTensor<Autodiff<B, C>>,
    w: FloatTensor<Autodiff<B, C>>,
) -> FloatTensor<Autodiff<B, C>> {
    #[derive(Debug)]
    struct Matmul;

    impl<B: Backend + DenseOps> Backward<B, 2> for Matmul {
        /// (x when w needs a gradient, w when x does).
        type State = (Option<FloatTensor<B>>, Option<FloatTensor<B>>);

        fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
            let grad = grads.consume::<B>(&ops.node);
            let (x, w) = ops.state;
            let [x_node, w_node] = ops.parents;
            if let (Some(node), Some(w)) = (x_node, w) {
                grads.register::<B>(node.id, B::input_matmul(grad.clone(), B::float_transpose(w)));
            }
            if let (Some(node), Some(x)) = (w_node, x) {
                grads.register::<B>(node.id, B::input_matmul(B::float_transpose(x), grad));
            }
        }
    }

    let (x_tracked, w_tracked) = (x.is_tracked(), w.is_tracked());
    let (x, x_node) = x.into_parts();
    let (w, w_node) = w.into_parts();
    match Matmul.prepare::<C>([x_node, w_node]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let state = (w_tracked.then(|| x.clone()), x_tracked.then(|| w.clone()));
            prep.finish(state, B::input_matmul(x, w))
        }
        OpsKind::UnTracked(prep) => prep.finish(B::input_matmul(x, w)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::support::{f64_ad, f64_cpu, random_values, tensor, values};

    /// [`flex_matmul`] is burn-flex's product bit for bit: f32 and f64, a row-major and a
    /// transposed (strided) left side, below and above gemm's parallel threshold.
    #[test]
    fn flex_matmul_is_burn_flexs_product_bit_for_bit() {
        for (m, k, n) in [(7, 13, 5), (271, 300, 64), (300, 271, 200)] {
            for dtype in [DType::F32, DType::F64] {
                let flex = |v: Vec<f64>, shape: [usize; 2]| FlexTensor::from_data(TensorData::new(v, shape).convert_dtype(dtype));
                let (a, b) = (flex(random_values(1, m * k), [m, k]), flex(random_values(2, k * n), [k, n]));
                let at = <Flex as burn::backend::ops::FloatTensorOps<Flex>>::float_transpose(flex(random_values(3, m * k), [k, m]));
                for lhs in [a, at] {
                    let want = <Flex as burn::backend::ops::FloatTensorOps<Flex>>::float_matmul(lhs.clone(), b.clone()).into_data();
                    let got = flex_matmul(lhs, b.clone()).into_data();
                    assert!(got.as_bytes() == want.as_bytes(), "{m} × {k} × {n}, {dtype:?}");
                }
            }
        }
    }

    /// The weight gradient through [`input_matmul`] against Burn's own matmul backward, for
    /// a narrow product (the kernel, several row blocks) and a wide one (gemm); an input
    /// that needs a gradient gets one (both sides differentiable).
    #[test]
    fn input_matmul_gradients_match_the_ordinary_product() {
        let (n, d) = (2 * BLOCK_ROWS + 77, 40);
        let x = tensor(random_values(1, n * d), [n, d], &f64_cpu());
        for c in [3, 16, 2 * NARROW] {
            let w0 = random_values(2, d * c);
            let dy = tensor(random_values(3, n * c), [n, c], &f64_ad());
            let grad_w = |ours: bool| {
                let w = tensor(w0.clone(), [d, c], &f64_ad()).require_grad();
                let xa = Tensor::<2>::from_inner(x.clone());
                let y = if ours { input_matmul(x.clone(), w.clone()) } else { xa.matmul(w.clone()) };
                let grads = (y * dy.clone()).sum().backward();
                (values(w.grad(&grads).unwrap()), values(w.clone().inner()))
            };
            let ((ours, _), (theirs, _)) = (grad_w(true), grad_w(false));
            let err = ours.iter().zip(&theirs).map(|(a, b)| (a - b).abs() / b.abs().max(1.0)).fold(0.0, f64::max);
            assert!(err < 1e-12, "{c} columns: gradients differ by {err:e}");
        }
        let leaf = tensor(random_values(4, 6 * 3), [6, 3], &f64_ad()).require_grad();
        let w = tensor(random_values(5, 3 * 2), [3, 2], &f64_ad());
        let grads = input_matmul(leaf.clone(), w).sum().backward();
        assert!(leaf.grad(&grads).is_some(), "an input that needs a gradient gets one");
    }

    /// With an input that needs a gradient (a hidden layer's), [`input_matmul`] is Burn's
    /// matmul bit for bit — the product and both gradients, f32 and f64, below and above
    /// gemm's parallel threshold, and with only the input differentiable.
    #[test]
    fn tracked_input_matmul_is_burns_matmul_bit_for_bit() {
        use crate::model::tests::support::{bits, cpu};
        for dtype in [DType::F32, DType::F64] {
            let ad = burn::tensor::TensorCreationOptions::new(cpu().autodiff()).with_dtype(dtype);
            for (m, k, n) in [(9, 13, 5), (271, 300, 64)] {
                for w_grad in [true, false] {
                    let run = |ours: bool| {
                        let x0 = tensor(random_values(1, m * k), [m, k], &ad).require_grad();
                        // A hidden layer's input: the output of an earlier operation.
                        let x = x0.clone().mul_scalar(0.5);
                        let w = tensor(random_values(2, k * n), [k, n], &ad);
                        let w = if w_grad { w.require_grad() } else { w };
                        let dy = tensor(random_values(3, m * n), [m, n], &ad);
                        let y = if ours { input_matmul(x, w.clone()) } else { x.matmul(w.clone()) };
                        let grads = (y.clone() * dy).sum().backward();
                        let gw = w.grad(&grads).map(bits);
                        (bits(y.inner()), bits(x0.grad(&grads).expect("x's gradient")), gw)
                    };
                    assert!(run(true) == run(false), "{dtype:?}, {m} × {k} × {n}, w differentiable {w_grad}");
                }
            }
        }
    }

    #[test]
    fn transposed_product_matches_the_definition_and_any_thread_count() {
        let (n, d, c) = (2 * BLOCK_ROWS + 37, 50, 21);
        let definition = |x: &[f64], g: &[f64]| {
            let mut want = vec![0.0; d * c];
            for j in 0..d {
                for k in 0..c {
                    want[j * c + k] = (0..n).map(|r| x[r * d + j] * g[r * c + k]).sum::<f64>();
                }
            }
            want
        };
        let with = |threads: usize, x: &[f64], g: &[f64]| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| transposed_product(x, d, g, c))
        };
        // Small integers: every partial sum is exact, so any order gives the definition.
        let x: Vec<f64> = (0..n * d).map(|i| ((i * 7919) % 11) as f64 - 5.0).collect();
        let g: Vec<f64> = (0..n * c).map(|i| ((i * 104_729) % 7) as f64 - 3.0).collect();
        assert_eq!(with(1, &x, &g), definition(&x, &g));
        // Reals: the blocks' partial sums are added in a fixed order, whatever the threads.
        let (x, g) = (random_values(6, n * d), random_values(7, n * c));
        let one = with(1, &x, &g);
        assert_eq!(with(2, &x, &g), one);
        assert_eq!(with(3, &x, &g), one);
        let want = definition(&x, &g);
        assert!(one.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-9), "close to the definition");
    }
}
