"""The package's layout is its data flow: each stage imports only the stages before it, and no
module imports itself back through others."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "recommender"
STAGES = (
    "core",
    "backend",
    "networks",
    "tasks",
    "logs",
    "transfer",
    "learn",
    "recommend",
    "evaluate",
    "cli",
)
MAX_MODULE_LINES = 350


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in the file."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("recommender.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if not module.startswith("recommender"):
                continue
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}  # `from . import x`
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    return {m for m in found if m in modules and m != module_name(path)}


def stage_of(module: str) -> int:
    parts = module.split(".")
    return STAGES.index(parts[1]) if len(parts) > 1 and parts[1] in STAGES else -1


SOURCES = sorted(PACKAGE.rglob("*.py"))
GRAPH = {module_name(p): imports_of(p) for p in SOURCES}


def test_every_module_belongs_to_a_stage():
    strays = [m for m in GRAPH if m != "recommender" and stage_of(m) < 0]
    assert not strays, f"modules outside the stages {STAGES}: {strays}"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_follow_the_data_flow(module):
    later = sorted(m for m in GRAPH[module] if stage_of(m) > stage_of(module))
    assert not later, f"{module} imports a later stage: {later}"


def test_no_import_cycle():
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in GRAPH[module]:
            if not dep.endswith("__init__") and state.get(dep) == "open":
                pytest.fail("import cycle: " + " -> ".join([*path, module, dep]))
            if dep not in state:
                visit(dep, [*path, module])
        state[module] = "done"

    for module in GRAPH:
        if module not in state:
            visit(module, [])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_modules_stay_small(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines"
