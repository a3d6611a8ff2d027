"""A weightless model folder that SGLang's front end loads: a tiny Qwen2 ``config.json`` and a tokenizer trained here.

:func:`write_model_folder` writes, into an empty or missing folder,

* ``config.json``: a Qwen2 configuration (:data:`VOCAB_SIZE` tokens, two
  small layers). SGLang's HTTP server, tokenizer manager and detokenizer read
  it; nothing reads weights, because the scheduler is scripted
  (:mod:`conformance.engines.sglang.scripted_scheduler`).
* ``tokenizer.json``: a byte-level BPE trained in this process with the
  ``tokenizers`` library on a fixed corpus, so every run and every machine
  gets the same ids; nothing is downloaded.
* ``tokenizer_config.json`` and ``generation_config.json``: the special
  tokens and a ChatML chat template, as Qwen2's own files declare them.

The folder is a pure function of this module's constants: writing it twice
gives the same bytes.
"""

from __future__ import annotations

import json
import os
from typing import Dict, List

__all__ = ["VOCAB_SIZE", "SPECIAL_TOKENS", "EOS_TOKEN", "write_model_folder"]

#: Token ids the tokenizer and the model config agree on (the trainer stops at this size).
VOCAB_SIZE = 512
#: ``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``: ids 0, 1 and 2.
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
#: The end-of-sequence token of the chat template and of generation.
EOS_TOKEN = "<|im_end|>"

_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Enough text for the BPE trainer to fill VOCAB_SIZE with merges; fixed, so the ids are.
_CORPUS = [
    "The quick brown fox jumps over the lazy dog while the scheduler streams tokens.",
    "Serving engines exchange messages between the tokenizer, the scheduler and the detokenizer.",
    "A request carries input ids, sampling parameters, and whether to return log probabilities.",
    "MessagePack replaces pickle on every hop; the answers must not change.",
    "user assistant system: hello, how are you today? I am fine, thank you very much.",
    "0123456789 + - * / = ( ) [ ] { } < > , . ; : ! ? ' \" # $ % & @ ^ _ ` | ~",
    "Benchmarks alternate the codecs, pair the repeats, and report the median of the ratios.",
    "Streaming responses arrive chunk by chunk; an aborted request finishes early with its reason.",
    "Determinism means the same prompt gives the same tokens, logprobs and stop reason every time.",
]


def _config() -> Dict[str, object]:
    return {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "max_window_layers": 2,
        "rms_norm_eps": 1e-06,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "use_sliding_window": False,
        "bos_token_id": 0,
        "eos_token_id": 2,
    }


def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS * 4, trainer=trainer)
    if tokenizer.get_vocab_size() != VOCAB_SIZE:
        raise RuntimeError(f"the tokenizer trained to {tokenizer.get_vocab_size()} tokens, not {VOCAB_SIZE}: extend the corpus")
    return tokenizer.to_str()


def _tokenizer_config() -> Dict[str, object]:
    added: Dict[str, Dict[str, object]] = {
        str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
        for i, t in enumerate(SPECIAL_TOKENS)
    }
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "bos_token": None,
        "eos_token": EOS_TOKEN,
        "pad_token": SPECIAL_TOKENS[0],
        "unk_token": None,
        "model_max_length": 4096,
        "clean_up_tokenization_spaces": False,
        "chat_template": _CHAT_TEMPLATE,
    }


def write_model_folder(path: str) -> str:
    """Write the model folder at ``path`` (created if missing) and return ``path``.

    Raises ``FileExistsError`` when ``path`` holds anything else than a
    folder this function wrote, so a real model is never overwritten.
    """
    files: List[str] = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"]
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise FileExistsError(f"{path} exists and is not a folder")
        extra = sorted(set(os.listdir(path)) - set(files))
        if extra:
            raise FileExistsError(f"{path} holds files this module did not write ({', '.join(extra[:5])}); give an empty folder")
    os.makedirs(path, exist_ok=True)
    contents = {
        "config.json": json.dumps(_config(), indent=1, sort_keys=True),
        "generation_config.json": json.dumps({"bos_token_id": 0, "eos_token_id": 2}, indent=1),
        "tokenizer.json": _tokenizer_json(),
        "tokenizer_config.json": json.dumps(_tokenizer_config(), indent=1, sort_keys=True),
    }
    for name, text in contents.items():
        with open(os.path.join(path, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    return path
