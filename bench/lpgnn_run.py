"""PyTorch Geometric reference for LPGNN (Sajadmanesh & Gatica-Perez, "Locally Private
Graph Neural Networks", CCS'21) on Cora: a self-contained port of the published code
(github.com/sisaman/LPGNN: datasets.py, transforms.py, mechanisms.py, models.py,
trainer.py, main.py) without wandb / hyperopt, for timing and checking.

Pipeline, as in main.py:
  data (once per call): Cora from planetoid/derived/cora.npz, undirected; random
      50/25/25 train/val/test split (AddTrainValTestMask 'train_rest'); per-column
      min-max to [0, 1], dropping constant columns (transforms.Normalize).
  per run: FeatureTransform('raw') -> FeaturePerturbation (multi-bit mechanism,
      m = 'best', eps_x, input range (0, 1)) -> LabelPerturbation (k-ary randomized
      response on train + val, transition matrix T) -> NodeClassifier (KProp_x cached,
      sym. norm, no self loops; 2 x 16 GNN with SELU and dropout; softmax; forward
      correction . T; KProp_y + softmax; "Drop" loss on cached KProp_y targets) ->
      Trainer (Adam, full batch, trainer.py's model-selection rule, no early stop).
  reports the test accuracy (%) at the selected epoch.

One JSON line per run {"run", "test_acc", "selected_epoch", "seconds"} and a final JSON
summary {"mean", "ci95" (95% bootstrap half-width, 1000 resamples, seed 12345, as
LPGNN's confidence_interval), "seconds_per_run" (mean; median and min also given, the
box being shared), "peak_rss_mb", ...}. A run is timed
from after data loading to the end of training (perturbation + model build + epochs).

    python bench/lpgnn_run.py --eps-x 1 --eps-y 1 --kx 2 --ky 8 --lr 0.01 --wd 0.001 \
        --dropout 0.5 --runs 10 [--model sage|gcn|gat] [--epochs 500] [--seed 0] \
        [--threads 2] [--data-dir /work/shared/datasets]
"""
import argparse, json, math, random, resource, time
import numpy as np, scipy.sparse as sp, torch
import torch.nn.functional as F
from torch.nn import Dropout, SELU
from torch_geometric.nn import MessagePassing, SAGEConv, GCNConv, GATConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import to_undirected, coalesce, spmm, to_torch_csr_tensor

p = argparse.ArgumentParser()
p.add_argument("--eps-x", dest="eps_x", type=float, default=math.inf)   # float('inf') parses "inf"
p.add_argument("--eps-y", dest="eps_y", type=float, default=math.inf)
p.add_argument("--kx", type=int, default=0); p.add_argument("--ky", type=int, default=0)
p.add_argument("--lr", type=float, default=0.01); p.add_argument("--wd", type=float, default=0.0)
p.add_argument("--dropout", type=float, default=0.0)
p.add_argument("--feature", choices=["raw", "rnd", "one", "ohd"], default="raw")
p.add_argument("--no-forward", dest="forward", action="store_false")  # CE baseline (with --ky 0)
p.add_argument("--model", choices=["sage", "gcn", "gat"], default="sage")
p.add_argument("--hidden", type=int, default=16)
p.add_argument("--epochs", type=int, default=500); p.add_argument("--runs", type=int, default=1)
p.add_argument("--seed", type=int, default=0); p.add_argument("--threads", type=int, default=2)
p.add_argument("--data-dir", dest="data_dir", default="/work/shared/datasets")
a = p.parse_args()
torch.set_num_threads(a.threads)
random.seed(a.seed); np.random.seed(a.seed); torch.manual_seed(a.seed)   # main.py's seed_everything


