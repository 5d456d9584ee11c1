#!/usr/bin/env node
// Embed a compiled MESA policy from Node.js (built-in WebAssembly only).
//
// Usage: node select.mjs POLICY.wasm < queries.jsonl > results.jsonl
//
// Reads one JSON object per line ({"id", "query", "task", "domain", "qtype",
// "preview": {"R": {"tokens": 5200}}}) and writes one result per line:
// {"id", "mask": ["S", "T"], "bits": 3, "rule": "name" or null}. The layout
// is docs/ABI.md, version 1.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const ABI_VERSION = 1;
const ABSENT = 0xffffffff;
const STRUCTURES = ["S", "T", "G", "V", "R"];
const LONG_NAMES = { summary: "S", temporal: "T", graph: "G", vector: "V", raw: "R" };

const wasm = readFileSync(process.argv[2]);
const module = new WebAssembly.Module(wasm);
if (WebAssembly.Module.imports(module).length > 0) {
  throw new Error("a MESA policy module must have no imports");
}
const [section] = WebAssembly.Module.customSections(module, "mesa.metadata");
const metadata = JSON.parse(new TextDecoder().decode(section));
if (metadata.abi_version !== ABI_VERSION) {
  throw new Error(`unsupported ABI version ${metadata.abi_version}`);
}
const instance = new WebAssembly.Instance(module, {});
const ex = instance.exports;
if (ex.mesa_abi_version.value !== ABI_VERSION) {
  throw new Error("the module's ABI version global disagrees with its metadata");
}
const inputPtr = ex.input_ptr();
const inputCap = ex.input_cap();
const encoder = new TextEncoder();

function encode(line) {
  const previews = new Map();
  for (const [k, feats] of Object.entries(line.preview ?? {})) {
    const key = LONG_NAMES[k.toLowerCase()] ?? k;
    for (const [f, v] of Object.entries(feats)) previews.set(`${key}.${f}`, Number(v));
  }
  const slots = metadata.features.previews;
  const texts = [line.query ?? "", line.task, line.domain, line.qtype].map((t) =>
    t === undefined || t === null ? null : encoder.encode(t),
  );
  const size = 24 + 8 * slots.length + texts.reduce((n, t) => n + (t ? t.length : 0), 0);
  const buf = new Uint8Array(size);
  const view = new DataView(buf.buffer);
  texts.forEach((t, i) => view.setUint32(4 * i, t ? t.length : ABSENT, true));
  view.setUint32(16, slots.length, true);
  view.setUint32(20, 0, true);
  slots.forEach((slot, i) => view.setFloat64(24 + 8 * i, previews.get(slot) ?? 0, true));
  let at = 24 + 8 * slots.length;
  for (const t of texts) {
    if (t) {
      buf.set(t, at);
      at += t.length;
    }
  }
  return buf;
}

let status = 0;
let number = 0;
const out = [];
for await (const raw of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  number += 1;
  if (!raw.trim()) continue;
  const line = JSON.parse(raw);
  const buf = encode(line);
  if (buf.length > inputCap) {
    out.push(JSON.stringify({ line: number, error: "input too large" }));
    status = 1;
    continue;
  }
  new Uint8Array(ex.memory.buffer, inputPtr, buf.length).set(buf);
  const result = ex.select();
  if (result < 0) {
    out.push(JSON.stringify({ line: number, error: `select returned ${result}` }));
    status = 1;
    continue;
  }
  const mask = result & 0x1f;
  const rule = (result >>> 8) - 1;
  const res = {
    mask: STRUCTURES.filter((_, i) => (mask >> i) & 1),
    bits: mask,
    rule: rule >= 0 ? metadata.rules[rule] : null,
  };
  if ("id" in line) res.id = line.id;
  out.push(JSON.stringify(res));
}
process.stdout.write(out.length ? out.join("\n") + "\n" : "");
process.exitCode = status;
