"""A byte-level tokenizer: no vocabulary file, no download, the same ids everywhere.

Ids 0-255 are the bytes of the UTF-8 text; two special tokens follow them.
Detokenizing a sequence that ends inside a multi-byte character gives
U+FFFD for the incomplete tail, which is why :func:`stable_prefix` exists:
a streaming detokenizer only emits text that later tokens cannot change.
"""

from __future__ import annotations

from typing import Iterable, List

__all__ = ["BOS_ID", "EOS_ID", "VOCAB_SIZE", "SPECIAL_TEXT", "encode", "decode", "stable_prefix"]

BOS_ID = 256
EOS_ID = 257
VOCAB_SIZE = 258
SPECIAL_TEXT = {BOS_ID: "<s>", EOS_ID: "</s>"}


def encode(text: str) -> List[int]:
    """The UTF-8 bytes of ``text`` as ids (no special tokens added)."""
    return list(text.encode("utf-8"))


def decode(ids: Iterable[int], *, skip_special_tokens: bool = True, spaces_between_special_tokens: bool = True) -> str:
    """Text of ``ids``; invalid UTF-8 becomes U+FFFD, special tokens are dropped or spelled out.

    ``ids`` must lie in ``range(VOCAB_SIZE)`` (the scheduler rejects others).
    """
    pieces: List[str] = []
    run = bytearray()
    for i in ids:
        if i < 256:
            run.append(i)
            continue
        if run:
            pieces.append(run.decode("utf-8", errors="replace"))
            run.clear()
        if not skip_special_tokens:
            pieces.append(SPECIAL_TEXT[i])
    if run:
        pieces.append(run.decode("utf-8", errors="replace"))
    sep = " " if (spaces_between_special_tokens and not skip_special_tokens) else ""
    return sep.join(pieces) if sep else "".join(pieces)


def stable_prefix(text: str, finished: bool) -> str:
    """The part of ``text`` that no further token can change.

    An unfinished sequence may end inside a UTF-8 character, which decodes
    to a trailing U+FFFD that the next byte would replace; that tail is held
    back until the sequence finishes.
    """
    if finished:
        return text
    end = len(text)
    while end > 0 and text[end - 1] == "\ufffd" and len(text) - end < 3:
        end -= 1
    return text[:end]