# ---------------------------------------------------------------- data (datasets.load_dataset)
def load_cora(path="planetoid/derived/cora.npz", val_ratio=0.25, test_ratio=0.25, low=0.0, high=1.0):
    z = np.load(f"{a.data_dir}/{path}")
    adj = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]), shape=z["adj_shape"]).tocoo()
    x = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]), shape=z["attr_shape"]).toarray()
    n = x.shape[0]
    ei = coalesce(to_undirected(torch.tensor(np.vstack([adj.row, adj.col]), dtype=torch.long), num_nodes=n), num_nodes=n)
    y = torch.tensor(z["labels"], dtype=torch.long)
    # AddTrainValTestMask(split='train_rest', num_val=.25, num_test=.25): val, test, rest = train
    num_val, num_test = round(n * val_ratio), round(n * test_ratio)
    perm = torch.randperm(n)
    masks = [torch.zeros(n, dtype=torch.bool) for _ in range(3)]
    masks[1][perm[:num_val]] = True
    masks[2][perm[num_val:num_val + num_test]] = True
    masks[0][perm[num_val + num_test:]] = True
    # transforms.Normalize(low, high): per-column min-max, constant columns removed
    x = torch.tensor(x, dtype=torch.float32)
    alpha, beta = x.min(dim=0)[0], x.max(dim=0)[0]
    delta = beta - alpha
    x = (x - alpha) * (high - low) / delta + low
    x = x[:, torch.nonzero(delta, as_tuple=False).squeeze()]
    # ToSparseTensor: adj_t[i, j] = 1 for an edge j -> i (the transpose; Cora is symmetric)
    adj_t = to_torch_csr_tensor(ei.flip(0), size=(n, n))
    return dict(x=x, y=y, edge_index=ei, adj_t=adj_t, train_mask=masks[0], val_mask=masks[1],
                test_mask=masks[2], num_classes=int(y.max()) + 1, data_range=(low, high))


# ---------------------------------------------------------------- mechanisms.py
def multibit(x, eps, alpha, beta, m="best"):
    n, d = x.size()
    m = int(max(1, min(d, math.floor(eps / 2.18)))) if m == "best" else (d if m == "max" else m)
    big_s = torch.rand_like(x).topk(m, dim=1).indices            # sample m features per node
    s = torch.zeros_like(x, dtype=torch.bool).scatter(1, big_s, True)
    em = math.exp(eps / m)
    pr = (x - alpha) / (beta - alpha)
    pr = (pr * (em - 1) + 1) / (em + 1)
    t = torch.bernoulli(pr)
    x_star = s * (2 * t - 1)
    x_prime = d * (beta - alpha) / (2 * m)                        # unbias
    x_prime = x_prime * (em + 1) * x_star / (em - 1)
    return x_prime + (alpha + beta) / 2


class RandomizedResponse:
    def __init__(self, eps, d):
        self.d = d
        self.q = 1.0 / (math.exp(eps) + self.d - 1)
        self.p = self.q * math.exp(eps)

    def __call__(self, y):
        pr = y * self.p + (1 - y) * self.q
        out = torch.multinomial(pr, num_samples=1)
        return F.one_hot(out.squeeze(), num_classes=self.d)


# ---------------------------------------------------------------- transforms.py (main.py's order)
def perturb(data, eps_x, eps_y, feature="raw"):
    d = dict(data); d["x"] = data["x"].clone(); d["y"] = data["y"].clone()
    # FeatureTransform(feature): rnd / one / ohd (one-hot degree capped at d - 1) replace x.
    if feature == "rnd":
        d["x"] = torch.rand_like(d["x"])
    elif feature == "one":
        d["x"] = torch.ones_like(d["x"])
    elif feature == "ohd":
        n, f = d["x"].shape
        deg = torch.bincount(d["edge_index"][0], minlength=n).clamp(max=f - 1)
        d["x"] = F.one_hot(deg, num_classes=f).float()
    # FeaturePerturbation('mbm', x_eps, data_range=(0, 1)):
    if not math.isinf(eps_x):
        d["x"] = multibit(d["x"], eps_x, *d["data_range"])
    # LabelPerturbation(y_eps)
    c = d["num_classes"]
    d["y"] = F.one_hot(d["y"], num_classes=c)
    p_ii, p_ij = 1, 0
    if not math.isinf(eps_y):
        rr = RandomizedResponse(eps=eps_y, d=c)
        mask = d["train_mask"] | d["val_mask"]
        d["y"][mask] = rr(d["y"][mask])
        p_ii, p_ij = rr.p, rr.q
    d["T"] = torch.ones(c, c) * p_ij
    d["T"].fill_diagonal_(p_ii)
    return d


