//! `ldp-features`: each client perturbs the features of all its nodes once, before
//! round 1, with one of LPGNN's feature mechanisms (ε-LDP per node; `agm` is (ε, δ)),
//! optionally after replacing them by one of LPGNN's feature baselines.
//!
//! As in sisaman/LPGNN `transforms.py`: the baseline (`features`) is applied first
//! (`rnd`: U[0, 1); `one`: all ones; `ohd`: one-hot degree, capped at d − 1 so the
//! width stays d), then the mechanism, on inputs that must lie in `range` = [α, β]
//! (LPGNN min-max scales to [0, 1] and passes that range; here the client checks
//! instead of clipping, so a scenario without `dataset.preprocess.minmax` fails with
//! a message rather than silently breaking the guarantee). The multi-bit output is
//! kept as "(α+β)/2 everywhere but m sampled columns" ([`Features::Shifted`]), so it
//! stays as sparse as the mechanism makes it.

use rand::Rng as _;
use serde::{Deserialize, Serialize};

use crate::data::{CsrMatrix, DenseMatrix, Features, ShiftedMatrix};
use crate::error::{Error, Result};
use crate::fed::{ClientContext, DataTransform, Defense};
use crate::privacy::gaussian::{AnalyticGaussian, DEFAULT_DELTA};
use crate::privacy::laplace::Laplace;
use crate::privacy::multibit::MultiBit;
use crate::privacy::{Epsilon, PrivacyCost};
use crate::rng::Rng;
use crate::train::LocalData;

/// What the model gets as features before any mechanism (LPGNN's `-f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureSource {
    /// The node's own features.
    #[default]
    Raw,
    /// Uniform random values in [0, 1).
    Rnd,
    /// All ones.
    One,
    /// One-hot degree in the client's graph, capped at d − 1.
    Ohd,
}

/// LPGNN's feature mechanisms (`-m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Mechanism {
    /// Multi-bit with m = max(1, min(d, ⌊ε/2.18⌋)).
    #[default]
    #[serde(rename = "mbm")]
    MultiBit,
    /// Multi-bit with m = d.
    #[serde(rename = "1bm")]
    OneBit,
    /// Laplace noise, L1 sensitivity (β−α)·d.
    #[serde(rename = "lpm")]
    Laplace,
    /// Analytic Gaussian noise (Balle & Wang), L2 sensitivity (β−α)·√d, δ = `delta`.
    #[serde(rename = "agm")]
    AnalyticGaussian,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::MultiBit => "mbm",
            Mechanism::OneBit => "1bm",
            Mechanism::Laplace => "lpm",
            Mechanism::AnalyticGaussian => "agm",
        }
    }
}

impl FeatureSource {
    pub fn name(self) -> &'static str {
        match self {
            FeatureSource::Raw => "raw",
            FeatureSource::Rnd => "rnd",
            FeatureSource::One => "one",
            FeatureSource::Ohd => "ohd",
        }
    }
}

/// LPGNN's [α, β]: what min-max scaling produces.
pub(crate) fn default_range() -> [f64; 2] {
    [0.0, 1.0]
}

