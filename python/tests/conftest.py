"""Fixtures: the repository root (scenarios are read from there) and the CLI binary the
package is compared with (FGL_SIM_BIN, set by tests/python.rs)."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="session")
def cli():
    """Run the fgl-sim binary: cli("run", ...) → CompletedProcess (text)."""
    binary = os.environ.get("FGL_SIM_BIN") or shutil.which("fgl-sim")
    if binary is None:
        pytest.fail("set FGL_SIM_BIN to the fgl-sim binary the package is compared with")

    def call(*args, check=True):
        p = subprocess.run([binary, *map(str, args)], cwd=ROOT, capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"fgl-sim {' '.join(map(str, args))} failed: {p.stderr}")
        return p

    return call


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
