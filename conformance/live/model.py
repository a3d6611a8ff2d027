"""A tiny deterministic causal language model, built from a seed (no weights to download).

Two pre-norm transformer layers over the byte vocabulary of
:mod:`conformance.live.tokenizer`, float32, weights drawn from a CPU
``torch.Generator`` so that the same seed gives the same weights on every
device. :meth:`TinyLM.forward` runs one sequence at a time: a request's
logits and hidden states are a function of its own token ids only, so the
composition of the scheduler's batch and the arrival timing of other
requests cannot change a single bit of them.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

import torch

from .tokenizer import VOCAB_SIZE

__all__ = ["TinyLM", "HIDDEN_SIZE", "MAX_SEQ_LEN"]

HIDDEN_SIZE = 32
MAX_SEQ_LEN = 128
_LAYERS = 2
_MLP = 64


class TinyLM:
    """``forward(ids) -> (hidden [L, HIDDEN_SIZE], logits [L, VOCAB_SIZE])``, float32 on ``device``.

    ``hidden`` is the final normed hidden state of every position (what
    ``return_hidden_states`` and embeddings report); ``logits[p]`` scores the
    token that follows position ``p``.
    """

    def __init__(self, device: str = "cpu", seed: int = 0):
        self.device = torch.device(device)
        g = torch.Generator().manual_seed(seed)

        def w(*shape: int, scale: float) -> torch.Tensor:
            return (torch.randn(*shape, generator=g, dtype=torch.float32) * scale).to(self.device)

        h = HIDDEN_SIZE
        self.embed = w(VOCAB_SIZE, h, scale=1.0)
        self.pos = w(MAX_SEQ_LEN, h, scale=0.5)
        self.layers = [
            {
                "qkv": w(h, 3 * h, scale=1 / math.sqrt(h)),
                "out": w(h, h, scale=1 / math.sqrt(h)),
                "up": w(h, _MLP, scale=1 / math.sqrt(h)),
                "down": w(_MLP, h, scale=1 / math.sqrt(_MLP)),
            }
            for _ in range(_LAYERS)
        ]
        # A large head gain gives peaked, varied next-token distributions.
        self.head = w(h, VOCAB_SIZE, scale=3 / math.sqrt(h))
        self._mask = torch.full((MAX_SEQ_LEN, MAX_SEQ_LEN), float("-inf"), device=self.device).triu(1)

    @torch.inference_mode()
    def forward(self, ids: Sequence[int]) -> Tuple[torch.Tensor, torch.Tensor]:
        n = len(ids)
        if not 0 < n <= MAX_SEQ_LEN:
            raise ValueError(f"sequence length must be in 1..{MAX_SEQ_LEN}, got {n}")
        tokens = torch.tensor(list(ids), dtype=torch.long, device=self.device)
        x = self.embed[tokens] + self.pos[:n]
        for layer in self.layers:
            q, k, v = (_norm(x) @ layer["qkv"]).split(HIDDEN_SIZE, dim=-1)
            scores = (q @ k.T) / math.sqrt(HIDDEN_SIZE) + self._mask[:n, :n]
            x = x + (scores.softmax(-1) @ v) @ layer["out"]
            x = x + torch.nn.functional.gelu(_norm(x) @ layer["up"]) @ layer["down"]
        hidden = _norm(x)
        return hidden, hidden @ self.head


def _norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
