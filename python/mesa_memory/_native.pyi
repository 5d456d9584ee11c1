"""Type stubs for MESA's compiled core (``mesa_memory._native``)."""

import os
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

__version__: str

_Path = Union[str, "os.PathLike[str]"]

class MesaError(Exception):
    """Base of every MESA error."""

    code: str
    """A stable code (``unknown-episode``, ``too-large``, ``check``, ...)."""
    message: str
    """What went wrong, naming the tenant, episode, step or file."""
    help: Optional[str]
    """What to do about it."""
    diagnostics: List["Diagnostic"]
    """The checker's findings (PolicyError from a source that does not check; else empty)."""

class NotFoundError(MesaError):
    """The tenant, episode or step does not exist."""

class InvalidInputError(MesaError):
    """The input is wrong (empty action, text too large, bad timestamp or name); nothing was written."""

class ConflictError(MesaError):
    """The episode exists, the index is taken, another writer holds the tenant, or the handle is read-only."""

class StorageError(MesaError):
    """The disk, database or a file failed, or the directory is not a live memory this version reads."""

class BuilderError(MesaError):
    """A model-backed builder failed on the new steps; nothing was written."""

class ClosedError(MesaError):
    """A call on a closed Memory."""

class PolicyError(MesaError):
    """A policy that does not check, compile, load or select."""

class Diagnostic:
    """One finding of the policy checker."""

    code: str
    """The stable code (docs/ERRORS.md)."""
    severity: str
    """``"error"`` or ``"warning"``."""
    message: str
    help: Optional[str]
    line: int
    """1-based line of the start."""
    column: int
    """1-based column (in characters) of the start."""
    end_line: int
    end_column: int
    file: str

class Selection:
    """What a policy chose for one question."""

    structures: List[str]
    """Letters in the order S, T, G, V, R."""
    mask: str
    """As ``mesa run`` prints it: ``{S, T}``."""
    bits: int
    """S = 1, T = 2, G = 4, V = 8, R = 16."""
    rule: Optional[str]
    """The deciding rule, or None when no rule changed the default."""

class EvidenceItem:
    """One evidence item and its provenance."""

    structure: str
    """S, T, G, V or R."""
    steps: List[int]
    """The steps it shows, increasing."""
    timestamps: List[Optional[str]]
    """Each step's time (RFC 3339), None where unknown."""
    score: float
    """The structure's score, in [0, 1]."""
    tokens: int
    text: str

class Answer:
    """The answer to one question."""

    episode: str
    question: str
    structures: List[str]
    """The selected structures' letters."""
    mask: str
    rule: Optional[str]
    """The deciding rule (None with fixed structures, or no rule fired)."""
    previews: Dict[str, float]
    """The previews the policy read (``"R.tokens"`` keys)."""
    tokens: int
    """Tokens of the composed evidence."""
    items: List[EvidenceItem]
    micros: Dict[str, int]
    """Microseconds per stage: prepare, previews, select, retrieve, compose, total."""
    stale: Dict[str, int]
    """Steps a structure's evidence lacks, by letter (a summary rewritten over whole episodes lags appends); empty when current."""
    relevance: Optional[float]
    """From ``Memory.search``: 0 to 2, the reciprocal rank fusion of this episode's rank by BM25 of the question over its evidence and its rank by its best step in the word index, which ranks the episodes (None from ``Memory.query``)."""
    def to_json(self) -> str:
        """The answer exactly as ``mesa query --format json`` prints it."""
    def text(self) -> str:
        """The evidence texts joined, as a prompt would hold them."""

class EpisodeInfo:
    id: str
    task: str
    domain: str
    outcome: Optional[str]
    meta: Dict[str, str]
    steps: int
    created: str

class Step:
    index: int
    action: str
    observation: str
    timestamp: Optional[str]

class KeptQuestion:
    id: str
    question: str
    answer: Optional[str]
    qtype: Optional[str]
    evidence: List[int]

class Exported:
    """What :meth:`Memory.export` wrote."""

    episodes: int
    steps: int
    questions: int
    empty: int
    dropped_evidence: int

class Imported:
    """What :meth:`Memory.import_dataset` added."""

    episodes: int
    steps: int
    questions: int
    skipped: List[Tuple[int, str]]
    cut: int
    again: int

