"""PyTorch Geometric reference for `fgl-sim bench train`: ms per full-batch training
epoch (forward + backward + SGD step) of 2 x 16 GCN, GraphSAGE and GAT (8 heads) on
Cora (the same gnn_benchmark_npz/cora.npz file), on a random graph of PubMed's size
(20k nodes, 45k edges, 500 dense features) and on PubMed itself
(planetoid/derived/pubmed.npz), and of EC-LDA's model on Cora (two conv
layers 1433 -> 512 -> 64, ReLU, no dropout, then Linear(64, C); GAT with one head, as
PyG's default). Median of N epochs after one warm-up.

With --fgl-sim PATH, also seconds per FedAvg round (10 clients, E = 5 full-batch SGD
epochs each, sequential clients, sample-weighted parameter average) of the 2 x 16
models on Cora and PubMed, on the same Louvain clients as `fgl-sim bench train` (read
from `PATH partition --json`).

    python bench/pyg_epoch.py DATA_DIR [--threads T] [--epochs N] [--device cpu|cuda] [--fgl-sim PATH --rounds R]
"""
import argparse, time
import numpy as np, scipy.sparse as sp, torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv, SAGEConv, GATConv
from torch_geometric.utils import to_undirected, remove_self_loops, coalesce

p = argparse.ArgumentParser()
p.add_argument("data_dir"); p.add_argument("--threads", type=int, default=2); p.add_argument("--epochs", type=int, default=20)
p.add_argument("--fgl-sim", dest="fgl_sim"); p.add_argument("--rounds", type=int, default=4)
p.add_argument("--device", default="cpu", help="torch device: cpu, or cuda for PyG-CUDA beside `--backend wgpu`")
a = p.parse_args()
dev = torch.device(a.device)
def sync():
    """Wait for the GPU, so that a timer reads the work done, not the work queued."""
    if dev.type == "cuda": torch.cuda.synchronize()
torch.set_num_threads(a.threads)
torch.manual_seed(0)

def cora(path="gnn_benchmark_npz/cora.npz"):
    z = np.load(f"{a.data_dir}/{path}")
    adj = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]), shape=z["adj_shape"]).tocoo()
    x = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]), shape=z["attr_shape"]).toarray()
    ei = torch.tensor(np.vstack([adj.row, adj.col]), dtype=torch.long)
    y = torch.tensor(z["labels"], dtype=torch.long)
    return torch.tensor(x, dtype=torch.float32), ei, y, int(y.max()) + 1

def synthetic():
    g = torch.Generator().manual_seed(0)
    n = 20000
    ei = torch.randint(0, n, (2, 45000), generator=g)
    return torch.randn(n, 500, generator=g), ei, torch.randint(0, 3, (n,), generator=g), 3

class Net(torch.nn.Module):
    def __init__(s, arch, d, c):
        super().__init__()
        if arch == "gcn": s.c1, s.c2 = GCNConv(d, 16), GCNConv(16, c)
        if arch == "sage": s.c1, s.c2 = SAGEConv(d, 16), SAGEConv(16, c)
        if arch == "gat": s.c1, s.c2 = GATConv(d, 16, heads=8), GATConv(16 * 8, c, heads=1)
    def forward(s, x, ei):
        h = F.dropout(F.relu(s.c1(x, ei)), 0.5, s.training)
        return s.c2(h, ei)

class EcLda(torch.nn.Module):
    """EC-LDA's FLcore/model/GNN.py shape: conv 512, conv 64, fc2 = Linear(64, C)."""
    def __init__(s, arch, d, c):
        super().__init__()
        conv = {"gcn": GCNConv, "sage": SAGEConv, "gat": GATConv}[arch]
        s.c1, s.c2, s.fc2 = conv(d, 512), conv(512, 64), torch.nn.Linear(64, c)
    def forward(s, x, ei):
        return s.fc2(F.relu(s.c2(F.relu(s.c1(x, ei)), ei)))

