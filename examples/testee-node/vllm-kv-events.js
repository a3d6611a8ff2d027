// vLLM 0.34.0's KV-cache events (vllm/distributed/kv_events.py) read and written the
// way a JavaScript router would: @msgpack/msgpack decodes a frame into JavaScript
// values, and a hand-written validator checks them against vLLM's classes. It
// answers the engine-neutral operations of conformance/PROTOCOL.md §9 for one
// message type, KVEventBatch:
//
//   decode_value: the frame, decoded and validated, as the neutral value (the batch
//                 and each event a map of its wire field names, the event's "type" first);
//   encode_value: the value (shaped as vLLM's classes take it: the batch an array
//                 [ts, events, data_parallel_rank], each event a map with its "type"),
//                 validated, written as vLLM writes it (defaulted None fields left out).
//
// Integers: useBigInt64 decodes a msgpack int64/uint64 (what 2**64-1 hashes use) as a
// BigInt and smaller ones as a Number, so both are accepted where vLLM has an int.
// A float64 decodes to a JavaScript number too: 16.0 and 16 are the same value here,
// which is what known-failures-vllm-kv-events.txt records.
import { decode, encode } from "@msgpack/msgpack";

export const KV_EVENT_BATCH = "KVEventBatch";

export class Failure extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

// A number the answer must write as float64 even when it is integral (ts).
export class Float64 {
  constructor(value) {
    this.value = value;
  }
}

const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);

function isInt(x) {
  return (typeof x === "number" && Number.isInteger(x)) || typeof x === "bigint";
}

function check(ok, kind, message) {
  if (!ok) {
    throw new Failure(kind, message);
  }
}

// Field kinds, as vLLM declares them: [name, check, required]. `int` is msgspec's int (-2**63 .. 2**64-1).
const int = (x) => isInt(x) && BigInt(x) >= I64_MIN && BigInt(x) <= U64_MAX;
const str = (x) => typeof x === "string";
const hash = (x) => x instanceof Uint8Array || int(x);
const nullable = (f) => (x) => x === null || f(x);
const listOf = (f) => (x) => Array.isArray(x) && x.every(f);

const EVENTS = {
  BlockStored: [
    ["block_hashes", listOf(hash), true],
    ["parent_block_hash", nullable(hash), true],
    ["token_ids", listOf(int), true],
    ["block_size", int, true],
    ["lora_id", nullable(int), true],
    ["medium", nullable(str), true],
    ["lora_name", nullable(str), true],
    ["extra_keys", nullable(listOf(nullable(Array.isArray))), false],
    ["group_idx", nullable(int), false],
    ["kv_cache_spec_kind", nullable(str), false],
    ["kv_cache_spec_sliding_window", nullable(int), false],
    ["locality", nullable(str), false],
    ["ownership", nullable(str), false],
    ["session_id", nullable(str), false],
    ["lookahead_token_ids", nullable(listOf(listOf(int))), false],
  ],
  BlockRemoved: [
    ["block_hashes", listOf(hash), true],
    ["medium", nullable(str), true],
    ["group_idx", nullable(int), false],
    ["locality", nullable(str), false],
    ["ownership", nullable(str), false],
  ],
  AllBlocksCleared: [],
};

// The event as a map with its tag first and every field (defaults filled); `kind` is the error kind for bad input.
function event(value, where, kind) {
  check(value !== null && typeof value === "object" && !Array.isArray(value) && !(value instanceof Uint8Array), kind, `expected an event map at ${where}`);
  const fields = EVENTS[value.type];
  check(fields !== undefined, kind, `unknown event type ${JSON.stringify(String(value.type)).slice(0, 60)} at ${where}.type`);
  const out = { type: value.type };
  for (const [name, valid, required] of fields) {
    if (!(name in value)) {
      check(!required, kind, `missing required field ${name} at ${where}`);
      out[name] = null;
      continue;
    }
    check(valid(value[name]), kind, `invalid ${name} at ${where}.${name}`);
    out[name] = value[name];
  }
  return out;
}

// The batch [ts, events, data_parallel_rank?, ...]: extra trailing items are ignored, as msgspec does for array_like structs.
function batch(value, kind) {
  check(Array.isArray(value) && value.length >= 2, kind, "expected the batch as an array [ts, events, data_parallel_rank]");
  const [ts, events, rank = null] = value;
  check(typeof ts === "number" || typeof ts === "bigint", kind, "invalid ts at $[0]");
  check(Array.isArray(events), kind, "expected an array of events at $[1]");
  check(rank === null || int(rank), kind, "invalid data_parallel_rank at $[2]");
  return { ts: Number(ts), events: events.map((e, i) => event(e, `$[1][${i}]`, kind)), data_parallel_rank: rank };
}

function neutral(b) {
  return { ts: new Float64(b.ts), events: b.events, data_parallel_rank: b.data_parallel_rank };
}

export function decodeValue(frames) {
  check(frames.length >= 1, "decode_error", "no frame to decode");
  let value;
  try {
    value = decode(frames[0], { useBigInt64: true });
  } catch (err) {
    throw new Failure("decode_error", `not one msgpack value: ${err.message}`);
  }
  return { value: neutral(batch(value, "decode_error")) };
}

export function encodeValue(value) {
  const b = batch(value, "invalid");
  const events = b.events.map((e) => {
    const fields = EVENTS[e.type];
    const out = { type: e.type };
    for (const [name, , required] of fields) {
      if (required || e[name] !== null) {
        out[name] = e[name];
      }
    }
    return out;
  });
  let frame;
  try {
    frame = encode([b.ts, events, b.data_parallel_rank], { useBigInt64: true });
  } catch (err) {
    throw new Failure("encode_error", err.message);
  }
  return { frames: [frame], value: neutral(b) };
}
