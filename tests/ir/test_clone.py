"""clone() of every instruction kind: a detached copy that prints like the original and verifies once placed."""

from __future__ import annotations

from pyprecision import ir

TEXT = """func @g {
  tensor @a : input float32[2]
  tensor @r : output float32[2]
^bb0:
}

func @main {
  tensor @x : input float32[2]
  tensor @i : input int32[2]
  tensor @t : internal int32[2]
  tensor @y : output float32[2]
  tensor @z : output float32[2]
^bb0:
  %x = affine_load @x as float32r : float32r[2]
  %b = sb_atom_load @x : bfloat16[2]
  %i = affine_load @i : int32[2]
  %g = generic_load @x[%i] : float32[2]
  %n = neg %g : float32[2]
  %a = add %n, float32 1.0 : float32[2]
  %m = cmp_lt %a, %g : uint8[2]
  %s = select %m, %a, float32 0.0 : float32[2]
  affine_store %s, @y
  generic_store %s, @z[%i]
  tensor_scalar_gep.add %i, int32 1 -> @t {allowed = [int32]}
  offloaded_memcpy @x -> @z
  call @g ins(@x) outs(@y) {call_ins = [@x]}
  opaque "copy" ins(@x) outs(@z) {call_outs = [@z]}
}
"""


def test_every_instruction_clones():
    m = ir.parse(TEXT)
    f = m.main
    originals = list(f.instructions())
    for inst in originals:
        c = inst.clone()
        assert type(c) is type(inst) and c.parent is None and c is not inst
        text_o, text_c = ir.instruction_to_text(inst), ir.instruction_to_text(c)
        if inst.result is not None:
            assert c.result is not inst.result and c.result.name == inst.result.name + ".1"
            text_c = text_c.replace(f"%{c.result.name} =", f"%{inst.result.name} =")
        assert text_c == text_o
        assert [op for op in c.operands] == [op for op in inst.operands]
        for a, b in zip(
            c.operands, inst.operands
        ):  # values shared, scalars copied (retyped in place)
            assert (a is b) == isinstance(a, ir.Value)
        c.insert_after(inst)
    ir.verify(m)
    assert sum(1 for _ in f.instructions()) == 2 * len(originals)


def test_matmul_clone():
    m = ir.parse("""func @main {
  tensor @x : input float32[2,2]
  %x = affine_load @x : float32[2,2]
  %p = matmul %x, %x : float32[2,2]
}
""")
    p = m.main.entry.last
    c = p.clone("q")
    c.insert_after(p)
    assert c.stationary is p.stationary and c.result.name == "q"
    ir.verify(m)


def test_tensor_replace_all_uses_with():
    m = ir.parse(TEXT)
    f = m.main
    x = f.get_tensor("x")
    x2 = f.add_tensor(ir.Tensor("x2", (2,), "float32", "input"))
    keep = x.load_insts[0]
    n = x.replace_all_uses_with_except(x2, keep)
    assert n == 5 and x.load_insts == [keep] and x2.n_loads == 5
    ir.verify(m)
