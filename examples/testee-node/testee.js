// A testee for the IPC conformance suite, in JavaScript (Node.js 20).
//
// It speaks conformance/PROTOCOL.md on stdin/stdout and handles messages the
// way a gateway built on a generic msgpack library would: @msgpack/msgpack
// decodes a frame into JavaScript values (ext values stay opaque ExtData,
// int64 becomes BigInt) and encodes them back. It checks only that a frame is
// one msgpack value holding a message ([tag, ...fields]); it knows no schema.
// What the suite finds in it is what such a gateway gets wrong: see
// known-failures.txt, one line per golden vector with the reason.
//
// Run: npm ci && python -m conformance --testee "node examples/testee-node/testee.js" -k golden
//
// It also answers the engine-neutral operations (PROTOCOL.md §9) for vLLM's KV events
// (vllm-kv-events.js), checked against vLLM's golden vectors:
//   python -m conformance.vectors test --engine vllm --family kv-events --testee "node examples/testee-node/testee.js" \
//       --failure-list examples/testee-node/known-failures-vllm-kv-events.txt
import { decode, encode, Encoder } from "@msgpack/msgpack";
import { Failure, Float64, KV_EVENT_BATCH, decodeValue, encodeValue } from "./vllm-kv-events.js";

const PROTOCOL_VERSION = 1;
const MAX_MESSAGE = 256 * 1024 * 1024;
const NAME = "node-msgpack-testee";

// Writes a Float64 as msgpack float64 even when it is integral (encodeObject and
// encodeNumberAsFloat are the library's own methods, not its documented API).
class AnswerEncoder extends Encoder {
  encodeObject(object, depth) {
    if (object instanceof Float64) {
      this.encodeNumberAsFloat(object.value);
    } else {
      super.encodeObject(object, depth);
    }
  }
}
const answerEncoder = new AnswerEncoder({ useBigInt64: true });

// Our own wire is the reference wire (we pass msgpack through), so "our"
// decoder and the canonical one are the same generic decoder.
function parseFrames(frames) {
  if (frames.length !== 1) {
    throw new Failure("decode_error", `expected exactly one frame, got ${frames.length}`);
  }
  let value;
  try {
    value = decode(frames[0], { useBigInt64: true });
  } catch (err) {
    throw new Failure("decode_error", `not one msgpack value: ${err.message}`);
  }
  if (!Array.isArray(value) || value.length === 0 || typeof value[0] !== "string") {
    throw new Failure("decode_error", "not a message: expected an array whose first element is the tag");
  }
  return value;
}

function encodeMessage(message) {
  try {
    return [encode(message, { useBigInt64: true })];
  } catch (err) {
    throw new Failure("encode_error", err.message);
  }
}

function handle(request) {
  const id = request.id;
  try {
    const op = request.op;
    const frames = request.frames ?? [];
    if (!Array.isArray(frames) || !frames.every((f) => f instanceof Uint8Array)) {
      throw new Failure("unsupported", "request frames must be an array of bin");
    }
    if (op === "hello") {
      return { id, ok: true, name: NAME, wire_compatible: true, out_of_band: false, protocol: PROTOCOL_VERSION, messages: [KV_EVENT_BATCH] };
    }
    if (op === "decode_value" || op === "encode_value") {
      if (request.type !== KV_EVENT_BATCH) {
        throw new Failure("unsupported", `no message type ${JSON.stringify(String(request.type)).slice(0, 60)}: this testee knows ${KV_EVENT_BATCH} only`);
      }
      return { id, ok: true, ...(op === "decode_value" ? decodeValue(frames) : encodeValue(request.value)) };
    }
    let out;
    if (op === "encode") {
      out = encodeMessage(parseCanonical(frames));
    } else if (op === "decode") {
      out = encodeMessage(parseFrames(frames));
    } else if (op === "roundtrip") {
      out = encodeMessage(parseFrames(encodeMessage(parseCanonical(frames))));
    } else {
      throw new Failure("unsupported", `unknown op ${String(op).slice(0, 40)}`);
    }
    return { id, ok: true, frames: out };
  } catch (err) {
    if (err instanceof Failure) {
      return { id, ok: false, error_kind: err.kind, message: err.message };
    }
    return { id, ok: false, error_kind: "internal_error", message: `${err.name}: ${err.message}` };
  }
}

function parseCanonical(frames) {
  try {
    return parseFrames(frames);
  } catch (err) {
    throw new Failure("unsupported", `cannot parse the canonical message: ${err.message}`);
  }
}

// --- framing: u32 big-endian length, then one msgpack map --------------------

function writeMessage(body) {
  let bytes = answerEncoder.encode(body);
  if (bytes.length > MAX_MESSAGE) {
    bytes = encode({ id: body.id, ok: false, error_kind: "internal_error", message: "answer too large for the protocol" });
  }
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(bytes.length, 0);
  process.stdout.write(Buffer.concat([prefix, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]));
}

let pending = Buffer.alloc(0);

process.stdin.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  while (pending.length >= 4) {
    const length = pending.readUInt32BE(0);
    if (length > MAX_MESSAGE) {
      process.stderr.write(`${NAME}: malformed request stream: a message of ${length} bytes\n`);
      process.exit(2);
    }
    if (pending.length < 4 + length) {
      return;
    }
    const body = pending.subarray(4, 4 + length);
    pending = pending.subarray(4 + length);
    let request;
    try {
      request = decode(body, { useBigInt64: true });
    } catch (err) {
      process.stderr.write(`${NAME}: malformed request stream: ${err.message}\n`);
      process.exit(2);
    }
    if (request === null || typeof request !== "object" || Array.isArray(request)) {
      process.stderr.write(`${NAME}: malformed request stream: a request that is not a map\n`);
      process.exit(2);
    }
    if (typeof request.id === "bigint") {
      request.id = Number(request.id);
    }
    writeMessage(handle(request));
  }
});

process.stdin.on("end", () => {
  if (pending.length > 0) {
    process.stderr.write(`${NAME}: malformed request stream: ${pending.length} bytes after the last message\n`);
    process.exit(2);
  }
  process.exit(0);
});
