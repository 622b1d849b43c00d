//! `fgl-sim privacy epsilon | sigma`: the DP accountants from the command line (errors
//! name the flag at fault).

use clap::{Args, Subcommand};
use serde_json::json;

use crate::error::{Error, Result};
use crate::privacy::accountant::{self, Mechanism};

#[derive(Subcommand, Debug)]
pub(super) enum PrivacyAction {
    /// The (ε, δ) spent by `--steps` steps with noise multiplier `--sigma`.
    Epsilon {
        /// Noise multiplier σ (noise std / sensitivity; for dp-gnn the sensitivity is 2K·‖C‖).
        #[arg(long, allow_negative_numbers = true)]
        sigma: f64,
        #[command(flatten)]
        acc: AccountantArgs,
    },
    /// The smallest σ whose ε is at most `--target-epsilon`, and the ε it spends.
    Sigma {
        #[arg(long, allow_negative_numbers = true)]
        target_epsilon: f64,
        #[command(flatten)]
        acc: AccountantArgs,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum AccountantKind {
    /// DP-GNN's multi-term accountant: needs --nodes, --max-degree, --layers, --batch.
    DpGnn,
    /// Poisson-subsampled Gaussian (DP-SGD): needs --sample-rate and --delta.
    DpSgd,
}

/// What both privacy commands take.
#[derive(Args, Debug)]
pub(super) struct AccountantArgs {
    #[arg(long, value_enum)]
    accountant: AccountantKind,
    /// dp-gnn: training nodes N.
    #[arg(long)]
    nodes: Option<usize>,
    /// dp-gnn: in-degree bound D (≥ 1).
    #[arg(long)]
    max_degree: Option<usize>,
    /// dp-gnn: message-passing layers (1 or 2).
    #[arg(long)]
    layers: Option<usize>,
    /// dp-gnn: batch size B (nodes per step, ≤ N).
    #[arg(long)]
    batch: Option<usize>,
    /// dp-sgd: sampling rate q ∈ (0, 1].
    #[arg(long)]
    sample_rate: Option<f64>,
    /// Training steps.
    #[arg(long)]
    steps: u64,
    /// δ (dp-gnn default: 1/(10·N); required for dp-sgd).
    #[arg(long)]
    delta: Option<f64>,
    /// RDP → (ε, δ) conversion.
    #[arg(long, value_enum, default_value = "improved")]
    conversion: accountant::Conversion,
    /// RDP orders: `default` (1.02 … 512), `dp-gnn-code` (the DP-GNN code's: 1.1 … 9.9 for dp-gnn,
    /// 1.1 … 199.9 for dp-sgd) or a comma-separated list.
    #[arg(long, default_value = "default")]
    orders: String,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub(super) fn privacy_cmd(action: PrivacyAction) -> Result<()> {
    let as_json = match &action {
        PrivacyAction::Epsilon { acc, .. } | PrivacyAction::Sigma { acc, .. } => acc.json,
    };
    let (json, text) = account(action)?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&json).expect("json"));
    } else {
        print!("{text}");
    }
    Ok(())
}

