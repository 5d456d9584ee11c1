"""`mesa mcp` driven by the official Python MCP client (`mcp` on the
package index): spawn the server on stdio, list its tools, add memories,
search them, explain a selection, forget one and see it gone.

Run by scripts/test-mcp.sh, which installs `mcp` into a fresh venv and sets
MESA_BIN.
"""

import asyncio
import json
import os
import pathlib
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = pathlib.Path(__file__).resolve().parents[3]


def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main(root):
    params = StdioServerParameters(
        command=os.environ["MESA_BIN"],
        args=["mcp", str(root), "--tenant", "alice", "--policy", str(REPO / "examples/quickstart.mesa")],
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.serverInfo.name == "mesa", init.serverInfo
            tools = {t.name: t for t in (await session.list_tools()).tools}
            for name in ["add_memory", "search_memory", "explain_selection", "forget_memory",
                         "correct_memory", "list_episodes", "read_episode", "compact_memory"]:
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

            # A tool that ran and failed is a tool error, not a protocol error.
            r = await session.call_tool("search_memory", {"episode": "nope", "question": "q"})
            assert r.isError and "nope" in text(r)
            r = await session.call_tool("add_memory", {"episode": "run-1", "action": ""})
            assert r.isError and "empty" in text(r)
            r = await session.call_tool("forget_memory", {"episode": "run-1"})
            assert r.isError

            listed = json.loads(text(await session.call_tool("list_episodes", {})))
            assert listed["episodes"][0]["steps"] == 2
            steps = json.loads(text(await session.call_tool("read_episode", {"episode": "run-1"})))["steps"]
            assert [s["index"] for s in steps] == [0, 1]
    for f in pathlib.Path(root).rglob("*"):
        if f.is_file():
            assert b"zebra-7731" not in f.read_bytes(), f
    print("mcp: tools listed, memories added, searched, explained, forgotten and gone")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(pathlib.Path(tmp) / "memory"))
