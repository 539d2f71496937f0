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
    "cli": 9, "cli_check": 9, "cli_meta": 9, "check_worker": 9, "compat": 9, "testing": 9, "__main__": 9, "__init__": 9,
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
