"""The one-way arrows of docs/architecture.md, checked on the import statements of every module."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "pyprecision"

# room -> rooms it must never import
FORBIDDEN = {
    "ir": {"passes", "kernel", "hlo", "tools", "emulate", "frontend", "lower"},
    "hlo": {"ir", "passes", "tools", "emulate", "frontend", "lower"},
    "lower": {"passes", "kernel", "tools", "emulate", "verify", "explain", "io"},
    "kernel": {"ir", "passes", "hlo", "tools", "emulate", "frontend"},
    "frontend": {"ir", "passes", "kernel", "hlo", "tools", "emulate"},
    "passes": {"tools", "emulate", "hlo"},
    "emulate": {"tools"},
    "testing": {"tools", "ir", "passes", "hlo", "emulate"},
    "io": {"tools", "ir", "passes", "hlo", "emulate", "reencode"},
    "reencode": {"tools", "ir", "passes", "hlo", "emulate", "verify", "explain"},
    "verify": {"tools", "explain"},
    "explain": {"tools"},
}


def imported_modules(path: Path) -> set[str]:
    """Every absolute ``pyprecision...`` module named by an import statement (at any depth)."""
    tree = ast.parse(path.read_text(), str(path))
    mods = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        mods.update(n for n in names if n.split(".")[0] == "pyprecision")
    return mods


def imported_rooms(path: Path) -> set[str]:
    return {m.split(".")[1] for m in imported_modules(path) if len(m.split(".")) > 1}


def room_modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).parts
        yield (rel[0] if len(rel) > 1 else path.stem), path


@pytest.mark.parametrize("room,path", list(room_modules()), ids=lambda v: str(v))
def test_imports_follow_the_arrows(room, path):
    rooms = imported_rooms(path)
    bad = rooms & FORBIDDEN.get(room, set())
    assert not bad, f"{path.relative_to(PKG.parent)} ({room}) imports {sorted(bad)}"
    if room != "tools":
        assert "tools" not in rooms, f"{path} imports pyprecision.tools: nothing may"


# STYLE rule 1: another room is entered only through its __init__ (``from pyprecision.ir import X``,
# never ``from pyprecision.ir.dtypes import X``). Checked for these rooms:
FACADE_ROOMS = {"ir", "passes", "frontend", "hlo", "emulate", "kernel", "io", "verify", "lower",
                "reencode"}


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
