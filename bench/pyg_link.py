"""PyTorch Geometric reference for fgl-sim's link prediction (`task: link`), on the
very same edge split: test AUC-ROC and ms per epoch side by side.

The split comes from `fgl-sim link-split` (the one `fgl-sim run` trains on: training
edges, validation and test pairs with their labels, global node ids). The model is the
EC-LDA link code's (`EC-LDA-link-prediction/FLcore/model/GNN.py`) as fgl-sim builds it
with `model.head: true`: convs with ReLU after each, h_u * h_v, fc1 = Linear(h, h) +
ReLU, fc2 = Linear(h, 2), cross-entropy. Training negatives are drawn afresh every
epoch, as many as the positives, avoiding every edge of the graph (as fgl-sim does);
message passing sees the training edges while training, training + validation edges
when testing. Full batch, Adam, no weight decay, no dropout; the last epoch's model is
scored (fgl-sim's default model selection).

    python bench/pyg_link.py FGL_SIM DATA_DIR [--dataset cora] [--arch gcn] [--epochs 200]
        [--runs 3] [--heads 1] [--threads 2] [--device cpu|cuda] [--backend cpu|wgpu]

Runs fgl-sim (centralized, same settings, seeds 0..runs-1) and PyG (the split of seed
s, init seeds 0..runs-1) and prints both AUCs (mean ± sd) and ms per epoch.
"""
import argparse, json, os, subprocess, tempfile, time
import numpy as np, scipy.sparse as sp, torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv, SAGEConv, GATConv
from torch_geometric.utils import negative_sampling, to_undirected

p = argparse.ArgumentParser()
p.add_argument("fgl_sim"); p.add_argument("data_dir")
p.add_argument("--dataset", default="cora"); p.add_argument("--arch", default="gcn", choices=["gcn", "sage", "gat"])
p.add_argument("--epochs", type=int, default=200); p.add_argument("--runs", type=int, default=3)
p.add_argument("--lr", type=float, default=0.01); p.add_argument("--hidden", default="128,64")
p.add_argument("--threads", type=int, default=2); p.add_argument("--device", default="cpu")
p.add_argument("--backend", default="cpu", help="fgl-sim's backend (cpu or wgpu)")
p.add_argument("--heads", type=int, default=1, help="GAT heads in the layers before the last (concatenated; EC-LDA's code: 1)")
a = p.parse_args()
torch.set_num_threads(a.threads)
dev = torch.device(a.device)
hidden = [int(h) for h in a.hidden.split(",")]

# The scenario both sides run: the quickstart's, on the dataset, as a centralized link task.
SETTINGS = [f"dataset.name={a.dataset}", "dataset.synthetic=null", "task=link", "model.head=true",
            f"model.arch={a.arch}", f"model.heads={a.heads}", f"model.hidden=[{', '.join(map(str, hidden))}]", "model.dropout=0",
            "train.optimizer=adam", f"train.lr={a.lr}", "train.weight_decay=0", f"train.epochs={a.epochs}",
            "federation.centralized=true", "federation.rounds=1"]
SCENARIO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "quickstart.yaml")
env = dict(os.environ, FGL_DATA_DIR=a.data_dir)

def fgl(*args):
    sets = [x for s in SETTINGS for x in ("--set", s)]
    return subprocess.run([a.fgl_sim, *args, SCENARIO, *sets], env=env, check=True, capture_output=True, text=True).stdout

def features():
    z = np.load(f"{a.data_dir}/gnn_benchmark_npz/{a.dataset}.npz")
    x = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]), shape=z["attr_shape"]).toarray()
    return torch.tensor(x, dtype=torch.float32)

