"""`mesa mcp` and `mesa serve`'s `/mcp` driven by the official Python MCP
client (`mcp` on the package index): over stdio (the server spawned) and
over the streamable HTTP transport (`mesa serve` started on 127.0.0.1 with
a token, the policy uploaded and made active over its REST routes), list
the tools, add memories, search them, explain a selection, forget one and
see it gone.

Run by scripts/test-mcp.sh, which installs `mcp` into a fresh venv and sets
MESA_BIN.
"""

import asyncio
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

REPO = pathlib.Path(__file__).resolve().parents[3]
POLICY = REPO / "examples/quickstart.mesa"


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def checks(session):
    """The same calls and checks over either transport."""
    init = await session.initialize()
    assert init.serverInfo.name == "mesa", init.serverInfo
    tools = {t.name: t for t in (await session.list_tools()).tools}
    for name in ["add_memory", "search_memory", "explain_selection", "forget_memory",
                 "forget_memory_before", "correct_memory", "update_episode", "list_episodes", "read_episode", "compact_memory",
                 "export_memory", "import_memory"]:
        assert name in tools, (name, sorted(tools))
    schema = tools["add_memory"].inputSchema
    assert set(schema["required"]) >= {"episode", "action"}, schema

    facts = [
        ("open the invoices table", "columns: id, total, issued_at"),
        ("SELECT * FROM orders", "Error: no such table: orders"),
        ("note the zebra-7731 password", "stored secret zebra-7731"),
    ]
    for i, (a, o) in enumerate(facts):
        r = await session.call_tool("add_memory", {
            "episode": "run-1", "action": a, "observation": o,
            "timestamp": f"2026-03-01T10:0{i}:00Z", "task": "count invoices",
        })
        assert not r.isError, text(r)
        assert json.loads(text(r))["index"] == i

    r = await session.call_tool("search_memory", {"episode": "run-1", "question": "Why did the query fail?"})
    assert not r.isError, text(r)
    answer = json.loads(text(r))
    assert answer["rule"] == "causal", answer
    assert any("no such table" in e["text"] for e in answer["evidence"])
    assert all(e["timestamps"] for e in answer["evidence"])

    # Without an episode, the episodes are searched; run-1 holds the answer.
    r = await session.call_tool("search_memory", {"question": "Why did the query fail?"})
    assert not r.isError, text(r)
    found = json.loads(text(r))
    assert found["episodes"] and found["episodes"][0]["episode"] == "run-1", found
    assert any("no such table" in e["text"] for e in found["episodes"][0]["evidence"]), found

    r = await session.call_tool("explain_selection", {"episode": "run-1", "question": "Why did the query fail?"})
    why = json.loads(text(r))
    assert why["mask"] == answer["mask"] and all("text" not in e for e in why["evidence"])
    fired = [s for s in why["trace"]["steps"] if s.get("fired")]
    assert fired and fired[0]["name"] == "causal", why["trace"]

    r = await session.call_tool("search_memory", {"episode": "run-1", "question": "zebra-7731", "structures": "all"})
    assert "zebra-7731" in json.dumps(json.loads(text(r))["evidence"])
    r = await session.call_tool("forget_memory", {"episode": "run-1", "step": 2})
    assert json.loads(text(r))["forgotten"] == 1
    r = await session.call_tool("search_memory", {"episode": "run-1", "question": "zebra-7731", "structures": "all"})
    assert "zebra-7731" not in json.dumps(json.loads(text(r))["evidence"]), "forgotten means gone"
    r = await session.call_tool("compact_memory", {})
    assert not r.isError

    # The memory as a dataset and back: nothing forgotten in it, and the
    # same dataset imported again adds nothing.
    r = await session.call_tool("export_memory", {})
    assert not r.isError, text(r)
    exported = json.loads(text(r))
    assert exported["episodes"] == 1 and exported["steps"] == 2, exported
    assert "no such table" in exported["dataset"] and "zebra-7731" not in exported["dataset"]
    r = await session.call_tool("import_memory", {"dataset": exported["dataset"]})
    assert not r.isError and json.loads(text(r))["again"] == 1, text(r)

    # A tool that ran and failed is a tool error, not a protocol error.
    r = await session.call_tool("search_memory", {"episode": "nope", "question": "q"})
    assert r.isError and "nope" in text(r)
    r = await session.call_tool("add_memory", {"episode": "run-1", "action": ""})
    assert r.isError and "empty" in text(r)
    r = await session.call_tool("forget_memory", {"episode": "run-1"})
    assert r.isError

    r = await session.call_tool("update_episode", {"episode": "run-1", "outcome": "success"})
    assert json.loads(text(r)) == {"episode": "run-1", "updated": True}, text(r)
    listed = json.loads(text(await session.call_tool("list_episodes", {})))
    assert listed["episodes"][0]["steps"] == 2
    assert listed["episodes"][0]["outcome"] == "success"
    r = await session.call_tool("search_memory", {"episode": "run-1", "question": "How did it end?", "structures": "S"})
    assert "Outcome: success" in json.dumps(json.loads(text(r))["evidence"]), text(r)
    r = await session.call_tool("update_episode", {"episode": "run-1", "outcome": "x", "remove_outcome": True})
    assert r.isError and "not both" in text(r), text(r)
    r = await session.call_tool("update_episode", {"episode": "run-1", "remove_outcome": True})
    assert json.loads(text(r)) == {"episode": "run-1", "updated": True}, text(r)
    r = await session.call_tool("search_memory", {"episode": "run-1", "question": "How did it end?", "structures": "S"})
    assert "Outcome:" not in json.dumps(json.loads(text(r))["evidence"]), text(r)
    r = await session.call_tool("update_episode", {"episode": "run-1", "outcome": "success"})
    assert json.loads(text(r))["updated"], text(r)
    read = json.loads(text(await session.call_tool("read_episode", {"episode": "run-1"})))
    assert (read["task"], read["outcome"]) == ("count invoices", "success"), read
    assert [s["index"] for s in read["steps"]] == [0, 1]
    r = await session.call_tool("update_episode", {"episode": "run-1", "task": "count paid invoices"})
    assert json.loads(text(r))["updated"], text(r)
    r = await session.call_tool("search_memory", {"episode": "run-1", "question": "What was the task?", "structures": "S"})
    assert "Task: count paid invoices" in json.dumps(json.loads(text(r))["evidence"]), text(r)
    r = await session.call_tool("update_episode", {"episode": "run-1", "task": "count invoices"})
    assert json.loads(text(r))["updated"], text(r)

    # Retention: the step stamped 10:00 goes, the one at 10:01 stays.
    r = await session.call_tool("forget_memory_before", {"before": "2026-03-01T10:00:30Z"})
    assert not r.isError, text(r)
    assert json.loads(text(r)) == {"forgotten": 1, "episodes": 1}
    steps = json.loads(text(await session.call_tool("read_episode", {"episode": "run-1"})))["steps"]
    assert [s["index"] for s in steps] == [1]
    r = await session.call_tool("forget_memory_before", {"before": "last week"})
    assert r.isError and "bad-timestamp" in text(r), text(r)


