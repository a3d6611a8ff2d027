"""The detokenizer: token-id batches in, text batches out, embeddings passed through.

For each request it keeps how much text it has already sent, and sends only
text that no later token can change (:func:`~conformance.live.tokenizer.stable_prefix`).
When a request stops on a stop string, the text is cut where that string
begins unless ``no_stop_trim``; text already streamed is never taken back,
so a cut inside it just means an empty last delta.
"""

from __future__ import annotations

from typing import Any, Dict, List

from reference_codec import schema as s

from . import tokenizer

__all__ = ["Detokenizer", "serve"]


class Detokenizer:
    """``handle(msg) -> messages for the client``; state is per request id, so batching cannot change text."""

    def __init__(self) -> None:
        self.sent_chars: Dict[str, int] = {}
        self.unexpected_messages = 0

    def handle(self, msg: Any) -> List[Any]:
        if isinstance(msg, s.BatchTokenIDOutput):
            return [self._text(msg)]
        if isinstance(msg, s.BatchEmbeddingOutput):
            return [msg]
        self.unexpected_messages += 1
        return []

    def _text(self, out: s.BatchTokenIDOutput) -> s.BatchStrOutput:
        texts = []
        for i, rid in enumerate(out.rids or []):
            finished = out.finished_reasons[i]
            text = tokenizer.decode(
                out.decode_ids[i],
                skip_special_tokens=out.skip_special_tokens[i],
                spaces_between_special_tokens=out.spaces_between_special_tokens[i],
            )
            matched = finished.get("matched") if finished else None
            if isinstance(matched, str) and not out.no_stop_trim[i] and matched in text:
                text = text[: text.index(matched)]
            stable = tokenizer.stable_prefix(text, finished is not None)
            sent = self.sent_chars.get(rid, 0)
            texts.append(stable[sent:])
            if finished is not None:
                self.sent_chars.pop(rid, None)
            else:
                self.sent_chars[rid] = max(sent, len(stable))
        return s.BatchStrOutput(
            rids=out.rids,
            http_worker_ipcs=out.http_worker_ipcs,
            finished_reasons=out.finished_reasons,
            output_strs=texts,
            output_ids=out.output_ids,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            reasoning_tokens=out.reasoning_tokens,
            cached_tokens=out.cached_tokens,
            input_token_logprobs_val=out.input_token_logprobs_val,
            input_token_logprobs_idx=out.input_token_logprobs_idx,
            output_token_logprobs_val=out.output_token_logprobs_val,
            output_token_logprobs_idx=out.output_token_logprobs_idx,
            input_top_logprobs_val=out.input_top_logprobs_val,
            input_top_logprobs_idx=out.input_top_logprobs_idx,
            output_top_logprobs_val=out.output_top_logprobs_val,
            output_top_logprobs_idx=out.output_top_logprobs_idx,
            input_token_ids_logprobs_val=out.input_token_ids_logprobs_val,
            input_token_ids_logprobs_idx=out.input_token_ids_logprobs_idx,
            output_token_ids_logprobs_val=out.output_token_ids_logprobs_val,
            output_token_ids_logprobs_idx=out.output_token_ids_logprobs_idx,
            output_token_entropy_val=out.output_token_entropy_val,
            output_token_sampling_mask=out.output_token_sampling_mask,
            output_hidden_states=out.output_hidden_states,
            routed_experts=None,
            indexer_topk=None,
            placeholder_tokens_idx=out.placeholder_tokens_idx,
            placeholder_tokens_val=out.placeholder_tokens_val,
        )


def serve(config, stop, reports) -> None:
    """Process entry point: run the detokenizer until ``stop`` is set."""
    from .process import Hop

    with Hop("detokenizer", config, stop, reports) as hop:
        detokenizer = Detokenizer()
        inbox = hop.bind(config.detokenizer_addr)
        outbox = hop.connect(config.client_addr)
        hop.ready()
        while not hop.stopping():
            for msg in hop.receive(inbox, block=True):
                for out in detokenizer.handle(msg):
                    hop.send(outbox, out)
        hop.stats["unexpected_messages"] = detokenizer.unexpected_messages
