import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path):
    """A fresh live memory directory."""
    return tmp_path / "memory"


@pytest.fixture
def mesa_bin():
    """The `mesa` command built from this checkout (MESA_BIN overrides)."""
    given = os.environ.get("MESA_BIN")
    for path in [given] if given else [REPO / "target/debug/mesa", REPO / "target/release/mesa"]:
        if path and pathlib.Path(path).is_file():
            return str(path)
    pytest.fail("the mesa binary is not built: run `cargo build -p mesa` or set MESA_BIN")


@pytest.fixture
def quickstart():
    return REPO / "examples" / "quickstart.mesa"


STEPS = [
    ("open the database connection", "connected to sales.db"),
    ("SELECT * FROM orders", "Error: no such table: orders"),
    ("list the tables", "customers, invoices, items"),
    ("SELECT count(*) FROM invoices", "42"),
    ("write the answer file", "wrote answer.txt with 42"),
]


def fill(memory, episode="run-1", steps=STEPS):
    memory.create_episode(episode, task="count the orders", domain="text2sql")
    for i, (a, o) in enumerate(steps):
        memory.append(episode, a, o, timestamp=f"2026-03-01T10:0{i}:00Z")
