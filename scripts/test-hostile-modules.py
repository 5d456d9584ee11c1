#!/usr/bin/env python3
"""The example hosts refuse hostile modules (docs/ABI.md, "What a host must validate").

Usage: test-hostile-modules.py MESA OUTDIR   (run with target/hosts-venv/bin/python)

Compiles examples/quickstart.mesa with MESA to take a real module's metadata,
writes a valid-looking skeleton module in the text format with the ABI's
exports and that metadata (in memory and in the `mesa.metadata` custom
section), and derives one hostile variant per defect. Each is assembled with
`wasmtime.wat2wasm` into OUTDIR (no binaries are committed) and given to both
hosts, examples/hosts/python/select.py and examples/hosts/node/select.mjs;
each host must refuse it with exit status 2, the expected message on stderr
and no result on stdout. The unmodified skeleton must be accepted, so that
every refusal is due to its one defect. Exits 1 if any expectation fails.
"""
import json
import os
import subprocess
import sys
import time

from wasmtime import wat2wasm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON_HOST = os.path.join(ROOT, "examples/hosts/python/select.py")
NODE_HOST = os.path.join(ROOT, "examples/hosts/node/select.mjs")
FUNCTIONS = ["input_ptr", "input_cap", "select", "trace_ptr", "trace_len", "metadata_ptr", "metadata_len"]
PAGES, INPUT_PTR, INPUT_CAP, TRACE_PTR, META_PTR = 3, 65536, 131072, 2048, 4096  # 3 pages = input end
# Trace records (24 bytes each): start with default {S, V}; rule 0 fired, {S, V} -> {S, V}.
TRACE = bytes([1, 0b01001]) + bytes(22) + bytes([2, 1, 0b01001, 0b01001]) + bytes(20)
LOOP_BOUND_S = 10  # a looping module must be stopped well within this
QUERIES = '{"id": 1, "query": "Why did it fail at step 3?", "preview": {"R": {"tokens": 10}}}\n{"id": 2, "query": "hello"}\n'


