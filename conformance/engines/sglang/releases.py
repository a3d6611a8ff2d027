"""The SGLang releases the release history covers (0.5.15 to 0.5.23), each with the pure-Python pins that import it on a CPU machine.

:mod:`conformance.releases` installs a release's ``requirements`` with
``--no-deps``, then ``sglang==VERSION`` with ``--no-deps``, so each tuple is
closed: everything the import chains of ``sglang.srt.managers.io_struct`` (its
msgspec messages and ``msgpack_encode``/``msgpack_decode``), its codec hooks
(``sglang.srt.utils.msgpack_utils`` from 0.5.19 on; in ``io_struct`` itself
before) and ``sglang.srt.disaggregation.kv_events`` need, found by importing
them in each release's environment (``python -m conformance.releases envs
--engine sglang --check --modules ...``) and adding what was missing.

* 0.5.22 and 0.5.23: ``constraints/sglang-requirements.txt`` and
  ``constraints/sglang-nodeps.txt`` (whose headers say why: triton, the CPU
  torch, torchvision 0.16.2).
* 0.5.21: transformers 5.12.1, tokenizers 0.22.2 and openai 2.6.1, the
  versions 0.5.15 to 0.5.21 pin in their metadata. With transformers 5.19.0,
  0.5.15 to 0.5.19 fail at import: they register a ``qwen3_asr`` config that
  transformers 5.19 has itself (``ValueError: 'qwen3_asr' is already used by a
  Transformers config``).
* 0.5.15 to 0.5.20: also ``einops`` and ``xgrammar==0.2.1`` (their metadata's
  pin), which their model-config and function-call modules import when
  ``io_struct`` loads.

msgspec is 0.23.0 throughout.
"""

from __future__ import annotations

from typing import Tuple

from conformance.engines.profile import Release
from conformance.releases import with_pins

__all__ = ["RELEASES"]

#: constraints/sglang-requirements.txt and constraints/sglang-nodeps.txt (0.5.23), sorted.
PINS_0_5_23: Tuple[str, ...] = (
    "aiohappyeyeballs==2.7.1",
    "aiohttp==3.14.5",
    "aiosignal==1.4.0",
    "annotated-doc==0.0.7",
    "annotated-types==0.8.0",
    "anyio==4.16.0",
    "apache-tvm-ffi==0.1.11",
    "asttokens==3.0.2",
    "attrs==26.1.0",
    "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3",
    "click==8.5.1",
    "compressed-tensors==0.18.0",
    "dill==0.4.1",
    "distro==1.9.0",
    "executing==2.3.0",
    "filelock==4.3.1",
    "frozenlist==1.8.0",
    "fsspec==2026.9.0",
    "gguf==0.19.0",
    "h11==0.16.0",
    "hf-xet==1.8.0",
    "httpcore==1.0.9",
    "httpx==0.29.0",
    "huggingface_hub==1.33.0",
    "idna==3.20",
    "ipython==9.18.1",
    "ipython_pygments_lexers==1.1.1",
    "jedi==0.20.1",
    "Jinja2==3.1.6",
    "jiter==0.19.0",
    "loguru==0.7.3",
    "markdown-it-py==4.3.0",
    "MarkupSafe==3.0.4",
    "matplotlib-inline==0.2.2",
    "mdurl==0.1.2",
    "mpmath==1.3.0",
    "msgspec==0.23.0",
    "multidict==7.2.1",
    "networkx==3.6.1",
    "numpy==2.4.6",
    "openai==2.8.0",
    "orjson==3.13.0",
    "packaging==26.4",
    "parso==0.8.7",
    "partial-json-parser==0.2.1.1.post7",
    "pexpect==4.9.0",
    "pillow==13.0.0",
    "prompt_toolkit==3.0.53",
    "propcache==0.5.4",
    "psutil==7.2.2",
    "ptyprocess==0.7.0",
    "pure_eval==0.2.4",
    "pybase64==1.5.1",
    "pydantic==2.14.4",
    "pydantic_core==2.50.5",
    "Pygments==2.21.0",
    "PyYAML==6.0.4",
    "pyzmq==27.3.0",
    "regex==2026.11.19",
    "requests==2.34.2",
    "rich==15.0.0",
    "safetensors==0.8.0",
    "sentencepiece==0.2.1",
    "setuptools==84.2.1",
    "shellingham==1.5.4",
    "sniffio==1.3.1",
    "stack-data==0.6.3",
    "starlette==1.10.0",
    "sympy==1.14.0",
    "tokenizers==0.23.2",
    "torch==2.13.0+cpu",
    "torchvision==0.16.2",
    "tqdm==4.70.1",
    "traitlets==5.16.1",
    "transformers==5.19.0",
    "triton==3.7.1",
    "typer==0.29.2",
    "typing-inspection==0.4.5",
    "typing_extensions==4.16.0",
    "urllib3==2.8.0",
    "wcwidth==0.9.4",
    "yarl==1.25.1",
)

#: 0.5.21.
PINS_0_5_21: Tuple[str, ...] = with_pins(PINS_0_5_23, "openai==2.6.1", "tokenizers==0.22.2", "transformers==5.12.1")

#: 0.5.15 to 0.5.20.
PINS_0_5_15: Tuple[str, ...] = with_pins(PINS_0_5_21, "einops==0.8.2", "xgrammar==0.2.1")

RELEASES: Tuple[Release, ...] = (
    *(Release(version, requirements=PINS_0_5_15) for version in ("0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20")),
    Release("0.5.21", requirements=PINS_0_5_21),
    *(Release(version, requirements=PINS_0_5_23) for version in ("0.5.22", "0.5.23")),
)
