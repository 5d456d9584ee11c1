#!/usr/bin/env python3
"""Embed a compiled MESA policy from Python (the `wasmtime` package from PyPI).

Usage: select.py POLICY.wasm < queries.jsonl > results.jsonl

Reads one JSON object per line ({"id", "query", "task", "domain", "qtype",
"preview": {"R": {"tokens": 5200}}}) and writes one result per line:
{"id", "mask": ["S", "T"], "bits": 3, "rule": "name" or null}. The input
layout, the result encoding and the metadata are docs/ABI.md, version 1.

The module may come from anywhere, so this host does every check of ABI.md's
"What a host must validate" before trusting it. Exit status: 0 all lines
answered; 1 some lines could not be answered (their result lines carry an
"error", as with `mesa run`); 2 the module was refused (message on stderr).
"""
import json
import struct
import sys

from wasmtime import Config, Engine, Instance, Module, Store, Trap, TrapCode, WasmtimeError

ABI_VERSION = 1
ABSENT = 0xFFFFFFFF
STRUCTURES = ["S", "T", "G", "V", "R"]
LONG_NAMES = {"summary": "S", "temporal": "T", "graph": "G", "vector": "V", "raw": "R"}
FUNCTIONS = ["input_ptr", "input_cap", "select", "trace_ptr", "trace_len", "metadata_ptr", "metadata_len"]
METADATA_SECTION = "mesa.metadata"
MAX_PAGES = 256  # 16 MiB, the reference host's limit
# Fuel, as the reference host grants it (docs/ABI.md, "Bounding calls").
FUEL_BASE, FUEL_PER_BYTE, FUEL_PER_RULE, FUEL_GETTER = 1_000_000, 400, 100_000, 10_000
I32, FUNC, MEMORY, GLOBAL = 0x7F, 0, 2, 3


class Refused(Exception):
    """The module breaks the ABI; the host stops."""


# --- The module binary ------------------------------------------------------
# wasmtime-py can list imports and exports but not custom sections or memories
# that are not exported, so the host reads the section headers itself (only
# after the engine has validated the module). The Node host has the same parser.

class Reader:
    def __init__(self, data, pos, end):
        self.data, self.pos, self.end = data, pos, end

    def byte(self):
        self.pos += 1
        return self.data[self.pos - 1]

    def uleb(self):
        result, shift = 0, 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return result

    def skip(self, n):
        self.pos += n

    def name(self):
        n = self.uleb()
        self.pos += n
        return self.data[self.pos - n:self.pos].decode("utf-8", "replace")

    def valtype(self):
        t = self.byte()
        if t in (0x63, 0x64):  # (ref null? heaptype)
            self.uleb()
        return t

    def const_expr(self):
        """Skips a constant expression (a global's initializer)."""
        while (op := self.byte()) != 0x0B:
            if op in (0x41, 0x42, 0x23, 0xD2, 0xD0):  # i32/i64.const, global.get, ref.func, ref.null
                self.uleb()
            elif op in (0x43, 0x44):  # f32/f64.const
                self.skip(4 if op == 0x43 else 8)
            elif op not in (0x6A, 0x6B, 0x6C, 0x7C, 0x7D, 0x7E):  # extended-const arithmetic
                raise Refused(f"a global's initializer uses opcode {op:#x}, which this host does not read")


def parse_module(wasm):
    """The sections ABI.md's checks need: types, imports, functions, memories,
    globals, exports and custom sections."""
    m = {"types": [], "imports": [], "funcs": [], "memories": [], "globals": [], "exports": {}, "custom": {}}
    r = Reader(wasm, 8, len(wasm))
    while r.pos < r.end:
        section_id, size = r.byte(), r.uleb()
        s = Reader(wasm, r.pos, r.pos + size)
        r.skip(size)
        if section_id == 0:
            name = s.name()
            m["custom"].setdefault(name, []).append(bytes(wasm[s.pos:s.end]))
            continue
        if section_id not in (1, 2, 3, 5, 6, 7):
            continue
        for _ in range(s.uleb()):
            if section_id == 1:
                form = s.byte()
                if form != 0x60:
                    raise Refused(f"the module's type section uses form {form:#x}, which this host does not read")
                params = [s.valtype() for _ in range(s.uleb())]
                m["types"].append((params, [s.valtype() for _ in range(s.uleb())]))
            elif section_id == 2:
                m["imports"].append(f"`{s.name()}::{s.name()}`")
                break  # one is enough to refuse; the rest need not be decoded
            elif section_id == 3:
                m["funcs"].append(s.uleb())
            elif section_id == 5:
                flags, minimum = s.byte(), s.uleb()
                m["memories"].append((flags, minimum, s.uleb() if flags & 1 else None))
                if flags & ~1:
                    break  # 64-bit, shared or custom page size: refused below
            elif section_id == 6:
                m["globals"].append((s.valtype(), s.byte()))
                s.const_expr()
            elif section_id == 7:
                name, kind = s.name(), s.byte()
                m["exports"][name] = (kind, s.uleb())
    return m


