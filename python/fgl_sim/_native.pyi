"""Type stubs of the extension module (Rust, PyO3). Use the functions of ``fgl_sim``;
these are the calls they make."""

from typing import Callable, List, Optional, Sequence, Tuple

__version__: str

class FglSimError(Exception):
    """An error of fgl-sim, worded as the command line words it."""

Progress = Optional[Callable[[int, int], None]]

def run(
    *,
    path: Optional[str] = None,
    text: Optional[str] = None,
    label: str = "<string>",
    base: Optional[str] = None,
    stem: str = "scenario",
    set: Sequence[str] = (),
    out: Optional[str] = None,
    data_dir: Optional[str] = None,
    threads: Optional[int] = None,
    force: bool = False,
    checkpoint_every: Optional[int] = None,
    max_memory: Optional[str] = None,
    progress: Progress = None,
) -> Tuple[str, Optional[str]]:
    """Run a scenario; returns (results directory, the divergence message if training diverged)."""

def resume(
    dir: str,
    *,
    data_dir: Optional[str] = None,
    threads: Optional[int] = None,
    checkpoint_every: Optional[int] = None,
    max_memory: Optional[str] = None,
    progress: Progress = None,
) -> Tuple[str, Optional[str]]:
    """Go on with an interrupted run; returns as :func:`run`."""

def matrix(
    path: str,
    *,
    out: Optional[str] = None,
    data_dir: Optional[str] = None,
    jobs: Optional[int] = None,
    checkpoint_every: Optional[int] = None,
    max_memory: Optional[str] = None,
    only: Sequence[str] = (),
    shared_rounds: bool = True,
    progress: Progress = None,
) -> Tuple[str, int, int, int, float, Optional[str]]:
    """Run a matrix (``only``: ``--only`` arguments, ``COLUMN=VALUE[,VALUE…]``; ``shared_rounds=False``: ``--no-shared-rounds``); returns (report directory, runs made, already finished, failed, wall seconds, failure message)."""

def reproduce(args: Sequence[str], *, progress: Progress = None) -> str:
    """``fgl-sim reproduce ARGS…``; returns the results directory."""

def reproduce_plan(args: Sequence[str]) -> str:
    """``fgl-sim reproduce ARGS… --dry-run``; returns the plan it prints."""

def privacy(args: Sequence[str]) -> str:
    """``fgl-sim privacy epsilon|sigma ARGS… --json``; returns the JSON."""

def datasets(data_dir: Optional[str] = None) -> str:
    """``fgl-sim datasets --json``; returns the JSON."""

def presets() -> List[Tuple[str, str, str, Optional[str], Optional[str]]]:
    """(kind, name, description, resolved YAML, error) of every built-in preset."""

def load(
    *,
    path: Optional[str] = None,
    text: Optional[str] = None,
    label: str = "<string>",
    base: Optional[str] = None,
    set: Sequence[str] = (),
    data_dir: Optional[str] = None,
) -> dict:
    """A scenario's prepared graph as little-endian array bytes (see fgl_sim.Graph)."""

def resolve(
    *,
    path: Optional[str] = None,
    text: Optional[str] = None,
    label: str = "<string>",
    base: Optional[str] = None,
    set: Sequence[str] = (),
) -> str:
    """The scenario resolved, as YAML."""
