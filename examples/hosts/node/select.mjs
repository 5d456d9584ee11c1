#!/usr/bin/env node
// Embed a compiled MESA policy from Node.js (built-in WebAssembly and
// worker_threads only; no npm packages).
//
// Usage: node select.mjs POLICY.wasm < queries.jsonl > results.jsonl
//
// Reads one JSON object per line ({"id", "query", "task", "domain", "qtype",
// "preview": {"R": {"tokens": 5200}}}) and writes one result per line:
// {"id", "mask": ["S", "T"], "bits": 3, "rule": "name" or null}. The layout
// is docs/ABI.md, version 1.
//
// The module may come from anywhere, so this host does every check of
// ABI.md's "What a host must validate" before trusting it. Node has no fuel,
// so the module runs in a worker thread and every call into it has a
// wall-clock limit; a call that overruns it is stopped by terminating the
// worker. Exit status: 0 all lines answered; 1 some lines could not be
// answered (their result lines carry an "error", as with `mesa run`); 2 the
// module was refused (message on stderr).
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

const ABI_VERSION = 1;
const ABSENT = 0xffffffff;
const STRUCTURES = ["S", "T", "G", "V", "R"];
const LONG_NAMES = { summary: "S", temporal: "T", graph: "G", vector: "V", raw: "R" };
const FUNCTIONS = ["input_ptr", "input_cap", "select", "trace_ptr", "trace_len", "metadata_ptr", "metadata_len"];
const GETTERS = ["metadata_ptr", "metadata_len", "input_ptr", "input_cap"]; // called once, at the start
const METADATA_SECTION = "mesa.metadata";
const MAX_PAGES = 256; // 16 MiB, the reference host's limit
// Wall-clock limit of one call into the module (instantiation included). A
// compiled policy answers a full 128 KiB input in well under a millisecond.
// MESA_TIMEOUT_MS overrides it.
const TIMEOUT_MS = Number(process.env.MESA_TIMEOUT_MS) > 0 ? Number(process.env.MESA_TIMEOUT_MS) : 2000;
const [I32, FUNC, MEMORY, GLOBAL] = [0x7f, 0, 2, 3];

class Refused extends Error {} // the module breaks the ABI; the host stops

// --- The module binary -------------------------------------------------------
// The JS API gives imports' and exports' names and kinds and custom sections,
// but not function or global types, nor memory limits, so the host reads the
// section headers itself (only after WebAssembly.Module has validated the
// module). The Python host has the same parser.

class Reader {
  constructor(data, pos, end) {
    Object.assign(this, { data, pos, end });
  }
  byte() {
    return this.data[this.pos++];
  }
  uleb() {
    let result = 0;
    for (let scale = 1; ; scale *= 128) {
      const b = this.byte();
      result += (b & 0x7f) * scale; // not bit shifts: 64-bit limits exceed 32 bits
      if (b < 0x80) return result;
    }
  }
  name() {
    const n = this.uleb();
    this.pos += n;
    return new TextDecoder().decode(this.data.subarray(this.pos - n, this.pos));
  }
  valtype() {
    const t = this.byte();
    if (t === 0x63 || t === 0x64) this.uleb(); // (ref null? heaptype)
    return t;
  }
  constExpr() {
    // Skips a constant expression (a global's initializer).
    for (let op = this.byte(); op !== 0x0b; op = this.byte()) {
      if ([0x41, 0x42, 0x23, 0xd2, 0xd0].includes(op)) this.uleb(); // i32/i64.const, global.get, ref.func, ref.null
      else if (op === 0x43 || op === 0x44) this.pos += op === 0x43 ? 4 : 8; // f32/f64.const
      else if (![0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e].includes(op)) {
        // extended-const arithmetic is allowed above; anything else is not read
        throw new Refused(`a global's initializer uses opcode 0x${op.toString(16)}, which this host does not read`);
      }
    }
  }
}

