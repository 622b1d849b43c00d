//! `rgnn`: the RGNN pipeline of Bhaila et al. ("Local differential privacy in graph
//! neural networks: a reconstruction approach"), on each client's own data, once before
//! round 1:
//!
//! 1. **GRR-FS** on the (discrete) features: each node samples m of its d features;
//!    a sampled one goes through generalized RR over its own domain (γ_j per *feature*),
//!    an unsampled one is replaced by a uniform draw from its domain
//!    ([`crate::privacy::grr_fs`]). ε_x is per feature; a node spends m·ε_x.
//! 2. **fX** (Kx ≥ 1): per feature, the one-hot reports are averaged Kx times over
//!    {v} ∪ N(v), and the unbiased frequency estimator turns the local shares into π̃;
//!    the new feature is π̃ of value 1 for a binary feature, the arg-max value otherwise.
//! 3. **Labels**: k-ary RR (ε_y) on the train and validation labels.
//! 4. **LLP bags** (`clusters` > 0): a balanced k-way METIS partition of the client's
//!    graph; per bag, the noisy label proportion of its train nodes, de-biased once with
//!    P⁻¹ (clamped at 1e-5, renormalised).
//! 5. **fY** (Ky ≥ 1): the noisy one-hot labels of train and validation nodes (other
//!    rows zero) are averaged Ky times over {v} ∪ N(v), multiplied by P⁻¹, clamped at
//!    1e-5, renormalised; the arg-max replaces the train and validation labels.
//!
//! Training loss: CE(ŷ, ỹ) + α · mean_r KL(b̃_r ‖ b̂_r), b̂_r the mean predicted class
//! distribution over bag r's train nodes. Pair it with `train.selection: val-acc`
//! (the paper selects the epoch of best validation accuracy).
//!
//! Where we differ from the released code (karuna-bhaila/RGNN, REFERENCE §1.2), on
//! purpose: γ is taken per feature (the code takes a per-node maximum); the bag
//! proportions come from the noisy labels and are de-biased once (the code de-biases
//! labels that fY already reconstructed, a second time); cross-entropy is applied to
//! the logits (the code applies it to softmax outputs, a double softmax). See
//! `docs/ldp-graphs.md`.
//!
//! Privacy: (m·ε_x + ε_y)-LDP per node by sequential composition; the paper's tighter
//! figure for the features, ε_X = ln(1 + (m/d)(e^{m·ε_x} − 1)), is stated beside it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use burn::tensor::activation::softmax;
use burn::tensor::{Int, Tensor, TensorData};
use rand::Rng as _;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::ldp_labels::RandomizeLabels;
use crate::data::{DenseMatrix, Features, Graph, Role};
use crate::error::{Error, Result};
use crate::fed::{ClientContext, DataTransform, Defense, LossTransform};
use crate::model::{Output, add_rows, select_rows};
use crate::partition::kway::balanced_kway;
use crate::privacy::grr_fs::GrrFs;
use crate::privacy::{Epsilon, PrivacyCost};
use crate::rng::Rng;
use crate::train::{ClientTensors, LocalData, Loss};

fn hops() -> usize {
    16
}
fn clusters() -> usize {
    16
}
fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RgnnConfig {
    /// ε per feature of GRR; `.inf`: truthful reports — the features as they are with
    /// `kx: 0`, else still smoothed by fX (the pipeline without noise; set m = d).
    pub epsilon_x: Epsilon,
    /// Features each node reports through GRR (1 ≤ m ≤ d); the others are uniform
    /// noise. Absent: all d (the released code's default).
    #[serde(default)]
    pub m: Option<usize>,
    /// ε of randomized response per label; `.inf`: clean labels (still smoothed by fY
    /// when `ky` ≥ 1: the pipeline without noise).
    pub epsilon_y: Epsilon,
    /// Feature reconstruction hops (0: train on the reports as they are).
    #[serde(default = "hops")]
    pub kx: usize,
    /// Label reconstruction hops (0: train on the noisy labels as they are).
    #[serde(default = "hops")]
    pub ky: usize,
    /// γ, the number of values of every feature (≥ 2). Absent: per feature, one more
    /// than its largest value in the client's data, at least 2.
    #[serde(default)]
    pub domain_size: Option<u32>,
    /// METIS bags of the LLP regulariser (0: no regulariser).
    #[serde(default = "clusters")]
    pub clusters: usize,
    /// Weight α of the LLP term.
    #[serde(default = "one")]
    pub alpha: f64,
    /// Train as the released code does where it departs from the paper: cross-entropy
    /// on softmax outputs (a second softmax: a flatter loss) and LLP bag proportions
    /// taken from the fY-reconstructed labels and de-biased with P⁻¹ a second time.
    /// Default `false`: the paper's loss.
    #[serde(default)]
    pub as_published: bool,
}

