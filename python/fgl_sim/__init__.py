"""fgl-sim from Python: federated graph learning with a privacy attack/defense harness.

Every function runs the crate's own code (the one the ``fgl-sim`` command runs), so the
numbers are the command line's, bit for bit. Results land in the same directories
(``metrics.json``, ``cells.csv``, ``reproduce.csv``) and come back as pandas frames::

    import fgl_sim
    r = fgl_sim.run("scenarios/quickstart.yaml")
    r.final["test_accuracy"], r.rounds.tail()
    cells = fgl_sim.matrix("scenarios/matrix/quick.yaml")

Errors raise :class:`FglSimError` with the command line's message (the file, field or
parameter at fault and what is allowed). Ctrl-C (a KeyboardInterrupt) stops a run at its
next round boundary, saving its state as ``fgl-sim run`` does on SIGINT.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from . import privacy
from ._native import FglSimError, __version__
from . import _native
from .graph import Graph

__all__ = [
    "FglSimError",
    "Graph",
    "RunResult",
    "__version__",
    "datasets",
    "load",
    "matrix",
    "presets",
    "privacy",
    "reproduce",
    "resolve",
    "resume",
    "run",
]

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def _scenario_args(scenario: Scenario, name: Optional[str]) -> dict:
    """A scenario given as a path, YAML text or a dict, as the native calls take it."""
    if isinstance(scenario, Mapping):
        # JSON is YAML: the dict goes through the same parser (and field checks) as a file.
        return {"text": json.dumps(scenario), "label": "<dict>", "base": os.getcwd(), **({"stem": name} if name else {})}
    if isinstance(scenario, os.PathLike):
        return {"path": os.fspath(scenario)}
    if not isinstance(scenario, str):
        raise TypeError(f"scenario: a path, YAML text or a dict, not {type(scenario).__name__}")
    if "\n" not in scenario and (scenario.endswith((".yaml", ".yml")) or os.path.isfile(scenario)):
        return {"path": scenario}
    return {"text": scenario, "label": "<string>", "base": os.getcwd(), **({"stem": name} if name else {})}


def _overrides(set: Union[None, Mapping[str, Any], Iterable[str]]) -> list:
    """``set=`` as the CLI's ``--set PATH=VALUE`` list; a dict's values are written as YAML (JSON)."""
    if set is None:
        return []
    if isinstance(set, Mapping):
        return [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in set.items()]
    if isinstance(set, str):
        return [set]
    return list(set)


class _Bar:
    """A tqdm bar (``tqdm.auto``: a widget in Jupyter) fed by the native progress hook."""

    def __init__(self, unit: str, quiet: bool):
        self.unit, self.bar = unit, None
        if quiet:
            self.tqdm = None
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:  # no tqdm: no bar
            tqdm = None
        self.tqdm = tqdm

    def __call__(self, done: int, total: int) -> None:
        if self.tqdm is None or total == 0:
            return
        if self.bar is None:
            self.bar = self.tqdm(total=total, unit=self.unit, leave=False)
        elif total != self.bar.total or done < self.bar.n:
            # A reproduction runs its parts one after another, each counted from 1.
            self.bar.reset(total=total)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def hook(self) -> Optional[Callable[[int, int], None]]:
        return self if self.tqdm is not None else None


def _with_bar(unit: str, quiet: bool, call: Callable[[Optional[Callable]], Any]) -> Any:
    bar = _Bar(unit, quiet)
    try:
        return call(bar.hook())
    finally:
        bar.close()


class RunResult:
    """A finished run, read back from its results directory.

    ``metrics`` is ``metrics.json`` as a dict; ``rounds``, ``clients`` and ``attacks``
    are its per-round, per-client and per-attack lists as DataFrames.
    """

    def __init__(self, dir: Union[str, os.PathLike]):
        self.dir = Path(dir)
        with open(self.dir / "metrics.json", encoding="utf-8") as f:
            self.metrics: dict = json.load(f)

    @property
    def final(self) -> dict:
        """The last round's global metrics (``test_accuracy``, ``test_loss``, …)."""
        return self.metrics["final"]

    @property
    def rounds(self) -> pd.DataFrame:
        """One row per FedAvg round (global test accuracy and losses, clients selected, …)."""
        return pd.DataFrame(self.metrics["rounds"])

    @property
    def clients(self) -> pd.DataFrame:
        """One row per client (its nodes, edges, split, label distribution, privacy spent)."""
        return pd.DataFrame(self.metrics["clients"])

    @property
    def attacks(self) -> pd.DataFrame:
        """One row per attack report (an attack's inference of one client's label
        distribution in one round): ``estimate``, ``truth`` and the scores (``scores_*``,
        the uniform guess's ``uniform_*``, and ``vs_trained_labels_*`` when a defense
        randomised the labels)."""
        rows = []
        for a in self.metrics.get("attacks", []):
            for r in a.get("reports", []):
                row = {"attack": a["attack"]}
                for k, v in r.items():
                    if isinstance(v, dict):
                        row.update({f"{k}_{kk}": vv for kk, vv in v.items()})
                    else:
                        row[k] = v
                rows.append(row)
        return pd.DataFrame(rows)

    @property
    def diverged(self) -> bool:
        """Whether training stopped on a non-finite loss (``metrics.json`` writes it as null)."""
        f = self.final
        return any(not isinstance(f.get(k), (int, float)) or not math.isfinite(f[k]) for k in ("train_loss", "test_loss"))

    def __repr__(self) -> str:
        f = self.final
        return f"RunResult({str(self.dir)!r}, round {f.get('round')}, test accuracy {f.get('test_accuracy')})"


