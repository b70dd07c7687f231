"""One pass manager for both IRs: run passes in order, verify the unit once after the whole
sequence (or, when asked, before the first pass and after each), and attach the printed unit to any
failure (STYLE rules 4 and 8; decision P20).

It knows nothing of either IR: the caller passes the unit's ``verify`` and ``to_text``. It lives
beside ``errors.py`` so that ``hlo`` (which never imports ``ir`` or ``passes``) and ``passes`` can
both use it; it imports only ``errors``.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

from pyprecision.errors import PassError, PyPrecisionError, VerifyError, add_note

__all__ = ["VERIFY_EACH_PASS_ENV", "Pass", "run_pass_sequence", "verify_after_passes",
           "verify_each_pass"]

#: set to 1 to verify before the first pass and after every pass (a broken IR names its pass)
VERIFY_EACH_PASS_ENV = "PYPRECISION_VERIFY_EACH_PASS"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def verify_each_pass() -> bool:
    """Whether ``PYPRECISION_VERIFY_EACH_PASS`` asks for per-pass verification (unset: no); a
    value other than 1/0/true/false/yes/no/on/off is a one-line ValueError."""
    text = os.environ.get(VERIFY_EACH_PASS_ENV, "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{VERIFY_EACH_PASS_ENV}={text!r}: expected 1 or 0")


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
                      to_text: Callable[[Any], str], label: str = "IR",
                      each: bool | None = None, final: bool = True) -> dict[str, bool]:
    """Run ``passes`` on ``unit`` in order; returns pass name → changed (a repeated name gets
    ``#i``).

    ``verify(unit)`` runs once, after the last pass (the producer of ``unit`` — the parser, the
    lowering — verified it; no passes, no verification); with ``final`` False it does not, and the
    caller runs :func:`verify_after_passes` before it uses the unit. With ``each`` (None: the
    ``PYPRECISION_VERIFY_EACH_PASS`` environment variable, default off) it runs before the first
    pass and after each instead, so a pass that breaks the unit is named. Every failure carries the
    printed unit as a note (``label`` names it, e.g. ``IR`` or ``HLO module``): a unit broken on
    arrival raises its VerifyError (``each`` only); a broken unit after the sequence raises
    ``VerifyError("after passes A, B: ...")`` (``"after pass NAME: ..."`` with ``each``); an error
    of ours inside a pass is re-raised with a note; any other exception becomes a PassError naming
    the pass.
    """
    if each is None:
        each = verify_each_pass()
    if each:
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
        if each:
            try:
                verify(unit)
            except VerifyError as exc:
                broken = VerifyError(f"after pass {p.name}: {exc}")
                add_note(broken, f"{label} after {p.name}:\n{_printed(to_text, unit)}")
                raise broken from exc
        key = p.name if p.name not in changed else f"{p.name}#{len(changed)}"
        changed[key] = result
    if not each and passes and final:
        verify_after_passes(unit, [p.name for p in passes], verify=verify, to_text=to_text,
                            label=label)  # fmt: skip
    return changed


def verify_after_passes(unit: Any, names: Sequence[str], *, verify: Callable[[Any], None],
                        to_text: Callable[[Any], str], label: str = "IR") -> None:
    """The check :func:`run_pass_sequence` makes after its last pass (``names``: the passes that
    ran), with its error: ``VerifyError("after passes A, B: ...")`` and the printed unit as a
    note. A caller that ran the sequence with ``final=False`` runs it here when (if ever) it uses
    the unit (decision P31)."""
    try:
        verify(unit)
    except VerifyError as exc:
        joined = ", ".join(names)
        broken = VerifyError(f"after passes {joined}: {exc}")
        add_note(broken, f"{label} after {joined} ({VERIFY_EACH_PASS_ENV}=1 names the pass "
                         f"that broke it):\n{_printed(to_text, unit)}")
        raise broken from exc
