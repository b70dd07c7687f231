"""Start-up stays cheap (issue 16 items 3-4): ``import pyprecision`` and ``pyprecision --help`` load
neither numpy nor the rooms, every room is reachable as an attribute (PEP 562), and the CLI imports
only the module of the command that runs. Times are measured in bench/README.md, never here."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pyprecision as pp
from pyprecision.tools import cli

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("emulate", "hlo", "ir", "passes", "frontend", "verify", "io", "testing", "explain",
         "kernel", "tools")
HEAVY = ("numpy", "ml_dtypes", "pyprecision._core", "pyprecision.formats",
         *(f"pyprecision.{r}" for r in ROOMS if r != "tools"))


def _modules_after(code: str) -> list[str]:
    """The heavy modules loaded by running ``code`` in a fresh interpreter on this tree."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                       check=True)
    loaded = json.loads(r.stdout.strip().splitlines()[-1])
    return [m for m in loaded if m in HEAVY or m.startswith("pyprecision.tools.")]


def test_import_loads_no_room_and_no_numpy() -> None:
    assert _modules_after("import pyprecision") == []


def test_help_loads_no_command_module() -> None:
    code = ("import contextlib, io\nfrom pyprecision.tools.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['--help'])")
    assert _modules_after(code) == ["pyprecision.tools.cli"]


def test_a_command_imports_only_its_module() -> None:
    code = ("import contextlib, io\nfrom pyprecision.tools.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['formats']) == 0")
    got = [m for m in _modules_after(code) if m.startswith("pyprecision.tools.")]
    assert got == ["pyprecision.tools.cli", "pyprecision.tools.formats_cmd"]


@pytest.mark.parametrize("room", ROOMS)
def test_every_room_is_an_attribute(room: str) -> None:
    mod = getattr(pp, room)
    assert mod is sys.modules[f"pyprecision.{room}"]
    assert room in dir(pp)
    for name in getattr(mod, "__all__", ()):
        assert hasattr(mod, name), (room, name)


def test_rooms_work_through_the_attributes() -> None:
    assert callable(pp.emulate.run_hlo) and callable(pp.emulate.run_ir)
    assert pp.hlo.HloModule is sys.modules["pyprecision.hlo"].HloModule
    assert int(pp.encode(pp.kernel.decode(pp.encode([1.5], "bf16"), "bf16"), "bf16")[0]) == 0x3FC0


def test_top_level_names_survive_the_submodule_import() -> None:
    import pyprecision.formats  # noqa: F401  (binds a submodule on the package)

    assert callable(pp.formats) and pp.formats()[0].name == "bf16"
    assert pp.format("fp8e4m3fn").bits == 8
    from pyprecision import Format, encode

    assert encode is pp.kernel.encode and isinstance(pp.format("bf16"), Format)
    for name in pp.__all__:
        assert hasattr(pp, name), name
        assert name in dir(pp)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        pp.nonesuch  # noqa: B018
    assert not hasattr(pp, "_private")


def _choices(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(a.dest, a.help or "") for a in sub._choices_actions]


def test_declarations_agree_with_the_modules() -> None:
    # the light declarations must be what the modules register, in --help order
    full = _choices(cli.build_parser())
    declared = [c for m in cli.COMMAND_MODULES for c in cli.COMMANDS[m]]
    assert full == declared
    for cmd, _ in declared:  # with one command named, the same list, and that one in full
        light = cli.build_parser(cmd)
        assert _choices(light) == declared
        assert light.format_help() == cli.build_parser().format_help()


def test_the_console_script_freezes_what_the_command_left_and_main_does_not() -> None:
    """The console entry runs the command, then moves the heap out of the collector's last walk
    at exit (decision TU22); ``main`` itself, which callers run in their own process, does not."""
    code = ("import contextlib, gc, io, sys\nfrom pyprecision.tools import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    plain = cli.main(['formats'])\n"
            "after_main = gc.get_freeze_count()\nsys.argv = ['pyprecision', 'formats']\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out2:\n    code = cli.console()\n"
            "print(plain, code, after_main, gc.get_freeze_count() > 0, out.getvalue() == out2.getvalue())")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       check=True)
    assert r.stdout.split() == ["0", "0", "0", "True", "True"]


def test_the_installed_script_is_the_console_entry() -> None:
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"pyprecision": "pyprecision.tools.cli:console"}
    r = subprocess.run([sys.executable, "-m", "pyprecision.tools.cli", "formats"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "bf16" in r.stdout
