import json
import subprocess

import pytest

import mesa_memory as mesa
from conftest import STEPS, fill


def test_append_query_and_provenance(root):
    with mesa.Memory(root, "alice") as m:
        fill(m)
        assert [e.id for e in m.episodes()] == ["run-1"]
        assert m.episodes()[0].steps == len(STEPS)
        a = m.query("run-1", "Why did the query at step 1 fail?", structures="T,R")
        assert a.structures == ["T", "R"]
        assert a.rule is None
        assert a.items, "some evidence"
        t = [i for i in a.items if i.structure == "T"]
        assert t and 1 in t[0].steps
        for item in a.items:
            assert len(item.timestamps) == len(item.steps)
            assert all(ts and ts.startswith("2026-03-01T10:0") for ts in item.timestamps)
            assert 0.0 <= item.score <= 1.0 and item.tokens > 0 and item.text
        assert a.tokens >= sum(i.tokens for i in a.items) // 2
        assert a.micros["total"] >= a.micros["retrieve"] and set(a.micros) >= {"prepare", "select", "compose"}
        assert "no such table" in a.text()
        assert a.text() == "\n\n".join(i.text for i in a.items)
        # The items are made once, on the first read: the same objects after.
        assert all(x is y for x, y in zip(a.items, a.items)) and len(a.items) > 1
        assert a.stale == {}, "the built-in summarizer keeps up with appends"


def test_a_retry_with_its_request_id_appends_nothing(root):
    with mesa.Memory(root, "t") as m:
        m.create_episode("e", task="t")
        assert m.append("e", "first", request_id="r1") == 0
        assert m.append("e", "first", request_id="r1") == 0
        batch = [{"action": "a"}, {"action": "b"}]
        assert m.append_many("e", batch, request_id="r2") == [1, 2]
        assert m.append_many("e", batch, request_id="r2") == [1, 2]
        assert len(m.steps("e")) == 3
        with pytest.raises(mesa.ConflictError) as err:
            m.append("e", "other", request_id="r1")
        assert err.value.code == "request-id-reused"
        with pytest.raises(mesa.InvalidInputError) as err:
            m.append("e", "x", request_id="")
        assert err.value.code == "bad-request-id"
        assert len(m.steps("e")) == 3


def test_retried_creations_corrections_and_forgets_change_nothing(root):
    with mesa.Memory(root, "t") as m:
        m.create_episode("e", task="t", request_id="c1")
        m.create_episode("e", task="t", request_id="c1")
        with pytest.raises(mesa.ConflictError) as err:
            m.create_episode("e", task="t")
        assert err.value.code == "episode-exists"
        m.append_many("e", [{"action": "a"}, {"action": "b"}, {"action": "c"}])
        m.correct("e", 0, "a, fixed", request_id="k1")
        m.correct("e", 0, "a, fixed", request_id="k1")
        with pytest.raises(mesa.ConflictError) as err:
            m.correct("e", 0, "a, other", request_id="k1")
        assert err.value.code == "request-id-reused"
        assert m.steps("e")[0].action == "a, fixed"
        assert m.forget("e", 1, last=2, request_id="f1") == 2
        assert m.forget("e", 1, last=2, request_id="f1") == 2
        assert [s.index for s in m.steps("e")] == [0]
        assert m.forget("e", whole=True, request_id="f2") == 1
        assert m.forget("e", whole=True, request_id="f2") == 1
        assert m.episodes() == []


def test_append_assigns_indices_and_batches_are_atomic(root):
    with mesa.Memory(root, "t") as m:
        m.create_episode("e", task="t")
        assert m.append("e", "first") == 0
        assert m.append_many("e", [{"action": "a"}, {"action": "b", "observation": "o"}]) == [1, 2]
        assert m.append("e", "later", index=10) == 10
        with pytest.raises(mesa.InvalidInputError) as err:
            m.append_many("e", [{"action": "ok"}, {"action": ""}])
        assert err.value.code == "empty"
        assert [s.index for s in m.steps("e")] == [0, 1, 2, 10], "nothing of the failed batch"
        with pytest.raises(mesa.ConflictError) as err:
            m.append("e", "again", index=3)
        assert err.value.code == "index-taken"
        assert m.steps("e")[-1].timestamp, "an append without a timestamp gets the time"