impl super::DefenseConfig for RgnnConfig {
    fn cost(&self, run: &super::RunSize) -> super::CostHint {
        // The reconstructed features are dense frequency estimates (the time model's gemm
        // term; Cora, EC-LDA's GCN, 20 rounds, one thread: 15.7 s, plain 3.4 s). The LLP
        // loss over METIS bags costs per node and epoch: ≈ 175 ns on the AVX-512 host
        // (reproduce rgnn's federated cell, SAGE 2 × 16, 5 000 client-epochs of ≈ 270
        // nodes: 1.00 s with 16 bags, 0.76 s without; centralized, 100 epochs: +0.045 s),
        // over its defenses' factor 0.46. The one-off reconstruction adds little.
        let loss = (self.clusters > 0 && self.alpha > 0.0) || self.as_published;
        super::CostHint { dense_features: true, seconds_per_epoch: if loss { 3.8e-7 * run.nodes } else { 0.0 }, ..Default::default() }
    }

    fn build(&self, name: &str, client: &ClientContext) -> Result<Defense> {
        let field = |f: &str| format!("defense `{name}`: {f}");
        if self.m == Some(0) {
            return Err(Error::param(field("m"), "must be at least 1 (features reported through GRR per node), got 0"));
        }
        crate::model::check_kprop_steps(&field("kx"), self.kx)?;
        crate::model::check_kprop_steps(&field("ky"), self.ky)?;
        if let Some(g) = self.domain_size.filter(|&g| g < 2) {
            return Err(Error::param(field("domain_size"), format!("{g}: generalized RR needs at least 2 values per feature")));
        }
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return Err(Error::param(field("alpha"), format!("{} is not allowed; allowed: a finite weight ≥ 0", self.alpha)));
        }
        let state = Arc::new(Rgnn { name: name.to_string(), cfg: self.clone(), client: client.client, bags: Mutex::new(None) });
        let d = Defense::new(name).with_data(state.clone());
        Ok(if (self.clusters > 0 && self.alpha > 0.0) || self.as_published { d.with_loss(state) } else { d })
    }
}

/// One client's instance: its config and the client's LLP bags, from the data transform
/// to the loss.
struct Rgnn {
    name: String,
    cfg: RgnnConfig,
    /// The client, for messages.
    client: usize,
    bags: Mutex<Option<Bags>>,
}

/// A client's LLP bags over its train nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Bags {
    /// (train node, bag) for every train node, bags numbered 0..R over the non-empty ones.
    pub members: Vec<(u32, u32)>,
    /// b̃_r, `R × classes` row-major.
    pub targets: Vec<f64>,
    pub classes: usize,
}

impl Rgnn {
    fn field(&self, f: &str) -> String {
        format!("defense `{}`: {f}", self.name)
    }

    fn grr(&self, values: &[u32], d: usize) -> Result<GrrFs> {
        let n = values.len().checked_div(d).unwrap_or(0);
        let domains: Vec<u32> = match self.cfg.domain_size {
            Some(g) => {
                if let Some(i) = values.iter().position(|&x| x >= g) {
                    return Err(Error::param(
                        self.field("domain_size"),
                        format!("feature {} of node {} has value {}, outside the domain 0..{g}", i % d, i / d, values[i]),
                    ));
                }
                vec![g; d]
            }
            None => (0..d).map(|j| (0..n).map(|r| values[r * d + j]).max().unwrap_or(0).max(1) + 1).collect(),
        };
        let m = self.cfg.m.unwrap_or(d);
        GrrFs::new(domains, m, self.cfg.epsilon_x).map_err(|e| match e {
            Error::Param { name, msg } => Error::param(self.field(&name), msg),
            other => other,
        })
    }
}

