"""The Python package against the CLI: same numbers, same errors, frames of the results."""

import json
import math
import os
import signal
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import fgl_sim
from fgl_sim import FglSimError, _native

from conftest import read_json

QUICKSTART = "scenarios/quickstart.yaml"
# What two runs of one scenario differ in: wall-clock times only.
TIMED = {"timings"}


def untimed(metrics):
    return {k: v for k, v in metrics.items() if k not in TIMED}


def test_quickstart_gives_the_cli_numbers_exactly(cli, tmp_path):
    cli("run", QUICKSTART, "--out", tmp_path / "cli", "--quiet")
    r = fgl_sim.run(QUICKSTART, out=tmp_path / "py", quiet=True)
    expected = read_json(tmp_path / "cli" / "metrics.json")
    assert untimed(r.metrics) == untimed(expected)
    # The same files, written the same way.
    for name in ("scenario.resolved.yaml", "summary.md"):
        assert (tmp_path / "py" / name).exists()
    assert (tmp_path / "py" / "scenario.resolved.yaml").read_text() == (tmp_path / "cli" / "scenario.resolved.yaml").read_text()
    # The frames are metrics.json's lists.
    assert list(r.rounds["round"]) == list(range(1, 21))
    assert r.rounds["test_accuracy"].iloc[-1] == expected["final"]["test_accuracy"] == r.final["test_accuracy"]
    assert list(r.clients["nodes"]) == [c["nodes"] for c in expected["clients"]]
    assert r.clients["nodes"].sum() == expected["dataset"]["stats"]["nodes"]
    assert r.attacks.empty and not r.diverged
    assert r.dir == tmp_path / "py"


def test_dict_yaml_text_and_set_overrides_are_the_file_with_set(cli, tmp_path):
    cli("run", QUICKSTART, "--out", tmp_path / "cli", "--quiet", "--set", "federation.rounds=4", "--seed", "3")
    expected = read_json(tmp_path / "cli" / "metrics.json")
    text = Path(QUICKSTART).read_text()
    as_dict = yaml.safe_load(text)
    for i, (scenario, kw) in enumerate(
        [
            (QUICKSTART, dict(set={"federation.rounds": 4}, seed=3)),
            (Path(QUICKSTART), dict(set=["federation.rounds=4", "seed=3"])),
            (text, dict(set={"federation.rounds": 4, "seed": 3})),
            ({**as_dict, "seed": 3, "federation": {**as_dict.get("federation", {}), "rounds": 4}}, {}),
        ]
    ):
        r = fgl_sim.run(scenario, out=tmp_path / f"py{i}", quiet=True, name="quickstart", **kw)
        assert r.metrics["rounds"] == expected["rounds"], f"form {i}"
        assert r.metrics["clients"] == expected["clients"], f"form {i}"
        assert r.metrics["scenario"] == "quickstart"


def test_attacks_frame_has_one_row_per_report(tmp_path):
    r = fgl_sim.run(
        QUICKSTART,
        set={"attacks": ["lda"], "model.head": True, "train.weight_decay": 0.0, "federation.rounds": 3},
        out=tmp_path / "a",
        quiet=True,
    )
    reports = r.metrics["attacks"][0]["reports"]
    a = r.attacks
    assert len(a) == len(reports) > 0
    assert set(a["attack"]) == {"lda"}
    assert list(a["client"]) == [x["client"] for x in reports]
    assert all(math.isclose(s, x["scores"]["cos_sim"]) for s, x in zip(a["scores_cos_sim"], reports))
    assert {"estimate", "truth", "uniform_cos_sim", "uniform_js_nats"} <= set(a.columns)


def cli_error(cli, *args):
    p = cli(*args, check=False)
    assert p.returncode == 1
    return p.stderr.strip().removeprefix("error: ")


@pytest.mark.parametrize(
    "sets",
    [
        ["federation.roundz=3"],  # an unknown field
        ["federation.rounds=0"],  # an invalid value
        ["defenses=[{kind: ldp-labels, epsilon: -1}]"],  # ε ≤ 0
        ["partition.clients=5000"],  # more clients than nodes (found once the data is loaded)
    ],
)
def test_errors_are_the_cli_errors(cli, tmp_path, sets):
    expected = cli_error(cli, "run", QUICKSTART, "--out", tmp_path / "cli", *sum((["--set", s] for s in sets), []))
    with pytest.raises(FglSimError) as e:
        fgl_sim.run(QUICKSTART, set=sets, out=tmp_path / "py", quiet=True)
    assert str(e.value) == expected
    assert not (tmp_path / "py" / "metrics.json").exists()


