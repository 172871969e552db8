"""The shape of the house (DESIGN.md, issue 12): one import package, the dependency rules, no import
cycles, a scenarios/ that shows its parts.  The rule checker is also run on small broken trees, so a
broken rule is known to fail the test."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "whatif"
SKIP_DIRS = {"tests", "build", "dist", "results"}        # top-level directories that are not the package

# (importer prefix, imported prefix, why): the importer's modules never import the imported ones
FORBIDDEN = [
    ("whatif.models", "whatif.simulator", "an engine must work the same on real data"),
    ("whatif.models", "whatif.scenarios", "engines do not know how studies run"),
    ("whatif.models", "whatif.cli", "engines do not know the command line"),
    ("whatif.simulator", "whatif.models", "the simulator produces measurements, never analyses them"),
    ("whatif.simulator", "whatif.scenarios", "the simulator does not know how studies run"),
    ("whatif.simulator", "whatif.cli", "the simulator does not know the command line"),
    ("whatif.jitcache", "whatif.simulator", "the simulator's kernels and the engines' load through it alike"),
    ("whatif.jitcache", "whatif.models", "the simulator's kernels and the engines' load through it alike"),
    ("whatif.scenarios", "whatif.cli", "the command line calls scenarios, not the other way"),
    ("whatif.scenarios.studies.", "whatif.scenarios.commands", "studies never import commands"),
    ("whatif.scenarios.commands.", "whatif.scenarios.studies", "commands never import studies"),
    ("whatif.scenarios.render", "whatif.scenarios.studies", "render serves studies and commands alike"),
    ("whatif.scenarios.render", "whatif.scenarios.commands", "render serves studies and commands alike"),
    ("whatif.scenarios.results", "whatif.scenarios.studies", "the writer serves every study"),
    ("whatif.scenarios.results", "whatif.scenarios.commands", "the writer serves every command"),
]
SIBLINGS = ("whatif.scenarios.studies", "whatif.scenarios.commands")   # their modules never import each other


def module_files(root: Path) -> dict[str, Path]:
    """Module name (whatif.x.y) -> file, for every .py file of the package rooted at ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if (len(rel.parts) > 1 and rel.parts[0] in SKIP_DIRS) or any(p.startswith(".") for p in rel.parts):
            continue
        parts = [PACKAGE, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports, anywhere in the file (``from a import b`` counts as
    importing ``a.b`` when that is a module)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for stmt in ast.walk(tree) if isinstance(stmt, ast.If) and _is_type_checking(stmt.test)
                   for child in stmt.body for n in ast.walk(child)}
    for node in ast.walk(tree):
        if id(node) in typing_only:                 # annotations only: not imported at run time
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target.startswith(PACKAGE + ".") and target != name:
                found.add(target)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def rule_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for importer, targets in sorted(graph.items()):
        for target in sorted(targets):
            for src, dst, why in FORBIDDEN:
                if (importer == src or importer.startswith(src if src.endswith(".") else src + ".")) \
                        and (target == dst or target.startswith(dst + ".")):
                    bad.append(f"{importer} imports {target}: {why}")
            for group in SIBLINGS:
                if importer.startswith(group + ".") and target.startswith(group + ".") and importer != target:
                    bad.append(f"{importer} imports its sibling {target}")
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
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

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# ------------------------------------------------------------------------------------ the project
def test_dependency_rules_hold():
    assert rule_violations(import_graph(ROOT)) == []


def test_no_import_cycles():
    assert cycles(import_graph(ROOT)) == []


def test_scenarios_top_level_holds_only_infrastructure():
    files = sorted(p.name for p in (ROOT / "scenarios").glob("*.py"))
    assert len(files) <= 8, files
    for part in ("studies", "commands", "render", "results", "checks"):
        assert (ROOT / "scenarios" / part / "__init__.py").is_file(), part


def test_pyproject_lists_every_package_and_only_whatif():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {PACKAGE: "."}
    packages = set(config["packages"])
    on_disk = {name for name, path in module_files(ROOT).items() if path.name == "__init__.py"}
    assert packages == on_disk
    assert {p.split(".")[0] for p in packages} == {PACKAGE}
    # a directory of modules without __init__.py would be left out of the install
    for name, path in module_files(ROOT).items():
        assert (path.parent / "__init__.py").is_file(), f"{path.parent} has modules but no __init__.py"


def test_no_source_file_of_the_package_is_ignored_by_git():
    """An ignore rule meant for run outputs (``results/``) once hid ``scenarios/results/`` from git: the
    package worked here and failed to install from a fresh clone."""
    assert (ROOT / ".git").exists(), "the tests run from a git checkout"
    paths = [str(p.relative_to(ROOT)) for p in module_files(ROOT).values()]
    done = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", *paths], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == []


def test_installed_project_owns_only_the_whatif_import_name():
    """The top-level names the installed distribution declares, and an import from another directory."""
    from importlib import metadata

    dist = metadata.distribution(PACKAGE)
    top = (dist.read_text("top_level.txt") or "").split()
    assert top in ([], [PACKAGE])       # editable installs may not write the file
    assert dist.entry_points.select(group="console_scripts")["whatif"].value == "whatif.cli:main"
    code = "import whatif.simulator, whatif.models, whatif.scenarios.runner, whatif.cli; print(whatif.__version__)"
    done = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("cli", "models", "scenarios", "simulator"):
        probe = subprocess.run([sys.executable, "-c", f"import {name}"], cwd="/", capture_output=True, text=True,
                               timeout=60)
        assert probe.returncode != 0, f"the installed project exposes the top-level name {name!r}"


# ------------------------------------------------------------------------------------ the checker can fail
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel in list(files):
        parent = (tmp_path / rel).parent
        while parent != tmp_path:
            (parent / "__init__.py").touch()
            parent = parent.parent
    return tmp_path


@pytest.mark.parametrize("files, expected", [
    ({"models/eng.py": "from whatif.simulator.core import model\n", "simulator/core/model.py": ""},
     "whatif.models.eng imports whatif.simulator.core.model"),
    ({"simulator/m.py": "def f():\n    import whatif.models.x\n", "models/x.py": ""},
     "whatif.simulator.m imports whatif.models.x"),
    ({"scenarios/studies/a.py": "from whatif.scenarios.commands import b\n", "scenarios/commands/b.py": ""},
     "whatif.scenarios.studies.a imports whatif.scenarios.commands.b"),
    ({"scenarios/commands/a.py": "from . import b\n", "scenarios/commands/b.py": ""},
     "whatif.scenarios.commands.a imports its sibling whatif.scenarios.commands.b"),
    ({"scenarios/studies/a.py": "from .b import f\n", "scenarios/studies/b.py": "def f(): pass\n"},
     "whatif.scenarios.studies.a imports its sibling whatif.scenarios.studies.b"),
])
def test_a_broken_rule_is_reported(tmp_path, files, expected):
    violations = rule_violations(import_graph(_tree(tmp_path, files)))
    assert any(v.startswith(expected) for v in violations), violations


def test_a_cycle_is_reported(tmp_path):
    root = _tree(tmp_path, {"scenarios/a.py": "from whatif.scenarios import b\n",
                            "scenarios/b.py": "def f():\n    from whatif.scenarios.a import g\n"})
    assert cycles(import_graph(root)) == [["whatif.scenarios.a", "whatif.scenarios.b"]]