def uleb(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def custom_section(name, payload):
    body = uleb(len(name)) + name.encode() + payload
    return b"\0" + uleb(len(body)) + body


def read_custom_section(wasm, wanted):
    pos = 8
    while pos < len(wasm):
        section_id, pos = wasm[pos], pos + 1
        size = shift = 0
        while True:
            b, pos = wasm[pos], pos + 1
            size |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        if section_id == 0:
            name_len, name_at = wasm[pos], pos + 1  # names here are short
            if wasm[name_at:name_at + name_len] == wanted.encode():
                return wasm[name_at + name_len:pos + size]
        pos += size
    raise SystemExit(f"no `{wanted}` section in the compiled module")


def wat_string(data):
    return '"' + "".join(f"\\{b:02x}" for b in data) + '"'


def skeleton(meta, *, select=None, memory=f"{PAGES} {PAGES}", global_="i32 (i32.const 1)",
             drop=(), types=None, meta_ptr=META_PTR, extra=""):
    """A module with the ABI's exports; `select` returns mask {S, V} decided by rule 0,
    and the trace (when the input's flag asks for it) says so."""
    bodies = {
        "input_ptr": f"(i32.const {INPUT_PTR})",
        "input_cap": f"(i32.const {INPUT_CAP})",
        "select": select or f"(i32.const {(1 << 8) | 0b01001})",
        "trace_ptr": f"(i32.const {TRACE_PTR})",
        "trace_len": f"(select (i32.const 2) (i32.const 0) (i32.and (i32.load (i32.const {INPUT_PTR + 20})) (i32.const 1)))",
        "metadata_ptr": f"(i32.const {meta_ptr})",
        "metadata_len": f"(i32.const {len(meta)})",
    }
    funcs = "\n".join(
        f'  (func (export "{name}") {(types or {}).get(name, "(result i32)")} {body})'
        for name, body in bodies.items() if name not in drop
    )
    return f"""(module
  {extra}
  (memory (export "memory") {memory})
  (global (export "mesa_abi_version") {global_})
{funcs}
  (data (i32.const {TRACE_PTR}) {wat_string(TRACE)})
  (data (i32.const {META_PTR}) {wat_string(meta)})
)"""


def cases(meta):
    """(name, wat, custom-section payloads, python message, node message); None = accepted."""
    m = json.loads(meta)
    rules = m["rules"]
    renamed = json.dumps({**m, "rules": ["renamed"] + rules[1:]}, separators=(",", ":")).encode()
    version2 = json.dumps({**m, "abi_version": 2}, separators=(",", ":")).encode()
    loop = "(loop $l (br $l)) (unreachable)"
    both = lambda text: (text, text)
    yield "control", skeleton(meta), [meta], None, None
    yield "control-without-section", skeleton(meta), [], None, None
    yield ("select-loops", skeleton(meta, select=loop), [meta],
           "the policy ran out of fuel", "the policy ran longer than")
    yield ("start-loops", skeleton(meta, extra=f"(func $spin {loop}) (start $spin)"), [meta],
           "the policy ran out of fuel", "the policy ran longer than")
    yield ("memory-growable", skeleton(meta, memory=f"{PAGES} {PAGES + 1}"), [meta],
           *both(f"memory is growable ({PAGES} pages, maximum {PAGES + 1})"))
    yield ("memory-no-maximum", skeleton(meta, memory=f"{PAGES}"), [meta],
           *both(f"memory is growable ({PAGES} pages, maximum none)"))
    yield ("memory-4gib", skeleton(meta, memory="65536 65536"), [meta],
           *both("memory is 65536 pages (4096 MiB); the limit is 256 pages"))
    yield ("memory-shared", skeleton(meta, memory=f"{PAGES} {PAGES} shared"), [meta],
           *both("memory is 64-bit or shared"))
    # Node 20 does not implement multi-memory: its engine refuses the module.
    yield ("two-memories", skeleton(meta, extra="(memory 1 1)"), [meta],
           "defines 2 memories", "not a valid WebAssembly module")
    yield ("empty-mask", skeleton(meta, select=f"(i32.const {1 << 8})"), [meta],
           *both("`select` returned an empty mask"))
    yield ("rule-out-of-range", skeleton(meta, select=f"(i32.const {((len(rules) + 1) << 8) | 1})"), [meta],
           *both(f"`select` named rule {len(rules)}, which does not exist"))
    yield ("negative-result", skeleton(meta, select="(i32.const -2)"), [meta],
           *both("`select` returned error code -2"))
    yield ("select-traps", skeleton(meta, select="(unreachable)"), [meta],
           *both("the policy failed"))
    yield ("metadata-differs", skeleton(meta), [renamed],
           *both("metadata differs between the `mesa.metadata` custom section and memory"))
    yield ("two-metadata-sections", skeleton(meta), [meta, meta],
           *both("has 2 `mesa.metadata` sections"))
    yield ("metadata-not-json", skeleton(b"{not json"), [b"{not json"],
           *both("metadata is not valid JSON"))
    yield ("metadata-abi-version-2", skeleton(version2), [version2],
           *both("metadata says MESA ABI version 2"))
    yield ("metadata-outside-memory", skeleton(meta, meta_ptr=PAGES * 65536 - 8), [meta],
           *both("lies outside its memory"))
    yield ("missing-export", skeleton(meta, drop=["select"]), [meta],
           *both("export `select` is missing"))
    yield ("export-wrong-type", skeleton(meta, types={"select": "(param i32) (result i32)"}), [meta],
           *both("export `select` is not a function `() -> i32`"))
    yield ("global-mutable", skeleton(meta, global_="(mut i32) (i32.const 1)"), [meta],
           *both("export `mesa_abi_version` is not an immutable i32 global"))
    yield ("global-abi-version-2", skeleton(meta, global_="i32 (i32.const 2)"), [meta],
           *both("the module speaks MESA ABI version 2"))
    yield ("has-import", skeleton(meta, extra='(import "env" "clock" (func (result i32)))'), [meta],
           *both("the module imports `env::clock`; a MESA policy module must have no imports"))


def run(host, module, stdin):
    cmd = [sys.executable, PYTHON_HOST] if host == "python" else ["node", NODE_HOST]
    start = time.monotonic()
    try:
        p = subprocess.run(cmd + [module], input=stdin, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "", "(no answer within 60 s)", 60.0
    return p.returncode, p.stdout, p.stderr, time.monotonic() - start


def expect_accepted(host, path, rules, failures):
    code, out, err, _ = run(host, path, QUERIES)
    want = [{"mask": ["S", "V"], "bits": 9, "rule": rules[0], "id": i} for i in (1, 2)]
    got = [json.loads(line) for line in out.splitlines() if line.strip()] if code == 0 else None
    if got != want:
        failures.append(f"{host}: expected {want}, exit 0; got exit {code}, stdout {out!r}, stderr {err!r}")
        return f"{host} did not accept it"
    return f"{host} accepted"


def main():
    mesa, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    compiled = os.path.join(out_dir, "quickstart.wasm")
    subprocess.run([mesa, "compile", os.path.join(ROOT, "examples/quickstart.mesa"), "-o", compiled],
                   check=True, stderr=subprocess.DEVNULL)
    with open(compiled, "rb") as f:
        meta = bytes(read_custom_section(f.read(), "mesa.metadata"))
    rules = json.loads(meta)["rules"]
    failed = 0
    for name, wat, sections, py_msg, node_msg in cases(meta):
        path = os.path.join(out_dir, f"{name}.wasm")
        with open(path, "wb") as f:
            f.write(wat2wasm(wat) + b"".join(custom_section("mesa.metadata", s) for s in sections))
        failures, notes = [], []
        for host, msg in (("python", py_msg), ("node", node_msg)):
            if msg is None:
                notes.append(expect_accepted(host, path, rules, failures))
                continue
            code, out, err, seconds = run(host, path, QUERIES)
            if code != 2 or msg not in err or out.strip():
                failures.append(f"{host}: expected exit 2, stderr containing {msg!r} and no stdout; "
                                f"got exit {code}, stdout {out!r}, stderr {err.strip()!r}")
            elif "loops" in name and seconds > LOOP_BOUND_S:
                failures.append(f"{host}: stopped the loop only after {seconds:.1f} s (bound {LOOP_BOUND_S} s)")
            else:
                notes.append(f"{host} refused in {seconds:.1f} s")
        print(f"{'ok' if not failures else 'FAIL'}: hostile module {name}: {', '.join(notes)}")
        for failure in failures:
            print(f"    {failure}")
        failed += bool(failures)

    # An input larger than the Wasm input buffer: an error for that line
    # (exit 1), and the next line is still answered.
    big = json.dumps({"id": 1, "query": "x" * (INPUT_CAP + 1)}) + '\n{"id": 2, "query": "hello"}\n'
    for host in ("python", "node"):
        code, out, err, _ = run(host, compiled, big)
        lines = [json.loads(line) for line in out.splitlines() if line.strip()]
        ok = (code == 1 and len(lines) == 2 and "does not fit the module's 131072-byte input buffer" in err
              and "error" in lines[0] and lines[1].get("id") == 2 and "bits" in lines[1])
        print(f"{'ok' if ok else 'FAIL'}: {host} answers an input over the buffer with an error line")
        if not ok:
            print(f"    got exit {code}, stdout {out[:300]!r}, stderr {err[:300]!r}")
        failed += not ok
    print(f"hostile modules: {'all refused as expected' if not failed else f'{failed} failure(s)'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