def device_name():
    return torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"{a.threads} threads"

workloads = [("cora", cora(), Net), ("synthetic-20k", synthetic(), Net),
             ("pubmed", cora("planetoid/derived/pubmed.npz"), Net), ("cora-512-64", cora(), EcLda)]
for name, (x, ei, y, c), net in workloads:
    ei = coalesce(to_undirected(remove_self_loops(ei)[0]))
    train = torch.rand(x.shape[0], generator=torch.Generator().manual_seed(1)) < 0.5
    line = f"{name:<14} {x.shape[0]:>6} nodes {ei.shape[1] // 2:>6} edges | ms/epoch"
    x, ei, y, train = x.to(dev), ei.to(dev), y.to(dev), train.to(dev)
    for arch in ["gcn", "sage", "gat"]:
        m = net(arch, x.shape[1], c).to(dev); opt = torch.optim.SGD(m.parameters(), lr=0.1, weight_decay=5e-4); m.train()
        times = []
        for _ in range(a.epochs + 1):
            sync(); t = time.perf_counter()
            opt.zero_grad(); loss = F.cross_entropy(m(x, ei)[train], y[train]); loss.backward(); opt.step()
            sync(); times.append((time.perf_counter() - t) * 1e3)
        line += f" {arch} {np.median(times[1:]):7.1f}"
    print(line + f"   (torch {torch.__version__}, {device_name()})")

def fedavg(name, dataset, data, rounds):
    """Seconds per FedAvg round on fgl-sim's Louvain clients (seed 0, 10 clients)."""
    import json, subprocess
    out = subprocess.run([a.fgl_sim, "partition", "--dataset", dataset, "--clients", "10", "--method", "louvain",
                          "--seed", "0", "--json", "--data-dir", a.data_dir], check=True, capture_output=True, text=True).stdout
    assign = json.loads(out)["assignment"]
    x, ei, y, c = data
    ei = coalesce(to_undirected(remove_self_loops(ei)[0]))
    train = torch.rand(x.shape[0], generator=torch.Generator().manual_seed(1)) < 0.5
    from torch_geometric.utils import subgraph
    clients = []
    for k in range(10):
        nodes = torch.tensor([v for v, cl in enumerate(assign) if cl == k], dtype=torch.long)
        sub, _ = subgraph(nodes, ei, relabel_nodes=True, num_nodes=x.shape[0])
        clients.append((x[nodes].to(dev), sub.to(dev), y[nodes].to(dev), train[nodes].to(dev)))
    line = f"{name:<14} FedAvg 10 Louvain clients, E = 5 | s/round"
    for arch in ["gcn", "sage", "gat"]:
        glob = Net(arch, x.shape[1], c).to(dev); times = []
        for _ in range(rounds + 1):
            sync(); t = time.perf_counter()
            states, weights = [], []
            for (xc, eic, yc, tc) in clients:
                m = Net(arch, x.shape[1], c).to(dev); m.load_state_dict(glob.state_dict()); m.train()
                opt = torch.optim.SGD(m.parameters(), lr=0.1, weight_decay=5e-4)
                for _ in range(5):
                    opt.zero_grad(); F.cross_entropy(m(xc, eic)[tc], yc[tc]).backward(); opt.step()
                states.append(m.state_dict()); weights.append(float(tc.sum()))
            total = sum(weights)
            glob.load_state_dict({k: sum(w * s[k] for s, w in zip(states, weights)) / total for k in states[0]})
            sync(); times.append(time.perf_counter() - t)
        line += f" {arch} {np.median(times[1:]):6.3f}"
    print(line + f"   (torch {torch.__version__}, {device_name()})")

if a.fgl_sim:
    fedavg("cora", "cora", cora(), a.rounds)
    fedavg("pubmed", "planetoid-pubmed", cora("planetoid/derived/pubmed.npz"), a.rounds)
