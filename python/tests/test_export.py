"""A tenant exported as a dataset and imported into another answers every
kept question the same, from Python as from the command line."""

import json

import pytest

import mesa_memory
from conftest import fill


def test_an_exported_tenant_imports_whole_into_another(root, tmp_path):
    with mesa_memory.Memory(root, "a") as a:
        fill(a)
        a.append("run-1", "read the log", "x" * 40_000, timestamp="2026-03-01T10:09:00Z")
        a.add_questions(
            "run-1",
            [{"id": "q1", "question": "Which table was missing?", "answer": "orders", "evidence": [0, 1]}],
        )
        a.forget("run-1", 0)
        a.create_episode("empty", task="nothing yet", created="2026-02-27T08:00:00Z")
        path = tmp_path / "a.jsonl"
        done = a.export(path)
        assert (done.episodes, done.questions) == (2, 1)
        assert done.empty == 1 and done.dropped_evidence == 1
        lines = path.read_text().splitlines()
        assert [json.loads(line)["id"] for line in lines] == ["empty", "run-1"]
        assert json.loads(lines[0])["steps"] == []
        created = {e.id: e.created for e in a.episodes()}
        first = a.query("run-1", "Which table was missing?", structures="all")
        steps = a.steps("run-1")
    with mesa_memory.Memory(root, "b") as b:
        added = b.import_dataset(path)
        assert (added.episodes, added.steps, added.questions, added.cut) == (2, done.steps, 1, 0)
        assert {e.id: e.created for e in b.episodes()} == created
        assert created["empty"] == "2026-02-27T08:00:00Z"
        assert [(s.index, s.action, s.observation, s.timestamp) for s in b.steps("run-1")] == [
            (s.index, s.action, s.observation, s.timestamp) for s in steps
        ]
        assert b.questions("run-1")[0].evidence == [1]
        again = b.query("run-1", "Which table was missing?", structures="all")
        assert json.loads(again.to_json())["evidence"] == json.loads(first.to_json())["evidence"]
        # The same file again adds nothing.
        again = b.import_dataset(path)
        assert again.again == 2 and len(b.steps("run-1")) == done.steps
        # The same episode with other steps: refused.
        other = tmp_path / "other.jsonl"
        other.write_text(lines[1].replace("read the log", "read the other log") + "\n")
        with pytest.raises(mesa_memory.ConflictError) as e:
            b.import_dataset(other)
        assert e.value.code == "request-id-reused"
    with mesa_memory.Memory(root, "c") as c:
        cut = c.import_dataset(path, max_text_bytes=32768)
        assert cut.cut == 1, "the 40,000-byte observation is cut at 32,768"
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"id": "x", "steps": []}\n' + lines[1] + "\n")
        with pytest.raises(mesa_memory.InvalidInputError) as e:
            c.import_dataset(bad)
        assert e.value.code == "bad-dataset"
        assert "bad.jsonl:1:" in e.value.message and "task" in e.value.message, e.value.message


def test_steps_before_a_time_are_forgotten_in_every_episode(root):
    with mesa_memory.Memory(root, "t") as m:
        fill(m, "run-1")
        fill(m, "run-2")
        # fill's steps are at 10:00 to 10:04 on 2026-03-01.
        assert m.forget_before("2026-03-01T10:02:30Z") == 6
        assert [s.index for s in m.steps("run-1")] == [3, 4]
        assert m.forget_before("2026-03-01T10:02:30Z") == 0
        with pytest.raises(mesa_memory.InvalidInputError) as e:
            m.forget_before("soon")
        assert e.value.code == "bad-timestamp"
