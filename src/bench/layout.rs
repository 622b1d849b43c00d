//! `fgl-sim bench layout`.

use std::path::Path;

use super::median_ms;
use crate::backend::Backend;
use crate::data::registry;
use crate::data::synthetic::SyntheticConfig;
use crate::error::Result;
use crate::scenario::yaml_name;

/// The first layer's X·W, forward and backward into W (no gradient into X), with the
/// input stored dense and sparse, per output width: the measurement behind
/// [`crate::model::InputLayout::auto`]. Cora (1.27 % non-zero), CiteSeer (0.85 %), PubMed
/// (10.0 %, TF-IDF values) and the synthetic default (dense).
pub fn layout(dir: Option<&Path>, backend: Backend, reps: usize) -> Result<()> {
    use crate::model::{InputLayout, NodeInput};
    let device = crate::backend::device(backend)?;
    println!(
        "bench layout: backend {}, {} rayon threads, ms per forward+backward of X·W (median of {reps})",
        yaml_name(&backend),
        rayon::current_num_threads()
    );
    for name in ["cora", "citeseer", "planetoid-pubmed", "synthetic"] {
        let ds = match registry::load(name, dir, &SyntheticConfig::default(), 0) {
            Ok(ds) => ds,
            Err(e) => {
                println!("{name:<16} skipped: {e}");
                continue;
            }
        };
        let x = ds.require_features()?;
        let density = x.nnz() as f64 / (x.rows() * x.cols()) as f64;
        let inputs = [InputLayout::Dense, InputLayout::Sparse].map(|l| NodeInput::with_layout(x, l, &device));
        for width in [16, 64, 128, 256, 512] {
            let mut init = crate::model::init::Init::new(0, &device.clone().autodiff());
            let w = init.glorot([x.cols(), width], x.cols(), width).val();
            let mut line = format!("{name:<16} {}×{} ({:.2} % non-zero) width {width:>3} |", x.rows(), x.cols(), density * 100.0);
            for (layout, input) in ["dense", "sparse"].iter().zip(&inputs) {
                let t = median_ms(reps, || {
                    let grads = input.matmul(w.clone()).sum().backward();
                    Ok(w.grad(&grads).map(|g| g.sum().into_scalar::<f32>()))
                })?;
                line.push_str(&format!(" {layout} {t:>8.2}"));
            }
            let picked = InputLayout::for_strategy(x, width, crate::model::Strategy::for_device(&device));
            line.push_str(&format!(" | auto picks {picked:?}"));
            println!("{line}");
        }
    }
    Ok(())
}