def run(
    scenario: Scenario,
    *,
    set: Union[None, Mapping[str, Any], Sequence[str]] = None,
    seed: Optional[int] = None,
    backend: Optional[str] = None,
    out: Union[None, str, os.PathLike] = None,
    data_dir: Union[None, str, os.PathLike] = None,
    threads: Optional[int] = None,
    force: bool = False,
    name: Optional[str] = None,
    checkpoint_every: Optional[int] = None,
    max_memory: Union[None, str, int] = None,
    quiet: bool = False,
) -> RunResult:
    """Run a scenario (``fgl-sim run``) and return its results.

    ``scenario``: a YAML file's path, YAML text, or a dict of the same fields.
    ``set``: overrides as the CLI's ``--set`` (``{"federation.rounds": 5}`` or
    ``["federation.rounds=5"]``); ``seed`` and ``backend`` as ``--seed``/``--backend``.
    ``out``: the results directory (default: the scenario's ``output.dir``, else
    ``results/<name>-<time>``; an existing one only with ``force=True``). ``name``: the
    run's name when the scenario is text or a dict (a file's is its stem).
    ``quiet=True``: no progress bar.
    """
    overrides = _overrides(set)
    if seed is not None:
        overrides.append(f"seed={seed}")
    if backend is not None:
        overrides.append(f"backend={backend}")
    args = _scenario_args(scenario, name)
    return _finished_run(
        quiet,
        lambda hook: _native.run(
            **args,
            set=overrides,
            out=_path(out),
            data_dir=_path(data_dir),
            threads=threads,
            force=force,
            checkpoint_every=checkpoint_every,
            max_memory=_size(max_memory),
            progress=hook,
        ),
    )


def _finished_run(quiet: bool, call: Callable[[Optional[Callable]], Any]) -> RunResult:
    """A native run call under a bar over rounds; a diverged run warns with the CLI's message."""
    try:
        dir, diverged = _with_bar("round", quiet, call)
    except KeyboardInterrupt as e:
        # The library's hint names the command line's way to go on; name this package's.
        hint = re.search(r"`fgl-sim run --resume (.+?)`", str(e))
        if hint is None:
            raise
        raise KeyboardInterrupt(str(e).replace(hint.group(0), f"`fgl_sim.resume({hint.group(1)!r})`")) from None
    if diverged:
        warnings.warn(diverged, RuntimeWarning, stacklevel=3)
    return RunResult(dir)


def resume(
    dir: Union[str, os.PathLike],
    *,
    data_dir: Union[None, str, os.PathLike] = None,
    threads: Optional[int] = None,
    checkpoint_every: Optional[int] = None,
    max_memory: Union[None, str, int] = None,
    quiet: bool = False,
) -> RunResult:
    """Go on with a run that was stopped (Ctrl-C, or killed after a checkpoint) from the
    state saved in its results directory (``fgl-sim run --resume DIR``); the numbers are
    those of an uninterrupted run."""
    return _finished_run(
        quiet,
        lambda hook: _native.resume(
            os.fspath(dir),
            data_dir=_path(data_dir),
            threads=threads,
            checkpoint_every=checkpoint_every,
            max_memory=_size(max_memory),
            progress=hook,
        ),
    )


def matrix(
    path: Union[str, os.PathLike],
    *,
    jobs: Optional[int] = None,
    out: Union[None, str, os.PathLike] = None,
    data_dir: Union[None, str, os.PathLike] = None,
    checkpoint_every: Optional[int] = None,
    max_memory: Union[None, str, int] = None,
    only: Optional[Mapping[str, Union[str, Sequence[str]]]] = None,
    shared_rounds: bool = True,
    quiet: bool = False,
) -> pd.DataFrame:
    """Run an attack × defense matrix file (``fgl-sim matrix``) and return its ``cells.csv``.

    Runs already finished in the results directory are kept; the report (``report.html``,
    ``report.md``, figures) is written beside ``cells.csv``, whose path is in
    ``frame.attrs["results_dir"]``. Failed runs are listed in the frame and warned about.
    ``only`` (``--only``): run just the cells whose columns take the given values, e.g.
    ``{"defense": ["secagg", "dp-fedavg"]}``; the report still covers every cell.
    ``shared_rounds=False`` (``--no-shared-rounds``): run every run from round 1, instead
    of running once the rounds that runs differing only in their attacks have in common
    (the same numbers either way).
    """
    dir, ran, skipped, failed, wall, message = _with_bar(
        "run",
        quiet,
        lambda hook: _native.matrix(
            os.fspath(path),
            out=_path(out),
            data_dir=_path(data_dir),
            jobs=jobs,
            checkpoint_every=checkpoint_every,
            max_memory=_size(max_memory),
            only=[
                f"{column}={values if isinstance(values, str) else ','.join(map(str, values))}"
                for column, values in (only or {}).items()
            ],
            shared_rounds=shared_rounds,
            progress=hook,
        ),
    )
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    frame = pd.read_csv(Path(dir) / "cells.csv")
    frame.attrs.update(results_dir=dir, ran=ran, skipped=skipped, failed=failed, wall_seconds=wall)
    return frame