def test_forget_correct_and_compact(root):
    marker = "zebra-marker-7731"
    with mesa.Memory(root, "t") as m:
        fill(m)
        m.append("run-1", f"note {marker}", "secret")
        last = m.steps("run-1")[-1].index
        a = m.query("run-1", f"What about {marker}?", structures="all")
        assert any(marker in i.text for i in a.items)
        assert m.forget("run-1", last) == 1
        a = m.query("run-1", f"What about {marker}?", structures="all")
        assert not any(marker in i.text for i in a.items)
        m.correct("run-1", 3, "SELECT count(*) FROM items", "7")
        assert m.steps("run-1")[3].action == "SELECT count(*) FROM items"
        assert m.steps("run-1")[3].timestamp == "2026-03-01T10:03:00Z", "kept"
        assert m.forget("run-1", 0, last=1) == 2
        m.compact()
    for f in root.rglob("*"):
        if f.is_file():
            assert marker.encode() not in f.read_bytes(), f
    with mesa.Memory(root, "t") as m:
        assert m.forget("run-1", whole=True) == 3
        with pytest.raises(mesa.NotFoundError):
            m.steps("run-1")


def test_questions_are_kept_with_their_episode(root):
    with mesa.Memory(root, "t") as m:
        fill(m)
        kept = [
            {"id": "q1", "question": "Why did step 1 fail?", "answer": "no such table", "evidence": [1]},
            {"id": "q2", "question": "What was counted?", "qtype": "A"},
        ]
        assert m.add_questions("run-1", kept) == 2
        got = m.questions("run-1")
        assert [(q.id, q.question, q.answer, q.qtype, q.evidence) for q in got] == [
            ("q1", "Why did step 1 fail?", "no such table", None, [1]),
            ("q2", "What was counted?", None, "A", []),
        ]
        with pytest.raises(mesa.InvalidInputError) as err:
            m.add_questions("run-1", [{"id": "q3", "question": "ok"}, {"id": "q4", "question": " "}])
        assert err.value.code == "empty"
        assert len(m.questions("run-1")) == 2, "nothing of the refused batch"
        with pytest.raises(mesa.NotFoundError):
            m.questions("nope")
        with pytest.raises(mesa.InvalidInputError) as err:
            m.add_questions("run-1", [{"question": "no id"}])
        assert err.value.code == "bad-question"
        a = m.query("run-1", got[0].question, structures="T")
        assert any(1 in i.steps for i in a.items)
        m.forget("run-1", whole=True)
        with pytest.raises(mesa.NotFoundError):
            m.questions("run-1")


def test_errors_carry_code_message_and_help(root):
    with mesa.Memory(root, "t") as m:
        with pytest.raises(mesa.NotFoundError) as err:
            m.append("nope", "x")
        e = err.value
        assert e.code == "unknown-episode" and "nope" in e.message and e.help
        assert isinstance(e, mesa.MesaError)
        m.create_episode("e")
        with pytest.raises(mesa.ConflictError):
            m.create_episode("e")
        with pytest.raises(mesa.NotFoundError) as err:
            m.forget("e", 4)
        assert err.value.code == "unknown-step"
        with pytest.raises(mesa.InvalidInputError) as err:
            m.append("e", "x", timestamp="yesterday-ish")
        assert err.value.code == "bad-timestamp"
        with pytest.raises(mesa.InvalidInputError) as err:
            m.append("e", "x" * (1 << 20 + 1))
        assert err.value.code == "too-large"
        with pytest.raises(mesa.InvalidInputError):
            m.forget("e")
        with pytest.raises(mesa.InvalidInputError):
            m.query("e", "q")
        with pytest.raises(mesa.InvalidInputError):
            m.query("e", "q", structures="S,Q")
        m.append("e", "open the file")
        with pytest.raises(mesa.InvalidInputError) as err:
            m.query("e", "   ", structures="S,T")
        assert err.value.code == "empty-question"
        with pytest.raises(mesa.InvalidInputError):
            m.append_many("e", [{"observation": "no action"}])
        with pytest.raises(TypeError):
            m.append("e", 42)
        with pytest.raises(mesa.InvalidInputError) as err:
            mesa.Memory(root, "../escape")
        assert err.value.code == "bad-tenant"


def test_a_huge_question_is_answered_or_refused_cleanly(root):
    with mesa.Memory(root, "t") as m:
        fill(m)
        a = m.query("run-1", "table " * 200_000, structures="all")
        assert a.items
        assert len(m.steps("run-1")) == len(STEPS)


def test_closed_memory_and_writer_lock(root):
    m = mesa.Memory(root, "t")
    with pytest.raises(mesa.ConflictError) as err:
        mesa.Memory(root, "t")
    assert err.value.code == "locked"
    fill(m)
    m.close()
    assert m.closed
    with pytest.raises(mesa.ClosedError):
        m.episodes()
    reopened = mesa.Memory(root, "t")
    assert len(reopened.steps("run-1")) == len(STEPS), "acknowledged writes survive"
    reader = mesa.Memory(root, "t", read_only=True)
    with pytest.raises(mesa.ConflictError) as err:
        reader.append("run-1", "x")
    assert err.value.code == "read-only"
    reopened.append("run-1", "a new step")
    assert len(reader.steps("run-1")) == len(STEPS) + 1, "a reader sees the writer's commits"
    assert mesa.Memory.tenants(root) == ["t"]


