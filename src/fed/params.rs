//! What travels between server and clients: every float parameter of the model, in the
//! module's visiting order, as named host vectors. Names are the module paths without
//! enum variants (`convs.0.weight`, `convs.1.bias`, `head.weight`), so an attack finds
//! the last layer by name, not by position. The server side of the simulator (FedAvg,
//! strategies, attacks) works only on this, never on client data or device tensors,
//! and averages in f64 in a fixed client order so that results do not depend on threads.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Tensor, TensorCreationOptions, TensorData};

/// One parameter tensor on the host.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParamTensor {
    /// Module path, e.g. `head.weight` (Burn's `Linear` weight is `[d_in, d_out]`).
    pub name: String,
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

/// A model's parameters as shared over the network.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct ModelParams {
    pub tensors: Vec<ParamTensor>,
}

#[derive(Default)]
struct Collect {
    tensors: Vec<ParamTensor>,
    /// The module path being visited; `None` for enum-variant levels, which are left
    /// out of names (`convs.0.Gcn.weight` → `convs.0.weight`).
    path: Vec<Option<String>>,
}

impl Collect {
    fn enter(&mut self, name: &str, container_type: &str) {
        self.path.push((!container_type.starts_with("Enum:")).then(|| name.to_string()));
    }

    fn push<const D: usize>(&mut self, t: Tensor<D>) {
        // Burn enters a module for every field, parameters included: the innermost
        // path segment is the parameter's own name.
        let name = self.path.iter().flatten().map(String::as_str).collect::<Vec<_>>().join(".");
        let shape = t.dims().to_vec();
        let values = t.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 data after convert");
        self.tensors.push(ParamTensor { name, shape, values });
    }
}

impl ModuleVisitor for Collect {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.enter(name, container_type);
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.push(param.val());
    }
}

/// [`Collect`] on a module given up: each tensor leaves its parameter, so a tensor
/// nothing else holds reaches the host without the copy a shared one needs (each
/// parameter is left an empty tensor).
impl ModuleMapper for Collect {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.enter(name, container_type);
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, t, mapper) = param.consume();
        let empty = Tensor::empty([0; D], &t.device());
        self.push(t);
        Param::from_mapped_value(id, empty, mapper)
    }
}

struct Load<'a> {
    params: &'a ModelParams,
    next: usize,
}

impl ModuleMapper for Load<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let p = &self.params.tensors[self.next];
        self.next += 1;
        param.map(|t| {
            assert_eq!(t.dims().as_slice(), p.shape.as_slice(), "parameter shapes differ: not the same architecture");
            let options = TensorCreationOptions::new(t.device()).with_dtype(t.dtype());
            // A fresh tensor is a new autodiff leaf: keep the old one's gradient setting.
            let require_grad = t.is_require_grad();
            Tensor::from_data(TensorData::new(p.values.clone(), p.shape.clone()), options).set_require_grad(require_grad)
        })
    }
}

impl ModelParams {
    /// The parameters of `module`.
    pub fn of<M: Module>(module: &M) -> ModelParams {
        let mut c = Collect::default();
        module.visit(&mut c);
        ModelParams { tensors: c.tensors }
    }

    /// The parameters of `module`, which is given up: what [`ModelParams::of`] reads,
    /// with one copy fewer for each tensor only the module holds (a trained model's).
    pub fn take<M: Module>(module: M) -> ModelParams {
        let mut c = Collect::default();
        drop(module.map(&mut c));
        ModelParams { tensors: c.tensors }
    }

    /// `module` with these parameters (it must have the same architecture).
    pub fn load_into<M: Module>(&self, module: M) -> M {
        let mut l = Load { params: self, next: 0 };
        let m = module.map(&mut l);
        assert_eq!(l.next, self.tensors.len(), "parameter count differs: not the same architecture");
        m
    }

