import contextlib
import http.server
import json
import os
import pathlib
import threading

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


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """A local OpenAI-compatible endpoint's handler: each POST's JSON body
    is kept in ``server.bodies`` and answered with ``self.answer(body)``."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        reply = json.dumps(self.answer(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def endpoint(handler, monkeypatch, **env):
    """Serves ``handler`` on 127.0.0.1 and points MESA_LLM_* at it (and
    the other variables given); yields the server."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("MESA_LLM_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("MESA_LLM_API_KEY", "test")
    monkeypatch.setenv("MESA_LLM_MAX_RETRIES", "0")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
