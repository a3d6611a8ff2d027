"""The vLLM minor releases the release history covers (0.23.0 to 0.34.0), each with the pure-Python pins that import it on a CPU machine.

:mod:`conformance.releases` installs a release's ``requirements`` with
``--no-deps``, then ``vllm==VERSION`` with ``--no-deps`` (its declared
dependencies are CUDA builds and GPU kernels), so each tuple is closed:
everything ``vllm.v1.engine``, ``vllm.v1.serial_utils`` and
``vllm.distributed.kv_events`` import, found by importing them in each
release's environment (``python -m conformance.releases envs --engine vllm
--check --modules ...``) and adding what was missing, at the newest version
the release's metadata accepts.

* 0.34.0: the pins of ``constraints/vllm-requirements.txt`` with what they
  pulled in under ``tox -e vllm`` (the suite's own tooling, pytest and
  hypothesis, aside), and three more: ``vllm.distributed.kv_events`` imports
  ``vllm.v1.request``, whose structured-output backends touch ``llguidance``
  and ``xgrammar`` (and so ``apache-tvm-ffi``) when their classes are defined.
* 0.30.0 to 0.33.0: ``vllm.v1.engine`` reaches the OpenAI-compatible server's
  MCP tool server (``vllm.entrypoints.mcp.tool_server``): ``openai-harmony``,
  ``openai`` (3.x, which runs on ``httpx2``), ``fastapi`` and what it needs.
* 0.24.0 to 0.29.0: the same tool server without ``fastapi``; their Mooncake
  connector imports ``httpx`` (0.30.0 on take it from ``huggingface_hub``).
* 0.23.0: also ``gguf`` (``vllm.transformers_utils.gguf_utils``).

The connectors' modules (the ``mooncake``, ``moriio`` and ``nixl`` families)
import ``uvicorn`` and ``fastapi``, ``msgpack`` and ``einops``
(``constraints/vllm-nodeps.txt``): in every release's pins, so a family a
release has is never recorded as absent for a missing package.

transformers 5.25.0 (0.34.0's pin, above the ``<5.23`` vLLM declares) imports
every one of them; msgspec is 0.23.0 throughout.
"""

from __future__ import annotations

from typing import Tuple

from conformance.engines.profile import Release
from conformance.releases import with_pins

__all__ = ["RELEASES"]


#: constraints/vllm-requirements.txt and the rest of tox -e vllm's environment (0.34.0), sorted.
PINS_0_34: Tuple[str, ...] = (
    "aiohappyeyeballs==2.7.1",
    "aiohttp==3.14.5",
    "aiosignal==1.4.0",
    "annotated-doc==0.0.7",
    "annotated-types==0.8.0",
    "anyio==4.16.0",
    "apache-tvm-ffi==0.1.11",
    "attrs==26.1.0",
    "cachetools==8.0.2",
    "cbor2==6.3.0",
    "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3",
    "click==8.5.1",
    "cloudpickle==3.1.3",
    "einops==0.8.2",
    "fastapi==0.136.3",
    "filelock==4.3.2",
    "frozenlist==1.8.0",
    "fsspec==2026.9.0",
    "h11==0.16.0",
    "hf-xet==1.8.0",
    "httpcore2==2.16.2",
    "httpx2==2.16.2",
    "huggingface_hub==2.4.0",
    "idna==3.20",
    "Jinja2==3.1.6",
    "kernels==0.19.1",
    "llguidance==1.7.6",
    "markdown-it-py==4.3.0",
    "MarkupSafe==3.0.4",
    "mdurl==0.1.2",
    "mpmath==1.3.0",
    "msgpack==1.2.4",
    "msgspec==0.23.0",
    "multidict==7.2.1",
    "networkx==3.6.1",
    "numpy==2.4.6",
    "packaging==26.4",
    "pillow==13.0.0",
    "prometheus_client==0.26.0",
    "propcache==0.5.4",
    "psutil==7.2.2",
    "py-cpuinfo2==10.1.1",
    "py-cpuinfo==9.0.0",
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
    "shellingham==1.5.4",
    "starlette==1.10.0",
    "sympy==1.14.0",
    "tokenizers==0.23.3",
    "tomlkit==0.15.3",
    "torch==2.13.0",
    "tqdm==4.70.1",
    "transformers==5.25.0",
    "truststore==0.10.5",
    "typer==0.29.2",
    "typing-inspection==0.4.5",
    "typing_extensions==4.16.0",
    "urllib3==2.8.0",
    "uvicorn==0.55.0",
    "uvloop==0.23.0",
    "xgrammar==0.2.8",
    "yarl==1.25.1",
)

#: 0.30.0 to 0.33.0.
PINS_0_30: Tuple[str, ...] = with_pins(
    PINS_0_34,
    "openai==3.63.0",
    "openai-harmony==0.0.8",
    "partial-json-parser==0.2.1.1.post7",
    "sniffio==1.3.1",
)

#: 0.24.0 to 0.29.0.
PINS_0_24: Tuple[str, ...] = with_pins(PINS_0_34, "httpcore==1.0.9", "httpx==0.29.0", "openai==3.63.0", "openai-harmony==0.0.8", "sniffio==1.3.1")

#: 0.23.0.
PINS_0_23: Tuple[str, ...] = with_pins(PINS_0_24, "gguf==0.19.0")

RELEASES: Tuple[Release, ...] = (
    Release("0.23.0", requirements=PINS_0_23),
    *(Release(version, requirements=PINS_0_24) for version in ("0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0")),
    *(Release(version, requirements=PINS_0_30) for version in ("0.30.0", "0.31.0", "0.32.0", "0.33.0")),
    Release("0.34.0", requirements=PINS_0_34),
)