def test_a_writer_waits_for_the_other_to_close(root):
    import threading

    first = mesa.Memory(root, "t")
    with pytest.raises(mesa.ConflictError) as err:
        mesa.Memory(root, "t", wait=0.05)
    assert err.value.code == "locked"
    assert "wait=" in err.value.help and "read_only=True" in err.value.help
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(mesa.InvalidInputError) as err:
            mesa.Memory(root, "t", wait=bad)
        assert err.value.code == "bad-wait"
    opened = []
    waiting = threading.Thread(target=lambda: opened.append(mesa.Memory(root, "t", wait=60)))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive() and not opened, "it waits while the tenant is held"
    first.close()
    waiting.join(60)
    (second,) = opened
    second.create_episode("run-2", task="after the first")
    assert [e.id for e in second.episodes()] == ["run-2"]


def test_tenants_are_partitions(root):
    with mesa.Memory(root, "alice") as a, mesa.Memory(root, "bob") as b:
        fill(a)
        b.create_episode("run-1", task="other")
        b.append("run-1", "bob's only step", "nothing about tables")
        ans = b.query("run-1", "no such table orders", structures="all")
        assert all("orders" not in i.text for i in ans.items)
        assert len(b.steps("run-1")) == 1


def test_results_equal_the_cli_json(root, mesa_bin, quickstart):
    questions = ["Why did the query at step 1 fail?", "What did the agent write?"]
    with mesa.Memory(root, "t") as m:
        fill(m)
        policy = mesa.Policy.load(quickstart)
        answers = [m.query("run-1", q, policy=policy) for q in questions]
        fixed = m.query("run-1", questions[0], structures="S,G,V")
    for q, a in zip(questions, answers):
        out = subprocess.run(
            [mesa_bin, "query", str(root), "--tenant", "t", "--episode", "run-1", q,
             "--policy", str(quickstart), "--format", "json"],
            check=True, capture_output=True, text=True,
        ).stdout
        cli, py = json.loads(out), json.loads(a.to_json())
        cli.pop("micros"), py.pop("micros")
        assert py == cli
        assert py["mask"] == a.structures and py["rule"] == a.rule
    out = subprocess.run(
        [mesa_bin, "query", str(root), "--tenant", "t", "--episode", "run-1", questions[0],
         "--structures", "S,G,V", "--format", "json"],
        check=True, capture_output=True, text=True,
    ).stdout
    cli, py = json.loads(out), json.loads(fixed.to_json())
    cli.pop("micros"), py.pop("micros")
    assert py == cli


def test_an_episode_records_how_it_ended(root):
    with mesa.Memory(root, "alice") as m:
        fill(m)
        s = m.query("run-1", "How did it end?", structures="S")
        assert "Outcome:" not in json.dumps(json.loads(s.to_json())["evidence"])
        assert m.update_episode("run-1", outcome="success", meta={"agent": "v3"})
        assert not m.update_episode("run-1", outcome="success"), "the same again"
        info = m.episode("run-1")
        fields = lambda e: (e.id, e.task, e.domain, e.outcome, e.meta, e.steps, e.created)  # noqa: E731
        assert fields(info) == fields(m.episodes()[0])
        assert (info.task, info.domain, info.outcome, info.meta) == (
            "count the orders", "text2sql", "success", {"agent": "v3"}
        )
        s = m.query("run-1", "How did it end?", structures="S")
        assert "Outcome: success" in json.dumps(json.loads(s.to_json())["evidence"])
        with pytest.raises(mesa.NotFoundError) as e:
            m.update_episode("nope", outcome="x")
        assert e.value.code == "unknown-episode"
        with pytest.raises(mesa.NotFoundError):
            m.episode("nope")
        with pytest.raises(TypeError):
            m.update_episode("run-1", tsak="another task")
        with pytest.raises(mesa.InvalidInputError) as e:
            m.update_episode("run-1", outcome="x", remove_outcome=True)
        assert e.value.code == "bad-update"
        assert m.episode("run-1").outcome == "success", "nothing written"
        assert m.update_episode("run-1", remove_outcome=True)
        assert not m.update_episode("run-1", remove_outcome=True), "the same again"
        assert m.episode("run-1").outcome is None
        # A restated task: S's Task: line follows.
        assert m.update_episode("run-1", task="count the refunds")
        assert not m.update_episode("run-1", task="count the refunds"), "the same again"
        assert m.episode("run-1").task == "count the refunds"
        s = m.query("run-1", "What was the task?", structures="S")
        assert "Task: count the refunds" in json.dumps(json.loads(s.to_json())["evidence"])
        s = m.query("run-1", "How did it end?", structures="S")
        assert "Outcome:" not in json.dumps(json.loads(s.to_json())["evidence"])


