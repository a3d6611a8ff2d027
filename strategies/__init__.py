"""Hypothesis strategies for every IPC message variant.

Public surface, grouped by concern::

    # any msgspec Struct, dataclass or NamedTuple (ours or another implementation's), and any msgspec type;
    # generic: by default no registry, no batch field, untyped values with no enums
    from_struct(cls, overrides=..., registry=..., batch_field=..., untyped=...), from_annotation(tp), FieldContext

    # the reference schema (SGLang's messages): its meanings are an opt-in pack, strategies.reference
    messages(types=None), message_types(root=None)      # + st.from_type(T) for every schema type
    reference_struct(cls, overrides=None, **kw)         # from_struct(cls, overrides, **REFERENCE_OPTIONS, **kw)
    REFERENCE_OPTIONS, REFERENCE_REGISTRY, REFERENCE_UNTYPED

    # meaning the types do not carry (field name -> factory)
    SemanticRegistry, register_defaults
    logprob_rows, logprob_floats, token_ids, token_id_arrays, finish_reasons,
    stop_strings, mm_features, model_specific_data, hidden_states,
    routed_experts, pooled_hidden_states, embeddings, type_signature

    # batches
    batch_sizes, per_request, request_ids

    # values
    integers_between, int64s, uint64s, int128s, big_ints, edge_floats,
    nan_payloads, texts, unencodable_text (opt-in), numpy_scalars, arrays,
    untyped_values, untyped_leaves, untyped_keys, torch_sizes

    # tensors
    tensors, ndarrays, tensor_shapes, devices, visible_devices

    # profiles and targeting
    load_profile, profile_from_environment, register_profiles, large_batch_limit,
    target_size, measure

Importing this package changes nothing outside it, as importing Hypothesis
loads no profile. A runner calls :func:`load_profile` (it registers the
``ci``/``dev``/``nightly`` profiles and loads the one the environment selects,
see :mod:`strategies.profiles`) and, to make ``st.from_type`` draw the
reference schema's messages, :func:`register_type_strategies`. This
repository's tests get both from the pytest plugin
:mod:`strategies.pytest_plugin` (each test folder's ``conftest.py`` imports its hook). The
coverage report is ``python -m strategies.coverage``.
"""

from .batches import DISTINCT_REQUESTS, batch_sizes, per_request, request_ids
from .builder import FieldContext, from_annotation, from_struct
from .messages import message_types, messages, register_type_strategies
from .profiles import (
    PROFILES,
    large_batch_limit,
    load_profile,
    profile_from_environment,
    register_profiles,
)
from .reference import OPTIONS as REFERENCE_OPTIONS
from .reference import REGISTRY as REFERENCE_REGISTRY
from .reference import UNTYPED as REFERENCE_UNTYPED
from .reference import reference_struct
from .registry import FieldFactory, SemanticRegistry
from .semantic import (
    embeddings,
    finish_reasons,
    hidden_states,
    logprob_floats,
    logprob_rows,
    mm_features,
    model_specific_data,
    pooled_hidden_states,
    register_defaults,
    routed_experts,
    stop_strings,
    token_id_arrays,
    token_ids,
    type_signature,
)
from .targeting import MessageSize, measure, target_size
from .tensors import (
    NDARRAY_LAYOUTS,
    TENSOR_LAYOUTS,
    devices,
    ndarrays,
    tensor_shapes,
    tensors,
    visible_devices,
)
from .untyped import torch_sizes, untyped_keys, untyped_leaves, untyped_values
from .values import (
    arrays,
    big_ints,
    edge_floats,
    int64s,
    int128s,
    integers_between,
    nan_payloads,
    numpy_scalars,
    texts,
    uint64s,
    unencodable_text,
)

__all__ = [
    # structs and types
    "from_struct",
    "from_annotation",
    "FieldContext",
    "messages",
    "message_types",
    "register_type_strategies",
    # the reference schema's pack
    "reference_struct",
    "REFERENCE_OPTIONS",
    "REFERENCE_REGISTRY",
    "REFERENCE_UNTYPED",
    # semantic
    "SemanticRegistry",
    "FieldFactory",
    "register_defaults",
    "logprob_rows",
    "logprob_floats",
    "token_ids",
    "token_id_arrays",
    "finish_reasons",
    "stop_strings",
    "mm_features",
    "model_specific_data",
    "hidden_states",
    "routed_experts",
    "pooled_hidden_states",
    "embeddings",
    "type_signature",
    # batches
    "batch_sizes",
    "per_request",
    "request_ids",
    "DISTINCT_REQUESTS",
    # values
    "integers_between",
    "int64s",
    "uint64s",
    "int128s",
    "big_ints",
    "edge_floats",
    "nan_payloads",
    "texts",
    "unencodable_text",
    "numpy_scalars",
    "arrays",
    "untyped_values",
    "untyped_leaves",
    "untyped_keys",
    "torch_sizes",
    # tensors
    "tensors",
    "ndarrays",
    "tensor_shapes",
    "devices",
    "visible_devices",
    "TENSOR_LAYOUTS",
    "NDARRAY_LAYOUTS",
    # profiles and targeting
    "PROFILES",
    "register_profiles",
    "load_profile",
    "profile_from_environment",
    "large_batch_limit",
    "target_size",
    "measure",
    "MessageSize",
]
