"""PyTorch Geometric reference for `fgl-sim bench train`: ms per full-batch training
epoch (forward + backward + SGD step) of 2 x 16 GCN, GraphSAGE and GAT (8 heads) on
Cora (the same gnn_benchmark_npz/cora.npz file), on a random graph of PubMed's size
(20k nodes, 45k edges, 500 dense features) and on PubMed itself
(planetoid/derived/pubmed.npz), and of EC-LDA's model on Cora (two conv
layers 1433 -> 512 -> 64, ReLU, no dropout, then Linear(64, C); GAT with one head, as
PyG's default). Median of N epochs after one warm-up.

    python bench/pyg_epoch.py DATA_DIR [--threads T] [--epochs N]
"""
import argparse, time
import numpy as np, scipy.sparse as sp, torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv, SAGEConv, GATConv
from torch_geometric.utils import to_undirected, remove_self_loops, coalesce

p = argparse.ArgumentParser()
p.add_argument("data_dir"); p.add_argument("--threads", type=int, default=2); p.add_argument("--epochs", type=int, default=20)
a = p.parse_args()
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

workloads = [("cora", cora(), Net), ("synthetic-20k", synthetic(), Net),
             ("pubmed", cora("planetoid/derived/pubmed.npz"), Net), ("cora-512-64", cora(), EcLda)]
for name, (x, ei, y, c), net in workloads:
    ei = coalesce(to_undirected(remove_self_loops(ei)[0]))
    train = torch.rand(x.shape[0], generator=torch.Generator().manual_seed(1)) < 0.5
    line = f"{name:<14} {x.shape[0]:>6} nodes {ei.shape[1] // 2:>6} edges | ms/epoch"
    for arch in ["gcn", "sage", "gat"]:
        m = net(arch, x.shape[1], c); opt = torch.optim.SGD(m.parameters(), lr=0.1, weight_decay=5e-4); m.train()
        times = []
        for _ in range(a.epochs + 1):
            t = time.perf_counter()
            opt.zero_grad(); loss = F.cross_entropy(m(x, ei)[train], y[train]); loss.backward(); opt.step()
            times.append((time.perf_counter() - t) * 1e3)
        line += f" {arch} {np.median(times[1:]):7.1f}"
    print(line + f"   (torch {torch.__version__}, {a.threads} threads)")
