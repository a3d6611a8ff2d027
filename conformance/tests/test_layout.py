"""The layout the suite promises: a generic core that names no engine, and an import graph without cycles.

Generic modules are every module of ``strategies`` and ``conformance``
outside an engine's package (``conformance/engines/<name>/``), the one module
that names the default engine (``conformance/engines/default.py``), the
golden vectors' cases (``conformance/vectors/cases/``: vectors of the
reference wire, which is SGLang's, some about SGLang's own ext codes) and the
tests. ``reference_codec`` is the reference codec of SGLang's wire and may
name it, but imports nothing from the suite.

The import graph is the one that runs: imports inside functions count,
imports under ``if TYPE_CHECKING:`` do not.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from typing import Dict, Iterator, List, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("reference_codec", "strategies", "conformance")
ENGINES_DIR = os.path.join("conformance", "engines")
ENGINE_NAME = re.compile(r"sglang|vllm", re.IGNORECASE)


def _is_test(rel: str) -> bool:
    parts = rel.split(os.sep)
    return "tests" in parts or parts[-1].startswith("test_") or parts[-1] == "conftest.py"


def _modules(packages=PACKAGES) -> Dict[str, str]:
    """Dotted name -> path of every non-test module of ``packages``."""
    found = {}
    for package in packages:
        for folder, dirs, files in os.walk(os.path.join(ROOT, package)):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
            for name in sorted(files):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)
                if not name.endswith(".py") or _is_test(rel):
                    continue
                dotted = rel[:-3].replace(os.sep, ".")
                found[dotted.removesuffix(".__init__")] = path
    return found


def _engine_names() -> List[str]:
    return sorted(d for d in os.listdir(os.path.join(ROOT, ENGINES_DIR)) if os.path.isfile(os.path.join(ROOT, ENGINES_DIR, d, "__init__.py")))


def generic_modules() -> Dict[str, str]:
    """The modules that must name no engine."""
    engines = tuple(f"conformance.engines.{name}" for name in _engine_names())
    return {
        name: path
        for name, path in _modules(("strategies", "conformance")).items()
        if not name.startswith(engines + ("conformance.vectors.cases",)) and name != "conformance.engines.default"
    }


def _docstring_lines(tree: ast.AST) -> Set[int]:
    lines: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def engine_names_in_code(path: str) -> Iterator[Tuple[int, str]]:
    """``(line, token)`` for every identifier or string (docstrings and comments aside) that names an engine."""
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    docstrings = _docstring_lines(ast.parse(source))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.NAME, tokenize.STRING) and tok.start[0] not in docstrings and ENGINE_NAME.search(tok.string):
            yield tok.start[0], tok.string


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _imports(name: str, path: str, known: Dict[str, str]) -> Set[str]:
    """Every module of ``known`` that ``name`` imports, at any depth of its code (functions included)."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    is_package = path.endswith("__init__.py")
    out: Set[str] = set()
    for node in _runtime_nodes(tree):
        targets: List[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                targets = [arg.value]
        for target in targets:
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                out.add(target)
    return out


def import_graph() -> Dict[str, Set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_generic_modules_name_no_engine():
    named = [
        f"{os.path.relpath(path, ROOT)}:{line}: {token}"
        for path in generic_modules().values()
        for line, token in engine_names_in_code(path)
    ]
    assert not named, "generic modules name an engine (move it into conformance/engines/<name>/):\n" + "\n".join(named)


def test_generic_modules_import_no_engine_package():
    graph = import_graph()
    engines = tuple(f"conformance.engines.{name}" for name in _engine_names())
    wrong = sorted(f"{name} imports {dep}" for name in generic_modules() for dep in graph.get(name, ()) if dep.startswith(engines))
    assert not wrong, "generic modules import an engine's package:\n" + "\n".join(wrong)


def test_every_engine_is_a_package_the_registry_finds():
    from conformance.engines import ENGINES

    assert sorted(ENGINES) == _engine_names() and len(ENGINES) >= 2


def test_import_graph_has_no_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles (each line a set of modules that import each other):\n" + "\n".join(" <-> ".join(c) for c in found)


def test_layers_import_downward_only():
    """``reference_codec`` imports nothing of the suite; ``strategies`` nothing of ``conformance``."""
    above = {"reference_codec": ("strategies", "conformance"), "strategies": ("conformance",)}
    wrong = sorted(
        f"{name} imports {dep}"
        for name, deps in import_graph().items()
        for dep in deps
        if dep.split(".")[0] in above.get(name.split(".")[0], ())
    )
    assert not wrong, "an import runs upward:\n" + "\n".join(wrong)


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_engine_name_finder_reads_code_not_docstrings(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Works for SGLang."""\n# vLLM too\nx = "sglang"\nfrom conformance.engines import vllm\n')
    assert [token for _, token in engine_names_in_code(str(module))] == ['"sglang"', "vllm"]
