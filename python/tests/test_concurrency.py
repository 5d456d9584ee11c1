import asyncio
import threading
import time

import mesa_memory as mesa
from conftest import fill


def test_threads_query_while_one_appends(root):
    with mesa.Memory(root, "t") as m:
        fill(m)
        done = threading.Event()
        errors, seen = [], []

        def writer():
            try:
                for i in range(150):
                    m.append("run-1", f"step action {i}", f"observation {i}")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
            finally:
                done.set()

        def reader():
            try:
                while not done.is_set():
                    a = m.query("run-1", "What did the agent do last?", structures="T,R")
                    steps = max(s for i in a.items for s in i.steps)
                    seen.append((time.monotonic(), steps))
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=writer)] + [
            threading.Thread(target=reader) for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert len(seen) >= 3, "readers ran while the writer appended"
        assert len({s for _, s in seen}) >= 2, "readers saw the episode grow"
        assert len(m.steps("run-1")) == 5 + 150


def test_async_twin(root):
    async def main():
        async with await mesa.AsyncMemory.open(root, "t") as m:
            await m.create_episode("e", task="async agent", domain="web")
            indices = await m.append_many(
                "e", [{"action": f"click {i}", "observation": f"page {i}"} for i in range(5)]
            )
            assert indices == [0, 1, 2, 3, 4]
            assert await m.update_episode("e", outcome="success")

            async def ask():
                return await m.query("e", "What did the agent click at step 3?", structures=["T"])

            answers, extra = await asyncio.gather(
                asyncio.gather(*(ask() for _ in range(4))), m.append("e", "click 5", "page 5")
            )
            assert extra == 5
            assert all(3 in a.items[0].steps for a in answers)
            assert (await m.episodes())[0].steps == 6
            assert await m.forget("e", 5) == 1
            await m.correct("e", 0, "click zero", "home page")
            assert (await m.steps("e"))[0].action == "click zero"
            await m.compact()
            policy = mesa.Policy.from_source(
                'policy "p"\nrule clicks when query has words ["click"] -> select {T}\ndefault {S}\n'
            )
            a = await m.query("e", "which click came first?", policy=policy)
            assert a.rule == "clicks" and a.structures == ["T"]
            found = await m.search("which click came first?", policy=policy, episodes=("e",))
            assert [f.episode for f in found] == ["e"] and found[0].rule == "clicks"
        assert m.closed

    asyncio.run(main())