fn default_delta() -> f64 {
    DEFAULT_DELTA
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LdpFeaturesConfig {
    /// ε per node; `.inf` switches the mechanism off (the baseline still applies).
    pub epsilon: Epsilon,
    #[serde(default)]
    pub mechanism: Mechanism,
    #[serde(default)]
    pub features: FeatureSource,
    /// [α, β], the range every feature must lie in.
    #[serde(default = "default_range")]
    pub range: [f64; 2],
    /// δ of `agm`.
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// Coordinates `mbm` reports per node, 1 ≤ m ≤ d (default: the optimal m*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub m: Option<usize>,
}

impl super::DefenseConfig for LdpFeaturesConfig {
    fn cost(&self, run: &super::RunSize) -> super::CostHint {
        super::CostHint { dense_features: self.dense_output(run.feature_dim), ..Default::default() }
    }

    fn build(&self, name: &str, _client: &ClientContext) -> Result<Defense> {
        Ok(Defense::new(name).with_data(PerturbFeatures::new(name, self)?))
    }
}

impl LdpFeaturesConfig {
    /// Whether the features this leaves on a client of `d` columns are dense (the time
    /// model's gemm term): random ones (`features: rnd`), an additive mechanism's
    /// (`lpm`, `agm`) and a multi-bit one reporting every coordinate (`1bm`, `mbm` with
    /// m = d). `mbm` with m < d stays sparse plus a shift, and so do the other baselines.
    pub fn dense_output(&self, d: f64) -> bool {
        let perturbed = match self.mechanism {
            _ if self.epsilon.is_infinite() => false,
            Mechanism::OneBit | Mechanism::Laplace | Mechanism::AnalyticGaussian => true,
            Mechanism::MultiBit => {
                let d = d as usize;
                self.m.unwrap_or_else(|| crate::privacy::multibit::optimal_m(self.epsilon.value(), d)) >= d
            }
        };
        perturbed || self.features == FeatureSource::Rnd
    }
}

/// The feature baseline and mechanism of an `ldp-features` (or `lpgnn`) defense.
#[derive(Debug, Clone)]
pub struct PerturbFeatures {
    /// The defense's name, for messages.
    name: String,
    cfg: LdpFeaturesConfig,
}

impl PerturbFeatures {
    /// Checks what can be checked before seeing data: the range and δ.
    pub fn new(name: &str, cfg: &LdpFeaturesConfig) -> Result<PerturbFeatures> {
        let [alpha, beta] = cfg.range;
        if !(alpha.is_finite() && beta.is_finite() && alpha < beta) {
            return Err(Error::param(format!("defense `{name}`: range"), format!("[{alpha}, {beta}] is not a range: need finite α < β")));
        }
        if cfg.m.is_some() && cfg.mechanism != Mechanism::MultiBit {
            return Err(Error::param(format!("defense `{name}`: m"), format!("applies to mechanism mbm only, not {}", cfg.mechanism.name())));
        }
        if !(cfg.delta > 0.0 && cfg.delta < 1.0) {
            return Err(Error::param(format!("defense `{name}`: delta"), format!("{} is not allowed; allowed (0, 1)", cfg.delta)));
        }
        Ok(PerturbFeatures { name: name.to_string(), cfg: cfg.clone() })
    }

    /// Replace `data`'s features by the baseline, then perturb them.
    pub fn perturb(&self, data: &mut LocalData, rng: &mut Rng) -> Result<()> {
        let replaced = baseline(self.cfg.features, data, rng);
        if let Some(f) = replaced {
            data.features = f;
        }
        if self.cfg.epsilon.is_infinite() {
            return Ok(());
        }
        self.check_range(&data.features)?;
        let field = |f: &str| format!("defense `{}`: {f}", self.name);
        let named = |e: Error| match e {
            Error::Param { name, msg } => Error::param(field(&name), msg),
            other => other,
        };
        let [alpha, beta] = self.cfg.range;
        let (eps, d) = (self.cfg.epsilon, data.features.cols());
        data.features = match self.cfg.mechanism {
            Mechanism::MultiBit => {
                let mbm = match self.cfg.m {
                    Some(m) => MultiBit::new(d, m, eps, alpha, beta),
                    None => MultiBit::optimal(d, eps, alpha, beta),
                };
                multibit(&data.features, &mbm.map_err(named)?, rng)
            }
            Mechanism::OneBit => multibit(&data.features, &MultiBit::one_bit(d, eps, alpha, beta).map_err(named)?, rng),
            Mechanism::Laplace => {
                let lpm = Laplace::new(d, eps, alpha, beta).map_err(named)?;
                additive(&data.features, |row, rng| lpm.perturb(row, rng), rng)
            }
            Mechanism::AnalyticGaussian => {
                let agm = AnalyticGaussian::new(d, eps, self.cfg.delta, alpha, beta).map_err(named)?;
                additive(&data.features, |row, rng| agm.perturb(row, rng), rng)
            }
        };
        Ok(())
    }

    /// What the mechanism guarantees (`None` with ε = ∞).
    pub fn guarantee(&self) -> Option<(String, f64, f64)> {
        let c = &self.cfg;
        if c.epsilon.is_infinite() {
            return None;
        }
        let delta = if c.mechanism == Mechanism::AnalyticGaussian { c.delta } else { 0.0 };
        let model = if delta > 0.0 { "(ε, δ)-LDP" } else { "ε-LDP" };
        Some((format!("node features: {model} per node ({} mechanism)", c.mechanism.name()), c.epsilon.value(), delta))
    }

    fn check_range(&self, f: &Features) -> Result<()> {
        let [alpha, beta] = self.cfg.range;
        let inside = |v: f32| f64::from(v) >= alpha && f64::from(v) <= beta;
        // Implicit zeros count too.
        let zero_ok = inside(0.0);
        for r in 0..f.rows() {
            let mut bad = None;
            let mut stored = 0;
            f.for_each_nonzero(r, |c, v| {
                stored += 1;
                if bad.is_none() && !inside(v) {
                    bad = Some(format!("value {v} at node {r}, column {c}"));
                }
            });
            if bad.is_none() && !zero_ok && stored < f.cols() {
                bad = Some(format!("value 0 at node {r}"));
            }
            if let Some(what) = bad {
                return Err(Error::param(
                    format!("defense `{}`: range", self.name),
                    format!(
                        "the {} mechanism needs every feature in [{alpha}, {beta}], but the client holds a {what}; \
                         set `dataset.preprocess.minmax: true` (scales each column to [0, 1]) or widen `range`",
                        self.cfg.mechanism.name()
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl DataTransform for PerturbFeatures {
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        self.perturb(data, rng)?;
        Ok(self.guarantee().map(|(protects, epsilon, delta)| PrivacyCost { protects, epsilon, delta, ..Default::default() }))
    }
}

/// LPGNN's feature baselines; `None` for `raw`.
fn baseline(source: FeatureSource, data: &LocalData, rng: &mut Rng) -> Option<Features> {
    let (n, d) = (data.features.rows(), data.features.cols());
    match source {
        FeatureSource::Raw => None,
        FeatureSource::Rnd => Some(Features::Dense(DenseMatrix { rows: n, cols: d, data: (0..n * d).map(|_| rng.random::<f32>()).collect() })),
        FeatureSource::One => Some(Features::Shifted(ShiftedMatrix { centered: empty_csr(n, d), shift: 1.0 })),
        FeatureSource::Ohd => {
            let indices: Vec<u32> = (0..n).map(|v| data.graph.degree(v).min(d.saturating_sub(1)) as u32).collect();
            Some(Features::Sparse(CsrMatrix { rows: n, cols: d, indptr: (0..=n).collect(), indices, values: vec![1.0; n] }))
        }
    }
}

fn empty_csr(rows: usize, cols: usize) -> CsrMatrix {
    CsrMatrix { rows, cols, indptr: vec![0; rows + 1], indices: Vec::new(), values: Vec::new() }
}

/// Row `r` of `f` written densely into `row`.
fn dense_row(f: &Features, r: usize, row: &mut [f32]) {
    row.fill(0.0);
    f.for_each_nonzero(r, |c, v| row[c] = v);
}

/// The rectified multi-bit output: scale·x* stored sparse, shifted by (α+β)/2 (dense
/// when every coordinate is reported, m = d).
fn multibit(f: &Features, mbm: &MultiBit, rng: &mut Rng) -> Features {
    let (n, d) = (f.rows(), f.cols());
    let scale = mbm.scale() as f32;
    let mut row = vec![0f32; d];
    let mut bits = Vec::with_capacity(mbm.m());
    if mbm.m() == d {
        let mut out = DenseMatrix::zeros(n, d);
        let offset = mbm.offset() as f32;
        for r in 0..n {
            dense_row(f, r, &mut row);
            mbm.encode(&row, rng, &mut bits);
            for (o, &(_, b)) in out.row_mut(r).iter_mut().zip(&bits) {
                *o = scale * f32::from(b) + offset;
            }
        }
        return Features::Dense(out);
    }
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0);
    let (mut indices, mut values) = (Vec::with_capacity(n * mbm.m()), Vec::with_capacity(n * mbm.m()));
    for r in 0..n {
        dense_row(f, r, &mut row);
        mbm.encode(&row, rng, &mut bits);
        for &(j, b) in &bits {
            indices.push(j);
            values.push(scale * f32::from(b));
        }
        indptr.push(indices.len());
    }
    Features::Shifted(ShiftedMatrix { centered: CsrMatrix { rows: n, cols: d, indptr, indices, values }, shift: mbm.offset() as f32 })
}

/// Dense rows with noise added by `perturb`, row by row.
fn additive(f: &Features, perturb: impl Fn(&mut [f32], &mut Rng), rng: &mut Rng) -> Features {
    let (n, d) = (f.rows(), f.cols());
    let mut out = DenseMatrix::zeros(n, d);
    for r in 0..n {
        let row = out.row_mut(r);
        dense_row(f, r, row);
        perturb(row, rng);
    }
    Features::Dense(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Graph, Role};
    use crate::model::{InputLayout, NodeInput};
    use burn::tensor::{Device, Tensor, TensorData};

    /// Which configurations leave dense features for the time model: random features,
    /// `1bm`, `lpm`, `agm`, and `mbm` when it reports every coordinate (m = d, given or
    /// the optimal m* = ⌊ε/2.18⌋ ≥ d); not `mbm` with m < d, nor a mechanism switched off.
    #[test]
    fn dense_output_follows_the_mechanism_and_the_baseline() {
        let dense = |yaml: &str, d: f64| serde_norway::from_str::<LdpFeaturesConfig>(yaml).unwrap().dense_output(d);
        assert!(!dense("{epsilon: 1}", 1433.0));
        for mechanism in ["1bm", "lpm", "agm"] {
            assert!(dense(&format!("{{epsilon: 1, mechanism: {mechanism}}}"), 1433.0), "{mechanism}");
            assert!(!dense(&format!("{{epsilon: .inf, mechanism: {mechanism}}}"), 1433.0), "{mechanism} off");
        }
        assert!(dense("{epsilon: 1, m: 10}", 10.0) && !dense("{epsilon: 1, m: 9}", 10.0));
        assert!(dense("{epsilon: 100}", 45.0) && !dense("{epsilon: 100}", 46.0));
        assert!(dense("{epsilon: .inf, features: rnd}", 1433.0) && !dense("{epsilon: 1, features: ohd}", 1433.0));
    }

    /// A 4-node path 0–1–2–3 with `d` features per node in [0, 1].
    pub(crate) fn local(d: usize) -> LocalData {
        let (graph, _) = Graph::from_edges(4, [(0, 1), (1, 2), (2, 3)], "test").unwrap();
        let data = (0..4 * d).map(|i| (i % 5) as f32 / 4.0).collect();
        LocalData {
            graph,
            features: Features::Dense(DenseMatrix { rows: 4, cols: d, data }),
            labels: vec![Some(0), Some(1), Some(1), Some(0)],
            roles: vec![Role::Train, Role::Train, Role::Val, Role::Test],
            classes: 2,
            label_transition: None,
            feature_kprop: 0,
            link: None,
        }
    }

    fn config(yaml: &str) -> LdpFeaturesConfig {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn multibit_output_is_the_rectified_encoding_kept_sparse() {
        let cfg = config("epsilon: 4.4\nmechanism: mbm");
        let t = PerturbFeatures::new("f", &cfg).unwrap();
        let mut data = local(10);
        t.perturb(&mut data, &mut crate::rng::derive(1, "t", &[])).unwrap();
        let Features::Shifted(s) = &data.features else { panic!("{:?}", data.features) };
        // m* = ⌊4.4/2.18⌋ = 2 coordinates per node; scale = d/(2m)·(e^{ε/m}+1)/(e^{ε/m}−1).
        let em = (4.4f64 / 2.0).exp();
        let scale = (10.0 / 4.0 * (em + 1.0) / (em - 1.0)) as f32;
        assert_eq!(s.shift, 0.5);
        assert!((0..4).all(|r| s.centered.row(r).0.len() == 2));
        assert!(s.centered.values.iter().all(|&v| v == scale || v == -scale), "{:?}", s.centered.values);
        // Same draws, same output.
        let mut again = local(10);
        t.perturb(&mut again, &mut crate::rng::derive(1, "t", &[])).unwrap();
        assert_eq!(again.features, data.features);
    }

    #[test]
    fn shifted_input_multiplies_like_its_dense_form() {
        let cfg = config("epsilon: 3.0\nmechanism: mbm\nm: 3");
        let mut data = local(6);
        PerturbFeatures::new("f", &cfg).unwrap().perturb(&mut data, &mut crate::rng::derive(2, "t", &[])).unwrap();
        let device = Device::flex();
        let w: Vec<f32> = (0..6 * 5).map(|i| ((i * 7) % 11) as f32 / 10.0 - 0.5).collect();
        let w = Tensor::<2>::from_data(TensorData::new(w, [6, 5]), &device);
        let values = |layout| {
            NodeInput::with_layout(&data.features, layout, &device).matmul(w.clone()).into_data().convert::<f32>().try_into_vec::<f32>().unwrap()
        };
        let (sparse, dense) = (values(InputLayout::Sparse), values(InputLayout::Dense));
        for (a, b) in sparse.iter().zip(&dense) {
            assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{sparse:?} vs {dense:?}");
        }
    }

    #[test]
    fn baselines_replace_the_features() {
        let mut rng = crate::rng::derive(3, "t", &[]);
        let mut data = local(3);
        PerturbFeatures::new("f", &config("epsilon: .inf\nfeatures: ohd")).unwrap().perturb(&mut data, &mut rng).unwrap();
        // Degrees 1, 2, 2, 1; capped at d − 1 = 2.
        assert_eq!(data.features.to_dense().data, vec![0., 1., 0., 0., 0., 1., 0., 0., 1., 0., 1., 0.]);
        let mut data = local(2);
        PerturbFeatures::new("f", &config("epsilon: .inf\nfeatures: ohd")).unwrap().perturb(&mut data, &mut rng).unwrap();
        assert_eq!(data.features.to_dense().data, vec![0., 1., 0., 1., 0., 1., 0., 1.], "capped at d − 1 = 1");
        let mut data = local(3);
        PerturbFeatures::new("f", &config("epsilon: .inf\nfeatures: one")).unwrap().perturb(&mut data, &mut rng).unwrap();
        assert_eq!(data.features.to_dense().data, vec![1.0; 12]);
        let mut data = local(3);
        PerturbFeatures::new("f", &config("epsilon: .inf\nfeatures: rnd")).unwrap().perturb(&mut data, &mut rng).unwrap();
        assert!(data.features.to_dense().data.iter().all(|v| (0.0..1.0).contains(v)));
        // ε = ∞ with raw features leaves them as they are.
        let mut data = local(3);
        let before = data.features.clone();
        PerturbFeatures::new("f", &config("epsilon: .inf")).unwrap().perturb(&mut data, &mut rng).unwrap();
        assert_eq!(data.features, before);
    }

    #[test]
    fn bad_parameters_and_inputs_name_the_field() {
        let err = |yaml: &str, mut data: LocalData| {
            let t = PerturbFeatures::new("mine", &config(yaml));
            t.and_then(|t| t.perturb(&mut data, &mut crate::rng::derive(4, "t", &[]))).unwrap_err().to_string()
        };
        let e = err("epsilon: 1.0\nm: 7", local(6));
        assert!(e.contains("`mine`: m") && e.contains("m = 7") && e.contains("d = 6"), "{e}");
        let e = err("epsilon: 1.0\nmechanism: lpm\nm: 2", local(6));
        assert!(e.contains("mbm only"), "{e}");
        let e = err("epsilon: 1.0\nrange: [1.0, 0.0]", local(6));
        assert!(e.contains("range"), "{e}");
        let e = err("epsilon: 1.0\nmechanism: agm\ndelta: 1.5", local(6));
        assert!(e.contains("delta"), "{e}");
        let mut outside = local(3);
        outside.features = Features::Dense(DenseMatrix { rows: 4, cols: 3, data: vec![0.0, 2.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0] });
        let e = err("epsilon: 1.0", outside);
        assert!(e.contains("range") && e.contains("value 2 at node 0, column 1") && e.contains("preprocess.minmax"), "{e}");
        // Implicit zeros count: [0.5, 1] does not hold them.
        let e = err("epsilon: 1.0\nrange: [0.5, 1.0]", local(3));
        assert!(e.contains("range"), "{e}");
    }
}
