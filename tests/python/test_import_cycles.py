"""The attnc package's modules import each other one way only (issue 53,
item 5: `_torch` and `_hf` imported each other, one of the two imports at
the end of its module, and `_torch` read `compile` from the package that
imports it inside functions). The source's imports are read with `ast`,
every one of them: at module level and inside functions, classes, `try`
and `if`, which is where a circle hides."""

import ast
import os

from conftest import ROOT

PACKAGE = os.path.join(ROOT, "python", "attnc")


def _module_name(package_dir, path):
    """`attnc` for attnc/__init__.py, `attnc.x` for attnc/x.py (and
    `attnc.sub.y` below)."""
    top = os.path.basename(package_dir)
    relative = os.path.relpath(path, package_dir)[:-len(".py")]
    parts = [top] + relative.split(os.sep)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(package_dir):
    """{module name: path} of the package's Python sources."""
    modules = {}
    for folder, _, files in os.walk(package_dir):
        if "__pycache__" in folder:
            continue
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                modules[_module_name(package_dir, path)] = path
    return modules


def _imported(module, is_package, node, modules):
    """The package's modules that import statement `node` in `module`
    runs (an attribute read from a package runs its __init__: an edge to
    the package)."""
    if isinstance(node, ast.Import):
        targets = []
        for alias in node.names:
            name = alias.name
            # import a.b.c runs a.b.c: its own code is what it depends on.
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                targets.append(name)
        return targets
    if node.level:
        base = module.split(".")
        if not is_package:
            base.pop()
        base = base[:len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    targets = []
    for alias in node.names:
        if f"{source}.{alias.name}" in modules:
            targets.append(f"{source}.{alias.name}")  # a submodule
        elif source in modules:
            targets.append(source)                   # a name it defines
    return targets


def import_graph(package_dir):
    """{module: {imported module: [line, ...]}} over every import statement
    of the package's sources, wherever it stands."""
    modules = _modules(package_dir)
    graph = {m: {} for m in modules}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        is_package = os.path.basename(path) == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(module, is_package, node, modules):
                if target != module:
                    graph[module].setdefault(target, set()).add(node.lineno)
    return {m: {t: sorted(at) for t, at in imports.items()}
            for m, imports in graph.items()}, modules


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan),
    each as a sorted list: every module in one reaches every other."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(component, graph, modules):
    """The imports among a cycle's modules, file:line each."""
    lines = []
    for m in component:
        for target, at in sorted(graph[m].items()):
            if target in component:
                where = ", ".join(
                    f"{os.path.relpath(modules[m], ROOT)}:{n}" for n in at)
                lines.append(f"  {m} imports {target} ({where})")
    return "\n".join(lines)


def test_the_package_imports_one_way():
    graph, modules = import_graph(PACKAGE)
    assert "attnc" in modules and len(modules) > 1, PACKAGE
    found = cycles(graph)
    assert not found, "import cycles in the attnc package:\n" + "\n".join(
        _describe(c, graph, modules) for c in found)


def test_the_check_sees_imports_inside_functions(tmp_path):
    """The check itself: a circle whose one side imports inside a function
    (or reads a name from the package's __init__) is found; a one-way
    package is not refused."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "def lazy():\n    from .b import g\n    return g\n")
    (pkg / "a.py").write_text("import os\nfrom . import b\n")
    (pkg / "b.py").write_text(
        "def g():\n    try:\n        from .a import x\n"
        "    except ImportError:\n        pass\n")
    (pkg / "c.py").write_text("from . import lazy\n")
    graph, modules = import_graph(str(pkg))
    assert graph == {"pkg": {"pkg.b": [2]}, "pkg.a": {"pkg.b": [2]},
                     "pkg.b": {"pkg.a": [3]}, "pkg.c": {"pkg": [1]}}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]

    (pkg / "b.py").write_text("import pkg.c\n")
    graph, _ = import_graph(str(pkg))
    assert graph["pkg.b"] == {"pkg.c": [1]}
    assert cycles(graph) == [["pkg", "pkg.b", "pkg.c"]]

    (pkg / "c.py").write_text("import json\n")
    assert cycles(import_graph(str(pkg))[0]) == []