class Policy:
    """A selector policy in the WebAssembly sandbox (or the reference interpreter)."""

    @staticmethod
    def load(path: _Path, *, engine: str = "wasm") -> "Policy":
        """Loads a ``.mesa`` source or a compiled ``.wasm`` / ``.cwasm`` module."""
    @staticmethod
    def from_source(source: str, *, name: str = "<source>", engine: str = "wasm") -> "Policy":
        """A policy from its source text (PolicyError with diagnostics if it does not check)."""
    @staticmethod
    def from_module(module: bytes, *, name: str = "<module>") -> "Policy":
        """A policy from compiled module bytes (refused unless it is a MESA module)."""
    @property
    def name(self) -> str: ...
    @property
    def source(self) -> Optional[str]: ...
    def module(self) -> bytes:
        """The compiled WebAssembly module."""
    def select(
        self,
        question: str,
        *,
        domain: Optional[str] = None,
        task: Optional[str] = None,
        qtype: Optional[str] = None,
        previews: Optional[Dict[str, float]] = None,
        shown: Optional[Dict[str, List[float]]] = None,
    ) -> Selection:
        """The structures chosen for a question, as ``mesa run`` answers; ``shown`` gives a
        trading policy what each of the 31 non-empty subsets shows (``"words"`` or ``"steps"``)."""
    def explain(
        self,
        question: str,
        *,
        domain: Optional[str] = None,
        task: Optional[str] = None,
        qtype: Optional[str] = None,
        previews: Optional[Dict[str, float]] = None,
        shown: Optional[Dict[str, List[float]]] = None,
    ) -> str:
        """Every rule in order and what it tested, as ``mesa explain`` prints (needs the source)."""

