#!/usr/bin/env python3
"""Embed a compiled MESA policy from Python (the `wasmtime` package from PyPI).

Usage: select.py POLICY.wasm < queries.jsonl > results.jsonl

Reads one JSON object per line ({"id", "query", "task", "domain", "qtype",
"preview": {"R": {"tokens": 5200}}}) and writes one result per line:
{"id", "mask": ["S", "T"], "bits": 3, "rule": "name" or null}. The input
layout, the result encoding and the metadata are docs/ABI.md, version 1.
"""
import json
import struct
import sys

from wasmtime import Config, Engine, Instance, Module, Store

ABI_VERSION = 1
ABSENT = 0xFFFFFFFF
STRUCTURES = ["S", "T", "G", "V", "R"]
LONG_NAMES = {"summary": "S", "temporal": "T", "graph": "G", "vector": "V", "raw": "R"}
FUEL = 50_000_000


def leb128(data, pos):
    result, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def custom_section(wasm, wanted):
    """The payload of the custom section named `wanted`, or None."""
    if wasm[:8] != b"\0asm\x01\0\0\0":
        raise ValueError("not a WebAssembly module")
    pos = 8
    while pos < len(wasm):
        section_id = wasm[pos]
        size, pos = leb128(wasm, pos + 1)
        end = pos + size
        if section_id == 0:
            name_len, name_pos = leb128(wasm, pos)
            name = wasm[name_pos:name_pos + name_len].decode()
            if name == wanted:
                return wasm[name_pos + name_len:end]
        pos = end
    return None


def structure_key(key):
    return LONG_NAMES.get(key.lower(), key)


def encode(metadata, line):
    """The input buffer for one query (docs/ABI.md, "Input layout")."""
    previews = {}
    for k, feats in (line.get("preview") or {}).items():
        for f, v in feats.items():
            previews[f"{structure_key(k)}.{f}"] = float(v)
    slots = metadata["features"]["previews"]
    texts = [line.get("query", "")] + [line.get(k) for k in ("task", "domain", "qtype")]
    encoded = [None if t is None else t.encode("utf-8") for t in texts]
    out = bytearray()
    for t in encoded:
        out += struct.pack("<I", ABSENT if t is None else len(t))
    out += struct.pack("<II", len(slots), 0)
    for slot in slots:
        out += struct.pack("<d", previews.get(slot, 0.0))
    for t in encoded:
        if t is not None:
            out += t
    return bytes(out)


def main():
    wasm = open(sys.argv[1], "rb").read()
    metadata = json.loads(custom_section(wasm, "mesa.metadata"))
    if metadata["abi_version"] != ABI_VERSION:
        sys.exit(f"unsupported ABI version {metadata['abi_version']}")
    config = Config()
    config.consume_fuel = True
    engine = Engine(config)
    store = Store(engine)
    store.set_fuel(FUEL)
    instance = Instance(store, Module(engine, wasm), [])
    exports = instance.exports(store)
    if exports["mesa_abi_version"].value(store) != ABI_VERSION:
        sys.exit("the module's ABI version global disagrees with its metadata")
    memory = exports["memory"]
    input_ptr = exports["input_ptr"](store)
    input_cap = exports["input_cap"](store)
    select = exports["select"]
    status = 0
    for number, raw in enumerate(sys.stdin, 1):
        if not raw.strip():
            continue
        line = json.loads(raw)
        buffer = encode(metadata, line)
        if len(buffer) > input_cap:
            print(json.dumps({"line": number, "error": "input too large"}))
            status = 1
            continue
        memory.write(store, buffer, input_ptr)
        store.set_fuel(FUEL)
        result = select(store)
        if result < 0:
            print(json.dumps({"line": number, "error": f"select returned {result}"}))
            status = 1
            continue
        mask = result & 0x1F
        rule = (result >> 8) - 1
        out = {
            "mask": [s for i, s in enumerate(STRUCTURES) if mask >> i & 1],
            "bits": mask,
            "rule": metadata["rules"][rule] if rule >= 0 else None,
        }
        if "id" in line:
            out["id"] = line["id"]
        print(json.dumps(out, ensure_ascii=False))
    sys.exit(status)


if __name__ == "__main__":
    main()
