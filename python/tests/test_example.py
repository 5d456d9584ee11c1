import subprocess
import sys

from conftest import REPO


def test_agent_loop_example_runs(tmp_path):
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "agent_loop.py"), str(tmp_path / "m")],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    assert "asking memory: Why did the query fail?" in out
    assert "no evidence item holds it" in out
    assert "[T] steps" in out or "[R] steps" in out
    for f in (tmp_path / "m").rglob("*"):
        if f.is_file():
            assert b"hunter2-SECRET" not in f.read_bytes(), f
