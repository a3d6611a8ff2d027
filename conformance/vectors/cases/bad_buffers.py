"""n_ (wire v1): buffer and ext payloads a decoder must refuse before it allocates or trusts them.

Tensor metadata (huge or negative shapes, unknown or hostile dtypes, devices, lengths that
do not match), ext codes the wire does not carry, and malformed ndarray, array, numpy
scalar, torch.Size, tuple, big integer, enum and timestamp payloads. ``i_unknown_ext_code``
sits here beside the process-local ext codes that are refused.
"""

from __future__ import annotations

from reference_codec import wire

from ..registry import Ext, buffer_ext, case, encode, tensor_message, untyped_message


@case("n_huge_shape_no_data", "a tensor declaring 2**40 elements with no bytes: refused before any allocation", reason="declares more than")
def _():
    return [tensor_message([[2**40], "float32", "cpu"], b"")]


@case("n_huge_shape_product", "dimensions whose product overflows 64 bits (2**32 x 2**32 x 16)", reason="declares more than")
def _():
    return [tensor_message([[2**32, 2**32, 16], "uint8", "cpu"], b"")]


@case("n_tensor_length_mismatch", "shape [4] float32 needs 16 bytes, the payload carries 12", reason="= 16 bytes, but the buffer carries 12")
def _():
    return [tensor_message([[4], "float32", "cpu"], b"\x00" * 12)]


@case("n_unknown_torch_dtype", "a dtype name outside the allowlist", reason="unknown torch dtype 'float128'")
def _():
    return [tensor_message([[2], "float128", "cpu"], b"\x00" * 32)]


@case(
    "n_hostile_dtype_text",
    "dtype text that would run code if passed to eval/getattr(torch, ...): must be looked up, never evaluated",
    reason="unknown torch dtype",
)
def _():
    return [tensor_message([[2], "__import__('os').system('true')", "cpu"], b"")]


@case("n_invalid_device", "a device string that is not a device (shell injection text)", reason="invalid device")
def _():
    return [tensor_message([[1], "float32", "cuda:1; rm -rf /"], b"\x00" * 4)]


@case("n_meta_device", "'meta' tensors have no data and are refused", reason="invalid device")
def _():
    return [tensor_message([[1], "float32", "meta"], b"\x00" * 4)]


@case("n_negative_dimension", "a negative dimension in a tensor shape", reason="not a non-negative int")
def _():
    return [tensor_message([[-1], "float32", "cpu"], b"")]


@case("n_requires_grad_on_int_tensor", "requires_grad true on an int32 tensor (torch cannot)", reason="cannot require grad")
def _():
    return [tensor_message([[1], "int32", "cpu", True], b"\x00" * 4)]


@case("n_tensor_metadata_not_array", "tensor metadata that is a str instead of [shape, dtype, device]", reason="tensor metadata must be")
def _():
    return [tensor_message("not a list", b"")]


@case("n_lying_metadata_length", "the u32 metadata length (4096) runs past the end of the ext payload", reason="runs past the end")
def _():
    return [untyped_message(Ext(wire.EXT_TORCH_TENSOR, b"\x00\x00\x10\x00\x91"))]


@case("n_truncated_metadata_prefix", "a buffer ext payload shorter than its 4-byte metadata length", reason="shorter than its metadata length prefix")
def _():
    return [untyped_message(Ext(wire.EXT_TORCH_TENSOR, b"\x00\x00"))]


@case(
    "i_unknown_ext_code",
    "ext code 99 is not defined by the wire: the reference refuses it, SGLang keeps it opaque (wire.py: unknown ext codes)",
)
def _():
    return [untyped_message(Ext(99, b"\x90"))]


@case("n_sglang_shm_pointer_ext_4", "SGLang's ext 4 (shared-memory handle) is process-local: refused", reason="process-local")
def _():
    return [untyped_message(Ext(wire.EXT_SGLANG_SHM_POINTER, b"\x90"))]


@case("n_sglang_cuda_ipc_ext_5", "SGLang's ext 5 (CUDA IPC tensor proxy) is process-local: refused", reason="process-local")
def _():
    return [untyped_message(Ext(wire.EXT_SGLANG_CUDA_IPC, b"\x90"))]


@case("n_object_dtype_ndarray", "an ndarray of dtype '|O' (Python objects) has no byte layout", reason="holds Python objects")
def _():
    return [untyped_message(buffer_ext(wire.EXT_NDARRAY, [[2], "|O"], b"\x00" * 16))]


@case("n_ndarray_length_mismatch", "shape [3] '<f8' needs 24 bytes, the payload carries 8", reason="= 24 bytes, but the buffer carries 8")
def _():
    return [untyped_message(buffer_ext(wire.EXT_NDARRAY, [[3], "<f8"], b"\x00" * 8))]


@case("n_array_ragged_bytes", "array('q') with 7 bytes: not a whole number of items", reason="not a multiple of itemsize 8")
def _():
    return [untyped_message(buffer_ext(wire.EXT_ARRAY, "q", b"\x00" * 7))]


@case("n_unknown_array_typecode", "array typecode 'z' does not exist", reason="unknown array typecode")
def _():
    return [untyped_message(buffer_ext(wire.EXT_ARRAY, "z", b"\x00" * 8))]


@case("n_numpy_scalar_wrong_size", "a '<f4' numpy scalar (ext 66) with 3 bytes", reason="needs 4 bytes, got 3")
def _():
    return [untyped_message(buffer_ext(wire.EXT_NUMPY_SCALAR, "<f4", b"\x00" * 3))]


@case("n_torch_size_negative", "a torch.Size (ext 65) with a negative dimension", reason="torch.Size payload is not an array of non-negative ints")
def _():
    return [untyped_message(Ext(wire.EXT_TORCH_SIZE, encode([2, -1])))]


@case("n_tuple_payload_not_array", "a tuple (ext 64) whose payload is an int, not an array", reason="tuple payload is not an array")
def _():
    return [untyped_message(Ext(wire.EXT_TUPLE, encode(5)))]


@case("n_bigint_too_long", "a big integer (ext 67) of 17 bytes: more than 128 bits", reason="big integer of 17 bytes")
def _():
    return [untyped_message(Ext(wire.EXT_BIGINT, b"\x01" * 17))]


@case("n_bigint_empty", "a big integer (ext 67) of 0 bytes", reason="big integer of 0 bytes")
def _():
    return [untyped_message(Ext(wire.EXT_BIGINT, b""))]


@case("n_unknown_enum_ext", "an enum member (ext 68) of a class outside the schema's enums", reason="is not an enum of the schema")
def _():
    return [untyped_message(Ext(wire.EXT_ENUM, encode(["os.system", 1])))]


@case("n_enum_ext_bad_value", "an enum member (ext 68) whose value is not a member of the class", reason="99 is not a valid Modality")
def _():
    return [untyped_message(Ext(wire.EXT_ENUM, encode(["Modality", 99])))]


@case("n_invalid_timestamp_ext", "msgpack's own timestamp ext (-1) with a 3-byte payload is malformed msgpack", reason="Invalid MessagePack timestamp")
def _():
    return [untyped_message(Ext(-1, b"abc"))]
