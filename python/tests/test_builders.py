"""A tenant's summarizer (S) and extractor (G): a chat endpoint (a local
server the test starts on 127.0.0.1) writes a new tenant's summary and
relations when Memory names them, the tenant keeps them when reopened
without naming them, and a named builder that differs or cannot be made is
a clear error."""

import http.server
import json
import threading

import pytest

import mesa_memory
from conftest import fill


class _Chat(http.server.BaseHTTPRequestHandler):
    """POST /v1/chat/completions: OpenIE prompts get one relation, the
    others a summary with a marker line; every request body is kept."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        system = body["messages"][0]["content"]
        if '"triples"' in system:
            content = json.dumps({"triples": [{"subject": "agent", "relation": "ran", "object": "a query"}]})
        else:
            content = "- [step 0] the agent looked at the schema\nSUMMARY-BY-THE-LLM"
        reply = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat(monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    server.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("MESA_LLM_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("MESA_LLM_API_KEY", "test")
    monkeypatch.setenv("MESA_LLM_CHAT_MODEL", "chat-a")
    monkeypatch.setenv("MESA_LLM_MAX_RETRIES", "0")
    yield server
    server.shutdown()
    server.server_close()


def extractions(server):
    return sum('"triples"' in b["messages"][0]["content"] for b in server.bodies)


def test_a_tenant_made_with_llm_builders_keeps_them(root, chat):
    m = mesa_memory.Memory(root, "t", summarizer="llm", extractor="llm")
    fill(m)
    steps = extractions(chat)
    assert steps > 0, "the steps' relations came from the endpoint"
    m.close()
    # Reopened without naming them: the recorded builders extract the new
    # step and write the summary.
    again = mesa_memory.Memory(root, "t")
    again.append("run-1", "SELECT count(*) FROM orders", "42")
    assert extractions(chat) == steps + 1
    assert "SUMMARY-BY-THE-LLM" in again.query("run-1", "What happened?", structures="S").text()
    again.close()
    assert {b["model"] for b in chat.bodies} == {"chat-a"}
    # Naming another summarizer for it is refused.
    with pytest.raises(mesa_memory.ConflictError) as e:
        mesa_memory.Memory(root, "t", summarizer="builtin")
    assert e.value.code == "builder-mismatch"
    assert "llm-summary-v1:chat-a" in e.value.message


def test_a_builder_that_cannot_be_made_is_a_builder_error(root):
    for kind in ["summarizer", "extractor"]:
        with pytest.raises(mesa_memory.BuilderError) as e:
            mesa_memory.Memory(root, "t", **{kind: "oracle"})
        assert e.value.code == "builder-unavailable", kind
        assert "oracle" in e.value.message and e.value.help
    assert not root.exists()