class Memory:
    """One tenant of a live memory directory; thread-safe; a context manager."""

    def __init__(
        self,
        root: _Path,
        tenant: str,
        *,
        read_only: bool = False,
        embedder: Optional[Literal["builtin", "minilm", "openai"]] = None,
        summarizer: Optional[Literal["builtin", "llm"]] = None,
        extractor: Optional[Literal["builtin", "llm"]] = None,
        wait: float = 0.0,
        resident_steps: int = 100_000,
    ) -> None:
        """Opens tenant ``tenant`` at ``root`` (both created if new; with read_only, it must exist).

        A writer waits up to ``wait`` seconds for the tenant's other writer (another process) to
        close; past it, or at once with 0, it raises ConflictError (``locked``); a negative or
        non-finite ``wait`` raises InvalidInputError (``bad-wait``).

        Built episodes of at most ``resident_steps`` steps stay in memory (about 19 KB a step
        with the built-in embedder); past it, the ones asked about least recently are dropped
        and built again when asked, to the same answers. The ``Memory`` objects of one process
        opened on the same root with the same ``resident_steps`` share that budget, as a server's
        tenants do (``resident()["budget"]`` is it). A negative one raises
        InvalidInputError (``bad-resident-steps``).

        The tenant's structures are made by the builders it recorded; a new tenant's by those
        named here, the built-in ones otherwise: ``embedder`` is ``"builtin"``, ``"minilm"``
        (all-MiniLM-L6-v2, its files from MESA_MINILM_DIR) or ``"openai"`` (an OpenAI-compatible
        embeddings endpoint, from MESA_LLM_BASE_URL, MESA_LLM_API_KEY and
        MESA_LLM_EMBEDDING_MODEL); ``summarizer`` (S) and ``extractor`` (G) are ``"builtin"`` or
        ``"llm"`` (the chat endpoint, MESA_LLM_CHAT_MODEL). A named one that differs from the
        tenant's raises ConflictError (``embedder-mismatch``, ``builder-mismatch``); one that
        cannot be made, BuilderError (``embedder-unavailable``, ``builder-unavailable``)."""
    @staticmethod
    def tenants(root: _Path) -> List[str]:
        """The tenants of the memory at ``root``."""
    @property
    def root(self) -> str: ...
    @property
    def tenant(self) -> str: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None:
        """Releases the tenant; later calls raise ClosedError."""
    def __enter__(self) -> "Memory": ...
    def __exit__(self, *args: object) -> bool: ...
    def create_episode(
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
        """Creates an episode (ConflictError if the id exists, unless a retry with the same request_id and fields); `created` (RFC 3339) is its creation time, now by default."""
    def episode(self, id: str) -> EpisodeInfo:
        """One episode as :meth:`episodes` lists it (NotFoundError if unknown)."""
    def update_episode(
        self,
        id: str,
        *,
        task: Optional[str] = None,
        domain: Optional[str] = None,
        outcome: Optional[str] = None,
        meta: Optional[Dict[str, str]] = None,
        remove_outcome: bool = False,
    ) -> bool:
        """Replaces the episode's task, domain, outcome or metadata (each one given; ``meta`` the whole metadata, ``{}`` empties it; ``remove_outcome=True`` removes the outcome, InvalidInputError with ``outcome``). Returns whether anything changed: the same call again changes nothing, so it takes no request id. A changed task or outcome makes the next query assemble the episode from its stored parts, as after a correction; with an extractor that reads the task (the LLM one), a changed task also extracts every step's relations again first (one call per step; a failed one raises BuilderError and changes nothing)."""
    def append(
        self,
        episode: str,
        action: str,
        observation: str = "",
        *,
        timestamp: Optional[str] = None,
        index: Optional[int] = None,
        request_id: Optional[str] = None,
    ) -> int:
        """Appends one step, durably; returns its index. A retry with the same request_id appends nothing."""
    def append_many(
        self, episode: str, steps: Sequence[Dict[str, object]], *, request_id: Optional[str] = None
    ) -> List[int]:
        """Appends steps (dicts: action, observation?, timestamp?, index?) in one transaction."""
    def query(
        self,
        episode: str,
        question: str,
        *,
        policy: Optional[Policy] = None,
        structures: Union[str, Sequence[str], None] = None,
        qtype: Optional[str] = None,
    ) -> Answer:
        """Answers a question as ``mesa query`` does, with a policy or fixed structures."""
    def search(
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
        """Asks a question of many episodes (all, or ``episodes``); the answers best first by ``relevance``, at most ``limit`` (1 to 100). At most ``candidates`` episodes are asked, those whose steps share the most words with the question (None or 0: every one; a negative one raises InvalidInputError, ``bad-candidates``). An episode whose question fails is left out with a RuntimeWarning."""
    def forget(
        self,
        episode: str,
        step: Optional[int] = None,
        *,
        last: Optional[int] = None,
        whole: bool = False,
        request_id: Optional[str] = None,
    ) -> int:
        """Forgets a step, the steps ``step..=last``, or the whole episode; returns how many went. A retry with the same request_id forgets nothing more."""
    def correct(
        self,
        episode: str,
        index: int,
        action: str,
        observation: str = "",
        *,
        timestamp: Optional[str] = None,
        request_id: Optional[str] = None,
    ) -> None:
        """Replaces a step's text (and its timestamp, if given). A retry with the same request_id writes nothing."""
    def forget_before(self, time: str) -> int:
        """Forgets, in every episode, the steps whose timestamp is before ``time`` (RFC 3339): a
        retention limit. Returns how many steps went; called again, it forgets what is left."""
    def compact(self) -> None:
        """Rewrites the database so that no file holds a byte of anything forgotten."""
    def episodes(self) -> List[EpisodeInfo]: ...
    def resident(self) -> Dict[str, int]:
        """What this handle keeps built in memory: ``{"episodes": N, "steps": N, "shared_steps": N, "budget": N, "dropped": N}`` (``shared_steps``: this handle's and those of the process's other ``Memory`` objects sharing the budget; ``dropped``: the episodes the budget has dropped)."""
    def steps(self, episode: str) -> List[Step]: ...
    def add_questions(self, episode: str, questions: Sequence[Mapping[str, Any]]) -> int:
        """Keeps questions (dicts: ``id``, ``question``, optional ``answer``, ``qtype``, ``evidence``) with the episode; returns how many."""
    def questions(self, episode: str) -> List[KeptQuestion]:
        """The questions kept with the episode, in the order they were kept."""
    def export(self, path: _Path) -> Exported:
        """Writes the tenant as a dataset to ``path`` (replaced whole once complete): every episode
        with its creation time, its steps (indices, timestamps) and kept questions, one JSON line
        each in MESA's generic layout, which :meth:`import_dataset` or ``mesa build --into`` reads
        back into a tenant that answers the same. Episodes without steps are written too (counted
        in ``empty``); evidence labels of forgotten steps are left out, and counted."""
    def import_dataset(self, path: _Path, *, max_text_bytes: int = 1048576, skip_bad: bool = False) -> Imported:
        """Imports a dataset file (generic or AMA-Bench JSON Lines) as ``mesa build --into`` does:
        episodes created, steps appended with their indices and timestamps, questions kept. A
        line that does not read raises InvalidInputError (``bad-dataset``) unless ``skip_bad``.
        Run again, it adds nothing to an episode it finds whole and unchanged (``again``) and
        completes the others; an episode of the same id that differs raises ConflictError, the
        ones before it imported."""

def check(source: str, *, name: str = "<source>") -> List[Diagnostic]:
    """Every error and warning of a policy source (empty when clean); never raises for a bad policy."""

def format(source: str, *, name: str = "<source>") -> str:
    """The source in the canonical layout (``mesa fmt``)."""

def compile(source: str, *, name: str = "<source>") -> bytes:
    """A self-contained WebAssembly module (``mesa compile``)."""