impl DataTransform for Rgnn {
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        let c = &self.cfg;
        let mut feature_note = String::from("node features as they are (ε_x = ∞)");
        let mut eps_x = f64::INFINITY;
        // ε_x = ∞ with Kx ≥ 1 keeps the pipeline with the noise removed: GRR reports
        // truthfully (with m = d, every feature) and fX still smooths the reports.
        if !c.epsilon_x.is_infinite() || c.kx > 0 {
            let d = data.features.cols();
            let values = discrete_values(&data.features).map_err(|msg| Error::param(self.field("epsilon_x"), msg))?;
            let grr = self.grr(&values, d)?;
            let mut reports = vec![0u32; values.len()];
            for (row, out) in values.chunks(d).zip(reports.chunks_mut(d)) {
                grr.perturb_row(row, rng, out);
            }
            data.features = Features::Dense(if c.kx > 0 {
                reconstruct_features(&data.graph, &grr, &reports, c.kx)
            } else {
                DenseMatrix { rows: values.len() / d.max(1), cols: d, data: reports.iter().map(|&x| x as f32).collect() }
            });
            eps_x = grr.node_epsilon();
            feature_note = if c.epsilon_x.is_infinite() {
                format!("node features reported truthfully ({} of {} features; the others uniform noise) and reconstructed over {} hops (ε_x = ∞)", grr.m(), grr.d(), c.kx)
            } else {
                format!(
                    "node features through GRR-FS ({} of {} features at ε_x = {} each: m·ε_x = {}; the RGNN paper's ε_X = {:.4}, which does not bound a whole row: two rows differing in every feature give e^(m·ε_x))",
                    grr.m(),
                    grr.d(),
                    c.epsilon_x.value(),
                    grr.node_epsilon(),
                    grr.paper_epsilon()
                )
            };
        }
        RandomizeLabels { epsilon: c.epsilon_y }.randomize(data, rng)?;
        let inverse = match &data.label_transition {
            Some(p) => Some(invert(p, data.classes).ok_or_else(|| Error::Other(format!("defense `{}`: the label transition matrix is singular", self.name)))?),
            None => None,
        };
        let bag_seed: u64 = rng.random();
        if c.clusters > 0 && c.alpha > 0.0 && !c.as_published {
            *self.bags.lock().expect("bags") = Some(self.bags(data, inverse.as_deref(), bag_seed)?);
        }
        if c.ky > 0 {
            // ε_y = ∞ (no transition): clean labels, still smoothed — the pipeline without noise.
            reconstruct_labels(data, inverse.as_deref(), c.ky);
            // The reconstructed labels relate to the true ones by no known matrix: a
            // later loss must not "correct" them with RR's.
            data.label_transition = None;
        }
        if c.clusters > 0 && c.alpha > 0.0 && c.as_published {
            // The code's order: bags of the reconstructed labels, de-biased again.
            *self.bags.lock().expect("bags") = Some(self.bags(data, inverse.as_deref(), bag_seed)?);
        }
        Ok(Some(PrivacyCost {
            protects: format!(
                "{feature_note} and the labels of train and validation nodes (RR, ε_y = {}): ε-LDP per node, ε = m·ε_x + ε_y",
                c.epsilon_y.value()
            ),
            epsilon: eps_x + c.epsilon_y.value(),
            delta: 0.0,
            ..Default::default()
        }))
    }
}

impl Rgnn {
    /// METIS bags of `data`'s graph and their de-biased noisy label proportions.
    fn bags(&self, data: &LocalData, inverse: Option<&[f64]>, seed: u64) -> Result<Bags> {
        let n = data.graph.num_nodes();
        if self.cfg.clusters > n {
            return Err(Error::param(
                self.field("clusters"),
                format!("{} bags for client {}, which holds {n} nodes; allowed: at most its node count", self.cfg.clusters, self.client),
            ));
        }
        if data.graph.is_directed() {
            return Err(Error::param(
                self.field("clusters"),
                "METIS bags need the undirected graph: list this defense before any that makes the graph directed (edge-ldp)",
            ));
        }
        let part = balanced_kway(&data.graph, self.cfg.clusters, seed)?;
        Ok(bag_targets(data, &part, inverse))
    }
}

