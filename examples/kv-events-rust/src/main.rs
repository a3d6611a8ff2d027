//! A router-style consumer of vLLM's KV-cache events, written the way a Rust
//! router decodes them (NVIDIA Dynamo: serde structs mirroring vLLM's msgspec
//! classes, `rmp-serde`), answering the conformance suite's engine-neutral
//! testee operations (`conformance/PROTOCOL.md` §1, §9) on stdin/stdout:
//!
//! * `decode_value` `KVEventBatch`: the frame through `rmp_serde::from_slice`
//!   into the structs below, answered as the neutral value (every struct a map
//!   of its wire field names, the batch included).
//! * `encode_value` `KVEventBatch`: the value (shaped as vLLM's classes take
//!   it) into the same structs, written with `rmp_serde::to_vec_named`.
//!
//! Logs go to stderr; stdout carries protocol messages only.

use std::io::{self, Read, Write};
use std::panic::{self, AssertUnwindSafe};

use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;

/// The rmp-serde this is built with (Cargo.lock; the suite's test checks they agree).
const RMP_SERDE_VERSION: &str = "1.1.1";
/// The one message type this consumer reads.
const KV_EVENT_BATCH: &str = "KVEventBatch";
/// PROTOCOL.md §1: a larger length means a corrupt stream.
const MAX_MESSAGE: usize = 256 << 20;

// ---------------------------------------------------------------------------
// vLLM 0.34.0's KV events (vllm/distributed/kv_events.py), as a router mirrors them.
// ---------------------------------------------------------------------------

/// `KVEventBatch(EventBatch)`: a msgspec `array_like` struct, positional on the
/// wire as `[ts, events, data_parallel_rank]`. vLLM writes all three, but its
/// decoder fills a missing tail field with its default, so the rank defaults
/// here too. A tuple struct stays an array under both `to_vec` and `to_vec_named`.
#[derive(Debug, Serialize, Deserialize)]
pub struct KvEventBatch(
    pub f64,
    pub Vec<KvCacheEvent>,
    #[serde(default)] pub Option<i32>,
);

/// The events, a msgspec tagged union (`tag=True`): maps whose field "type" is the class name.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum KvCacheEvent {
    BlockStored(BlockStored),
    BlockRemoved(BlockRemoved),
    AllBlocksCleared,
}

/// `ExternalBlockHash = bytes | int`: sha256 bytes by default; with
/// `VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES` the low 64 bits as an unsigned int.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BlockHash {
    Int(u64),
    Bytes(ByteBuf),
}

/// Fields without a default in vLLM are required there (even when nullable);
/// those with `= None` are omitted by vLLM when `None` and default here.
#[derive(Debug, Serialize, Deserialize)]
pub struct BlockStored {
    pub block_hashes: Vec<BlockHash>,
    pub parent_block_hash: Option<BlockHash>,
    pub token_ids: Vec<u32>,
    pub block_size: u32,
    pub lora_id: Option<u64>,
    pub medium: Option<String>,
    pub lora_name: Option<String>,
    /// `list[tuple[Any, ...] | None] | None`: untyped items, kept as plain values.
    #[serde(default)]
    pub extra_keys: Option<Vec<Option<Vec<Value>>>>,
    #[serde(default)]
    pub group_idx: Option<u32>,
    #[serde(default)]
    pub kv_cache_spec_kind: Option<String>,
    #[serde(default)]
    pub kv_cache_spec_sliding_window: Option<u32>,
    #[serde(default)]
    pub locality: Option<String>,
    #[serde(default)]
    pub ownership: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub lookahead_token_ids: Option<Vec<Vec<u32>>>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BlockRemoved {
    pub block_hashes: Vec<BlockHash>,
    pub medium: Option<String>,
    #[serde(default)]
    pub group_idx: Option<u32>,
    #[serde(default)]
    pub locality: Option<String>,
    #[serde(default)]
    pub ownership: Option<String>,
}

impl KvEventBatch {
    /// The neutral form (§9): the batch as a map of its wire field names, each event a map with its tag.
    fn neutral(&self) -> Result<Value, String> {
        let rank = self.2.map_or(Value::Nil, |r| Value::Int(r.into()));
        Ok(Value::map([
            ("ts", Value::F64(self.0)),
            ("events", to_value(&self.1)?),
            ("data_parallel_rank", rank),
        ]))
    }
}

/// Any `Serialize` as a plain value, through rmp-serde's named (map) encoding.
fn to_value<T: Serialize>(item: &T) -> Result<Value, String> {
    let bytes = rmp_serde::to_vec_named(item).map_err(|e| e.to_string())?;
    rmp_serde::from_slice(&bytes).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------
// Plain msgpack values: the protocol's requests and answers, and msgspec's `Any`.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Nil,
    Bool(bool),
    /// Every integer that fits an i64; `UInt` holds the rest of u64.
    Int(i64),
    UInt(u64),
    F64(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

impl Value {
    fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
        Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Value::Str(k.to_owned()), v))
                .collect(),
        )
    }

    fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Value::Nil => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::UInt(u) => s.serialize_u64(*u),
            Value::F64(f) => s.serialize_f64(*f),
            Value::Str(t) => s.serialize_str(t),
            Value::Bin(b) => s.serialize_bytes(b),
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                items
                    .iter()
                    .try_for_each(|item| seq.serialize_element(item))?;
                seq.end()
            }
            Value::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                entries
                    .iter()
                    .try_for_each(|(k, v)| map.serialize_entry(k, v))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        struct ValueVisitor;
        impl<'de> serde::de::Visitor<'de> for ValueVisitor {
            type Value = Value;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a msgpack value without ext types")
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Nil)
            }
            fn visit_none<E>(self) -> Result<Value, E> {
                Ok(Value::Nil)
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
                Value::deserialize(d)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
                Ok(Value::Bool(b))
            }
            fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
                Ok(Value::Int(i))
            }
            fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
                Ok(i64::try_from(u).map_or(Value::UInt(u), Value::Int))
            }
            fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
                Ok(Value::F64(f))
            }
            fn visit_str<E>(self, s: &str) -> Result<Value, E> {
                Ok(Value::Str(s.to_owned()))
            }
            fn visit_bytes<E>(self, b: &[u8]) -> Result<Value, E> {
                Ok(Value::Bin(b.to_vec()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Value::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Value::Map(entries))
            }
        }
        d.deserialize_any(ValueVisitor)
    }
}

