"""The one-way arrows of docs/architecture.md, checked on the import statements of every module.

An allowlist copied from the diagram: every room names the rooms it may import, and every import
counts — ``import pyprecision.x``, ``from pyprecision.x import y``, ``from pyprecision import x`` —
at module level or inside a function (a deferred import is still an arrow)."""
import ast
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "pyprecision"

#: the base modules every room may use
BASE = {"errors", "formats"}
#: room -> the other rooms it may import (besides BASE); docs/architecture.md draws exactly this
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "formats": {"errors"},
    "pass_manager": {"errors"},
    "frontend": set(),
    "kernel": set(),
    "ir": set(),
    "hlo": {"pass_manager"},
    "io": {"kernel"},  # only torch_files.py: the one torch tensor <-> numpy view (kernel)
    "testing": {"kernel"},
    "lower": {"hlo", "ir"},
    "passes": {"ir", "kernel", "frontend", "pass_manager"},
    "reencode": {"io", "kernel"},
    "emulate": {"ir", "hlo", "lower", "passes", "kernel", "frontend"},
    "verify": {"emulate", "passes", "ir", "hlo", "kernel", "io", "frontend"},
    "explain": {"verify", "emulate", "passes", "ir", "hlo", "kernel", "frontend"},
    "tune": {"emulate", "lower", "passes", "ir", "hlo", "kernel", "frontend", "io"},
    "tools": {"explain", "verify", "emulate", "passes", "ir", "hlo", "kernel", "io", "frontend",
              "reencode", "lower", "testing", "tune"},
    "data": set(),
}
#: the package's own __init__ may name every room (it loads them lazily, PEP 562)
ROOMS = set(ALLOWED) - {"data"}


def imported_modules(path: Path) -> set[str]:
    """Every absolute ``pyprecision...`` module named by an import statement (at any depth); ``from
    pyprecision import x`` names ``pyprecision.x``."""
    tree = ast.parse(path.read_text(), str(path))
    mods = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pyprecision":
                names = [f"pyprecision.{a.name}" for a in node.names]
            else:
                names = [node.module]
        mods.update(n for n in names if n.split(".")[0] == "pyprecision")
    return mods


def imported_rooms(path: Path) -> set[str]:
    return {m.split(".")[1] for m in imported_modules(path) if len(m.split(".")) > 1} & ROOMS


def room_modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).parts
        yield (rel[0] if len(rel) > 1 else path.stem), path


def test_every_room_is_on_the_diagram():
    found = {room for room, _ in room_modules()} - {"__init__"}
    assert found <= set(ALLOWED), f"rooms missing from ALLOWED: {sorted(found - set(ALLOWED))}"


@pytest.mark.parametrize("room,path", list(room_modules()), ids=lambda v: str(v))
def test_imports_follow_the_arrows(room, path):
    if room == "__init__":
        return
    bad = imported_rooms(path) - ALLOWED[room] - BASE - {room}
    assert not bad, f"{path.relative_to(PKG.parent)} ({room}) imports {sorted(bad)}: not an arrow"


def test_the_arrows_have_no_cycle():
    state: dict[str, int] = {}

    def visit(room: str, path: list[str]) -> None:
        if state.get(room) == 2:
            return
        assert state.get(room) != 1, "cycle: " + " -> ".join(path + [room])
        state[room] = 1
        for nxt in ALLOWED[room] | (BASE - {room} if room not in BASE else set()):
            if nxt != "errors" or room != "errors":
                visit(nxt, path + [room])
        state[room] = 2

    for room in ALLOWED:
        visit(room, [])


def test_nothing_imports_tools():
    for room, path in room_modules():
        if room not in ("tools", "__init__"):
            assert "tools" not in imported_rooms(path), f"{path} imports pyprecision.tools"


# STYLE rule 1: another room is entered only through its __init__ (``from pyprecision.ir import X``,
# never ``from pyprecision.ir.dtypes import X``). Checked for these rooms:
FACADE_ROOMS = {"ir", "passes", "frontend", "hlo", "emulate", "kernel", "io", "verify", "lower",
                "reencode", "tune"}