/// Bags over the train nodes (`part`: the partition of all nodes) with b̃_r = clamp(b'_r
/// P⁻¹, 1e-5) renormalised, b'_r the share of each held label among bag r's train nodes.
pub fn bag_targets(data: &LocalData, part: &[u32], inverse: Option<&[f64]>) -> Bags {
    let k = data.classes;
    let mut counts: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for (v, (label, role)) in data.labels.iter().zip(&data.roles).enumerate() {
        if let (Some(y), Role::Train) = (label, role) {
            counts.entry(part[v]).or_insert_with(|| vec![0.0; k])[*y as usize] += 1.0;
        }
    }
    let renumber: BTreeMap<u32, u32> = counts.keys().enumerate().map(|(i, &b)| (b, i as u32)).collect();
    let mut targets = Vec::with_capacity(counts.len() * k);
    for c in counts.values() {
        let total: f64 = c.iter().sum();
        let share: Vec<f64> = c.iter().map(|x| x / total).collect();
        targets.extend(debias(&share, inverse));
    }
    let members = data.labelled_train_nodes().into_iter().map(|v| (v as u32, renumber[&part[v]])).collect();
    Bags { members, targets, classes: k }
}

/// λ P⁻¹ (λ a row vector), negatives clamped to 1e-5, renormalised to sum 1.
fn debias(lambda: &[f64], inverse: Option<&[f64]>) -> Vec<f64> {
    let k = lambda.len();
    let raw: Vec<f64> = match inverse {
        Some(inv) => (0..k).map(|j| (0..k).map(|i| lambda[i] * inv[i * k + j]).sum::<f64>().max(1e-5)).collect(),
        None => lambda.iter().map(|&x| x.max(1e-5)).collect(),
    };
    let total: f64 = raw.iter().sum();
    raw.iter().map(|x| x / total).collect()
}

/// The features as integer codes, `rows × cols` row-major; an error names the first value
/// that is not a non-negative integer.
fn discrete_values(f: &Features) -> std::result::Result<Vec<u32>, String> {
    let (n, d) = (f.rows(), f.cols());
    let mut out = vec![0u32; n * d];
    for r in 0..n {
        let mut bad = None;
        f.for_each_nonzero(r, |c, v| {
            if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f32 {
                out[r * d + c] = v as u32;
            } else if bad.is_none() {
                bad = Some((c, v));
            }
        });
        if let Some((c, v)) = bad {
            return Err(format!(
                "GRR-FS needs discrete features (integer codes 0, 1, …), but node {r} has {v} in column {c}; \
                 group and binarise real features first (dataset.preprocess.group_columns)"
            ));
        }
    }
    Ok(out)
}