// ---------------------------------------------------------------------------
// The testee protocol: hello, decode_value, encode_value.
// ---------------------------------------------------------------------------

struct Failure {
    kind: &'static str,
    message: String,
}

fn fail<T>(kind: &'static str, message: impl Into<String>) -> Result<T, Failure> {
    Err(Failure {
        kind,
        message: message.into(),
    })
}

type Answer = Result<Vec<(&'static str, Value)>, Failure>;

fn answer(request: &Value) -> Answer {
    let op = request.get("op").and_then(Value::as_str);
    if op == Some("hello") {
        return Ok(vec![
            (
                "name",
                Value::Str(format!("rust-kv-events (rmp-serde {RMP_SERDE_VERSION})")),
            ),
            ("protocol", Value::Int(1)),
            ("wire_compatible", Value::Bool(false)),
            ("out_of_band", Value::Bool(false)),
            (
                "messages",
                Value::Array(vec![Value::Str(KV_EVENT_BATCH.to_owned())]),
            ),
        ]);
    }
    if !matches!(op, Some("decode_value" | "encode_value")) {
        return fail(
            "unsupported",
            format!("unknown op {:?}", op.unwrap_or_default()),
        );
    }
    let kind = request.get("type").and_then(Value::as_str);
    if kind != Some(KV_EVENT_BATCH) {
        return fail(
            "unsupported",
            format!(
                "no message type {:?}: this consumer reads {KV_EVENT_BATCH} only",
                kind.unwrap_or_default()
            ),
        );
    }
    if op == Some("decode_value") {
        decode_value(request)
    } else {
        encode_value(request)
    }
}

/// A frame as a router's ZeroMQ subscriber gets it, through `rmp_serde::from_slice`.
fn decode_value(request: &Value) -> Answer {
    let frame = match request.get("frames") {
        Some(Value::Array(frames)) => match frames.first() {
            Some(Value::Bin(frame)) => frame,
            Some(_) => return fail("unsupported", "request frames must be an array of bin"),
            None => return fail("decode_error", "no frame to decode"),
        },
        _ => return fail("unsupported", "request frames must be an array of bin"),
    };
    let batch: KvEventBatch = match rmp_serde::from_slice(frame) {
        Ok(batch) => batch,
        Err(e) => return fail("decode_error", e.to_string()),
    };
    Ok(vec![("value", neutral(&batch)?)])
}

/// The value into the structs (what does not fit them is `invalid`), written as vLLM writes it.
fn encode_value(request: &Value) -> Answer {
    let value = match request.get("value") {
        Some(value) => value,
        None => return fail("invalid", "no value"),
    };
    let bytes = rmp_serde::to_vec(value).map_err(|e| Failure {
        kind: "internal_error",
        message: e.to_string(),
    })?;
    let batch: KvEventBatch = match rmp_serde::from_slice(&bytes) {
        Ok(batch) => batch,
        Err(e) => return fail("invalid", e.to_string()),
    };
    // Named: events as maps, as msgspec writes tagged structs; the tuple-struct batch stays an array.
    let frame = rmp_serde::to_vec_named(&batch).map_err(|e| Failure {
        kind: "encode_error",
        message: e.to_string(),
    })?;
    Ok(vec![
        ("frames", Value::Array(vec![Value::Bin(frame)])),
        ("value", neutral(&batch)?),
    ])
}

fn neutral(batch: &KvEventBatch) -> Result<Value, Failure> {
    batch.neutral().map_err(|message| Failure {
        kind: "internal_error",
        message,
    })
}

/// The response to one request; never panics out (a panic is `internal_error`).
fn handle(request: &Value) -> Value {
    let id = request.get("id").cloned().unwrap_or(Value::Nil);
    let outcome =
        panic::catch_unwind(AssertUnwindSafe(|| answer(request))).unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned());
            fail(
                "internal_error",
                format!("panic: {}", what.unwrap_or_default()),
            )
        });
    let mut entries = vec![(Value::Str("id".into()), id)];
    let fields = match outcome {
        Ok(fields) => [("ok", Value::Bool(true))]
            .into_iter()
            .chain(fields)
            .collect(),
        Err(Failure { kind, mut message }) => {
            if message.len() > 2000 {
                let cut = (0..=2000)
                    .rev()
                    .find(|&i| message.is_char_boundary(i))
                    .unwrap_or(0);
                message.truncate(cut);
            }
            vec![
                ("ok", Value::Bool(false)),
                ("error_kind", Value::Str(kind.into())),
                ("message", Value::Str(message)),
            ]
        }
    };
    entries.extend(
        fields
            .into_iter()
            .map(|(k, v): (&str, Value)| (Value::Str(k.into()), v)),
    );
    Value::Map(entries)
}