// The sections ABI.md's checks need: types, imports, functions, memories,
// globals, exports and custom sections.
function parseModule(wasm) {
  const m = { types: [], imports: [], funcs: [], memories: [], globals: [], exports: new Map(), custom: new Map() };
  const r = new Reader(wasm, 8, wasm.length);
  while (r.pos < r.end) {
    const id = r.byte();
    const size = r.uleb();
    const s = new Reader(wasm, r.pos, r.pos + size);
    r.pos += size;
    if (id === 0) {
      const name = s.name();
      m.custom.set(name, [...(m.custom.get(name) ?? []), wasm.subarray(s.pos, s.end)]);
      continue;
    }
    if (![1, 2, 3, 5, 6, 7].includes(id)) continue;
    for (let i = 0, n = s.uleb(); i < n; i++) {
      if (id === 1) {
        const form = s.byte();
        if (form !== 0x60) {
          throw new Refused(`the module's type section uses form 0x${form.toString(16)}, which this host does not read`);
        }
        const params = Array.from({ length: s.uleb() }, () => s.valtype());
        const results = Array.from({ length: s.uleb() }, () => s.valtype());
        m.types.push({ params, results });
      } else if (id === 2) {
        m.imports.push(`\`${s.name()}::${s.name()}\``);
        break; // one is enough to refuse; the rest need not be decoded
      } else if (id === 3) {
        m.funcs.push(s.uleb());
      } else if (id === 5) {
        const flags = s.byte();
        const minimum = s.uleb();
        m.memories.push({ flags, minimum, maximum: flags & 1 ? s.uleb() : null });
        if (flags & ~1) break; // 64-bit, shared or custom page size: refused below
      } else if (id === 6) {
        m.globals.push({ type: s.valtype(), mutable: s.byte() });
        s.constExpr();
      } else if (id === 7) {
        const name = s.name();
        m.exports.set(name, { kind: s.byte(), index: s.uleb() });
      }
    }
  }
  return m;
}

// ABI.md's static checks 2-4 (WebAssembly.Module did 1).
function checkModule(m) {
  if (m.imports.length) {
    throw new Refused(`the module imports ${m.imports[0]}; a MESA policy module must have no imports`);
  }
  if (m.memories.length !== 1) {
    throw new Refused(`the module defines ${m.memories.length} memories; a MESA policy module has exactly one`);
  }
  const { flags, minimum, maximum } = m.memories[0];
  if (flags & ~1) throw new Refused("the module's memory is 64-bit or shared; it must be a plain 32-bit memory");
  if (maximum !== minimum) {
    throw new Refused(
      `the module's memory is growable (${minimum} pages, maximum ${maximum ?? "none"}); ` +
        "it must have a fixed size (maximum = minimum)",
    );
  }
  if (minimum > MAX_PAGES) {
    throw new Refused(
      `the module's memory is ${minimum} pages (${Math.floor(minimum / 16)} MiB); ` +
        `the limit is ${MAX_PAGES} pages (${MAX_PAGES / 16} MiB)`,
    );
  }
  const bad = (name, problem) =>
    new Refused(`the module's export \`${name}\` is ${problem}; see docs/ABI.md for the required exports`);
  const need = (name, kind, what) => {
    const e = m.exports.get(name);
    if (!e) throw bad(name, "missing");
    if (e.kind !== kind) throw bad(name, `not ${what}`);
    return e.index;
  };
  need("memory", MEMORY, "a memory");
  const g = m.globals[need("mesa_abi_version", GLOBAL, "a global")];
  if (g.type !== I32 || g.mutable) throw bad("mesa_abi_version", "not an immutable i32 global");
  for (const name of FUNCTIONS) {
    const t = m.types[m.funcs[need(name, FUNC, "a function")]]; // no imported functions
    if (t.params.length || t.results.length !== 1 || t.results[0] !== I32) {
      throw bad(name, "not a function `() -> i32`");
    }
  }
  const sections = m.custom.get(METADATA_SECTION) ?? [];
  if (sections.length > 1) throw new Refused(`the module has ${sections.length} \`${METADATA_SECTION}\` sections`);
}

// ABI.md's check 5: the metadata, and the two copies agree.
function checkMetadata(inMemory, section) {
  if (section && Buffer.compare(Buffer.from(section), Buffer.from(inMemory)) !== 0) {
    throw new Refused(
      `the module's metadata differs between the \`${METADATA_SECTION}\` custom section ` +
        "and memory; a host must refuse such a module",
    );
  }
  let metadata;
  try {
    metadata = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(inMemory));
  } catch (e) {
    throw new Refused(`the module's metadata is not valid JSON: ${e.message}`);
  }
  if (metadata?.abi_version !== ABI_VERSION) {
    throw new Refused(
      `the module's metadata says MESA ABI version ${metadata?.abi_version ?? "None"}; ` +
        `this host speaks version ${ABI_VERSION}`,
    );
  }
  const names = (v) => Array.isArray(v) && v.every((x) => typeof x === "string");
  if (!names(metadata.rules)) throw new Refused("the module's metadata field `rules` is not a list of names");
  if (!names(metadata.features?.previews)) {
    throw new Refused("the module's metadata field `features.previews` is not a list of names");
  }
  return metadata;
}

