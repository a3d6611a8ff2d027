"""The model out of the way: next tokens, logprobs, top-k and hidden states read from tables.

For ``python -m conformance.live --ipc-bound``. The tables are built once per
process from a seed (numpy's ``default_rng``, so every process and run has the
same ones) and indexed by ``(previous token, position mod PERIOD)``: a
request's outputs are a function of its own ids, exactly as with
:class:`~conformance.live.model.TinyLM`, but a step costs a few list lookups
instead of a transformer forward pass and a float64 softmax, so what is left of
a run's time is the IPC: encode, send, receive, decode on every hop.

The next token is the row's most likely one (its top-1): sampling parameters
other than the stopping ones do not apply to a table. Logprobs are float64
values of a ``log_softmax`` (not float32-representable, as the live model's
are), so a codec that narrows floats still changes their bits.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np
import torch

from .model import HIDDEN_SIZE, MAX_SEQ_LEN
from .tokenizer import VOCAB_SIZE

__all__ = ["PrecomputedLM", "LogprobRow", "PERIOD", "MAX_TOP"]

#: Positions cycle through this many tables, so that a token's successor also depends on where it is.
PERIOD = 8
#: The most top-k logprobs a row keeps.
MAX_TOP = 32


class LogprobRow:
    """One position's log-probabilities over the vocabulary, with its top entries sorted."""

    __slots__ = ("values", "top_values", "top_ids")

    def __init__(self, values: List[float], top_values: List[float], top_ids: List[int]):
        self.values = values
        self.top_values = top_values
        self.top_ids = top_ids

    def value(self, token: int) -> float:
        return self.values[token]

    def top(self, k: int) -> Tuple[List[float], List[int]]:
        if k > MAX_TOP:
            raise ValueError(f"top_logprobs_num {k} exceeds the {MAX_TOP} a precomputed row keeps")
        return self.top_values[:k], self.top_ids[:k]


class PrecomputedLM:
    """Tables in place of a model (see the module docstring); the same ``seed`` gives the same tables."""

    def __init__(self, device: str = "cpu", seed: int = 0):
        self.device = torch.device(device)
        rng = np.random.default_rng(seed)
        logits = rng.standard_normal((PERIOD, VOCAB_SIZE, VOCAB_SIZE)) * 3.0
        logprobs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        order = np.argsort(-logprobs, axis=-1, kind="stable")[..., :MAX_TOP]
        top = np.take_along_axis(logprobs, order, axis=-1)
        self._rows = [
            [LogprobRow(logprobs[p, t].tolist(), top[p, t].tolist(), order[p, t].tolist()) for t in range(VOCAB_SIZE)]
            for p in range(PERIOD)
        ]
        self._hidden = rng.standard_normal((PERIOD, VOCAB_SIZE, HIDDEN_SIZE)).astype(np.float32)
        self._hidden_lists = self._hidden.tolist()

    def row(self, previous: int, position: int) -> LogprobRow:
        """Logprobs of the token at ``position + 1`` after ``previous`` at ``position``."""
        return self._rows[position % PERIOD][previous]

    def next_token(self, previous: int, position: int) -> int:
        return self.row(previous, position).top_ids[0]

    def hidden(self, token: int, position: int) -> List[float]:
        """The hidden state of ``token`` at ``position``, as a list of floats."""
        return self._hidden_lists[position % PERIOD][token]

    def forward(self, ids: Sequence[int]) -> Tuple[torch.Tensor, None]:
        """``(hidden [L, HIDDEN_SIZE], None)``: what the embedding path needs, from the tables."""
        n = len(ids)
        if not 0 < n <= MAX_SEQ_LEN:
            raise ValueError(f"sequence length must be in 1..{MAX_SEQ_LEN}, got {n}")
        positions = np.arange(n) % PERIOD
        return torch.from_numpy(self._hidden[positions, np.asarray(ids)]).to(self.device), None
