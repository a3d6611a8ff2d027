"""Next-token choice and logprobs, on the host in float64, reproducible from a seed.

Logprobs are ``log_softmax`` of the model's raw logits computed in float64
(so they are not float32-representable, and a codec that squeezes floats
through float32 changes their bits). Sampling applies temperature, top-k,
top-p and min-p, then draws with the request's own ``torch.Generator``:

- ``temperature == 0`` or ``top_k == 1``: greedy (the first maximal id);
- ``sampling_seed`` set: the generator is seeded with it;
- otherwise: seeded with a CRC-32 of the request id, so that an unseeded
  request is still reproducible run to run (a real engine would use entropy).
"""

from __future__ import annotations

import zlib
from typing import Optional

import torch

__all__ = ["logprobs", "request_generator", "sample"]


def logprobs(logits: torch.Tensor) -> torch.Tensor:
    """float64 log-probabilities on the CPU for logits of shape ``[..., V]``."""
    return logits.detach().to("cpu", torch.float64).log_softmax(-1)


def request_generator(rid: str, sampling_seed: Optional[int]) -> torch.Generator:
    """The CPU generator a request samples with, seeded as the module docstring says."""
    seed = sampling_seed if sampling_seed is not None else zlib.crc32(rid.encode("utf-8"))
    return torch.Generator().manual_seed(seed % (1 << 63))


def sample(
    logits: torch.Tensor,
    *,
    temperature: float,
    top_k: int,
    top_p: float,
    min_p: float,
    generator: torch.Generator,
) -> int:
    """One token id from a ``[V]`` logits row (parameters already validated)."""
    row = logits.detach().to("cpu", torch.float64)
    if temperature == 0.0 or top_k == 1:
        return int(row.argmax())
    probs = (row / temperature).softmax(-1)
    if 0 < top_k < probs.numel():
        kth = probs.topk(top_k).values[-1]
        probs = torch.where(probs >= kth, probs, 0.0)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(descending=True, stable=True)
        before = sorted_probs.cumsum(0) - sorted_probs
        sorted_probs = torch.where(before < top_p * sorted_probs.sum(), sorted_probs, 0.0)
        probs = torch.zeros_like(probs).scatter(0, order, sorted_probs)
    if min_p > 0.0:
        probs = torch.where(probs >= min_p * probs.max(), probs, 0.0)
    return int(torch.multinomial(probs, 1, generator=generator))