class Net(torch.nn.Module):
    def __init__(s, d):
        super().__init__()
        last = len(hidden) - 1
        def conv(i, o, k):
            if a.arch == "gat": return GATConv(i if k == 0 else i * a.heads, o, heads=1 if k == last else a.heads)
            return {"gcn": GCNConv, "sage": SAGEConv}[a.arch](i, o)
        dims = [d] + hidden
        s.convs = torch.nn.ModuleList(conv(i, o, k) for k, (i, o) in enumerate(zip(dims, dims[1:])))
        s.fc1, s.fc2 = torch.nn.Linear(hidden[-1], hidden[-1]), torch.nn.Linear(hidden[-1], 2)
    def forward(s, x, ei, pairs):
        for c in s.convs:
            x = F.relu(c(x, ei))
        return s.fc2(F.relu(s.fc1(x[pairs[0]] * x[pairs[1]])))

def auc(scores, labels):
    """AUC-ROC with ties counted half (the Mann-Whitney statistic)."""
    from scipy.stats import rankdata
    r = rankdata(scores); pos = labels == 1
    n1, n0 = pos.sum(), (~pos).sum()
    return (r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)

def pyg_run(split, x, init_seed):
    torch.manual_seed(init_seed)
    c = split["clients"][0]
    t = lambda pairs: torch.tensor(pairs, dtype=torch.long).t().to(dev)
    train_pos, val, test = t(c["train"]), t(c["val"]["pairs"]), t(c["test"]["pairs"])
    val_pos = val[:, torch.tensor(c["val"]["labels"]) == 1]
    test_pos = test[:, torch.tensor(c["test"]["labels"]) == 1]
    train_ei = to_undirected(train_pos)
    test_ei = to_undirected(torch.cat([train_pos, val_pos], 1))
    every_edge = to_undirected(torch.cat([train_pos, val_pos, test_pos], 1))
    n = x.shape[0]
    model = Net(x.shape[1]).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    times = []
    for _ in range(a.epochs):
        if dev.type == "cuda": torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.train(); opt.zero_grad()
        neg = negative_sampling(every_edge, num_nodes=n, num_neg_samples=c["train_negatives_per_epoch"], force_undirected=False)
        pairs = torch.cat([train_pos, neg], 1)
        y = torch.cat([torch.ones(train_pos.shape[1]), torch.zeros(neg.shape[1])]).long().to(dev)
        loss = F.cross_entropy(model(x, train_ei, pairs), y)
        loss.backward(); opt.step()
        if dev.type == "cuda": torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    model.eval()
    with torch.no_grad():
        prob = F.softmax(model(x, test_ei, test), 1)[:, 1].cpu().numpy()
    return auc(prob, np.array(c["test"]["labels"])), 1e3 * float(np.median(times[1:]))

x = features().to(dev)
ours, theirs, our_ms, their_ms = [], [], [], []
for s in range(a.runs):
    split = json.loads(fgl("link-split", "--set", f"seed={s}"))
    with tempfile.TemporaryDirectory() as out:
        fgl("run", "--quiet", "--force", "--out", out, "--backend", a.backend, "--set", f"seed={s}")
        m = json.load(open(f"{out}/metrics.json"))
    final = m.get("final") or m.get("last")
    ours.append(final["test_auc"])
    our_ms.append(1e3 * m["timings"]["round_seconds"][0] / a.epochs)  # the round: its epochs and one evaluation
    auc_s, ms = pyg_run(split, x, s)
    theirs.append(auc_s); their_ms.append(ms)
    print(f"seed {s}: fgl-sim AUC {ours[-1]:.4f} ({our_ms[-1]:.1f} ms/epoch) | PyG AUC {auc_s:.4f} ({ms:.1f} ms/epoch on {a.device})", flush=True)

sd = lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else float("nan")
print(f"\n{a.dataset} link prediction, {a.arch} {a.hidden}, Adam {a.lr}, {a.epochs} epochs, {a.runs} split(s):")
print(f"  fgl-sim ({a.backend}): test AUC {np.mean(ours):.4f} ± {sd(ours):.4f}" + f", {np.median(our_ms):.1f} ms/epoch")
print(f"  PyG ({a.device}):     test AUC {np.mean(theirs):.4f} ± {sd(theirs):.4f}, {np.median(their_ms):.1f} ms/epoch")
print(f"  difference (fgl-sim − PyG): {np.mean(ours) - np.mean(theirs):+.4f}")