// --- Running it --------------------------------------------------------------

// The worker: owns the instance and runs every call into the module.
function workerMain() {
  let ex;
  const ops = {
    init() {
      ex = new WebAssembly.Instance(workerData.module, {}).exports; // runs a start function, if any
      const version = ex.mesa_abi_version.value;
      const getters = Object.fromEntries(GETTERS.map((name) => [name, ex[name]()]));
      return { version, memorySize: ex.memory.buffer.byteLength, getters };
    },
    read: ({ ptr, len }) => new Uint8Array(ex.memory.buffer).slice(ptr, ptr + len),
    select({ ptr, buf }) {
      new Uint8Array(ex.memory.buffer).set(buf, ptr);
      return ex.select();
    },
  };
  parentPort.on("message", (msg) => {
    try {
      parentPort.postMessage({ ok: ops[msg.op](msg) });
    } catch (e) {
      parentPort.postMessage({ trap: String(e?.message ?? e) });
    }
  });
}

// The main thread's handle on a validated module running in a worker.
class Policy {
  async start(module) {
    this.worker = new Worker(new URL(import.meta.url), { workerData: { module } });
    this.worker.unref(); // never keeps the process alive
    this.worker.on("message", (m) => this.pending?.settle(m));
    this.worker.on("error", (e) => this.pending?.settle({ trap: e.message }));
    this.worker.on("exit", (code) => this.pending?.settle({ trap: `the worker exited (${code})` }));
    const { version, memorySize, getters: g } = await this.call({ op: "init" });
    if (version !== ABI_VERSION) {
      throw new Refused(`the module speaks MESA ABI version ${version}; this host speaks version ${ABI_VERSION}`);
    }
    for (const [name, value] of Object.entries(g)) {
      if (value < 0) throw new Refused(`\`${name}\` returned ${value}`);
    }
    this.memorySize = memorySize;
    this.checkRange("metadata", g.metadata_ptr, g.metadata_len);
    this.checkRange("input buffer", g.input_ptr, g.input_cap);
    this.inputPtr = g.input_ptr;
    this.inputCap = g.input_cap;
    return this.call({ op: "read", ptr: g.metadata_ptr, len: g.metadata_len });
  }

  checkRange(what, ptr, len) {
    if (ptr + len > this.memorySize) {
      throw new Refused(`the module's ${what} (${ptr}..${ptr + len}) lies outside its memory (${this.memorySize} bytes)`);
    }
  }

  // One call into the module, bounded by TIMEOUT_MS.
  call(msg) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = null;
        this.worker.terminate();
        reject(new Refused(`the policy ran longer than ${TIMEOUT_MS} ms and was stopped`));
      }, TIMEOUT_MS);
      this.pending = {
        settle: (m) => {
          clearTimeout(timer);
          this.pending = null;
          if ("ok" in m) resolve(m.ok);
          else reject(new Refused(`the policy failed: ${m.trap}`));
        },
      };
      this.worker.postMessage(msg);
    });
  }

  // Runs `select` on an encoded input; returns [mask bits, rule name or null].
  async select(buf) {
    const result = await this.call({ op: "select", ptr: this.inputPtr, buf });
    // ABI.md's check 7. The host wrote a valid input, so -1 and -2 mean the
    // module disagrees with its own metadata.
    if (result < 0) throw new Refused(`\`select\` returned error code ${result}`);
    const mask = result & 0x1f;
    const rule = (result >>> 8) - 1;
    const rules = this.metadata.rules;
    if (mask === 0) throw new Refused(`\`select\` returned an empty mask (result ${result})`);
    if (rule >= rules.length) {
      throw new Refused(`\`select\` named rule ${rule}, which does not exist (the metadata lists ${rules.length} rules)`);
    }
    return [mask, rule >= 0 ? rules[rule] : null];
  }
}

const encoder = new TextEncoder();