def test_search_over_every_episode(root):
    with mesa.Memory(root, "alice") as m:
        fill(m)
        fill(m, "garden", [("water the roses", "the soil is wet"), ("cut the hedge", "the hedge is short")])
        found = m.search("Which table was missing from sales.db?", structures="all")
        assert [a.episode for a in found][0] == "run-1"
        assert len(found) == 2 and found[0].relevance > found[1].relevance
        assert "no such table" in found[0].text()
        alone = m.query("run-1", "Which table was missing from sales.db?", structures="all")
        assert alone.relevance is None and found[0].text() == alone.text()
        assert json.loads(found[0].to_json())["relevance"] == found[0].relevance
        some = m.search("roses", structures="all", episodes=["garden"], limit=1)
        assert [a.episode for a in some] == ["garden"]
        with pytest.raises(mesa.NotFoundError):
            m.search("roses", structures="all", episodes=["nope"])
        for bad in (0, -1, 101):
            with pytest.raises(mesa.InvalidInputError) as e:
                m.search("roses", structures="all", limit=bad)
            assert e.value.code == "bad-limit" and str(bad) in str(e.value), e.value
        with pytest.raises(mesa.InvalidInputError):
            m.search("roses")
        # An episode whose question fails (its task overflows a compiled
        # policy's input) is left out with a warning; the others answer.
        m.create_episode("long", task="fix the bug " * 20_000)
        m.append("long", "run the tests")
        policy = mesa.Policy.from_source('policy "p"\nrule r when query has words ["table"] -> select {T, R}\ndefault {S}\n')
        with pytest.warns(RuntimeWarning, match="episode `long` left out"):
            found = m.search("Which table was missing?", policy=policy)
        assert "long" not in [a.episode for a in found] and found[0].episode == "run-1"
    with mesa.Memory(root, "bob") as m:
        assert m.search("Which table was missing?", structures="all") == [], "tenants are partitions"


def test_a_budget_of_built_steps_drops_the_oldest_and_answers_the_same(root):
    q = "Which table was missing from sales.db?"
    with mesa.Memory(root, "roomy") as m:
        fill(m)
        want = m.query("run-1", q, structures="all").text()
        assert m.resident() == {
            "episodes": 1, "steps": len(STEPS), "shared_steps": len(STEPS), "budget": 100_000, "dropped": 0
        }
    with mesa.Memory(root, "tight", resident_steps=len(STEPS)) as m:
        fill(m)
        fill(m, "run-2")
        assert m.query("run-1", q, structures="all").text() == want
        m.query("run-2", q, structures="all")
        assert m.resident() == {
            "episodes": 1, "steps": len(STEPS), "shared_steps": len(STEPS), "budget": len(STEPS), "dropped": 1
        }
        # run-1 was dropped: it is built again, to the same answer.
        assert m.query("run-1", q, structures="all").text() == want
        # Another tenant of the same root and budget shares it: its
        # question drops this one's episode.
        with mesa.Memory(root, "other", resident_steps=len(STEPS)) as o:
            fill(o)
            assert o.query("run-1", q, structures="all").text() == want
            assert o.resident()["episodes"] == 1 and m.resident()["episodes"] == 0
            assert o.resident()["dropped"] == m.resident()["dropped"] == 3
            # Another budget is another count.
            with mesa.Memory(root, "third", resident_steps=len(STEPS) + 1) as t:
                fill(t)
                t.query("run-1", q, structures="all")
                assert o.resident()["episodes"] == 1 and t.resident()["episodes"] == 1
    with pytest.raises(mesa.InvalidInputError) as e:
        mesa.Memory(root, "t", resident_steps=-1)
    assert e.value.code == "bad-resident-steps" and "-1" in str(e.value)


def test_search_asks_at_most_the_candidates(root):
    with mesa.Memory(root, "alice") as m:
        fill(m)
        fill(m, "garden", [("water the roses", "the soil is wet"), ("cut the hedge", "the hedge is short")])
        q = "Which table was missing from sales.db?"
        one = m.search(q, structures="all", limit=1, candidates=1)
        # Only run-1 was asked, so only it was built.
        assert m.resident()["episodes"] == 1
        every = m.search(q, structures="all", limit=1, candidates=None)
        assert m.resident()["episodes"] == 2
        assert [a.episode for a in one] == [a.episode for a in every] == ["run-1"]
        assert one[0].text() == every[0].text()
        with pytest.raises(mesa.InvalidInputError) as e:
            m.search(q, structures="all", candidates=-1)
        assert e.value.code == "bad-candidates"
