"""One pass manager for both IRs: run passes in order, verify before the first and after each, and
attach the printed unit to any failure (STYLE rules 4 and 8).

It knows nothing of either IR: the caller passes the unit's ``verify`` and ``to_text``. It lives
beside ``errors.py`` so that ``hlo`` (which never imports ``ir`` or ``passes``) and ``passes`` can
both use it; it imports only ``errors``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

from pyprecision.errors import PassError, PyPrecisionError, VerifyError, add_note

__all__ = ["Pass", "run_pass_sequence"]


class Pass(Protocol):
    """A pass: a kebab-case ``name`` and ``run(unit) -> bool`` (changed?)."""

    name: ClassVar[str]

    def run(self, unit: Any) -> bool:
        """Rewrite ``unit`` in place; return whether anything changed."""
        ...


def _printed(to_text: Callable[[Any], str], unit: Any) -> str:
    try:
        return to_text(unit)
    except Exception as exc:  # noqa: BLE001 - a note must never hide the real error
        return f"<unprintable: {type(exc).__name__}: {exc}>"


def run_pass_sequence(unit: Any, passes: Sequence[Any], *, verify: Callable[[Any], None],
                      to_text: Callable[[Any], str], label: str = "IR") -> dict[str, bool]:
    """Run ``passes`` on ``unit`` in order; returns pass name → changed (a repeated name gets
    ``#i``).

    ``verify(unit)`` runs before the first pass and after each. Every failure carries the printed
    unit as a note (``label`` names it, e.g. ``IR`` or ``HLO module``): a unit broken on arrival
    raises its VerifyError; a pass that breaks it raises ``VerifyError("after pass NAME: ...")``;
    an error of ours inside a pass is re-raised with a note; any other exception becomes a
    PassError naming the pass.
    """
    try:
        verify(unit)
    except VerifyError as exc:
        add_note(exc, f"{label} before the pipeline:\n{_printed(to_text, unit)}")
        raise
    changed: dict[str, bool] = {}
    for p in passes:
        try:
            result = bool(p.run(unit))
        except PyPrecisionError as exc:
            add_note(exc, f"in pass {p.name}; {label} when it stopped:\n{_printed(to_text, unit)}")
            raise
        except Exception as exc:
            err = PassError(f"pass {p.name} failed: {type(exc).__name__}: {exc}")
            add_note(err, f"{label} when it stopped:\n{_printed(to_text, unit)}")
            raise err from exc
        try:
            verify(unit)
        except VerifyError as exc:
            broken = VerifyError(f"after pass {p.name}: {exc}")
            add_note(broken, f"{label} after {p.name}:\n{_printed(to_text, unit)}")
            raise broken from exc
        key = p.name if p.name not in changed else f"{p.name}#{len(changed)}"
        changed[key] = result
    return changed