def test_bad_files_and_text_name_what_is_wrong(cli, tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(FglSimError) as e:
        fgl_sim.run(missing, quiet=True)
    assert str(e.value) == cli_error(cli, "run", missing)
    assert "nope.yaml" in str(e.value)
    with pytest.raises(FglSimError, match="<string>"):
        fgl_sim.run("dataset: {name: synthetic}\nfederation: [1, 2\n", quiet=True)
    with pytest.raises(FglSimError, match="<dict>.*modle|modle.*<dict>"):
        fgl_sim.run({"dataset": {"name": "synthetic"}, "modle": {}}, quiet=True)
    with pytest.raises(FglSimError, match="max_memory"):
        fgl_sim.run(QUICKSTART, max_memory="lots", quiet=True)
    with pytest.raises(FglSimError, match="threads"):
        fgl_sim.run(QUICKSTART, threads=0, quiet=True)
    with pytest.raises(TypeError):
        fgl_sim.run(42)


def test_existing_results_are_not_overwritten_without_force(tmp_path):
    out = tmp_path / "r"
    first = fgl_sim.run(QUICKSTART, set={"federation.rounds": 2}, out=out, quiet=True)
    before = (out / "metrics.json").read_bytes()
    with pytest.raises(FglSimError, match="--force|force"):
        fgl_sim.run(QUICKSTART, set={"federation.rounds": 3}, out=out, quiet=True)
    assert (out / "metrics.json").read_bytes() == before
    again = fgl_sim.run(QUICKSTART, set={"federation.rounds": 3}, out=out, force=True, quiet=True)
    assert len(again.rounds) == 3 and len(first.rounds) == 2


def test_progress_reaches_the_callback_in_order(tmp_path):
    calls = []
    _native.run(path=QUICKSTART, set=["federation.rounds=6"], out=str(tmp_path / "p"), progress=lambda d, n: calls.append((d, n)))
    assert calls and calls[-1] == (6, 6)
    assert all(n == 6 for _, n in calls) and [d for d, _ in calls] == sorted({d for d, _ in calls})


@pytest.fixture
def sigint_raises():
    """Python's Ctrl-C handler, installed for the test: a process a non-interactive shell
    starts in the background ignores SIGINT, and Python then installs none (the run's
    signal check would find nothing to raise)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_at_a_round_boundary_and_resume_gives_the_same_numbers(tmp_path, sigint_raises):
    sets = {"federation.rounds": 400, "dataset.synthetic.nodes": 3000}
    # SIGINT to this process once training runs, as Ctrl-C in a terminal or the
    # notebook's interrupt button (which sends SIGINT to the kernel) would.
    sent = []

    def interrupt(done, total):
        if done >= 5 and not sent:
            sent.append(done)
            os.kill(os.getpid(), signal.SIGINT)

    out = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt) as e:
        _native.run(path=QUICKSTART, set=[f"{k}={v}" for k, v in sets.items()], out=str(out), progress=interrupt)
    assert "saved" in str(e.value) and str(out) in str(e.value)
    assert sent and sent[0] < 400
    assert (out / "checkpoint.cbor").exists() and not (out / "metrics.json").exists()
    resumed = fgl_sim.resume(out, quiet=True)
    whole = fgl_sim.run(QUICKSTART, set=sets, out=tmp_path / "whole", quiet=True)
    assert resumed.metrics["rounds"] == whole.metrics["rounds"]
    assert resumed.final == whole.final
    assert not (out / "checkpoint.cbor").exists()


def test_ctrl_c_while_no_python_code_runs_stops_the_run_too(tmp_path, sigint_raises):
    # No progress callback: the interrupt is found by the call's own signal check.
    out = tmp_path / "stopped"
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as e:
            fgl_sim.run(QUICKSTART, set={"federation.rounds": 20000}, out=out, quiet=True)
    finally:
        timer.cancel()
    assert "saved" in str(e.value) and f"fgl_sim.resume({str(out)!r})" in str(e.value)
    assert (out / "checkpoint.cbor").exists() and not (out / "metrics.json").exists()


def test_quick_matrix_into_a_dataframe_as_in_a_notebook(cli, tmp_path):
    cells = fgl_sim.matrix("scenarios/matrix/quick.yaml", out=tmp_path / "py", quiet=True)
    cli("matrix", "scenarios/matrix/quick.yaml", "--out", tmp_path / "cli", "--quiet")
    expected = pd.read_csv(tmp_path / "cli" / "cells.csv")
    timed = ["train_seconds", "total_seconds"]
    pd.testing.assert_frame_equal(cells.drop(columns=timed), expected.drop(columns=timed))
    assert cells.attrs["results_dir"] == str(tmp_path / "py")
    assert cells.attrs["ran"] == 42 and cells.attrs["failed"] == 0
    assert (tmp_path / "py" / "report.html").exists()
    # Every run from round 1 (`--no-shared-rounds`): the same numbers.
    alone = fgl_sim.matrix("scenarios/matrix/quick.yaml", out=tmp_path / "alone", quiet=True, shared_rounds=False)
    pd.testing.assert_frame_equal(cells.drop(columns=timed), alone.drop(columns=timed))
    # `only` runs a slice (here 2 cells × 3 seeds), as `--only`, the report over every cell.
    part = fgl_sim.matrix("scenarios/matrix/quick.yaml", out=tmp_path / "part", quiet=True, only={"defense": "none"})
    assert part.attrs["ran"] == 6 and (part["status"] == "missing").sum() == 54
    part = fgl_sim.matrix("scenarios/matrix/quick.yaml", out=tmp_path / "part", quiet=True, only={"defense.epsilon": [0.5, 8]})
    assert part.attrs["ran"] == 24 and part.attrs["skipped"] == 0
    with pytest.raises(FglSimError, match="no column `defence`"):
        fgl_sim.matrix("scenarios/matrix/quick.yaml", out=tmp_path / "part", quiet=True, only={"defence": "none"})
    # What a notebook does next: attack × defense means.
    table = cells.groupby(["scored_attack", "defense"])["cos_sim"].mean().unstack()
    assert set(table.index) == {"ec-lda", "lda", "uniform"}
    assert table.loc["ec-lda", "none"] > table.loc["uniform", "none"]
    # A second call finds every run finished and only rewrites the report.
    again = fgl_sim.matrix("scenarios/matrix/quick.yaml", out=tmp_path / "py", quiet=True)
    assert again.attrs["ran"] == 0 and again.attrs["skipped"] == 42
    with pytest.raises(FglSimError, match="jobs"):
        fgl_sim.matrix("scenarios/matrix/quick.yaml", jobs=0)
    with pytest.raises(FglSimError, match="missing.yaml"):
        fgl_sim.matrix(tmp_path / "missing.yaml")


def test_reproduce_returns_its_csv(cli, tmp_path, monkeypatch):
    flags = dict(runs=1, setting="centralized", cell=["non-private", "rgnn-y3"], epochs=2)
    frame = fgl_sim.reproduce("rgnn", out=tmp_path / "py", quiet=True, **flags)
    cli("reproduce", "rgnn", "--runs", 1, "--setting", "centralized", "--cell", "non-private", "--cell", "rgnn-y3", "--epochs", 2, "--out", tmp_path / "cli")
    expected = pd.read_csv(tmp_path / "cli" / "reproduce.csv")
    pd.testing.assert_frame_equal(frame, expected)
    assert frame.attrs["results_dir"] == str(tmp_path / "py")
    # dry_run: the plan the command line prints, nothing run or written; the time factor
    # pinned, since each would otherwise probe this machine's speed on its own.
    monkeypatch.setenv("FGL_TIME_FACTOR", "0.5")
    plan = fgl_sim.reproduce("rgnn", out=tmp_path / "plan", dry_run=True, **flags)
    cli_plan = cli("reproduce", "rgnn", "--runs", 1, "--setting", "centralized", "--cell", "non-private", "--cell", "rgnn-y3", "--epochs", 2, "--out", tmp_path / "plan", "--dry-run")
    assert plan == cli_plan.stdout and "setting `centralized`: 2 cells × 1 runs" in plan, plan
    assert plan.rstrip().endswith("times are the cost model's × 0.50 (FGL_TIME_FACTOR)"), plan
    assert not (tmp_path / "plan").exists()
    with pytest.raises(FglSimError, match="--nonsense"):
        fgl_sim.reproduce("rgnn", nonsense=1)
    with pytest.raises(FglSimError):
        fgl_sim.reproduce("no-such-paper")


def test_datasets_and_presets_list_what_the_cli_lists(cli):
    frame = fgl_sim.datasets()
    listed = json.loads(cli("datasets", "--json").stdout)
    assert list(frame["name"]) == [d["name"] for d in listed]
    assert list(frame["status"]) == [d["status"] for d in listed]
    cora = frame.set_index("name").loc["cora"]
    if cora["status"] == "ok" or os.environ.get("CI") == "true":
        assert cora["nodes"] == 2708 and cora["classes"] == 7
    presets = fgl_sim.presets()
    text = cli("presets").stdout
    assert list(presets["name"]) == [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert {"ec-lda", "lda", "uniform"} <= set(presets[presets.kind == "attacks"]["name"])
    assert {"none", "ldp-features", "dp-gnn", "rgnn", "solitude", "secagg"} <= set(presets[presets.kind == "defenses"]["name"])
    assert presets["error"].isna().all()
    for y in presets["yaml"]:
        yaml.safe_load(y)


def test_privacy_accountants_match_the_cli(cli):
    got = fgl_sim.privacy.epsilon(1.2, accountant="dp-gnn", nodes=1000, max_degree=5, layers=2, batch=64, steps=100)
    expected = json.loads(
        cli("privacy", "epsilon", "--sigma", 1.2, "--accountant", "dp-gnn", "--nodes", 1000, "--max-degree", 5, "--layers", 2, "--batch", 64, "--steps", 100, "--json").stdout
    )
    assert got == expected
    s = fgl_sim.privacy.sigma(4.0, accountant="dp-sgd", sample_rate=0.1, delta=1e-5, steps=100)
    assert s["epsilon"] <= 4.0 and s["target_epsilon"] == 4.0
    # The σ found spends what the accountant says it does.
    back = fgl_sim.privacy.epsilon(s["sigma"], accountant="dp-sgd", sample_rate=0.1, delta=1e-5, steps=100)
    assert back["epsilon"] == s["epsilon"]
    with pytest.raises(FglSimError) as e:
        fgl_sim.privacy.epsilon(1.2, accountant="dp-gnn", nodes=1000, max_degree=5, layers=2, steps=100)
    assert str(e.value) == "invalid parameter `--batch`: required by --accountant dp-gnn"
    with pytest.raises(FglSimError, match="--sigma"):
        fgl_sim.privacy.epsilon(-1.0, accountant="dp-sgd", sample_rate=0.1, delta=1e-5, steps=10)


def test_load_gives_the_graph_the_run_sees(tmp_path):
    g = fgl_sim.load(QUICKSTART)
    m = fgl_sim.run(QUICKSTART, set={"federation.rounds": 1}, out=tmp_path / "r", quiet=True).metrics
    stats = m["dataset"]["stats"]
    assert g.num_nodes == stats["nodes"] and g.num_edges == 2 * stats["edges"]
    assert g.edge_index.dtype == np.int64 and g.edge_index.shape == (2, 2 * stats["edges"])
    # Undirected: every edge in both directions, no self loops.
    pairs = set(map(tuple, g.edge_index.T.tolist()))
    assert all((v, u) in pairs for u, v in pairs) and all(u != v for u, v in pairs)
    assert g.x.shape == (stats["nodes"], stats["feature_dim"]) and g.x.dtype == np.float32
    assert (g.y >= 0).all() and g.y.max() < stats["classes"]
    assert [int(g.train_mask.sum()), int(g.val_mask.sum()), int(g.test_mask.sum())] == [m["split"][k] for k in ("train", "val", "test")]
    assert not (g.train_mask & g.test_mask).any()
    assert g.num_clients == len(m["clients"])
    for c in m["clients"]:
        nodes = g.client_nodes(c["id"])
        assert len(nodes) == c["nodes"]
        assert list(np.bincount(g.y[nodes], minlength=stats["classes"])) == c["label_distribution"]
        assert int(g.train_mask[nodes].sum()) == c["train"]
    # A dataset by name: its default scenario.
    cora = fgl_sim.load("cora")
    assert (cora.num_nodes, cora.x.shape[1], len(cora.class_names)) == (2708, 1433, 7)
    with pytest.raises(FglSimError, match="no-such-dataset"):
        fgl_sim.load("no-such-dataset")


def test_to_pyg_gives_a_data_object_or_says_what_is_missing():
    g = fgl_sim.load(QUICKSTART)
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="torch_geometric"):
            g.to_pyg()
        return
    d = g.to_pyg()
    assert d.num_nodes == g.num_nodes and d.edge_index.shape[1] == g.num_edges
    assert bool((d.train_mask.numpy() == g.train_mask).all()) and d.x.shape == g.x.shape


def test_resolve_fills_defaults_and_checks(cli):
    text = fgl_sim.resolve(QUICKSTART, set={"federation.rounds": 7})
    assert yaml.safe_load(text)["federation"]["rounds"] == 7
    expected = cli("scenario", "check", QUICKSTART, "--set", "federation.rounds=7").stdout
    assert text in expected
    with pytest.raises(FglSimError, match="roundz"):
        fgl_sim.resolve(QUICKSTART, set=["federation.roundz=1"])


def test_version_and_stubs_cover_the_native_module():
    assert fgl_sim.__version__ == "0.1.0"
    stub = Path(fgl_sim.__file__).with_name("_native.pyi").read_text()
    for name in ("run", "resume", "matrix", "reproduce", "privacy", "datasets", "presets", "load", "resolve", "FglSimError"):
        assert hasattr(_native, name)
        assert f"def {name}(" in stub or f"class {name}(" in stub, name


def test_the_bar_follows_a_reproduction_whose_parts_count_from_one():
    class FakeTqdm:
        def __init__(self, total, unit, leave):
            self.total, self.n, self.updates = total, 0, []

        def update(self, k):
            assert k >= 0
            self.n += k
            self.updates.append(k)

        def reset(self, total):
            self.total, self.n = total, 0

        def close(self):
            pass

    bar = fgl_sim._Bar("run", quiet=False)
    bar.tqdm = FakeTqdm
    for done, total in [(1, 1), (1, 4), (3, 4), (4, 4), (2, 2)]:
        bar(done, total)
        assert (bar.bar.n, bar.bar.total) == (done, total)
    assert fgl_sim._Bar("run", quiet=True).hook() is None


def test_in_a_jupyter_kernel_the_bar_shows_and_the_interrupt_button_stops_the_run(tmp_path):
    """A real IPython kernel (ipykernel, this venv's Python): the bar is in the cell's
    output, Jupyter's interrupt (SIGINT to the kernel) stops a run at a round boundary with
    its state saved, and the kernel goes on."""
    import queue
    import time

    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=os.getcwd())

    def execute(code, interrupt_after=None):
        msg_id, t0, out, sent = kc.execute(code), time.time(), [], False
        while True:
            if interrupt_after is not None and not sent and time.time() - t0 > interrupt_after:
                km.interrupt_kernel()
                sent = True
            assert time.time() - t0 < 120, f"the cell did not finish: {out}"
            try:
                msg = kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                out.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                out.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out)

    try:
        shown = execute(f"import fgl_sim\nfgl_sim.run({QUICKSTART!r}, out={str(tmp_path / 'a')!r})")
        assert "0/20" in shown and "RunResult(" in shown and "round 20" in shown
        stopped = execute(
            f"fgl_sim.run({QUICKSTART!r}, set={{'federation.rounds': 20000}}, out={str(tmp_path / 'b')!r}, quiet=True)",
            interrupt_after=2.0,
        )
        assert stopped.startswith("KeyboardInterrupt: stopped after round ") and "fgl_sim.resume(" in stopped
        assert (tmp_path / "b" / "checkpoint.cbor").exists() and not (tmp_path / "b" / "metrics.json").exists()
        alive = execute(f"print(fgl_sim.run({QUICKSTART!r}, set={{'federation.rounds': 2}}, out={str(tmp_path / 'c')!r}, quiet=True))")
        assert "round 2" in alive
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_backend_wgpu_runs_the_same_training(tmp_path):
    """`backend=` reaches the run: wgpu (lavapipe in CI) against the CPU backend, the same
    tolerance as the Rust backend test (accuracy within 0.01 each round)."""
    sets = {"federation.rounds": 5}
    cpu = fgl_sim.run(QUICKSTART, set=sets, out=tmp_path / "cpu", quiet=True)
    try:
        gpu = fgl_sim.run(QUICKSTART, set=sets, backend="wgpu", out=tmp_path / "wgpu", quiet=True)
    except FglSimError as e:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"no wgpu adapter: {e}")
    assert gpu.metrics["backend"] == "wgpu" and cpu.metrics["backend"] == "cpu"
    for a, b in zip(cpu.metrics["rounds"], gpu.metrics["rounds"]):
        assert abs(a["test_accuracy"] - b["test_accuracy"]) <= 0.01, (a["round"], a["test_accuracy"], b["test_accuracy"])