    /// The parameter called `name` (see the module docs for the naming).
    pub fn get(&self, name: &str) -> Option<&ParamTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.tensors.iter().map(|t| t.name.as_str()).collect()
    }

    pub fn num_values(&self) -> usize {
        self.tensors.iter().map(|t| t.values.len()).sum()
    }

    /// Euclidean norm of all parameters together.
    pub fn l2_norm(&self) -> f64 {
        self.tensors.iter().flat_map(|t| &t.values).map(|&v| f64::from(v) * f64::from(v)).sum::<f64>().sqrt()
    }

    /// Multiply every parameter by `factor`.
    pub fn scaled(&self, factor: f64) -> ModelParams {
        let tensors = self
            .tensors
            .iter()
            .map(|t| ParamTensor {
                name: t.name.clone(),
                shape: t.shape.clone(),
                values: t.values.iter().map(|&v| (f64::from(v) * factor) as f32).collect(),
            })
            .collect();
        ModelParams { tensors }
    }

    /// Σ wᵢ·pᵢ / Σ wᵢ, accumulated in f64 in the order given.
    ///
    /// # Panics
    /// If `items` is empty, the weights sum to zero, or the architectures differ.
    pub fn weighted_average(items: &[(&ModelParams, f64)]) -> ModelParams {
        let total: f64 = items.iter().map(|(_, w)| w).sum();
        assert!(!items.is_empty() && total > 0.0, "weighted average of nothing");
        let first = items[0].0;
        let tensors = (0..first.tensors.len())
            .map(|k| {
                let mut acc = vec![0f64; first.tensors[k].values.len()];
                for (p, w) in items {
                    let t = &p.tensors[k];
                    assert_eq!((&t.name, &t.shape), (&first.tensors[k].name, &first.tensors[k].shape), "parameters differ");
                    for (a, &v) in acc.iter_mut().zip(&t.values) {
                        *a += w * f64::from(v);
                    }
                }
                ParamTensor {
                    name: first.tensors[k].name.clone(),
                    shape: first.tensors[k].shape.clone(),
                    values: acc.iter().map(|a| (a / total) as f32).collect(),
                }
            })
            .collect();
        ModelParams { tensors }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Graph;
    use crate::model::ModelConfig;

    fn p(values: &[f32]) -> ModelParams {
        ModelParams { tensors: vec![ParamTensor { name: "w".into(), shape: vec![values.len()], values: values.to_vec() }] }
    }

    #[test]
    fn weighted_average_is_exact() {
        let avg = ModelParams::weighted_average(&[(&p(&[1.0, 4.0]), 1.0), (&p(&[4.0, -2.0]), 2.0)]);
        assert_eq!(avg, p(&[3.0, 0.0]));
        assert_eq!(p(&[3.0, 4.0]).l2_norm(), 5.0);
        assert_eq!(p(&[3.0, 4.0]).scaled(0.5), p(&[1.5, 2.0]));
    }

    #[test]
    fn params_round_trip_through_a_model() {
        let device = burn::tensor::Device::flex().autodiff();
        let cfg = ModelConfig { arch: crate::model::Arch::Gat, head: true, ..Default::default() };
        let a = cfg.init(5, 3, 1, &device).unwrap();
        let b = cfg.init(5, 3, 2, &device).unwrap();
        let (pa, pb) = (ModelParams::of(&a), ModelParams::of(&b));
        assert_ne!(pa, pb);
        // Taken from the model: the same, whether the tensors are shared or not.
        assert_eq!(ModelParams::take(a.clone()), pa);
        assert_eq!(ModelParams::take(cfg.init(5, 3, 1, &device).unwrap()), pa);
        assert_eq!(pa.num_values(), pb.num_values());
        // Parameters carry their module paths.
        assert_eq!(
            pa.names(),
            [
                "convs.0.weight",
                "convs.0.att_src",
                "convs.0.att_dst",
                "convs.0.bias",
                "convs.1.weight",
                "convs.1.att_src",
                "convs.1.att_dst",
                "convs.1.bias",
                "head.weight",
                "head.bias"
            ]
        );
        assert_eq!(pa.get("head.weight").unwrap().shape, [16, 3]);
        let b_as_a = pa.load_into(b);
        assert_eq!(ModelParams::of(&b_as_a), pa);
        // Loaded parameters stay trainable leaves.
        let g = Graph::from_edges(3, [(0, 1), (1, 2)], "t").unwrap().0;
        let gt = crate::model::GraphTensors::new(&g, &device.clone().inner()).unwrap();
        let x =
            crate::data::Features::Dense(crate::data::DenseMatrix { rows: 3, cols: 5, data: (0..15).map(|i| i as f32 / 10.0).collect() });
        let input = crate::model::NodeInput::from_features(&x, 16, &device.clone().inner());
        let loss = b_as_a.forward(&input, &gt).logits.sum();
        let grads = loss.backward();
        let gp = burn::optim::GradientsParams::from_grads(grads, &b_as_a);
        assert!(!gp.is_empty(), "no gradients reached the loaded parameters");
    }
}