/// `steps` rounds of x_v ← mean over {v} ∪ N(v) of x (rows of width `w`, row-major).
/// N(v) are the senders into v (the neighbours of an undirected graph).
pub fn mean_with_self_loops(graph: &Graph, x: &[f64], w: usize, steps: usize) -> Vec<f64> {
    let mut cur = x.to_vec();
    let mut next = vec![0.0; x.len()];
    for _ in 0..steps {
        next.par_chunks_mut(w.max(1)).enumerate().for_each(|(v, out)| {
            out.copy_from_slice(&cur[v * w..(v + 1) * w]);
            let nb = graph.neighbors(v);
            for &u in nb {
                for (o, &x) in out.iter_mut().zip(&cur[u as usize * w..(u as usize + 1) * w]) {
                    *o += x;
                }
            }
            let scale = 1.0 / (nb.len() + 1) as f64;
            out.iter_mut().for_each(|o| *o *= scale);
        });
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

/// fX: per feature, one-hot reports → `steps` rounds of mean over {v} ∪ N(v) → π̃; the
/// new value is π̃ of value 1 for a binary feature, the arg-max value otherwise.
pub fn reconstruct_features(graph: &Graph, grr: &GrrFs, reports: &[u32], steps: usize) -> DenseMatrix {
    let d = grr.d();
    let n = reports.len() / d.max(1);
    // Column offset of each feature's one-hot block.
    let mut offset = Vec::with_capacity(d + 1);
    offset.push(0usize);
    for j in 0..d {
        offset.push(offset[j] + grr.domain(j) as usize);
    }
    let w = offset[d];
    let mut onehot = vec![0.0; n * w];
    for v in 0..n {
        for j in 0..d {
            onehot[v * w + offset[j] + reports[v * d + j] as usize] = 1.0;
        }
    }
    let shares = mean_with_self_loops(graph, &onehot, w, steps);
    let mut out = DenseMatrix::zeros(n, d);
    out.data.par_chunks_mut(d.max(1)).enumerate().for_each(|(v, row)| {
        let mut pi = Vec::new();
        for (j, o) in row.iter_mut().enumerate() {
            let lambda = &shares[v * w + offset[j]..v * w + offset[j + 1]];
            pi.resize(lambda.len(), 0.0);
            grr.estimate(j, lambda, &mut pi);
            *o = if pi.len() == 2 { pi[1] as f32 } else { argmax(&pi) as f32 };
        }
    });
    out
}

/// fY: replace the train and validation labels by arg-max(clamp(λ P⁻¹, 1e-5)), λ the
/// `steps`-round mean over {v} ∪ N(v) of the one-hot held labels (other rows zero).
pub fn reconstruct_labels(data: &mut LocalData, inverse: Option<&[f64]>, steps: usize) {
    let k = data.classes;
    let y: Vec<f64> = data.held_one_hot().into_iter().map(f64::from).collect();
    let lambda = mean_with_self_loops(&data.graph, &y, k, steps);
    for (v, (label, role)) in data.labels.iter_mut().zip(&data.roles).enumerate() {
        if let (Some(y), Role::Train | Role::Val) = (label, role) {
            *y = argmax(&debias(&lambda[v * k..(v + 1) * k], inverse)) as u32;
        }
    }
}

/// First index of the largest value.
fn argmax(x: &[f64]) -> usize {
    x.iter().enumerate().fold(0, |best, (i, &v)| if v > x[best] { i } else { best })
}

/// The inverse of a k × k row-major matrix (Gauss–Jordan, partial pivoting); `None` if
/// singular.
pub fn invert(a: &[f64], k: usize) -> Option<Vec<f64>> {
    let mut m = a.to_vec();
    let mut inv: Vec<f64> = (0..k * k).map(|i| if i / k == i % k { 1.0 } else { 0.0 }).collect();
    for col in 0..k {
        let pivot = (col..k).max_by(|&i, &j| m[i * k + col].abs().total_cmp(&m[j * k + col].abs()))?;
        if m[pivot * k + col].abs() < 1e-12 {
            return None;
        }
        for c in 0..k {
            m.swap(col * k + c, pivot * k + c);
            inv.swap(col * k + c, pivot * k + c);
        }
        let p = m[col * k + col];
        for c in 0..k {
            m[col * k + c] /= p;
            inv[col * k + c] /= p;
        }
        for r in (0..k).filter(|&r| r != col) {
            let f = m[r * k + col];
            if f != 0.0 {
                for c in 0..k {
                    m[r * k + c] -= f * m[col * k + c];
                    inv[r * k + c] -= f * inv[col * k + c];
                }
            }
        }
    }
    Some(inv)
}

impl LossTransform for Rgnn {
    fn wrap(&self, _data: &LocalData, _tensors: &ClientTensors, inner: Box<dyn Loss>) -> Result<Box<dyn Loss>> {
        let inner: Box<dyn Loss> = if self.cfg.as_published { Box::new(DoubleSoftmaxCrossEntropy) } else { inner };
        let bags = self.bags.lock().expect("bags").clone();
        Ok(match bags {
            Some(bags) if !bags.members.is_empty() => Box::new(LlpLoss { inner, alpha: self.cfg.alpha, bags, tensors: OnceLock::new() }),
            _ => inner,
        })
    }
}

/// (members, bag of each member, 1/|bag| `[R, 1]`, b̃ `[R, C]`, Σ b̃ ln b̃), on the device.
type BagTensors = (Tensor<1, Int>, Tensor<1, Int>, Tensor<2>, Tensor<2>, f64);

/// The released code's classification loss: PyTorch's cross-entropy applied to
/// softmax outputs, −log softmax(softmax(z))_y — every class's input lies in [0, 1], so
/// the loss never falls below ln(1 + (k−1)/e) and its gradients stay small.
pub struct DoubleSoftmaxCrossEntropy;

impl Loss for DoubleSoftmaxCrossEntropy {
    fn loss(&self, out: &Output, data: &ClientTensors) -> Option<Tensor<1>> {
        data.train.index.as_ref().map(|(idx, y)| crate::train::cross_entropy(softmax(out.logits.clone(), 1), idx, y))
    }
}

/// CE (or the loss built so far) + α · mean_r KL(b̃_r ‖ b̂_r).
pub struct LlpLoss {
    inner: Box<dyn Loss>,
    alpha: f64,
    bags: Bags,
    tensors: OnceLock<BagTensors>,
}

impl LlpLoss {
    pub fn new(inner: Box<dyn Loss>, alpha: f64, bags: Bags) -> LlpLoss {
        LlpLoss { inner, alpha, bags, tensors: OnceLock::new() }
    }

    /// mean_r KL(b̃_r ‖ b̂_r) of the logits of every node.
    pub fn kl(&self, logits: &Tensor<2>) -> Tensor<1> {
        let (members, bag, inv_size, targets, entropy) = self.tensors.get_or_init(|| {
            let device = logits.device();
            let k = self.bags.classes;
            let r = self.bags.targets.len() / k;
            let nodes: Vec<i64> = self.bags.members.iter().map(|&(v, _)| i64::from(v)).collect();
            let of: Vec<i64> = self.bags.members.iter().map(|&(_, b)| i64::from(b)).collect();
            let mut size = vec![0f32; r];
            of.iter().for_each(|&b| size[b as usize] += 1.0);
            let inv: Vec<f32> = size.iter().map(|s| 1.0 / s).collect();
            let t: Vec<f32> = self.bags.targets.iter().map(|&x| x as f32).collect();
            let entropy = self.bags.targets.iter().map(|&x| x * x.ln()).sum::<f64>();
            (
                Tensor::from_data(TensorData::new(nodes.clone(), [nodes.len()]), &device),
                Tensor::from_data(TensorData::new(of, [nodes.len()]), &device),
                Tensor::from_data(TensorData::new(inv, [r, 1]), &device),
                Tensor::from_data(TensorData::new(t, [r, k]), &device),
                entropy,
            )
        });
        let [r, k] = targets.dims();
        let p = softmax(select_rows(logits.clone(), members), 1);
        let sums = add_rows(Tensor::<2>::zeros([r, k], &logits.device()), bag, p);
        let means = sums * inv_size.clone();
        // Σ b̃ (ln b̃ − ln b̂) / R (PyTorch's `kl_div(..., reduction='batchmean')`).
        let cross = (targets.clone() * means.clamp_min(1e-30).log()).sum();
        cross.neg().add_scalar(*entropy).div_scalar(r as f64)
    }
}

impl Loss for LlpLoss {
    fn loss(&self, out: &Output, data: &ClientTensors) -> Option<Tensor<1>> {
        let ce = self.inner.loss(out, data)?;
        Some(ce + self.kl(&out.logits).mul_scalar(self.alpha))
    }

    fn val_loss(&self, out: &Output, data: &ClientTensors) -> Option<f64> {
        self.inner.val_loss(out, data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

    /// Path 0–1–2 plus isolated 3: one and two rounds of mean with self loops by hand.
    #[test]
    fn mean_over_closed_neighbourhoods() {
        let (g, _) = Graph::from_edges(4, [(0, 1), (1, 2)], "t").unwrap();
        let x = [3.0, 0.0, 6.0, 1.0];
        assert_eq!(mean_with_self_loops(&g, &x, 1, 1), vec![1.5, 3.0, 3.0, 1.0]);
        // (1.5 + 3)/2, (1.5 + 3 + 3)/3, (3 + 3)/2, 1
        assert_eq!(mean_with_self_loops(&g, &x, 1, 2), vec![2.25, 2.5, 3.0, 1.0]);
    }

    #[test]
    fn inverse_of_the_rr_matrix() {
        // RR over 3 classes with p = 0.5, q = 0.25: P·P⁻¹ = I.
        let p = [0.5, 0.25, 0.25, 0.25, 0.5, 0.25, 0.25, 0.25, 0.5];
        let inv = invert(&p, 3).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                let prod: f64 = (0..3).map(|l| p[i * 3 + l] * inv[l * 3 + j]).sum();
                assert!((prod - f64::from(u8::from(i == j))).abs() < 1e-12);
            }
        }
        assert_eq!(invert(&[1.0, 2.0, 2.0, 4.0], 2), None);
    }

    fn local(labels: Vec<Option<u32>>, roles: Vec<Role>, edges: &[(usize, usize)]) -> LocalData {
        let n = labels.len();
        let (graph, _) = Graph::from_edges(n, edges.iter().copied(), "t").unwrap();
        LocalData { graph, features: Features::Dense(DenseMatrix::zeros(n, 1)), labels, roles, classes: 2, label_transition: None, feature_kprop: 0, link: None }
    }

    /// Star 0–{1, 2, 3}; train 0, 1, 2 (held labels 1, 0, 0), val 3 (held 1), test 4.
    /// With P = [[.75, .25], [.25, .75]] (P⁻¹ = [[1.5, −.5], [−.5, 1.5]]), one round:
    /// node 0: λ = (2, 2)/4 → (.5, .5) → tie → class 0; node 1: (y1 + y0)/2 = (.5, .5) → 0;
    /// node 3: (y3 + y0)/2 = (0, 1) → (−.5, 1.5) → clamp → class 1.
    #[test]
    fn label_reconstruction_by_hand() {
        use Role::*;
        let mut d = local(vec![Some(1), Some(0), Some(0), Some(1), Some(0)], vec![Train, Train, Train, Val, Test], &[(0, 1), (0, 2), (0, 3)]);
        let inv = invert(&[0.75, 0.25, 0.25, 0.75], 2).unwrap();
        reconstruct_labels(&mut d, Some(&inv), 1);
        assert_eq!(d.labels, vec![Some(0), Some(0), Some(0), Some(1), Some(0)]);
    }

    /// ε_x = ε_y = ∞ with m = d keeps the pipeline with the noise removed: the features
    /// become their Kx-hop means over closed neighbourhoods (π̃ of value 1 with p = 1,
    /// q = 0 is the share itself) and the train / validation labels the arg-max of their
    /// Ky-hop mean (P = I), exactly.
    #[test]
    fn without_noise_the_pipeline_still_smooths() {
        use Role::*;
        // Path 0–1–2 plus 3–4; binary features of width 2.
        let mut d = local(vec![Some(1), Some(0), Some(0), Some(1), Some(1)], vec![Train, Train, Val, Train, Test], &[(0, 1), (1, 2), (3, 4)]);
        let x = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0];
        d.features = Features::Dense(DenseMatrix { rows: 5, cols: 2, data: x.iter().map(|&v| v as f32).collect() });
        let want_x = mean_with_self_loops(&d.graph, &x, 2, 2);
        let cfg = RgnnConfig { epsilon_x: Epsilon::INFINITE, m: None, epsilon_y: Epsilon::INFINITE, kx: 2, ky: 1, domain_size: None, clusters: 0, alpha: 0.0, as_published: false };
        let state = Rgnn { name: "rgnn".into(), cfg, client: 0, bags: Mutex::new(None) };
        let cost = state.apply(&mut d, &mut crate::rng::derive(0, "t", &[])).unwrap().unwrap();
        assert!(cost.epsilon.is_infinite());
        let Features::Dense(got) = &d.features else { panic!("dense features") };
        for (g, w) in got.data.iter().zip(&want_x) {
            assert!((f64::from(*g) - w).abs() < 1e-6, "{:?} vs {want_x:?}", got.data);
        }
        // Labels, one hop: node 0 (1 + 0)/2 → tie → 0; node 1 (1 + 0 + 0)/3 → 0;
        // node 2 (val; 0 + 0)/2 → 0; node 3 (1 + held nothing: node 4 is test) → 1.
        assert_eq!(d.labels, vec![Some(0), Some(0), Some(0), Some(1), Some(1)]);
    }

    /// The released code's loss, by hand: logits (0, ln 3) → softmax (1/4, 3/4) → a
    /// second softmax e^{3/4}/(e^{1/4} + e^{3/4}) for class 1.
    #[test]
    fn double_softmax_cross_entropy_by_hand() {
        use Role::*;
        let d = local(vec![Some(1), Some(0)], vec![Train, Val], &[(0, 1)]);
        let device = Device::flex();
        let tensors = ClientTensors::new(&d, 16, &device).unwrap();
        let logits = Tensor::<2>::from_data(TensorData::new(vec![0.0f32, 3f32.ln(), 0.0, 0.0], [2, 2]), &device);
        let out = Output { logits, head_input: None };
        let got = f64::from(DoubleSoftmaxCrossEntropy.loss(&out, &tensors).unwrap().into_scalar::<f32>());
        let want = -((0.75f64).exp() / ((0.25f64).exp() + (0.75f64).exp())).ln();
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }

    /// Bags {0, 1} and {2, 3} (node 3 is test): b'_0 = (.5, .5), b'_1 = (0, 1) → P⁻¹ →
    /// (−.5, 1.5) → clamp (1e-5, 1.5) → renormalised.
    #[test]
    fn bag_targets_are_debiased_noisy_proportions() {
        use Role::*;
        let d = local(vec![Some(0), Some(1), Some(1), Some(0)], vec![Train, Train, Train, Test], &[(0, 1), (2, 3)]);
        let inv = invert(&[0.75, 0.25, 0.25, 0.75], 2).unwrap();
        let bags = bag_targets(&d, &[5, 5, 7, 7], Some(&inv));
        assert_eq!(bags.members, vec![(0, 0), (1, 0), (2, 1)]);
        let t = &bags.targets;
        assert!((t[0] - 0.5).abs() < 1e-12 && (t[1] - 0.5).abs() < 1e-12);
        assert!((t[2] - 1e-5 / 1.50001).abs() < 1e-15 && (t[3] - 1.5 / 1.50001).abs() < 1e-12);
    }

    /// The LLP term and its gradient against the formulas, on two bags of a 3-node graph:
    /// KL = Σ_r Σ_c t_rc ln(t_rc / b̂_rc) / R and
    /// ∂/∂z_ik = (1/|r|)·s_ik·(Σ_c t_rc s_ic / b̂_rc − t_rk / b̂_rk) for i in bag r.
    #[test]
    fn llp_term_and_gradient_by_hand() {
        let logits = [[0.2, -0.4, 1.0], [1.5, 0.3, -0.2], [-0.7, 0.9, 0.1]];
        let targets = [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]];
        let members = vec![(0, 0), (1, 0), (2, 1)];
        let bags = Bags { members: members.clone(), targets: targets.iter().flatten().copied().collect(), classes: 3 };
        let softmax_row = |z: &[f64; 3]| {
            let e: Vec<f64> = z.iter().map(|x| x.exp()).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|x| x / s).collect::<Vec<f64>>()
        };
        let s: Vec<Vec<f64>> = logits.iter().map(softmax_row).collect();
        let bhat = [[0, 1, 2].map(|c| (s[0][c] + s[1][c]) / 2.0), [0, 1, 2].map(|c| s[2][c])];
        let kl: f64 = (0..2).map(|r| (0..3).map(|c| targets[r][c] * (targets[r][c] / bhat[r][c]).ln()).sum::<f64>()).sum::<f64>() / 2.0;
        let size = [2.0, 1.0];
        let grad = |i: usize, k: usize| {
            let r = members[i].1 as usize;
            let inner: f64 = (0..3).map(|c| targets[r][c] * s[i][c] / bhat[r][c]).sum();
            // d(KL / R)/dz with R = 2 bags.
            s[i][k] * (inner - targets[r][k] / bhat[r][k]) / size[r] / 2.0
        };

        let device = Device::flex().autodiff();
        let z = Tensor::<2>::from_data(TensorData::new(logits.iter().flatten().map(|&x| x as f32).collect::<Vec<_>>(), [3, 3]), &device).require_grad();
        let llp = LlpLoss::new(Box::new(crate::train::CrossEntropy), 1.0, bags);
        let value = llp.kl(&z);
        let got: f32 = value.clone().into_scalar();
        assert!((f64::from(got) - kl).abs() < 1e-5, "{got} vs {kl}");
        let grads = value.backward();
        let g: Vec<f32> = z.grad(&grads).unwrap().into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
        for i in 0..3 {
            for k in 0..3 {
                assert!((f64::from(g[i * 3 + k]) - grad(i, k)).abs() < 1e-5, "∂/∂z[{i}][{k}]: {} vs {}", g[i * 3 + k], grad(i, k));
            }
        }
    }

    #[test]
    fn non_discrete_features_are_refused_by_name() {
        let f = Features::Dense(DenseMatrix { rows: 2, cols: 2, data: vec![1.0, 0.0, 0.5, 2.0] });
        let e = discrete_values(&f).unwrap_err();
        assert!(e.contains("node 1 has 0.5 in column 0"), "{e}");
        assert_eq!(discrete_values(&Features::Dense(DenseMatrix { rows: 1, cols: 2, data: vec![3.0, 0.0] })).unwrap(), vec![3, 0]);
    }
}
