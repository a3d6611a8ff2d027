"""Finding an engine's wire message classes in its own modules, so a family's roots are read off the release, not listed by hand.

Two ways, for the two ways an engine says what crosses a boundary:

* :func:`classes_defined_in`: every ``msgspec.Struct``, dataclass or
  NamedTuple class a module defines (not those it imports), for modules that
  exist to hold wire messages (``vllm.v1.engine``, a protocol module).
* :func:`decoded_types`: every such class the module's own code decodes
  with an explicit type (``msgspec.msgpack.Decoder(X)``,
  ``msgspec.msgpack.decode(buf, type=X)``, or the engine's decoder class
  named in ``decoders``), for connectors whose messages sit beside their
  logic: the type a receiver decodes with *is* what its socket carries.
  Found by reading the module's source (``ast``), resolved in the imported
  module's namespace, or through the module's function-level imports (a
  connector that imports a message class where it uses it); a name that is
  not a class (a local variable, a type alias) is skipped.

Both import the module: ``ImportError`` when the release does not have it
(or a package it imports is missing), which the callers treat as "this
release does not have the family".
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Sequence

__all__ = ["classes_defined_in", "decoded_types", "is_message_class", "PLAIN_MSGSPEC_DECODERS"]

#: The calls of msgspec itself that decode with a declared type.
PLAIN_MSGSPEC_DECODERS = ("msgspec.msgpack.Decoder", "msgspec.msgpack.decode", "msgpack.Decoder", "msgpack.decode")


def is_message_class(obj: Any) -> bool:
    """A ``msgspec.Struct``, dataclass or NamedTuple class: what msgspec encodes field by field."""
    import msgspec

    if not isinstance(obj, type):
        return False
    return issubclass(obj, msgspec.Struct) or dataclasses.is_dataclass(obj) or (issubclass(obj, tuple) and hasattr(obj, "_fields"))


def classes_defined_in(module_name: str, *, exclude: Iterable[str] = ()) -> Dict[str, type]:
    """``name -> class`` for every message class ``module_name`` defines itself, by name; ``exclude`` drops names."""
    module = importlib.import_module(module_name)
    skip = set(exclude)
    return {
        name: obj
        for name, obj in sorted(vars(module).items())
        if name not in skip and is_message_class(obj) and getattr(obj, "__module__", None) == module_name
    }


def decoded_types(module_names: Sequence[str], *, decoders: Sequence[str] = PLAIN_MSGSPEC_DECODERS) -> Dict[str, type]:
    """``name -> class`` for every message class the modules' code decodes with one of ``decoders`` and an explicit type.

    ``decoders`` are dotted callee names as written in the source
    (``"msgspec.msgpack.Decoder"``; a bare ``"MsgpackDecoder"`` matches that
    name however it is imported). The type is the first positional argument
    of a ``...Decoder(...)`` call, or its ``type=``/``t=`` keyword; for a
    ``...decode(...)`` call, its ``type=`` keyword.
    """
    found: Dict[str, type] = {}
    for module_name in module_names:
        module = importlib.import_module(module_name)
        tree = ast.parse(inspect.getsource(module))
        namespace = {**_local_imports(tree, module.__package__ or module_name), **vars(module)}
        for expr in _type_arguments(tree, decoders):
            cls = _resolve(expr, namespace)
            if is_message_class(cls):
                found.setdefault(cls.__name__, cls)
    return dict(sorted(found.items()))


def _dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _matches(callee: str, decoders: Sequence[str]) -> bool:
    return any(callee == d or ("." not in d and callee.endswith("." + d)) for d in decoders)


def _type_arguments(tree: ast.AST, decoders: Sequence[str]) -> Iterator[ast.AST]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = _dotted(node.func)
        if callee is None or not _matches(callee, decoders):
            continue
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        if callee.rsplit(".", 1)[-1] == "decode":
            if "type" in keywords:
                yield keywords["type"]
        elif node.args:
            yield node.args[0]
        else:
            for key in ("type", "t"):
                if key in keywords:
                    yield keywords[key]


def _local_imports(tree: ast.AST, package: str) -> Dict[str, Any]:
    """``name -> object`` for every ``from X import name`` in the module's source, wherever it stands (imported now)."""
    found: Dict[str, Any] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.module is None and not node.level:
            continue
        source = ("." * node.level + (node.module or "")) if node.level else node.module
        try:
            imported = importlib.import_module(source or "", package if node.level else None)
        except ImportError:
            continue
        for alias in node.names:
            if hasattr(imported, alias.name):
                found[alias.asname or alias.name] = getattr(imported, alias.name)
    return found


def _resolve(expr: ast.AST, namespace: Mapping[str, Any]) -> Any:
    dotted = _dotted(expr)
    if dotted is None:
        return None
    head, *rest = dotted.split(".")
    obj = namespace.get(head)
    for attr in rest:
        obj = getattr(obj, attr, None)
    return obj
