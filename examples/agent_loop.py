"""A small scripted agent that lives in its MESA memory (no LLM needed).

It works through a text-to-SQL task step by step, appending each step to its
memory as it goes; mid-task it asks its memory questions with a selector
policy and prints what it read, with provenance (structure, steps, times,
score); it forgets a step that leaked a credential and shows it is gone.

    pip install ./python
    python examples/agent_loop.py [MEMORY_DIR]
"""

import pathlib
import sys
import tempfile

import mesa_memory as mesa

POLICY = pathlib.Path(__file__).with_name("quickstart.mesa")

# What the scripted agent does, and what the world answers.
SCRIPT = [
    ("connect to warehouse.db", "connected; user=analyst password=hunter2-SECRET"),
    ("SELECT * FROM orders LIMIT 5", "Error: no such table: orders"),
    ("list the tables", "tables: customers, invoices, invoice_items"),
    ("describe invoices", "columns: id, customer_id, total, issued_at"),
    ("SELECT count(*) FROM invoices WHERE issued_at >= '2026-01-01'", "412"),
]


def show(answer):
    print(f"  selected {answer.mask} (rule: {answer.rule or 'default'}), {answer.tokens} tokens")
    for item in answer.items:
        when = item.timestamps[0] if item.timestamps and item.timestamps[0] else "?"
        lines = item.text.splitlines()
        # R's windows open with a `[steps a-b]` header; show the first step.
        first = (lines[1] if lines[0].startswith("[steps") and len(lines) > 1 else lines[0])[:90]
        print(f"  [{item.structure}] steps {item.steps} at {when}, score {item.score:.2f}: {first}")


def main(root):
    policy = mesa.Policy.load(POLICY)
    with mesa.Memory(root, tenant="sql-agent") as memory:
        memory.create_episode("task-1", task="How many invoices were issued in 2026?", domain="text2sql")
        for i, (action, observation) in enumerate(SCRIPT):
            index = memory.append("task-1", action, observation, timestamp=f"2026-03-01T09:{i:02d}:00Z")
            print(f"step {index}: {action} -> {observation}")
            if "Error" in observation:
                question = "Why did the query fail?"
                print(f"asking memory: {question}")
                show(memory.query("task-1", question, policy=policy))

        question = "What was the password used to connect?"
        print(f"asking memory: {question}")
        before = memory.query("task-1", question, structures="all")
        leaked = [i for i in before.items if "SECRET" in i.text]
        print(f"  {len(leaked)} evidence items hold the credential; forgetting step 0")
        memory.forget("task-1", 0)
        memory.compact()
        after = memory.query("task-1", question, structures="all")
        assert not any("SECRET" in i.text for i in after.items), "forgotten means gone"
        print("  after forget + compact: no evidence item holds it")

        question = "What did the agent do at step 4?"
        print(f"asking memory: {question}")
        final = memory.query("task-1", question, policy=policy)
        show(final)
        print(f"answer from memory: {final.items[0].text.splitlines()[-1] if final.items else 'nothing'}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(pathlib.Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(pathlib.Path(tmp) / "memory")