def no_secret_left(root):
    for f in pathlib.Path(root).rglob("*"):
        if f.is_file():
            assert b"zebra-7731" not in f.read_bytes(), f


async def over_stdio(root):
    params = StdioServerParameters(
        command=os.environ["MESA_BIN"],
        args=["mcp", str(root), "--tenant", "alice", "--policy", str(POLICY)],
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await checks(session)
    no_secret_left(root)
    print("mcp (stdio): tools listed, memories added, searched, explained, forgotten and gone")


def rest(base, token, method, path, body):
    req = urllib.request.Request(
        base + path, method=method, data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


async def over_http(root):
    mesa = os.environ["MESA_BIN"]
    token = subprocess.run([mesa, "token", str(root), "--tenant", "alice"], check=True,
                           capture_output=True, text=True).stdout.strip()
    other = subprocess.run([mesa, "token", str(root), "--tenant", "bob"], check=True,
                           capture_output=True, text=True).stdout.strip()
    server = subprocess.Popen([mesa, "serve", str(root), "--addr", "127.0.0.1:0"],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        found = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
        assert found, line
        base = found.group(1)
        rest(base, token, "PUT", "/v1/policies/quick", {"source": POLICY.read_text()})
        rest(base, token, "PUT", "/v1/active-policy", {"name": "quick"})
        headers = {"Authorization": f"Bearer {token}"}
        async with streamablehttp_client(base + "/mcp", headers=headers) as (read, write, _):
            async with ClientSession(read, write) as session:
                await checks(session)
        # Bob's token opens Bob's memory, which is empty.
        async with streamablehttp_client(base + "/mcp", headers={"Authorization": f"Bearer {other}"}) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = json.loads(text(await session.call_tool("list_episodes", {})))
                assert listed["episodes"] == [], listed
        # No token: 401 before any MCP.
        req = urllib.request.Request(base + "/mcp", method="POST", data=b"{}",
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=30)
            raise AssertionError("a request without a token was served")
        except urllib.error.HTTPError as e:
            assert e.code == 401, e.code
    finally:
        server.terminate()
        server.wait(timeout=30)
    no_secret_left(root)
    print("mcp (streamable HTTP): the same, over `mesa serve` with a token; other tokens see nothing")


async def main(tmp):
    await over_stdio(tmp / "stdio")
    await over_http(tmp / "http")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(pathlib.Path(tmp)))
