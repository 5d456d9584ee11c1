"""A tenant's summarizer (S) and extractor (G): a chat endpoint (a local
server the test starts on 127.0.0.1) writes a new tenant's summary and
relations when Memory names them, the tenant keeps them when reopened
without naming them, and a named builder that differs or cannot be made is
a clear error."""

import json

import pytest

import mesa_memory
from conftest import JsonHandler, endpoint, fill


class _Chat(JsonHandler):
    """POST /v1/chat/completions: OpenIE prompts get one relation, the
    others a summary with a marker line."""

    def answer(self, body):
        system = body["messages"][0]["content"]
        if '"triples"' in system:
            content = json.dumps({"triples": [{"subject": "agent", "relation": "ran", "object": "a query"}]})
        else:
            content = "- [step 0] the agent looked at the schema\nSUMMARY-BY-THE-LLM"
        message = {"role": "assistant", "content": content}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return {"id": "x", "object": "chat.completion", "model": body["model"], "choices": [choice]}


@pytest.fixture
def chat(monkeypatch):
    with endpoint(_Chat, monkeypatch, MESA_LLM_CHAT_MODEL="chat-a") as server:
        yield server


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
