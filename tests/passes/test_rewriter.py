"""ir.Rewriter: the one way the passes insert, rewire and erase (pyprecision/ir/rewriter.py)."""
from __future__ import annotations

import pytest
from filecheck import filecheck  # tests/ is on sys.path

from pyprecision import ir

from .helpers import parse

TEXT = """
func @main {
  tensor @x : input float32[2]
  tensor @y : output float32[2]
^bb0:
  %x = affine_load @x : float32[2]
  %n = neg %x : float32[2]
  affine_store %n, @y
}
"""


def named(m: ir.Module, name: str) -> ir.Instruction:
    return next(i for i in m.main.instructions() if i.result is not None and i.result.name == name)


def test_insert_rewire_except_and_erase() -> None:
    m = parse(TEXT)
    rw = ir.Rewriter()
    x, n = named(m, "x"), named(m, "n")
    cast = ir.make_cast(x.result, ir.bfloat16, function=m.main)  # type: ignore[arg-type]
    rw.insert_after(cast, x, dl="here")
    assert rw.created(cast) and not rw.created(x) and cast.dl == "here" and cast.id is not None
    assert rw.replace_all_uses(x, cast, except_=cast) == 1  # GOTCHA: the cast keeps reading %x
    ir.verify(m)
    filecheck(ir.to_text(m), """
        CHECK:      %x = affine_load @x : float32[2]
        CHECK-NEXT: = cast %x : bfloat16[2]
        CHECK-NEXT: %n = neg %bfloat16.x
    """.replace("%bfloat16.x", f"%{cast.result.name}"))  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="still used"):
        rw.erase(cast)  # %n still reads it
    rw.replace_uses_in(n, cast, x)
    rw.erase(cast)
    ir.verify(m)
    assert ir.to_text(m) == ir.to_text(parse(TEXT))
    assert rw.edits == 4


def test_insert_at_front_keeps_the_order() -> None:
    m = parse(TEXT)
    rw = ir.Rewriter()
    x = named(m, "x")
    a = ir.make_cast(x.result, ir.bfloat16, "a", m.main)  # type: ignore[arg-type]
    b = ir.make_cast(x.result, ir.float16, "b", m.main)  # type: ignore[arg-type]
    rw.insert_after(a, x)
    rw.insert_after(b, a)
    first = x.clone("x0")
    rw.insert_at_front(m.main.entry, [first])
    names = [i.result.name for i in m.main.instructions() if i.result is not None]
    assert names == ["x0", "x", "a", "b", "n"]
    assert all(rw.created(i) for i in (a, b, first))


def test_insert_after_definition_needs_a_placed_definition() -> None:
    v = ir.Value("v", "float32", (2,))
    cast = ir.make_cast(v, ir.bfloat16, "c")
    with pytest.raises(ValueError, match="no placed definition"):
        ir.Rewriter().insert_after_definition(cast, v)