@pytest.mark.parametrize("room,path", list(room_modules()), ids=lambda v: str(v))
def test_other_rooms_are_entered_through_their_init(room, path):
    deep = sorted(
        m
        for m in imported_modules(path)
        if len(m.split(".")) > 2
        and m.split(".")[1] in FACADE_ROOMS
        and m.split(".")[1] != room
    )
    assert not deep, (
        f"{path.relative_to(PKG.parent)} ({room}) reaches into {deep}; "
        "import from the room's __init__ instead"
    )


def test_test_modules_outside_packages_have_unique_basenames():
    """Test folders without __init__.py import their files as top-level modules (pytest's default
    import mode): two such files with one basename break collection."""
    tests = Path(__file__).resolve().parent
    seen: dict[str, Path] = {}
    for path in sorted(tests.rglob("test_*.py")):
        if (path.parent / "__init__.py").exists():
            continue
        assert path.name not in seen, f"{path} and {seen[path.name]} share a basename"
        seen[path.name] = path


#: emulate's sub-rooms (docs/architecture.md): two executors over shared array algorithms, and the
#: compiler driver above them. sub-room -> what it may import besides BASE and itself.
EMULATE_SUBROOMS: dict[str, set[str]] = {
    "shared": {"hlo", "kernel"},
    "hlo": {"emulate.shared", "hlo", "kernel"},
    "ir": {"emulate.shared", "ir", "hlo", "kernel"},
    "pipeline": {"emulate.ir", "hlo", "lower", "passes", "frontend", "kernel", "ir"},
}


def emulate_modules():
    for path in sorted((PKG / "emulate").rglob("*.py")):
        rel = path.relative_to(PKG / "emulate").parts
        if len(rel) > 1:
            yield rel[0], path


def test_emulate_has_only_its_sub_rooms():
    found = {sub for sub, _ in emulate_modules()}
    assert found == set(EMULATE_SUBROOMS), sorted(found ^ set(EMULATE_SUBROOMS))
    loose = sorted(p.name for p in (PKG / "emulate").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules outside emulate's sub-rooms: {loose}"


@pytest.mark.parametrize("sub,path", list(emulate_modules()), ids=lambda v: str(v))
def test_emulate_sub_rooms_follow_their_arrows(sub, path):
    used = set()
    for mod in imported_modules(path):
        parts = mod.split(".")
        if len(parts) < 2 or parts[1] in BASE:
            continue
        if parts[1] == "emulate":
            if len(parts) > 2 and parts[2] != sub:
                used.add(f"emulate.{parts[2]}")
            elif len(parts) == 2:
                used.add("emulate")
        else:
            used.add(parts[1])
    bad = used - EMULATE_SUBROOMS[sub]
    assert not bad, f"{path.relative_to(PKG.parent)} (emulate.{sub}) imports {sorted(bad)}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports when it runs (at any depth, deferred imports
    included; ``if TYPE_CHECKING:`` blocks and the enclosing packages' ``__init__`` left out)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    me = _module_name(path)
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known
                     else node.module for a in node.names]
        out |= {n for n in names if n in known and not me.startswith(n + ".")}
    return out


def import_cycles(room: str) -> list[list[str]]:
    """The import circles among the modules of ``room`` (strongly connected parts, Tarjan)."""
    paths = {_module_name(p): p for p in (PKG / room).rglob("*.py")}
    graph = {m: _runtime_imports(p, set(paths)) for m, p in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while not part or part[-1] != v:
                part.append(stack.pop())
            if len(part) > 1:
                cycles.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_hlo_has_no_import_circle():
    """The opcode table imports the shape rules, never the reverse; the parser imports the model
    and the verifier, which read shapes through the leaf ``shape_text`` (issue 24)."""
    assert import_cycles("hlo") == []


def test_the_circle_check_sees_a_circle(tmp_path, monkeypatch):
    pkg = tmp_path / "pyprecision" / "room"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pyprecision.room import b\n")
    (pkg / "b.py").write_text("def f():\n    from pyprecision.room.a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from pyprecision.room import a\n")
    monkeypatch.setattr(sys.modules[__name__], "PKG", tmp_path / "pyprecision")
    assert import_cycles("room") == [["pyprecision.room.a", "pyprecision.room.b"]]
