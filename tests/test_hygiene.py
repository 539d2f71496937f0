"""Habits of the repository that a review would otherwise have to catch by eye."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rag_core.settings import ENVIRONMENT_VARIABLES


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_benchmarks_import_no_test_module(repo_root):
    for path in sorted((repo_root / "benchmarks").glob("*.py")):
        bad = {name for name in _imports(path) if name == "tests" or name.startswith("tests.")}
        assert not bad, f"{path.name} imports {bad}: move what it needs into rag_core.testing"


def test_tests_take_fixtures_from_conftest_the_pytest_way(repo_root):
    for path in sorted((repo_root / "tests").rglob("test_*.py")):
        bad = {name for name in _imports(path) if name.endswith("conftest")}
        assert not bad, f"{path.name} imports {bad}: ask for the fixture as an argument instead"


def _sources(repo_root: Path) -> list[Path]:
    return [*sorted((repo_root / "rag_core").rglob("*.py")), *sorted((repo_root / "pages").glob("*.py")),
            repo_root / "app.py", *sorted((repo_root / "scripts").glob("*.sh"))]


def test_every_environment_variable_is_declared_in_settings(repo_root):
    read_directly = re.compile(r"""(?:environ(?:\.get)?\(|environ\[|getenv\()\s*["'](RAG_CORE_\w+)""")
    for path in _sources(repo_root):
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r"RAG_CORE_[A-Z_]+", text):
            assert name in ENVIRONMENT_VARIABLES, f"{path.name} uses {name}; declare it in rag_core/settings.py"
        if path.suffix == ".py" and path.name != "settings.py":
            assert not read_directly.findall(text), f"{path.name} reads a RAG_CORE_* variable by its literal name"


@pytest.mark.parametrize("name", sorted(ENVIRONMENT_VARIABLES))
def test_the_readme_lists_every_environment_variable(repo_root, name):
    assert f"`{name}`" in (repo_root / "README.md").read_text(encoding="utf-8")


def test_the_readme_layout_names_every_module_and_no_other(repo_root):
    """The README's Layout section is the map of the package: every module is on it, and
    every name on it is a module."""
    import re

    text = (repo_root / "README.md").read_text(encoding="utf-8")
    layout = text[text.index("## Layout"):]
    named = set(re.findall(r"`([a-z_]+)/?`", layout))
    package = repo_root / "rag_core"
    modules = {p.stem for p in package.rglob("*.py") if p.stem != "__init__"}
    modules |= {p.parent.name for p in package.rglob("__init__.py") if p.parent != package}
    missing = modules - named
    assert not missing, f"modules missing from the README's Layout section: {sorted(missing)}"
    pages = {p.stem for p in (repo_root / "pages").rglob("*.py") if p.stem != "__init__"}
    import rag_core
    import rag_core.compat

    api = set(rag_core.__all__) | set(getattr(rag_core.compat, "__all__", ())) | {"__all__"}
    allowed = modules | pages | api | {"rag_core", "pages", "common", "tests", "app", "benchmarks"}
    unknown = {n for n in named if n not in allowed and not n.startswith("rag_")}
    assert not unknown, f"names in the Layout section that are not modules: {sorted(unknown)}"


# The package's floors, bottom-up, as the README's Layout table lists them: a module imports only
# from its own floor or below (a lower floor never reaches up). Inside collections/, the stores sit
# below the ingest pipeline and the library.
FLOORS = {
    "settings": 0, "types": 0, "errors": 0, "atomic": 0, "safe_files": 0,
    "text": 1, "output": 1,
    "pdf": 2, "models": 2,
    "records": 2.5,
    "index": 3,
    "retrieval": 4,
    "citations": 5,
    "collections.store": 6, "collections.preferences": 6.5, "collections.ingest": 6.5, "collections.repair": 6.7,
    "collections.library": 6.9,
    "collections": 6.9,
    "evaluation": 7,
    "lab": 8,
    "cli": 9, "check_worker": 9, "compat": 9, "testing": 9, "__main__": 9, "__init__": 9,
}


def _floor_of(parts: tuple[str, ...]) -> tuple[str, float]:
    for depth in (2, 1):
        key = ".".join(parts[:depth])
        if key in FLOORS:
            return key, FLOORS[key]
    raise AssertionError(f"rag_core.{'.'.join(parts)} is on no floor: add it to FLOORS and to the README's Layout")


def test_no_module_imports_from_a_floor_above_its_own(repo_root):
    package = repo_root / "rag_core"
    upward = []
    for path in sorted(package.rglob("*.py")):
        me, mine = _floor_of(path.relative_to(package).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):  # imports inside functions count too
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                parts = tuple(name.split(".")[1:])
                if name.split(".")[0] != "rag_core" or not parts:
                    continue
                them, theirs = _floor_of(parts)
                if theirs > mine:
                    upward.append(f"{path.relative_to(repo_root)}:{node.lineno} ({me}) imports {name} ({them})")
    assert not upward, "imports that run up the layers:\n" + "\n".join(upward)


def _module_name(package: Path, path: Path) -> str:
    parts = ("rag_core", *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.Module):
    """The import statements of a module, in functions too, leaving out ``if TYPE_CHECKING:`` blocks
    (annotations only: they never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
            yield node


def import_graph(package: Path) -> dict[str, set[str]]:
    """Which rag_core module imports which: ``from rag_core.a import b`` is an arrow to the module
    ``rag_core.a.b`` when there is one, else to ``rag_core.a``."""
    modules = {_module_name(package, path): path for path in sorted(package.rglob("*.py"))}

    def module_of(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level or not (node.module or "").startswith("rag_core"):
                    continue
                targets = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                           else module_of(node.module) for alias in node.names]
            else:
                targets = [module_of(alias.name) for alias in node.names if alias.name.startswith("rag_core")]
            graph[name].update(t for t in targets if t and t != name)
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that reach each other by imports (strongly connected, more than one)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in graph:  # Tarjan's algorithm, without recursion
        if root in order:
            continue
        work = [(root, iter(sorted(graph[root])))]
        order[root] = low[root] = len(order)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in order:
                    order[nxt] = low[nxt] = len(order)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        circles.append(sorted(members))
    return circles


def test_no_modules_import_each_other_in_a_circle(repo_root):
    """No circle of imports anywhere in the package, however deep in a function the import sits:
    not between floors (the test above) and not inside one, the ground floor and the door included
    (a circle there is what `rag_core/cli.py`, `cli_check.py` and `cli_meta.py` were)."""
    circles = import_circles(import_graph(repo_root / "rag_core"))
    assert not circles, "modules that import each other in a circle:\n" + "\n".join(
        " <-> ".join(circle) for circle in circles)


def test_the_circle_finder_finds_circles():
    """The finder itself: a circle through three modules, a pair, and none in a chain."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d", "f"}, "f": set()}
    assert sorted(import_circles(graph)) == [["a", "b", "c"], ["d", "e"]]
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_import_graph_reads_lazy_imports_and_skips_type_checking(tmp_path):
    package = tmp_path / "rag_core"
    (package / "door").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "door" / "__init__.py").write_text("from rag_core.door import one\n", encoding="utf-8")
    (package / "door" / "one.py").write_text("def f():\n    from rag_core import settings\n", encoding="utf-8")
    (package / "settings.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rag_core.door.one import f\n"
        "import rag_core.door.one\n", encoding="utf-8")
    graph = import_graph(package)
    assert graph["rag_core.door"] == {"rag_core.door.one"}
    assert graph["rag_core.door.one"] == {"rag_core.settings"}
    assert graph["rag_core.settings"] == {"rag_core.door.one"}  # the plain import, not the TYPE_CHECKING one
    assert import_circles(graph) == [["rag_core.door.one", "rag_core.settings"]]