def check_module(m):
    """ABI.md's static checks 2-4 (the engine did 1)."""
    if m["imports"]:
        raise Refused(f"the module imports {m['imports'][0]}; a MESA policy module must have no imports")
    if len(m["memories"]) != 1:
        raise Refused(f"the module defines {len(m['memories'])} memories; a MESA policy module has exactly one")
    flags, minimum, maximum = m["memories"][0]
    if flags & ~1:
        raise Refused("the module's memory is 64-bit or shared; it must be a plain 32-bit memory")
    if maximum != minimum:
        raise Refused(f"the module's memory is growable ({minimum} pages, maximum "
                      f"{'none' if maximum is None else maximum}); it must have a fixed size (maximum = minimum)")
    if minimum > MAX_PAGES:
        raise Refused(f"the module's memory is {minimum} pages ({minimum // 16} MiB); "
                      f"the limit is {MAX_PAGES} pages ({MAX_PAGES // 16} MiB)")

    def bad(name, problem):
        return Refused(f"the module's export `{name}` is {problem}; see docs/ABI.md for the required exports")

    exports = m["exports"]
    if "memory" not in exports:
        raise bad("memory", "missing")
    if exports["memory"][0] != MEMORY:
        raise bad("memory", "not a memory")
    if "mesa_abi_version" not in exports:
        raise bad("mesa_abi_version", "missing")
    kind, index = exports["mesa_abi_version"]
    if kind != GLOBAL:
        raise bad("mesa_abi_version", "not a global")
    if m["globals"][index] != (I32, 0):
        raise bad("mesa_abi_version", "not an immutable i32 global")
    for name in FUNCTIONS:
        if name not in exports:
            raise bad(name, "missing")
        kind, index = exports[name]
        if kind != FUNC:
            raise bad(name, "not a function")
        if m["types"][m["funcs"][index]] != ([], [I32]):  # no imported functions
            raise bad(name, "not a function `() -> i32`")
    if len(m["custom"].get(METADATA_SECTION, [])) > 1:
        raise Refused(f"the module has {len(m['custom'][METADATA_SECTION])} `{METADATA_SECTION}` sections")