# ---------------------------------------------------------------- models.py
class KProp(MessagePassing):
    def __init__(self, steps, aggregator, add_self_loops, normalize, cached, transform=lambda x: x):
        super().__init__(aggr=aggregator)
        self.transform, self.K = transform, steps
        self.add_self_loops, self.normalize, self.cached = add_self_loops, normalize, cached
        self._cached_x = None

    def forward(self, x, adj_t):
        if self._cached_x is None or not self.cached:
            self._cached_x = self.neighborhood_aggregation(x, adj_t)
        return self._cached_x

    def neighborhood_aggregation(self, x, adj_t):
        if self.K <= 0:
            return x
        if self.normalize:
            adj_t, _ = gcn_norm(adj_t, add_self_loops=False)     # D^-1/2 A D^-1/2 (recomputed when not cached, as upstream)
        assert not self.add_self_loops                           # unused by LPGNN (upstream: adj_t.set_diag())
        for _ in range(self.K):
            x = self.propagate(adj_t, x=x)
        return self.transform(x)

    def message_and_aggregate(self, adj_t, x):
        return spmm(adj_t, x, reduce=self.aggr)


class GNN(torch.nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout, self.activation = Dropout(p=dropout), SELU(inplace=True)

    def forward(self, x, adj_t):
        x = self.conv1(x, adj_t)
        x = self.activation(x)
        x = self.dropout(x)
        return self.conv2(x, adj_t)


class GCN(GNN):
    def __init__(self, input_dim, output_dim, hidden_dim, dropout):
        super().__init__(dropout)
        self.conv1, self.conv2 = GCNConv(input_dim, hidden_dim), GCNConv(hidden_dim, output_dim)


class GAT(GNN):
    def __init__(self, input_dim, output_dim, hidden_dim, dropout):
        super().__init__(dropout)
        heads = 4
        self.conv1 = GATConv(input_dim, hidden_dim, heads=heads, concat=True)
        self.conv2 = GATConv(heads * hidden_dim, output_dim, heads=1, concat=False)


class GraphSAGE(GNN):
    def __init__(self, input_dim, output_dim, hidden_dim, dropout):
        super().__init__(dropout)
        self.conv1 = SAGEConv(input_dim, hidden_dim, normalize=False, root_weight=True)
        self.conv2 = SAGEConv(hidden_dim, output_dim, normalize=False, root_weight=True)


def accuracy(pred, target):                                   # torch_geometric 1.7 utils.accuracy
    pred = pred.argmax(dim=1) if pred.dim() > 1 else pred
    target = target.argmax(dim=1) if target.dim() > 1 else target
    return int((pred == target).sum()) / target.numel()


def cross_entropy_loss(p_y, y, num_classes):
    y_onehot = F.one_hot(y.argmax(dim=1), num_classes)        # upstream infers the width from max(argmax)+1
    loss = -torch.log(p_y + 1e-20) * y_onehot
    return loss.sum(dim=1).mean()


class NodeClassifier(torch.nn.Module):
    def __init__(self, input_dim, num_classes, model="sage", hidden_dim=16, dropout=0.0, x_steps=0, y_steps=0,
                 forward_correction=True):
        super().__init__()
        self.x_prop = KProp(steps=x_steps, aggregator="add", add_self_loops=False, normalize=True, cached=True)
        self.y_prop = KProp(steps=y_steps, aggregator="add", add_self_loops=False, normalize=True, cached=False,
                            transform=torch.nn.Softmax(dim=1))
        self.gnn = {"gcn": GCN, "sage": GraphSAGE, "gat": GAT}[model](
            input_dim=input_dim, output_dim=num_classes, hidden_dim=hidden_dim, dropout=dropout)
        # GATConv cannot add self loops to a torch.sparse adjacency: GAT gets edge_index (same graph)
        self.gnn_adj = "edge_index" if model == "gat" else "adj_t"
        self.cached_yt, self.forward_correction, self.c = None, forward_correction, num_classes

    def forward(self, data):
        x = self.x_prop(data["x"], data["adj_t"])
        x = self.gnn(x, data[self.gnn_adj])
        p_y_x = F.softmax(x, dim=1)                                                        # P(y|x')
        p_yp_x = torch.matmul(p_y_x, data["T"]) if self.forward_correction else p_y_x     # P(y'|x')
        p_yt_x = self.y_prop(p_yp_x, data["adj_t"])                                        # P(y~|x')
        return p_y_x, p_yp_x, p_yt_x

    def training_step(self, data):
        p_y_x, p_yp_x, p_yt_x = self(data)
        if self.cached_yt is None:
            yp = data["y"].float()
            yp[data["test_mask"]] = 0                                                      # no test labels
            self.cached_yt = self.y_prop(yp, data["adj_t"])                                # y~
        tm = data["train_mask"]
        loss = cross_entropy_loss(p_yt_x[tm], self.cached_yt[tm], self.c)
        return loss, {"train/loss": loss.item(), "train/acc": accuracy(p_y_x[tm], data["y"][tm]) * 100,
                      "train/maxacc": data["T"][0, 0].item() * 100}

    def validation_step(self, data):
        p_y_x, p_yp_x, _ = self(data)
        vm, te = data["val_mask"], data["test_mask"]
        return {"val/loss": cross_entropy_loss(p_yp_x[vm], data["y"][vm], self.c).item(),
                "val/acc": accuracy(p_y_x[vm], data["y"][vm]) * 100,
                "test/acc": accuracy(p_y_x[te], data["y"][te]) * 100}


# ---------------------------------------------------------------- trainer.py (patience 0: no early stop)
def fit(model, data, lr, wd, max_epochs):
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=wd)
    best = None
    for epoch in range(1, max_epochs + 1):
        metrics = {"epoch": epoch}
        model.train(); opt.zero_grad()
        loss, m = model.training_step(data)
        loss.backward(); opt.step()
        metrics.update(m)
        model.eval()
        with torch.no_grad():
            metrics.update(model.validation_step(data))
        if best is None or (
            metrics["val/loss"] < best["val/loss"] and
            best["val/acc"] < metrics["val/acc"] <= metrics["train/maxacc"] and
            best["train/acc"] < metrics["train/acc"] <= 1.05 * metrics["train/maxacc"]
        ):
            best = metrics
    return best