def reproduce(paper: str, *, quiet: bool = False, **options: Any) -> Union[pd.DataFrame, str]:
    """Reproduce a paper's table (``fgl-sim reproduce PAPER``) and return ``reproduce.csv``.

    ``paper``: ``ec-lda``, ``lpgnn``, ``rgnn``, ``solitude``, or a table file's path (a
    user's own table, ``fgl-sim reproduce table FILE``). ``options`` are the command's
    flags with ``_`` for ``-``: ``reproduce("rgnn", dataset="cora", runs=2,
    setting=["centralized"], epochs=5, out="results/rgnn")``; a list repeats the flag, ``True``
    gives a bare flag. The results directory is in ``frame.attrs["results_dir"]``.
    With ``dry_run=True`` nothing runs: the plan ``--dry-run`` prints is returned, as a string.
    """
    dry_run = options.pop("dry_run", False)
    words = ["table", os.fspath(paper)] if _is_table_file(paper) else [paper]
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v is True:
                words.append(flag)
            elif v is False or v is None:
                continue
            else:
                words += [flag, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    if dry_run:
        return _native.reproduce_plan(words)
    dir = _with_bar("run", quiet, lambda hook: _native.reproduce(words, progress=hook))
    frame = pd.read_csv(Path(dir) / "reproduce.csv")
    frame.attrs["results_dir"] = dir
    return frame


def _is_table_file(paper: Any) -> bool:
    return isinstance(paper, os.PathLike) or (isinstance(paper, str) and paper.endswith((".yaml", ".yml")))


def datasets(data_dir: Union[None, str, os.PathLike] = None) -> pd.DataFrame:
    """The datasets fgl-sim knows (``fgl-sim datasets``): one row each, loaded and checked
    from the data directory when there (``status`` ``ok``, with their statistics), else
    why not and where the files are expected."""
    rows = []
    for d in json.loads(_native.datasets(_path(data_dir))):
        stats = d.pop("stats") or {}
        notes = d.pop("notes") or []
        rows.append({**d, **stats, "notes": notes})
    return pd.DataFrame(rows)


def presets() -> pd.DataFrame:
    """The built-in attack and defense presets (``fgl-sim presets``): kind, name,
    description and the resolved YAML a scenario gets by naming it."""
    return pd.DataFrame(_native.presets(), columns=["kind", "name", "description", "yaml", "error"])


def resolve(scenario: Scenario, *, set: Union[None, Mapping[str, Any], Sequence[str]] = None) -> str:
    """Check a scenario and return it resolved (every default filled in) as YAML, as
    ``fgl-sim scenario check`` prints it; raises :class:`FglSimError` when it is invalid."""
    args = _scenario_args(scenario, None)
    return _native.resolve(**args, set=_overrides(set))


def load(
    scenario: Scenario,
    *,
    set: Union[None, Mapping[str, Any], Sequence[str]] = None,
    data_dir: Union[None, str, os.PathLike] = None,
) -> Graph:
    """A scenario's graph as its run sees it — loaded, preprocessed, split and partitioned
    into clients — as numpy arrays (:class:`Graph`; ``.to_pyg()`` gives a
    ``torch_geometric.data.Data`` when PyG is installed). ``scenario`` may also be a bare
    dataset name (``"cora"``): its default scenario (10 Louvain clients, seed 0)."""
    if isinstance(scenario, str) and "\n" not in scenario and ":" not in scenario and not scenario.endswith((".yaml", ".yml")) and not os.path.exists(scenario):
        scenario = {"dataset": {"name": scenario}}
    args = _scenario_args(scenario, None)
    return Graph._from_native(_native.load(**args, set=_overrides(set), data_dir=_path(data_dir)))


def _size(m: Union[None, str, int]) -> Optional[str]:
    """``max_memory``: bytes, or a size with K, M, G or T as the CLI's ``--max-memory``."""
    return None if m is None else str(m)


def _path(p: Union[None, str, os.PathLike]) -> Optional[str]:
    return None if p is None else os.fspath(p)