/// The accounting a privacy command asks for: what `--json` prints, and the text otherwise.
pub(super) fn account(action: PrivacyAction) -> Result<(serde_json::Value, String)> {
    let (sigma, target, acc) = match action {
        PrivacyAction::Epsilon { sigma, acc } => (Some(sigma), None, acc),
        PrivacyAction::Sigma { target_epsilon, acc } => (None, Some(target_epsilon), acc),
    };
    let need = |flag: &str, v: Option<usize>| {
        v.ok_or_else(|| Error::param(flag, format!("required by --accountant {}", accountant_name(acc.accountant))))
    };
    let unused = |flag: &str, given: bool| {
        if given { Err(Error::param(flag, format!("does not apply to --accountant {}", accountant_name(acc.accountant)))) } else { Ok(()) }
    };
    let (mech, delta) = match acc.accountant {
        AccountantKind::DpGnn => {
            unused("--sample-rate", acc.sample_rate.is_some())?;
            let nodes = need("--nodes", acc.nodes)?;
            let mech = Mechanism::DpGnn {
                nodes,
                max_degree: need("--max-degree", acc.max_degree)?,
                layers: need("--layers", acc.layers)?,
                batch: need("--batch", acc.batch)?,
            };
            (mech, acc.delta.unwrap_or_else(|| accountant::default_delta(nodes)))
        }
        AccountantKind::DpSgd => {
            for (flag, given) in
                [("--nodes", acc.nodes), ("--max-degree", acc.max_degree), ("--layers", acc.layers), ("--batch", acc.batch)]
            {
                unused(flag, given.is_some())?;
            }
            let q = acc.sample_rate.ok_or_else(|| Error::param("--sample-rate", "required by --accountant dp-sgd"))?;
            (Mechanism::DpSgd { sample_rate: q }, acc.delta.ok_or_else(|| Error::param("--delta", "required by --accountant dp-sgd"))?)
        }
    };
    mech.validate()?;
    let orders = match acc.orders.trim() {
        "default" => accountant::default_orders(),
        "dp-gnn-code" => accountant::dpgnn_code_orders(&mech),
        list => list
            .split(',')
            .map(|x| {
                x.trim().parse::<f64>().map_err(|_| {
                    Error::param(
                        "--orders",
                        format!("`{x}` is not a number: give `default`, `dp-gnn-code` or numbers > 1 separated by commas"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let (sigma, spent) = match (sigma, target) {
        (Some(s), _) => (s, accountant::epsilon(&mech, s, acc.steps, delta, acc.conversion, &orders)?),
        (None, Some(t)) => accountant::sigma_for_epsilon(&mech, t, acc.steps, delta, acc.conversion, &orders)?,
        (None, None) => unreachable!("one of the two commands"),
    };
    let edge =
        orders.iter().copied().fold(f64::NAN, f64::max) == spent.order || orders.iter().copied().fold(f64::NAN, f64::min) == spent.order;
    let json = {
        let mut out = serde_json::to_value(mech).expect("json");
        let o = out.as_object_mut().expect("object");
        if let Mechanism::DpGnn { max_degree, layers, .. } = mech {
            o.insert("max_terms".into(), json!(accountant::max_terms_per_node(max_degree, layers)?));
        }
        if let Some(t) = target {
            o.insert("target_epsilon".into(), json!(t));
        }
        o.insert("sigma".into(), json!(sigma));
        o.insert("steps".into(), json!(acc.steps));
        o.insert(
            "orders".into(),
            if matches!(acc.orders.trim(), "default" | "dp-gnn-code") { json!(acc.orders.trim()) } else { json!(orders) },
        );
        for (k, v) in serde_json::to_value(spent).expect("json").as_object().expect("object") {
            o.insert(k.clone(), v.clone());
        }
        o.insert("order_at_grid_edge".into(), json!(edge));
        out
    };
    let what = match mech {
        Mechanism::DpGnn { nodes, max_degree, layers, batch } => format!(
            "dp-gnn: N = {nodes} training nodes, D = {max_degree}, {layers} layer(s) → K = {} terms per node, batch B = {batch}",
            accountant::max_terms_per_node(max_degree, layers)?
        ),
        Mechanism::DpSgd { sample_rate } => format!("dp-sgd: Poisson sampling rate q = {sample_rate}"),
    };
    let mut text = format!("{what}, {} steps\n", acc.steps);
    let eps = if spent.epsilon.is_finite() { format!("{:.6}", spent.epsilon) } else { "∞".into() };
    let order = (spent.order * 1e6).round() / 1e6;
    match target {
        Some(t) => {
            text += &format!(
                "σ = {sigma:.6} for ε ≤ {t}: spends ε = {eps} at δ = {:e} (RDP order α = {order}, {} conversion)\n",
                spent.delta,
                spent.conversion.name()
            )
        }
        None => {
            text += &format!(
                "σ = {sigma}: ε = {eps} at δ = {:e} (RDP order α = {order}, {} conversion)\n",
                spent.delta,
                spent.conversion.name()
            )
        }
    }
    if edge {
        text += "note: the optimal order is at the edge of the order grid; other orders (--orders) may give a smaller ε\n";
    }
    Ok((json, text))
}

pub(super) fn accountant_name(kind: AccountantKind) -> &'static str {
    match kind {
        AccountantKind::DpGnn => "dp-gnn",
        AccountantKind::DpSgd => "dp-sgd",
    }
}