def confidence_interval(data, size=1000, ci=95, seed=12345):   # main.py + utils.bootstrap
    data = np.asarray(data); n = len(data)
    rng = np.random.default_rng(seed)
    reps = np.array([np.mean(data.take(rng.integers(0, n, n, dtype=np.intp), axis=0)) for _ in range(size)])
    lo, hi = np.nanpercentile(reps, (50 - ci / 2, 50 + ci / 2))
    return (hi - lo) / 2


data = load_cora()
accs, secs = [], []
for run in range(a.runs):
    t = time.perf_counter()
    d = perturb(data, a.eps_x, a.eps_y, a.feature)
    model = NodeClassifier(d["x"].shape[1], d["num_classes"], model=a.model, hidden_dim=a.hidden,
                           dropout=a.dropout, x_steps=a.kx, y_steps=a.ky, forward_correction=a.forward)
    best = fit(model, d, a.lr, a.wd, a.epochs)
    secs.append(time.perf_counter() - t); accs.append(best["test/acc"])
    print(json.dumps({"run": run, "test_acc": round(best["test/acc"], 4), "selected_epoch": best["epoch"],
                      "seconds": round(secs[-1], 3)}), flush=True)

print(json.dumps({"mean": round(float(np.mean(accs)), 4), "ci95": round(float(confidence_interval(accs)), 4),
                  "seconds_per_run": round(float(np.mean(secs)), 3),
                  "seconds_median": round(float(np.median(secs)), 3), "seconds_min": round(float(np.min(secs)), 3),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "runs": a.runs, "model": a.model, "eps_x": str(a.eps_x) if math.isinf(a.eps_x) else a.eps_x,
                  "eps_y": str(a.eps_y) if math.isinf(a.eps_y) else a.eps_y, "kx": a.kx, "ky": a.ky,
                  "lr": a.lr, "wd": a.wd, "dropout": a.dropout, "epochs": a.epochs, "seed": a.seed,
                  "threads": a.threads, "features": int(data["x"].shape[1]), "edges": int(data["edge_index"].shape[1] // 2),
                  "split": [int(data[k].sum()) for k in ("train_mask", "val_mask", "test_mask")],
                  "torch": torch.__version__}), flush=True)
