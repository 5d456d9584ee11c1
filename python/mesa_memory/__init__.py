"""MESA: memory for long-horizon LLM agents.

An agent appends its steps to a :class:`Memory` as it works and asks it
questions mid-task. For each question a selector policy (a small, auditable
rule language, compiled to WebAssembly and run in a sandbox) picks which of
five memory structures to read: S (summary), T (temporal), G (knowledge
graph), V (vector index) and R (raw windows). Every evidence item says which
steps it came from, when they happened, and how it scored.

Quick start::

    import mesa_memory as mesa

    with mesa.Memory("agent-memory", tenant="alice") as memory:
        memory.create_episode("run-1", task="fix the failing test", domain="swe")
        memory.append("run-1", "open tests/test_io.py", "def test_read(): ...")
        answer = memory.query("run-1", "What did the agent open?", structures="T,R")
        for item in answer.items:
            print(item.structure, item.steps, item.timestamps, item.text)

Policies: :func:`check`, :func:`format`, :func:`compile` and
:class:`Policy` (``load``, ``select``, ``explain``). An asyncio twin of
:class:`Memory` is :class:`AsyncMemory`. Errors are :class:`MesaError`
subclasses carrying ``code``, ``message`` and ``help``.
"""

from ._native import (
    Answer,
    BuilderError,
    ClosedError,
    ConflictError,
    Diagnostic,
    EpisodeInfo,
    EvidenceItem,
    Exported,
    Imported,
    InvalidInputError,
    KeptQuestion,
    Memory,
    MesaError,
    NotFoundError,
    Policy,
    PolicyError,
    Selection,
    Step,
    StorageError,
    __version__,
    check,
    compile,
    format,
)
from ._async import AsyncMemory

__all__ = [
    "Answer",
    "AsyncMemory",
    "BuilderError",
    "ClosedError",
    "ConflictError",
    "Diagnostic",
    "EpisodeInfo",
    "EvidenceItem",
    "Exported",
    "Imported",
    "InvalidInputError",
    "KeptQuestion",
    "Memory",
    "MesaError",
    "NotFoundError",
    "Policy",
    "PolicyError",
    "Selection",
    "Step",
    "StorageError",
    "__version__",
    "check",
    "compile",
    "format",
]
