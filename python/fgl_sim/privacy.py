"""The DP accountants (``fgl-sim privacy``): the ε a noise multiplier spends, or the σ a
target ε needs, for DP-GNN's multi-term accountant or DP-SGD's subsampled Gaussian."""

from __future__ import annotations

import json
from typing import Optional, Sequence, Union

from . import _native

__all__ = ["epsilon", "sigma"]

Orders = Union[str, Sequence[float]]


def _args(accountant: str, steps: int, nodes, max_degree, layers, batch, sample_rate, delta, conversion, orders) -> list:
    words = ["--accountant", accountant, "--steps", str(steps), "--conversion", conversion, "--json"]
    words += ["--orders", orders if isinstance(orders, str) else ",".join(repr(float(o)) for o in orders)]
    for flag, v in [("--nodes", nodes), ("--max-degree", max_degree), ("--layers", layers), ("--batch", batch), ("--sample-rate", sample_rate), ("--delta", delta)]:
        if v is not None:
            words += [flag, repr(v)]
    return words


def epsilon(
    sigma: float,
    *,
    accountant: str,
    steps: int,
    nodes: Optional[int] = None,
    max_degree: Optional[int] = None,
    layers: Optional[int] = None,
    batch: Optional[int] = None,
    sample_rate: Optional[float] = None,
    delta: Optional[float] = None,
    conversion: str = "improved",
    orders: Orders = "default",
) -> dict:
    """The (ε, δ) that ``steps`` steps with noise multiplier ``sigma`` spend
    (``fgl-sim privacy epsilon --json``). ``accountant="dp-gnn"`` needs ``nodes``,
    ``max_degree``, ``layers`` and ``batch`` (δ defaults to 1/(10·nodes));
    ``accountant="dp-sgd"`` needs ``sample_rate`` and ``delta``. Returns the command's
    JSON object as a dict (``epsilon``, ``delta``, ``order``, ``sigma``, …)."""
    words = ["epsilon", "--sigma", repr(float(sigma))]
    words += _args(accountant, steps, nodes, max_degree, layers, batch, sample_rate, delta, conversion, orders)
    return json.loads(_native.privacy(words))


def sigma(
    target_epsilon: float,
    *,
    accountant: str,
    steps: int,
    nodes: Optional[int] = None,
    max_degree: Optional[int] = None,
    layers: Optional[int] = None,
    batch: Optional[int] = None,
    sample_rate: Optional[float] = None,
    delta: Optional[float] = None,
    conversion: str = "improved",
    orders: Orders = "default",
) -> dict:
    """The smallest σ whose ε is at most ``target_epsilon``, and the ε it spends
    (``fgl-sim privacy sigma --json``); the parameters as :func:`epsilon`'s."""
    words = ["sigma", "--target-epsilon", repr(float(target_epsilon))]
    words += _args(accountant, steps, nodes, max_degree, layers, batch, sample_rate, delta, conversion, orders)
    return json.loads(_native.privacy(words))
