"""The pass registry (:data:`PASSES`, every loop-IR pass by name) and the ``name{option=value,...}``
pass-spec syntax."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from pyprecision.errors import PassError
from pyprecision.passes.auto_cast_fp32 import AutoCastFP32
from pyprecision.passes.auto_cast_inputs import AutoCastInputs
from pyprecision.passes.auto_cast_tc_inputs import AutoCastTCInputs
from pyprecision.passes.cast_elimination import CastElimination
from pyprecision.passes.dtype_mutator import DTypeMutator
from pyprecision.passes.fp8e4m3fn_as_fp8e4 import Fp8e4m3fnAsFp8e4
from pyprecision.passes.target import Target

#: every pass, by its kebab-case name (also its CLI name)
PASSES: dict[str, type] = {
    cls.name: cls
    for cls in (
        AutoCastFP32,
        AutoCastInputs,
        AutoCastTCInputs,
        DTypeMutator,
        CastElimination,
        Fp8e4m3fnAsFp8e4,
    )
}

_SPEC = re.compile(r"^\s*([a-z0-9-]+)\s*(?:\{(.*)\})?\s*$")


def _option_value(text: str) -> Any:
    low = text.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise PassError(f"pass option value must be true or false, got {text.strip()!r}")


def _options(cls: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls)
            if f.init and f.name not in ("target", "provenance")}


def make_pass(spec: str, target: Target, provenance: list[Any] | None = None) -> Any:
    """Build a pass from ``name`` or ``name{opt=value,...}`` (options in kebab or snake case);
    ``provenance`` (a list) switches on the pass's decision log (passes/provenance.py)."""
    m = _SPEC.match(spec)
    if not m:
        raise PassError(f"malformed pass spec {spec!r} (expected name or name{{opt=value}})")
    name, body = m.group(1), m.group(2)
    cls = PASSES.get(name)
    if cls is None:
        raise PassError(f"unknown pass {name!r} (choose from {', '.join(PASSES)})")
    known = _options(cls)
    kwargs: dict[str, Any] = {}
    for item in filter(None, (body or "").split(",")):
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if key not in known:
            raise PassError(
                f"pass {name!r} has no option {key!r} (options: {', '.join(known) or 'none'})"
            )
        kwargs[key] = _option_value(value) if sep else True
    kwargs["target"] = target if "target" in {f.name for f in dataclasses.fields(cls)} else None
    if kwargs["target"] is None:
        del kwargs["target"]
    if provenance is not None and "provenance" in {f.name for f in dataclasses.fields(cls)}:
        kwargs["provenance"] = provenance
    return cls(**kwargs)


def parse_pass_list(text: str, target: Target) -> list[Any]:
    """``a,b{opt=v},c`` → pass instances (commas inside braces belong to the options)."""
    specs, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            specs.append(current)
            current = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        current += ch
    specs.append(current)
    return [make_pass(s, target) for s in specs if s.strip()]
