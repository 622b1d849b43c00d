"""A scenario's graph as numpy arrays, and as a PyG ``Data`` when PyG is installed."""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np


class Graph:
    """A graph as a run of its scenario sees it (loaded, preprocessed, split, partitioned).

    Attributes, in PyG's conventions: ``edge_index`` (int64, 2 × E; an undirected edge
    appears in both directions), ``x`` (float32, n × d, or ``None`` for a dataset without
    features), ``y`` (int64; −1 for an unlabelled node), ``train_mask`` / ``val_mask`` /
    ``test_mask`` (bool), ``client`` (int64: the client holding each node, −1 for none),
    ``num_clients``, ``class_names``, ``name``.
    """

    name: str
    num_nodes: int
    edge_index: np.ndarray
    x: Optional[np.ndarray]
    y: np.ndarray
    train_mask: np.ndarray
    val_mask: np.ndarray
    test_mask: np.ndarray
    client: np.ndarray
    num_clients: int
    class_names: List[str]

    @classmethod
    def _from_native(cls, d: dict) -> "Graph":
        g = cls.__new__(cls)
        n = d["num_nodes"]
        g.name, g.num_nodes, g.class_names, g.num_clients = d["name"], n, list(d["class_names"]), d["clients"]
        g.edge_index = np.frombuffer(d["edge_index"], dtype="<i8").reshape(2, -1).astype(np.int64)
        g.x = None if d["x"] is None else np.frombuffer(d["x"], dtype="<f4").reshape(n, d["num_features"]).astype(np.float32)
        g.y = np.frombuffer(d["y"], dtype="<i8").astype(np.int64)
        role = np.frombuffer(d["role"], dtype=np.uint8)
        g.train_mask, g.val_mask, g.test_mask = role == 0, role == 1, role == 2
        g.client = np.frombuffer(d["client"], dtype="<i8").astype(np.int64)
        return g

    @property
    def num_edges(self) -> int:
        """Directed edges in ``edge_index`` (twice the undirected edges)."""
        return int(self.edge_index.shape[1])

    def client_nodes(self, c: int) -> np.ndarray:
        """The global ids of client ``c``'s nodes, ascending."""
        return np.flatnonzero(self.client == c)

    def to_pyg(self) -> Any:
        """A ``torch_geometric.data.Data`` with the same arrays as tensors (needs PyG)."""
        try:
            import torch
            from torch_geometric.data import Data
        except ImportError as e:
            raise ImportError("Graph.to_pyg needs torch and torch_geometric (pip install torch_geometric); the numpy arrays are on the Graph itself") from e
        fields = dict(
            edge_index=torch.from_numpy(self.edge_index.copy()),
            y=torch.from_numpy(self.y.copy()),
            train_mask=torch.from_numpy(self.train_mask.copy()),
            val_mask=torch.from_numpy(self.val_mask.copy()),
            test_mask=torch.from_numpy(self.test_mask.copy()),
            client=torch.from_numpy(self.client.copy()),
            num_nodes=self.num_nodes,
        )
        if self.x is not None:
            fields["x"] = torch.from_numpy(self.x.copy())
        return Data(**fields)

    def __repr__(self) -> str:
        d = "none" if self.x is None else self.x.shape[1]
        return f"Graph({self.name!r}, nodes={self.num_nodes}, edges={self.num_edges // 2}, features={d}, clients={self.num_clients})"
