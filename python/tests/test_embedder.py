"""A tenant's embedder: an OpenAI-compatible endpoint (a local server the test
starts on 127.0.0.1) makes a new tenant's vectors, the tenant opens with it
afterwards without naming it, and an embedder that differs or cannot be made
is a clear error."""

import asyncio

import pytest

import mesa_memory
from conftest import JsonHandler, fill
from conftest import endpoint as serve


class _Embeddings(JsonHandler):
    """POST /v1/embeddings: one vector per input, from the text's length and
    its first letter."""

    def answer(self, body):
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": [1.0, float(len(t)), float(ord(t[0]) if t else 0)]}
            for i, t in enumerate(inputs)
        ]
        return {"object": "list", "data": data, "model": body["model"]}


@pytest.fixture
def endpoint(monkeypatch):
    with serve(_Embeddings, monkeypatch, MESA_LLM_EMBEDDING_MODEL="emb-a") as server:
        yield server


def test_a_tenant_made_with_an_endpoint_embedder_keeps_it(root, endpoint, monkeypatch):
    m = mesa_memory.Memory(root, "t", embedder="openai")
    fill(m)
    first = m.query("run-1", "Which table was missing?", structures="V")
    assert first.items, "V answered nothing"
    m.close()
    sent = len(endpoint.bodies)
    assert sent > 0
    # Reopened without naming it (and with another model in the
    # environment): the tenant's recorded model embeds the question.
    monkeypatch.setenv("MESA_LLM_EMBEDDING_MODEL", "emb-b")
    again = mesa_memory.Memory(root, "t")
    answer = again.query("run-1", "Which table was missing?", structures="V")
    assert [i.steps for i in answer.items] == [i.steps for i in first.items]
    assert len(endpoint.bodies) > sent
    assert {b["model"] for b in endpoint.bodies} == {"emb-a"}
    again.close()
    # The asyncio twin takes it too.
    async def other_tenant():
        memory = await mesa_memory.AsyncMemory.open(root, "t2", embedder="openai")
        await memory.create_episode("e", task="t")
        await memory.append("e", "open the invoices", "3 invoices")
        return await memory.query("e", "how many invoices?", structures="V")

    before = len(endpoint.bodies)
    assert asyncio.run(other_tenant()).items
    assert len(endpoint.bodies) > before
    # Naming another embedder for it is refused.
    with pytest.raises(mesa_memory.ConflictError) as e:
        mesa_memory.Memory(root, "t", embedder="builtin")
    assert e.value.code == "embedder-mismatch"


def test_an_embedder_that_cannot_be_made_is_a_builder_error(root, tmp_path, monkeypatch):
    monkeypatch.setenv("MESA_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MESA_LLM_MAX_RETRIES", "0")
    # A MiniLM directory without the model's files.
    monkeypatch.setenv("MESA_MINILM_DIR", str(tmp_path / "no-model"))
    for name in ["openai", "minilm", "word2vec"]:
        with pytest.raises(mesa_memory.BuilderError) as e:
            mesa_memory.Memory(root, "t", embedder=name)
        assert e.value.code == "embedder-unavailable", name
        assert name in e.value.message and e.value.help
    with pytest.raises(mesa_memory.BuilderError) as e:
        mesa_memory.Memory(root, "t", embedder="minilm")
    assert "no-model" in e.value.message and "MESA_MINILM_DIR" in e.value.help
    # Nothing was created by the failed opens.
    assert not root.exists()


def test_a_tenant_made_with_minilm_keeps_it(root):
    """With the model's files (scripts/fetch-minilm.sh, or MESA_MINILM_DIR),
    MiniLM embeds a new tenant's steps and the tenant keeps it; skipped
    without them."""
    try:
        m = mesa_memory.Memory(root, "t", embedder="minilm")
    except mesa_memory.BuilderError as e:
        pytest.skip(f"MiniLM's files are absent: {e.message}")
    fill(m)
    first = m.query("run-1", "Which table was missing?", structures="V")
    assert first.items
    m.close()
    again = mesa_memory.Memory(root, "t")
    answer = again.query("run-1", "Which table was missing?", structures="V")
    assert [i.steps for i in answer.items] == [i.steps for i in first.items]
    again.close()
    with pytest.raises(mesa_memory.ConflictError) as e:
        mesa_memory.Memory(root, "t", embedder="builtin")
    assert e.value.code == "embedder-mismatch"
