"""The argparse registrations of spec 003 §2, §3, §5 and §6.3, with their exact choice lists and
defaults. The same :func:`add_precision_arguments` is used by :func:`parse_flags` and by the
``pyprecision flags`` / ``pyprecision opt`` subcommands, so the CLI and the API accept one language.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from pyprecision.errors import FlagError
from pyprecision.frontend.canonical import (
    AUTO_CAST_CHOICES,
    AUTO_CAST_TYPE_CHOICES,
    FAST_MATH_CHOICES,
    FP32_CAST_MODES,
)

#: Namespace attribute holding the set of dests the user gave explicitly (user pair / --fp32-cast).
GIVEN_ATTR = "_precision_flags_given"


class _TrackedStore(argparse.Action):
    """``store`` that also records that the user gave this option (to detect door conflicts)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        given = set(getattr(namespace, GIVEN_ATTR, None) or ())
        given.add(self.dest)
        setattr(namespace, GIVEN_ATTR, given)


class EnableDisableArgumentAction(argparse.Action):
    """One registration, two spellings: ``--enable-X`` sets True, ``--disable-X`` sets False
    (spec 003 §5). The default is the value when neither form is given."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        """Store True for the ``--enable-`` spelling, False for ``--disable-``."""
        setattr(namespace, self.dest, bool(option_string and option_string.startswith("--enable-")))


def _enable_disable(parser: argparse.ArgumentParser, name: str, default: bool, help: str) -> None:
    parser.add_argument(
        f"--enable-{name}",
        f"--disable-{name}",
        dest=f"enable_{name.replace('-', '_')}",
        action=EnableDisableArgumentAction,
        default=default,
        help=help,
    )


def add_precision_arguments(parser: argparse.ArgumentParser) -> None:
    """Register every precision flag of spec 003 on ``parser`` (no ``--disable-inline-cast``:
    spec 003 §6.4 CORRECTION — it does not exist at this level)."""
    # spec 003 §2.1 — the SCOPE selector, default none
    parser.add_argument(
        "--auto-cast", action=_TrackedStore, choices=list(AUTO_CAST_CHOICES), default="none",
        help="Automatically cast FP32 operators to a lower-precision type for increased "
        "performance. (Default: %(default)s)",
    )
    # spec 003 §2.2 — the DTYPE selector, default bf16
    parser.add_argument(
        "--auto-cast-type", action=_TrackedStore, choices=list(AUTO_CAST_TYPE_CHOICES),
        default="bf16",
        help="When auto-cast mode is enabled, set the lower-precision data type to which the "
        "selected FP32 operations are cast. (Default: %(default)s)",
    )
    # spec 003 §2.3 — the legacy multi-token bag, nargs '+', default []
    parser.add_argument(
        "--fast-math", nargs="+", choices=list(FAST_MATH_CHOICES), default=[], metavar="TOKEN",
        help="Controls how the compiler makes tradeoffs between performance and accuracy for "
        "fp32 operations. (Default: %(default)s) Tokens: " + ", ".join(FAST_MATH_CHOICES),
    )
    # spec 003 §3 — the internal compact flag, 10 modes, NO default
    parser.add_argument(
        "--fp32-cast", action=_TrackedStore, choices=list(FP32_CAST_MODES), metavar="MODE",
        help="(internal) the compact precision mode; the same (scope, dtype) pair as "
        "--auto-cast/--auto-cast-type in one string. Modes: " + ", ".join(FP32_CAST_MODES),
    )
    # spec 003 §5 — the three EnableDisable booleans, defaults True / False / False
    _enable_disable(
        parser, "mixed-precision-accumulation", True,
        "Always use full precision of the accelerator ALU when we do accumulation, never "
        "downcast the input of an accumulation. (Default: true)",
    )
    _enable_disable(
        parser, "saturate-infinity", False,
        "Saturate Inf/-Inf values to MAX_/MIN_FLOAT before operations that could produce NaN "
        "values for Inf/-Inf inputs on the target architecture",
    )
    _enable_disable(
        parser, "internal-native-int64", False,
        "(internal) keep int64 native; forwarded as the enable-native-int64 tensorizer token.",
    )
    # spec 003 §6.3 — public flag plus internal alias, one dest
    parser.add_argument(
        "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3",
        "--internal-experimental-unsafe-fp8e4m3fn-as-fp8e4m3",
        dest="internal_experimental_unsafe_fp8e4m3fn_as_fp8e4m3", action="store_true",
        default=False, help="Convert fp8e4m3fn types to fp8e4m3",
    )


class _RaisingParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors raise :class:`FlagError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise FlagError(message)


def build_parser() -> argparse.ArgumentParser:
    """A standalone parser for the precision flags (abbreviations disabled: a prefix such as
    ``--fp32`` or ``--disable-inline`` must never silently match a real flag)."""
    parser = _RaisingParser(prog="pyprecision-flags", allow_abbrev=False, add_help=False)
    add_precision_arguments(parser)
    return parser