def check_metadata(in_memory, section):
    """ABI.md's check 5: the metadata, and the two copies agree."""
    if section is not None and section != in_memory:
        raise Refused(f"the module's metadata differs between the `{METADATA_SECTION}` custom section "
                      "and memory; a host must refuse such a module")
    try:
        metadata = json.loads(in_memory.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise Refused(f"the module's metadata is not valid JSON: {e}")
    if not isinstance(metadata, dict) or metadata.get("abi_version") != ABI_VERSION:
        found = metadata.get("abi_version") if isinstance(metadata, dict) else None
        raise Refused(f"the module's metadata says MESA ABI version {found}; this host speaks version {ABI_VERSION}")
    rules, features = metadata.get("rules"), metadata.get("features")
    previews = features.get("previews") if isinstance(features, dict) else None
    for field, value in (("rules", rules), ("features.previews", previews)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise Refused(f"the module's metadata field `{field}` is not a list of names")
    return metadata


# --- Running it -------------------------------------------------------------

class Policy:
    """A validated module, instantiated once; `select` per input."""

    def __init__(self, wasm):
        if wasm[:8] != b"\0asm\x01\0\0\0":
            raise Refused("not a WebAssembly module (no `\\0asm` version 1 header)")
        config = Config()
        config.consume_fuel = True
        config.cranelift_nan_canonicalization = True
        self.engine = Engine(config)
        try:
            module = Module(self.engine, wasm)  # validates the module
        except WasmtimeError as e:
            raise Refused(f"not a valid WebAssembly module: {last_line(str(e))}")
        parsed = parse_module(wasm)
        check_module(parsed)
        self.store = Store(self.engine)
        # A foreign module's start function is bounded by this fuel too.
        self.store.set_fuel(FUEL_BASE)
        instance = self.guard(lambda: Instance(self.store, module, []), FUEL_BASE)
        exports = instance.exports(self.store)
        self.memory, self.select_fn = exports["memory"], exports["select"]
        version = exports["mesa_abi_version"].value(self.store)
        if version != ABI_VERSION:
            raise Refused(f"the module speaks MESA ABI version {version}; this host speaks version {ABI_VERSION}")
        ptr, length = self.getter(exports, "metadata_ptr"), self.getter(exports, "metadata_len")
        self.check_range("metadata", ptr, length)
        section = parsed["custom"].get(METADATA_SECTION, [None])[0]
        self.metadata = check_metadata(bytes(self.memory.read(self.store, ptr, ptr + length)), section)
        self.input_ptr, self.input_cap = self.getter(exports, "input_ptr"), self.getter(exports, "input_cap")
        self.check_range("input buffer", self.input_ptr, self.input_cap)

    def guard(self, call, fuel):
        """Runs module code; a trap or running out of fuel refuses the module."""
        try:
            return call()
        except Trap as e:
            if e.trap_code == TrapCode.OUT_OF_FUEL:
                raise Refused(f"the policy ran out of fuel ({fuel} units) and was stopped")
            raise Refused(f"the policy failed: {last_line(e.message)}")
        except WasmtimeError as e:
            raise Refused(f"the policy failed: {last_line(str(e))}")

    def getter(self, exports, name):
        self.store.set_fuel(FUEL_GETTER)
        value = self.guard(lambda: exports[name](self.store), FUEL_GETTER)
        if value < 0:
            raise Refused(f"`{name}` returned {value}")
        return value

    def check_range(self, what, ptr, length):
        size = self.memory.data_len(self.store)
        if ptr + length > size:
            raise Refused(f"the module's {what} ({ptr}..{ptr + length}) lies outside its memory ({size} bytes)")

    def select(self, buffer):
        """Runs `select` on an encoded input; returns (mask bits, rule name or None)."""
        self.memory.write(self.store, buffer, self.input_ptr)
        rules = self.metadata["rules"]
        fuel = FUEL_BASE + FUEL_PER_BYTE * len(buffer) + FUEL_PER_RULE * len(rules)
        self.store.set_fuel(fuel)
        result = self.guard(lambda: self.select_fn(self.store), fuel)
        # ABI.md's check 7. The host wrote a valid input, so -1 and -2 mean
        # the module disagrees with its own metadata.
        if result < 0:
            raise Refused(f"`select` returned error code {result}")
        mask, rule = result & 0x1F, (result >> 8) - 1
        if mask == 0:
            raise Refused(f"`select` returned an empty mask (result {result})")
        if rule >= len(rules):
            raise Refused(f"`select` named rule {rule}, which does not exist (the metadata lists {len(rules)} rules)")
        return mask, rules[rule] if rule >= 0 else None


def last_line(message):
    """The cause in a wasmtime error (the last line, after the backtrace)."""
    return ([line.strip() for line in message.splitlines() if line.strip()] or ["(no message)"])[-1]


def structure_key(key):
    return LONG_NAMES.get(key.lower(), key)


def encode(metadata, line):
    """The input buffer for one query (docs/ABI.md, "Input layout")."""
    previews = {}
    for k, feats in (line.get("preview") or {}).items():
        for f, v in feats.items():
            previews[f"{structure_key(k)}.{f}"] = float(v)
    slots = metadata["features"]["previews"]
    # A trading policy reads, after the previews, what each of the 31
    # non-empty subsets shows in its unit (mask order; 0 when not given).
    unit = metadata["features"].get("shown")
    shown = [float(v) for v in (line.get("shown") or {}).get(unit) or [0.0] * 31] if unit else []
    if len(shown) not in (0, 31):
        raise ValueError(f"`shown.{unit}` has {len(shown)} counts, not 31")
    texts = [line.get("query", "")] + [line.get(k) for k in ("task", "domain", "qtype")]
    encoded = [None if t is None else t.encode("utf-8") for t in texts]
    out = bytearray()
    for t in encoded:
        out += struct.pack("<I", ABSENT if t is None else len(t))
    out += struct.pack("<II", len(slots) + len(shown), 0)
    for slot in slots:
        out += struct.pack("<d", previews.get(slot, 0.0))
    for count in shown:
        out += struct.pack("<d", count)
    for t in encoded:
        if t is not None:
            out += t
    return bytes(out)


def main():
    if len(sys.argv) != 2:
        print("usage: select.py POLICY.wasm < queries.jsonl > results.jsonl", file=sys.stderr)
        sys.exit(2)
    path = sys.argv[1]
    status = 0
    try:
        with open(path, "rb") as f:
            wasm = f.read()
    except OSError as e:
        print(f"error: cannot read {path}: {e.strerror}", file=sys.stderr)
        sys.exit(2)
    try:
        policy = Policy(wasm)
        for number, raw in enumerate(sys.stdin, 1):
            if not raw.strip():
                continue
            error = None
            try:
                line = json.loads(raw)
                buffer = encode(policy.metadata, line)
            except (ValueError, TypeError, AttributeError) as e:
                error = f"cannot read the line: {e}"
            else:
                if len(buffer) > policy.input_cap:
                    # Only the Wasm engines have this limit; the interpreter does not.
                    error = (f"input of {len(buffer)} bytes does not fit the module's {policy.input_cap}-byte "
                             "input buffer (`mesa run --engine interp` answers larger inputs)")
            if error:
                print(f"error: line {number}: {error}", file=sys.stderr)
                print(json.dumps({"line": number, "error": error}))
                status = 1
                continue
            try:
                mask, rule = policy.select(buffer)
            except Refused as e:
                raise Refused(f"line {number}: {e}")
            out = {"mask": [s for i, s in enumerate(STRUCTURES) if mask >> i & 1], "bits": mask, "rule": rule}
            if "id" in line:
                out["id"] = line["id"]
            print(json.dumps(out, ensure_ascii=False))
    except Refused as e:
        sys.stdout.flush()
        print(f"error: {path}: refused: {e}", file=sys.stderr)
        sys.exit(2)
    sys.exit(status)


if __name__ == "__main__":
    main()
