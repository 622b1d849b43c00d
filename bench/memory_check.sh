#!/bin/bash
# Estimated vs measured peak memory (max RSS by /usr/bin/time) of runs the model was not fitted on.
# Usage: bench/memory_check.sh (from the repository root, after `cargo test --release --no-run`;
# real datasets from FGL_DATA_DIR, default ../shared/datasets).
B=${FGL_SIM:-${CARGO_TARGET_DIR:-target}/release/fgl-sim}; export FGL_DATA_DIR=${FGL_DATA_DIR:-../shared/datasets}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
v() { name=$1; shift; est=$($B run "$@" --dry-run 2>/dev/null | head -1 | sed 's/.*about \(.*\) at the peak.*/\1/'); rm -rf "$T/run"; /usr/bin/time -f "%M" $B run "$@" --quiet --out "$T/run" > /dev/null 2>"$T/err"; kb=$(tail -1 "$T/err"); echo "| $name | $est | $(python3 -c "print(round($kb/1024,1))") MiB |"; }
R="--set federation.rounds=2"
echo "| run (2 rounds, 2 threads) | estimate | measured peak RSS |"
echo "|---|---:|---:|"
v cora-fedavg-gcn scenarios/cora-fedavg-gcn.yaml $R
v cora-centralized-gcn scenarios/cora-centralized-gcn.yaml $R
v cora-centralized-gat scenarios/cora-centralized-gat.yaml $R
v cora-centralized-sage scenarios/cora-centralized-sage.yaml $R
v ec-lda-cora-gcn scenarios/ec-lda-cora-gcn.yaml $R
v ec-lda-cora-gat scenarios/ec-lda-cora-gat.yaml $R
v ec-lda-cora-sage scenarios/ec-lda-cora-sage.yaml $R
v solitude-cora scenarios/solitude-cora.yaml $R
v lpgnn-cora scenarios/lpgnn-cora.yaml $R
v rgnn-cora scenarios/rgnn-cora.yaml $R
v "quickstart + dp-gnn" scenarios/quickstart.yaml $R --set defenses=[dp-gnn]
v "quickstart + dp-gnn, 200 features" scenarios/quickstart.yaml $R --set defenses=[dp-gnn] --set dataset.synthetic.feature_dim=200
v quickstart-attack scenarios/quickstart-attack.yaml $R
v "synthetic 30k, degree 16, 64 features, SAGE 64" scenarios/quickstart.yaml $R --set dataset.synthetic.nodes=30000 --set dataset.synthetic.avg_degree=16 --set dataset.synthetic.feature_dim=64 --set model.arch=sage --set model.hidden=64
v "synthetic 200k, 10 clients" scenarios/quickstart.yaml $R --set dataset.synthetic.nodes=200000 --set partition.clients=10
v "synthetic 20k, edge RR ε=2" scenarios/quickstart.yaml $R --set dataset.synthetic.nodes=20000 --set "defenses=[{kind: edge-ldp, epsilon: 2}]"
v "pubmed fedavg GCN" scenarios/cora-fedavg-gcn.yaml $R --set dataset.name=pubmed
v "dblp fedavg GCN" scenarios/cora-fedavg-gcn.yaml $R --set dataset.name=dblp
v "coauthor_cs fedavg GCN" scenarios/cora-fedavg-gcn.yaml $R --set dataset.name=coauthor_cs
v "amazon_photo fedavg GAT" scenarios/cora-fedavg-gcn.yaml $R --set dataset.name=amazon_photo --set model.arch=gat
v "facebook fedavg SAGE" scenarios/cora-fedavg-gcn.yaml $R --set dataset.name=facebook --set model.arch=sage
