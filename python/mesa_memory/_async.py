"""The asyncio twin of :class:`mesa_memory.Memory`.

Each call runs the synchronous one in a worker thread
(:func:`asyncio.to_thread`); the Rust core releases the GIL while it works,
so the event loop and other threads keep running, and queries proceed while
another task appends.
"""

import asyncio
import functools
import os
from typing import Any, Dict, List, Optional, Sequence, Union

from ._native import Answer, EpisodeInfo, Exported, Imported, KeptQuestion, Memory, Policy, Step


async def _run(fn, *args, **kwargs):
    # The default executor's threads; the core releases the GIL in them.
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))


class AsyncMemory:
    """One tenant of a live memory directory, for asyncio agents.

    Open it with ``await AsyncMemory.open(root, tenant)`` (or
    ``async with await AsyncMemory.open(...) as memory``). The methods are
    those of :class:`Memory`, awaited.
    """

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    @classmethod
    async def open(
        cls,
        root: Union[str, "os.PathLike[str]"],
        tenant: str,
        *,
        read_only: bool = False,
        embedder: Optional[str] = None,
        summarizer: Optional[str] = None,
        extractor: Optional[str] = None,
        wait: float = 0.0,
        resident_steps: int = 100_000,
    ) -> "AsyncMemory":
        """Opens (creating if new) tenant ``tenant`` of the memory at ``root``
        (``embedder``, ``summarizer``, ``extractor``, ``wait`` and ``resident_steps`` as for
        :class:`Memory`)."""
        memory = await _run(
            Memory,
            root,
            tenant,
            read_only=read_only,
            embedder=embedder,
            summarizer=summarizer,
            extractor=extractor,
            wait=wait,
            resident_steps=resident_steps,
        )
        return cls(memory)

    @property
    def sync(self) -> Memory:
        """The synchronous handle underneath."""
        return self._memory

    @property
    def tenant(self) -> str:
        """The tenant's name."""
        return self._memory.tenant

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._memory.closed

    async def close(self) -> None:
        """Releases the tenant; every acknowledged write is on disk."""
        self._memory.close()

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: Any) -> bool:
        await self.close()
        return False

    async def create_episode(
        self,
        id: str,
        task: str = "",
        domain: str = "",
        *,
        outcome: Optional[str] = None,
        meta: Optional[Dict[str, str]] = None,
        created: Optional[str] = None,
        request_id: Optional[str] = None,
    ) -> None:
        """See :meth:`Memory.create_episode`."""
        await _run(
            self._memory.create_episode,
            id,
            task,
            domain,
            outcome=outcome,
            meta=meta,
            created=created,
            request_id=request_id,
        )

    async def update_episode(
        self,
        id: str,
        *,
        task: Optional[str] = None,
        domain: Optional[str] = None,
        outcome: Optional[str] = None,
        meta: Optional[Dict[str, str]] = None,
        remove_outcome: bool = False,
    ) -> bool:
        """See :meth:`Memory.update_episode`."""
        return await _run(
            self._memory.update_episode,
            id,
            task=task,
            domain=domain,
            outcome=outcome,
            meta=meta,
            remove_outcome=remove_outcome,
        )

    async def append(
        self,
        episode: str,
        action: str,
        observation: str = "",
        *,
        timestamp: Optional[str] = None,
        index: Optional[int] = None,
        request_id: Optional[str] = None,
    ) -> int:
        """See :meth:`Memory.append`."""
        return await _run(
            self._memory.append,
            episode,
            action,
            observation,
            timestamp=timestamp,
            index=index,
            request_id=request_id,
        )

    async def append_many(
        self, episode: str, steps: Sequence[Dict[str, Any]], *, request_id: Optional[str] = None
    ) -> List[int]:
        """See :meth:`Memory.append_many`."""
        return await _run(self._memory.append_many, episode, list(steps), request_id=request_id)

    async def query(
        self,
        episode: str,
        question: str,
        *,
        policy: Optional[Policy] = None,
        structures: Union[str, Sequence[str], None] = None,
        qtype: Optional[str] = None,
    ) -> Answer:
        """See :meth:`Memory.query`."""
        return await _run(
            self._memory.query,
            episode,
            question,
            policy=policy,
            structures=list(structures) if isinstance(structures, (list, tuple)) else structures,
            qtype=qtype,
        )

    async def search(
        self,
        question: str,
        *,
        policy: Optional[Policy] = None,
        structures: Union[str, Sequence[str], None] = None,
        qtype: Optional[str] = None,
        episodes: Optional[Sequence[str]] = None,
        limit: int = 5,
        candidates: Optional[int] = 50,
    ) -> List[Answer]:
        """See :meth:`Memory.search`."""
        return await _run(
            self._memory.search,
            question,
            policy=policy,
            structures=list(structures) if isinstance(structures, (list, tuple)) else structures,
            qtype=qtype,
            episodes=list(episodes) if episodes is not None else None,
            limit=limit,
            candidates=candidates,
        )

    async def forget(
        self,
        episode: str,
        step: Optional[int] = None,
        *,
        last: Optional[int] = None,
        whole: bool = False,
        request_id: Optional[str] = None,
    ) -> int:
        """See :meth:`Memory.forget`."""
        return await _run(
            self._memory.forget, episode, step, last=last, whole=whole, request_id=request_id
        )

    async def correct(
        self,
        episode: str,
        index: int,
        action: str,
        observation: str = "",
        *,
        timestamp: Optional[str] = None,
        request_id: Optional[str] = None,
    ) -> None:
        """See :meth:`Memory.correct`."""
        await _run(
            self._memory.correct,
            episode,
            index,
            action,
            observation,
            timestamp=timestamp,
            request_id=request_id,
        )

    async def forget_before(self, time: str) -> int:
        """See :meth:`Memory.forget_before`."""
        return await _run(self._memory.forget_before, time)

    async def compact(self) -> None:
        """See :meth:`Memory.compact`."""
        await _run(self._memory.compact)

    def resident(self) -> Dict[str, int]:
        """See :meth:`Memory.resident` (no I/O: not awaited)."""
        return self._memory.resident()

    async def episodes(self) -> List[EpisodeInfo]:
        """See :meth:`Memory.episodes`."""
        return await _run(self._memory.episodes)

    async def episode(self, id: str) -> EpisodeInfo:
        """See :meth:`Memory.episode`."""
        return await _run(self._memory.episode, id)

    async def steps(self, episode: str) -> List[Step]:
        """See :meth:`Memory.steps`."""
        return await _run(self._memory.steps, episode)

    async def add_questions(self, episode: str, questions: Sequence[Dict[str, Any]]) -> int:
        """See :meth:`Memory.add_questions`."""
        return await _run(self._memory.add_questions, episode, questions)

    async def questions(self, episode: str) -> List[KeptQuestion]:
        """See :meth:`Memory.questions`."""
        return await _run(self._memory.questions, episode)

    async def export(self, path: Union[str, "os.PathLike[str]"]) -> Exported:
        """See :meth:`Memory.export`."""
        return await _run(self._memory.export, path)

    async def import_dataset(
        self, path: Union[str, "os.PathLike[str]"], *, max_text_bytes: int = 1048576, skip_bad: bool = False
    ) -> Imported:
        """See :meth:`Memory.import_dataset`."""
        return await _run(self._memory.import_dataset, path, max_text_bytes=max_text_bytes, skip_bad=skip_bad)

    def __repr__(self) -> str:
        return f"<AsyncMemory {self._memory!r}>"