// The input buffer for one query (docs/ABI.md, "Input layout").
function encode(metadata, line) {
  const previews = new Map();
  for (const [k, feats] of Object.entries(line.preview ?? {})) {
    const key = LONG_NAMES[k.toLowerCase()] ?? k;
    for (const [f, v] of Object.entries(feats)) previews.set(`${key}.${f}`, Number(v));
  }
  // A trading policy reads, after the previews, what each of the 31
  // non-empty subsets shows in its unit (mask order; 0 when not given).
  const unit = metadata.features.shown;
  const shown = unit ? (line.shown?.[unit] ?? new Array(31).fill(0)).map(Number) : [];
  if (shown.length !== 0 && shown.length !== 31) {
    throw new TypeError(`\`shown.${unit}\` has ${shown.length} counts, not 31`);
  }
  const values = metadata.features.previews.map((slot) => previews.get(slot) ?? 0).concat(shown);
  const texts = [line.query ?? "", line.task, line.domain, line.qtype].map((t) =>
    t === undefined || t === null ? null : encoder.encode(t),
  );
  const size = 24 + 8 * values.length + texts.reduce((n, t) => n + (t ? t.length : 0), 0);
  const buf = new Uint8Array(size);
  const view = new DataView(buf.buffer);
  texts.forEach((t, i) => view.setUint32(4 * i, t ? t.length : ABSENT, true));
  view.setUint32(16, values.length, true);
  view.setUint32(20, 0, true);
  values.forEach((v, i) => view.setFloat64(24 + 8 * i, v, true));
  let at = 24 + 8 * values.length;
  for (const t of texts) {
    if (t) {
      buf.set(t, at);
      at += t.length;
    }
  }
  return buf;
}

async function main() {
  if (process.argv.length !== 3) {
    process.stderr.write("usage: node select.mjs POLICY.wasm < queries.jsonl > results.jsonl\n");
    return 2;
  }
  const path = process.argv[2];
  const policy = new Policy();
  let status = 0;
  let number = 0;
  let wasm;
  try {
    wasm = readFileSync(path);
  } catch (e) {
    process.stderr.write(`error: cannot read ${path}: ${e.message}\n`);
    return 2;
  }
  try {
    if (Buffer.compare(wasm.subarray(0, 8), Buffer.from("\0asm\x01\0\0\0", "latin1")) !== 0) {
      throw new Refused("not a WebAssembly module (no `\\0asm` version 1 header)");
    }
    let module;
    try {
      module = new WebAssembly.Module(wasm); // validates the module
    } catch (e) {
      throw new Refused(`not a valid WebAssembly module: ${e.message}`);
    }
    const parsed = parseModule(wasm);
    checkModule(parsed);
    const inMemory = await policy.start(module);
    policy.metadata = checkMetadata(inMemory, parsed.custom.get(METADATA_SECTION)?.[0]);
    for await (const raw of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
      number += 1;
      if (!raw.trim()) continue;
      let line, buf, error;
      try {
        line = JSON.parse(raw);
        buf = encode(policy.metadata, line);
      } catch (e) {
        error = `cannot read the line: ${e.message}`;
      }
      if (buf && buf.length > policy.inputCap) {
        // Only the Wasm engines have this limit; the interpreter does not.
        error =
          `input of ${buf.length} bytes does not fit the module's ${policy.inputCap}-byte ` +
          "input buffer (`mesa run --engine interp` answers larger inputs)";
      }
      if (error) {
        process.stderr.write(`error: line ${number}: ${error}\n`);
        process.stdout.write(JSON.stringify({ line: number, error }) + "\n");
        status = 1;
        continue;
      }
      let mask, rule;
      try {
        [mask, rule] = await policy.select(buf);
      } catch (e) {
        if (e instanceof Refused) e.message = `line ${number}: ${e.message}`;
        throw e;
      }
      const res = { mask: STRUCTURES.filter((_, i) => (mask >> i) & 1), bits: mask, rule };
      if ("id" in line) res.id = line.id;
      process.stdout.write(JSON.stringify(res) + "\n");
    }
  } catch (e) {
    if (!(e instanceof Refused)) throw e;
    process.stderr.write(`error: ${path}: refused: ${e.message}\n`);
    status = 2;
  } finally {
    policy.worker?.terminate();
  }
  return status;
}

if (isMainThread) {
  process.exitCode = await main();
} else {
  workerMain();
}
