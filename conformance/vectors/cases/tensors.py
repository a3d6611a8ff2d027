"""y_ (wire v1): torch tensors and numpy ndarrays: dtypes, 0-d and empty shapes, requires_grad, byte order, structured dtypes."""

from __future__ import annotations

import numpy as np
import torch

from reference_codec import schema as s

from ..registry import UINT64_MAX, bf16, case, embedding_request, generate_request


@case(
    "y_multimodal_bf16_feature",
    "multimodal item: bfloat16 feature tensor, uint64 hash, offsets as tuples, tuple pad_values, tensors in model_specific_data",
)
def _():
    item = s.MultimodalDataItem(
        modality=s.Modality.IMAGE,
        hash=UINT64_MAX,
        pad_value=151655,
        offsets=[(1, 3)],
        feature=bf16([[0.5, -1.0, 3.140625, -0.0], [65280.0, 1e-3, float("inf"), float("nan")]]),
        model_specific_data={"image_grid_thw": torch.tensor([[1, 2, 2]], dtype=torch.int64)},
        pad_values=(151655,),
    )
    return embedding_request(item, mm_inputs=s.MultimodalProcessorOutput(
        mm_items=[item], im_token_id=151655, mrope_positions=torch.arange(12, dtype=torch.int64).reshape(3, 4)
    ))


@case("y_tensor_0d_and_empty", "tensor shapes with no data: 0-d scalar, (0, 3) and (3, 0) are different shapes, all kept")
def _():
    item = s.MultimodalDataItem(
        modality=s.Modality.VIDEO,
        feature=torch.tensor(3.5, dtype=torch.float32),
        model_specific_data={
            "empty_rows": torch.zeros(0, 3, dtype=torch.float16),
            "empty_cols": torch.zeros(3, 0, dtype=torch.int64),
            "zero_d_int": torch.tensor(-7, dtype=torch.int32),
        },
    )
    return embedding_request(item)


@case("y_tensor_requires_grad", "a float tensor that requires grad: the reference's optional 4th metadata element (true)")
def _():
    embeds = torch.tensor([[0.25, -0.5, 1.0], [2.0, -4.0, 8.0]], dtype=torch.float32).requires_grad_(True)
    return generate_request(positional_embed_overrides=s.PositionalEmbeds(embeds=embeds, positions=[0, 5]))


@case(
    "y_tensor_dtypes",
    "tensor dtypes a non-Python peer must size right: float8_e4m3fn, complex64, bool, uint16, float16 (bytes as in memory)",
)
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "fp8": torch.tensor([0.5, -2.0, 448.0], dtype=torch.float32).to(torch.float8_e4m3fn),
            "c64": torch.tensor([1 + 2j, -0.5j], dtype=torch.complex64),
            "mask": torch.tensor([True, False, True]),
            "u16": torch.tensor([0, 65535], dtype=torch.uint16),
            "f16": torch.tensor([[1.0, -0.0], [65504.0, 6e-08]], dtype=torch.float16),
        }
    )


@case("y_ndarray_big_endian", "ndarrays in big-endian byte order (dtype.str '>i8', '>f4') keep their byte order")
def _():
    return s.GetInternalStateReqOutput(
        internal_state={
            "be_i8": np.array([1, -2, 2**62], dtype=">i8"),
            "be_f4": np.array([[1.5, -0.0]], dtype=">f4"),
            "le_u2": np.array([513], dtype="<u2"),
        }
    )


@case(
    "y_ndarray_structured",
    "structured ndarray (reference extension): dtype as a descr list [[name, type(, shape)]], big-endian field, subarray",
)
def _():
    # Packed: the reference does not yet rebuild padding fields ("" in descr) faithfully.
    dtype = np.dtype([("id", "<u2"), ("score", ">f8"), ("pos", "<i4", (2,))])
    values = np.zeros(2, dtype=dtype)
    values["id"] = [1, 65535]
    values["score"] = [0.5, -1.25]
    values["pos"] = [[1, 2], [-3, 4]]
    return s.GetInternalStateReqOutput(internal_state={"records": values})