/// Reads one length-prefixed message; `Ok(None)` at end of input before a prefix.
fn read_message(input: &mut impl Read) -> Result<Option<Vec<u8>>, String> {
    let mut prefix = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match input.read(&mut prefix[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(format!("length prefix cut short after {got} byte(s)")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let length = u32::from_be_bytes(prefix) as usize;
    if length > MAX_MESSAGE {
        return Err(format!(
            "message length {length} is over the {MAX_MESSAGE}-byte limit"
        ));
    }
    let mut body = vec![0u8; length];
    input
        .read_exact(&mut body)
        .map_err(|e| format!("message body cut short ({length} bytes announced): {e}"))?;
    Ok(Some(body))
}

fn main() {
    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    loop {
        let body = match read_message(&mut input) {
            Ok(Some(body)) => body,
            Ok(None) => std::process::exit(0),
            Err(why) => {
                eprintln!("kv-events-rust: corrupt input stream: {why}");
                std::process::exit(2);
            }
        };
        let request: Value = match rmp_serde::from_slice(&body) {
            Ok(request @ Value::Map(_)) => request,
            Ok(_) => {
                eprintln!("kv-events-rust: corrupt input stream: a request body that is not a map");
                std::process::exit(2);
            }
            Err(e) => {
                eprintln!("kv-events-rust: corrupt input stream: {e}");
                std::process::exit(2);
            }
        };
        let response = rmp_serde::to_vec(&handle(&request)).expect("a response always encodes");
        let written = output
            .write_all(&(response.len() as u32).to_be_bytes())
            .and_then(|_| output.write_all(&response))
            .and_then(|_| output.flush());
        if let Err(e) = written {
            eprintln!("kv-events-rust: stdout closed: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> KvEventBatch {
        KvEventBatch(
            1.5,
            vec![KvCacheEvent::BlockRemoved(BlockRemoved {
                block_hashes: vec![BlockHash::Int(7)],
                medium: None,
                group_idx: None,
                locality: None,
                ownership: None,
            })],
            None,
        )
    }

    #[test]
    fn named_encoding_writes_the_batch_as_an_array_and_events_as_maps_like_vllm() {
        let bytes = rmp_serde::to_vec_named(&batch()).unwrap();
        assert_eq!(bytes[0], 0x93, "the batch is a 3-array");
        assert_eq!(bytes[10], 0x91, "one event");
        assert_eq!(bytes[11] & 0xf0, 0x80, "the event is a map");
    }

    #[test]
    fn positional_encoding_writes_events_as_tag_first_arrays_like_vllm_0_23() {
        let bytes = rmp_serde::to_vec(&batch()).unwrap();
        assert_eq!(
            &bytes[10..13],
            &[0x91, 0x96, 0xac],
            "the event is a 6-array whose first item is the tag \"BlockRemoved\""
        );
    }
}
