//! `fgl-sim partition`: a dataset split into clients, as a table or JSON.

use std::path::Path;

use serde_json::json;

use crate::data::link_split::LabelledPairs;
use crate::data::link_split::Task;
use crate::data::{Split, SplitRatios, registry};
use crate::error::{Error, Result};
use crate::partition::{self, PartitionConfig};
use crate::scenario::Scenario;
use crate::{rng, run};

pub(super) fn partition_cmd(name: &str, cfg: &PartitionConfig, seed: u64, dir: Option<&Path>, as_json: bool) -> Result<()> {
    let dataset = registry::load(name, dir, &Default::default(), seed)?;
    cfg.validate(&dataset).map_err(|e| match e {
        // The flags are named after the scenario fields; say which flag.
        Error::Param { name, msg } => Error::param(format!("--{}", name.trim_start_matches("partition.")), msg),
        other => other,
    })?;
    // A long Louvain says how it goes on stderr (at most a line a second), as `run` does.
    let p = partition::partition_logged(&dataset, cfg, seed, &mut |line| eprintln!("{line}"))?;
    let (clients, dropped) = p.clients(&dataset.graph);
    let split = Split::random(&dataset.labels, SplitRatios::default(), &mut rng::derive(seed, "split", &[]));
    let reports = partition::report(&dataset, &clients, &split);
    if as_json {
        let out = json!({
            "dataset": dataset.name, "method": format!("{:?}", cfg.method).to_lowercase(), "seed": seed,
            "communities": p.communities, "modularity": p.modularity,
            "unassigned_nodes": p.assignment.iter().filter(|a| a.is_none()).count(),
            "clients": reports, "dropped_edges": dropped.cross_client, "dropped_edges_detail": dropped,
            "assignment": p.assignment,
        });
        println!("{}", serde_json::to_string_pretty(&out).expect("json"));
    } else {
        let covered: usize = reports.iter().map(|r| r.nodes).sum();
        println!(
            "{} on `{}` (seed {seed}): {} clients covering {covered} of {} nodes; cross-client edges dropped: {}",
            format!("{:?}", cfg.method).to_lowercase(),
            dataset.name,
            clients.len(),
            dataset.num_nodes(),
            dropped.cross_client
        );
        if let (Some(c), Some(q)) = (p.communities, p.modularity) {
            println!("louvain: {c} communities, modularity {q:.4}");
        }
        println!("split: random 50/25/25 of labelled nodes (seed {seed})\n");
        print!("{}", run::client_table(&dataset, &reports));
    }
    Ok(())
}

/// `fgl-sim link-split`: the split `run` makes for a `task: link` scenario, as JSON.
pub(super) fn link_split_cmd(scenario: &Scenario, dir: Option<&Path>) -> Result<()> {
    if scenario.task != Task::Link {
        return Err(Error::param("task", "link-split needs `task: link` (the scenario's task is `node`)"));
    }
    let prepared = run::prepare(scenario, dir)?;
    let clients: Vec<_> = prepared
        .clients
        .iter()
        .zip(&prepared.links)
        .map(|(client, split)| {
            let global = |&(u, v): &(u32, u32)| [client.nodes[u as usize], client.nodes[v as usize]];
            let pairs = |p: &LabelledPairs| json!({"pairs": p.pairs.iter().map(global).collect::<Vec<_>>(), "labels": p.labels});
            json!({
                "client": client.id, "nodes": client.nodes.len(),
                "train": split.train.iter().map(global).collect::<Vec<_>>(),
                "train_negatives_per_epoch": split.train_negatives,
                "val": pairs(&split.val), "test": pairs(&split.test),
            })
        })
        .collect();
    let out = json!({
        "dataset": prepared.dataset.name, "num_nodes": prepared.dataset.num_nodes(), "seed": scenario.seed,
        "note": "pairs are [u, v] in global node ids, u < v in the client's order; training negatives are drawn afresh each epoch (as many as train_negatives_per_epoch); message passing sees the training edges while training and validating, the training and validation edges when testing",
        "clients": clients,
    });
    println!("{}", serde_json::to_string(&out).expect("json"));
    Ok(())
}
