"""DTypeMutator (spec 002): MutateState, the eight gates in order, mutateLoad, staticCastLoadTensor."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from filecheck import filecheck  # tests/ is on sys.path

import pyprecision
from pyprecision import ir
from pyprecision.errors import PassError
from pyprecision.passes import STATISTICS, DTypeMutator, MutateState, MutatorRun, Target

from .helpers import TargetDouble, assert_unchanged, parse, run


def dm(dma: bool = True, multi: bool = False) -> DTypeMutator:
    return DTypeMutator(TargetDouble(enable_dma_cast=dma), mutate_multi_users=multi)  # type: ignore[arg-type]


def inst(m: ir.Module, name: str) -> ir.Instruction:
    return next(i for i in m.main.instructions() if i.result is not None and i.result.name == name)


def test_mutate_state_accessors() -> None:
    assert [s.mismatch for s in MutateState] == [False, False, True]
    assert [s.mutated for s in MutateState] == [False, True, False]
    assert [s.match_or_mutated for s in MutateState] == [True, True, False]


EXP_CAST = """
func @main {
  tensor @x : input float32[2,2]
  tensor @y : output bfloat16[2,2]
^bb0:
  %x = affine_load @x : float32[2,2]
  %e = exp %x : float32[2,2]
  %c = cast %e : bfloat16[2,2]
  affine_store %c, @y
}
"""


def test_retype_producer_of_a_cast() -> None:
    before = DTypeMutator.operator_type_mutated
    changed, out = run(dm(), EXP_CAST)
    assert changed
    assert "%e = exp %x : bfloat16[2,2]" in out
    assert "%c = cast %e : bfloat16[2,2]" in out  # now an identity, left for cast-elimination
    assert DTypeMutator.operator_type_mutated == before + 1


def test_no_change_when_nothing_to_absorb() -> None:
    assert_unchanged(dm(), """
    func @main {
      tensor @x : input float32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %x = affine_load @x : float32[2,2]
      %e = exp %x : float32[2,2]
      affine_store %e, @y
    }
    """)


def test_gate_1_match() -> None:
    m = parse(EXP_CAST)
    assert dm().match_or_mutate_dst_ty(inst(m, "e"), "float32") is MutateState.Match


def test_gate_2_reinterpreted_view_mismatch() -> None:
    m = parse("""
    func @main {
      tensor @x : input int32[2,2]
      tensor @y : output float32[2,2]
    ^bb0:
      %f = affine_load @x as float32 : float32[2,2]
      affine_store %f, @y
    }
    """)
    ap = inst(m, "f").src
    assert dm().match_or_mutate_dst_ty(ap, "bfloat16") is MutateState.Mismatch


def test_gate_3_gep_producer_allowed_dtypes() -> None:
    m = parse("""
    func @main {
      tensor @ids : input float32[3]
      tensor @rows : internal float32[3]
      tensor @y : output float32[3]
    ^bb0:
      %ids = affine_load @ids : float32[3]
      tensor_scalar_gep.add %ids, float32 1.0 -> @rows {allowed = [float32, float16]}
      %r = affine_load @rows : float32[3]
      affine_store %r, @y
    }
    """)
    view = inst(m, "r").src  # a NeuronAP: not an instruction → producer-tensor branch
    assert dm().match_or_mutate_dst_ty(view, "bfloat16") is MutateState.Mismatch  # gate 3
    # in the legal set gate 3 passes, but a view has no dst: gate 4 refuses
    assert dm().match_or_mutate_dst_ty(view, "float16") is MutateState.Mismatch


def test_gate_4_dst_must_have_exactly_one_load() -> None:
    m = parse("""
    func @main {
      tensor @x : input float32[2,2]
      tensor @y : output bfloat16[2,2]
      tensor @z : output float32[2,2]
    ^bb0:
      %x = affine_load @x : float32[2,2]
      %e = exp %x : float32[2,2]
      %c = cast %e : bfloat16[2,2]
      affine_store %c, @y
      affine_store %e, @z
    }
    """)
    # two uses: gate 4 fires before the multi-user knob of gate 7 is ever consulted
    assert dm(multi=True).match_or_mutate_dst_ty(inst(m, "e"), "bfloat16") is MutateState.Mismatch


def test_gate_5_bitcast_reinterpret() -> None:
    m = parse("""
    func @main {
      tensor @x : input int32[2,2]
      tensor @y : output bfloat16[2,2]
    ^bb0:
      %x = affine_load @x : int32[2,2]
      %f = bitcast %x : float32[2,2]
      %c = cast %f : bfloat16[2,2]
      affine_store %c, @y
    }
    """)
    assert dm().match_or_mutate_dst_ty(inst(m, "f"), "bfloat16") is MutateState.Mismatch


def _probe(**attrs: object) -> ir.Instruction:
    """An instruction stand-in whose gate attributes are logging properties (read order)."""
    read: list[str] = []

    def prop(name: str) -> property:
        def get(self: object) -> object:
            read.append(name)
            return attrs[name]
        return property(get)

    cls = type("ProbeInst", (ir.NeuronInst,), {n: prop(n) for n in attrs})
    obj = cls.__new__(cls)
    obj.read = read  # type: ignore[attr-defined]
    obj.attrs = attrs  # type: ignore[attr-defined]
    return obj


def test_gates_7_and_8_order_and_can_mutate_dst_ty_quirk() -> None:
    dst = ir.Value("d", "float32", (2,))
    ir.UnaryOp("cast", dst, ir.Value("u", "bfloat16", (2,)))  # the one load of dst
    probe = _probe(dtype=ir.float32, dst=dst, reinterpret=None, has_single_user=False,
                   can_mutate_dst_ty=True)
    state = dm(multi=False).match_or_mutate_dst_ty(probe, "bfloat16")
    assert state is MutateState.Mismatch
    assert probe.read == ["dtype", "dst", "reinterpret", "has_single_user"]  # type: ignore[attr-defined]
    probe.read.clear()  # type: ignore[attr-defined]
    probe.attrs.update(has_single_user=True, can_mutate_dst_ty=False)  # type: ignore[attr-defined]
    assert dm().match_or_mutate_dst_ty(probe, "bfloat16") is MutateState.Mismatch
    # gate 8 is an attribute read (a property), never a call
    assert probe.read == ["dtype", "dst", "reinterpret", "has_single_user", "can_mutate_dst_ty"]  # type: ignore[attr-defined]
    # with mutate_multi_users a multi-user operand passes gate 7 and is decided by gate 8
    probe.read.clear()  # type: ignore[attr-defined]
    probe.attrs.update(has_single_user=False)  # type: ignore[attr-defined]
    assert dm(multi=True).match_or_mutate_dst_ty(probe, "bfloat16") is MutateState.Mismatch
    assert probe.read[-2:] == ["has_single_user", "can_mutate_dst_ty"]  # type: ignore[attr-defined]


def test_quirk_can_mutate_dst_ty_is_a_property() -> None:
    assert isinstance(ir.Instruction.__dict__["can_mutate_dst_ty"], property)
    m = parse(EXP_CAST.replace("%e = exp %x", "%e = matmul %x, %x"))
    # matmul's canMutateDstTy is False (PSUM): gate 8 refuses
    assert dm().match_or_mutate_dst_ty(inst(m, "e"), "bfloat16") is MutateState.Mismatch


def test_try_mutate_dst_ty_is_not_mismatch() -> None:
    m = parse(EXP_CAST)
    assert dm().try_mutate_dst_ty(inst(m, "e"), "float32") is True  # Match
    assert dm().try_mutate_dst_ty(inst(m, "e"), "float16") is True  # Mutated
    m2 = parse(EXP_CAST.replace("%e = exp %x", "%e = matmul %x, %x"))
    assert dm().try_mutate_dst_ty(inst(m2, "e"), "bfloat16") is False


def test_decision_p10_only_float_to_float_casts_are_absorbed() -> None:
    assert_unchanged(dm(), EXP_CAST.replace("%c = cast %e : bfloat16[2,2]", "%c = cast %e : int32[2,2]")
                     .replace("output bfloat16", "output int32"))


BCAST = """
func @main {
  tensor @row : input {rowdt}[1,2]
  tensor @y : output {outdt}[2,2]
^bb0:
  %row = sb_atom_load @row broadcast : {rowdt}[2,2]
  %c = cast %row : {outdt}[2,2]
  affine_store %c, @y
}
"""


def bcast(rowdt: str, outdt: str) -> str:
    return BCAST.replace("{rowdt}", rowdt).replace("{outdt}", outdt)


@pytest.mark.parametrize("rowdt", ["bfloat16", "float32r"])
def test_mutate_load_partition_broadcast_refuses_fp16(rowdt: str) -> None:
    # decision P11: the seed's ``self.dtype`` at :131 is the load's own dtype
    text = bcast(rowdt, "float16")
    assert_unchanged(dm(), text)
    m = parse(text)
    assert dm().mutate_load(inst(m, "row"), "float16") is MutateState.Mismatch


def test_mutate_load_partition_broadcast_allows_other_cases() -> None:
    _, out = run(dm(), bcast("float32", "float16"))
    assert "%row = sb_atom_load @row broadcast : float16[2,2]" in out
    _, out = run(dm(), bcast("bfloat16", "float32"))
    assert "%row = sb_atom_load @row broadcast : float32[2,2]" in out


def test_mutate_load_refuses_fp8_e5m2() -> None:
    assert_unchanged(dm(), bcast("float32", "float8_e5m2"))


def test_correction_allowed_dtypes_off_operand_enable_dma_cast_off_target() -> None:
    text = bcast("float32", "bfloat16")
    before = DTypeMutator.n_loads
    assert_unchanged(dm(dma=False), text)  # runtime load, no DMA cast: refuse
    _, out = run(dm(dma=True), text)
    assert "%row = sb_atom_load @row broadcast : bfloat16[2,2]" in out
    assert DTypeMutator.n_loads == before + 1
    assert not hasattr(dm(), "enable_dma_cast") and not hasattr(dm(), "allowed_dtypes")
    assert Target.from_config("all", "gen2").enable_dma_cast is False


WEIGHT = """
func @main {
  tensor @w : const float32[2,2] = dense "zczMPc3MTD6amZk+zczMPg=="
  tensor @y : output bfloat16[2,2]
  tensor @z : output bfloat16[2,2]
^bb0:
  %w = sb_atom_load @w : float32[2,2]
  %c = cast %w : bfloat16[2,2]
  %w2 = sb_atom_load @w : float32[2,2]
  %c2 = cast %w2 : bfloat16[2,2]
  affine_store %c, @y
  affine_store %c2, @z
}
"""


def test_static_cast_load_tensor_memo_and_bytes() -> None:
    m = parse(WEIGHT)
    cw, fl = DTypeMutator.casted_weights, DTypeMutator.folded_cast_load
    p = dm(dma=False)  # const folding needs no DMA cast
    assert p.run(m) is True
    ir.verify(m)
    f = m.main
    assert not f.has_tensor("w")  # the original weight is orphaned and removed
    new = f.get_tensor("w_bfloat16")
    assert new.is_const and new.dtype.name == "bfloat16"
    w = np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(new.value.view(np.uint16),
                                  pyprecision.encode(w, pyprecision.format("bf16")))
    assert new.value.dtype == ml_dtypes.bfloat16
    assert DTypeMutator.casted_weights == cw + 16  # once: memoized for the second load
    assert DTypeMutator.folded_cast_load == fl + 2
    loads = [i for i in f.instructions() if isinstance(i, ir.SBAtomLoad)]
    assert [ld.tensor.name for ld in loads] == ["w_bfloat16", "w_bfloat16"]


def test_static_cast_load_tensor_unique_name() -> None:
    text = WEIGHT.replace("tensor @y : output", "tensor @w_bfloat16 : internal bfloat16[1]\n"
                          "  tensor @y : output")
    _, out = run(dm(), text)
    assert "tensor @w_bfloat16_1 : const bfloat16[2,2]" in out


def test_static_cast_load_tensor_can_only_cast_weight() -> None:
    m = parse(bcast("float32", "bfloat16"))
    with pytest.raises(PassError, match="Can only cast weight"):
        dm().static_cast_load_tensor(inst(m, "row"), "bfloat16")


def test_static_cast_single_value_tensor_fast_path() -> None:
    text = """
    func @main {
      tensor @b : const float32[1,2] = splat 0.1
      tensor @y : output bfloat16[2,2]
    ^bb0:
      %b = sb_atom_load @b broadcast : float32[2,2]
      %c = cast %b : bfloat16[2,2]
      affine_store %c, @y
    }
    """
    cw = DTypeMutator.casted_weights
    _, out = run(dm(), text)
    bf = float(np.float32(0.1).astype(ml_dtypes.bfloat16))
    assert f"tensor @b : const bfloat16[1,2] = splat {bf!r}" in out  # retyped in place
    assert DTypeMutator.casted_weights == cw  # no bytes re-encoded


def test_single_value_tensor_splat_returns_before_folded_cast_load_is_counted() -> None:
    """Spec 002 staticCastLoadTensor: the SingleValueTensor fast path returns at :61–:62, before
    ``folded_cast_load += 1`` at :79; a cloned weight (or a memo hit) is counted."""
    splat = """
    func @main {
      tensor @b : const float32[1,2] = splat 0.1
      tensor @y : output bfloat16[2,2]
    ^bb0:
      %b = sb_atom_load @b broadcast : float32[2,2]
      %c = cast %b : bfloat16[2,2]
      affine_store %c, @y
    }
    """
    fl = DTypeMutator.folded_cast_load
    changed, out = run(dm(), splat)
    assert changed and "tensor @b : const bfloat16[1,2]" in out  # the splat was folded...
    assert DTypeMutator.folded_cast_load == fl  # ...and not counted
    fl = DTypeMutator.folded_cast_load
    run(dm(dma=False), WEIGHT)  # two loads of one dense weight: a clone, then a memo hit
    assert DTypeMutator.folded_cast_load == fl + 2


def test_const_load_already_target_dtype_is_match() -> None:
    m = parse("""
    func @main {
      tensor @w : const bfloat16[2] = splat 1.0
      tensor @y : output bfloat16[2]
    ^bb0:
      %w = sb_atom_load @w : float32[2]
      %c = cast %w : bfloat16[2]
      affine_store %c, @y
    }
    """)
    assert dm().mutate_load(inst(m, "w"), "bfloat16") is MutateState.Match


def test_reset_and_set_function() -> None:
    """Spec 002 :48/:51: the memo and the function are per-run state (MutatorRun), not the pass's."""
    p = dm()
    m1, m2 = parse(WEIGHT), parse(WEIGHT)
    run = MutatorRun(m1.main)
    p.static_cast_load_tensor(inst(m1, "w"), "bfloat16", run)
    assert len(run.tensor_map) == 1
    run.reset()
    assert run.tensor_map == {}
    run.set_function(m2.main)
    assert run.f is m2.main
    assert not hasattr(p, "tensor_map") and not hasattr(p, "f")


def test_statistics_descriptions() -> None:
    assert {k: v.description for k, v in STATISTICS.items() if k.startswith("DTypeMutator.")} == {
        "DTypeMutator.operator_type_mutated":
            "Number of operator whose dst type is mutated for legalization",
        "DTypeMutator.n_loads": "Number of load whose tensor type mutated",
        "DTypeMutator.casted_weights": "Number of bytes statically casted in weight tensor",
        "DTypeMutator.folded_cast_load": "Number of load whose cast is folded into the weight",
    }


def test_mutate_multi_users_gate() -> None:
    # gate 7 is reached only when gate 4 passes; Value.n_loads counts uses, so one use = one user
    m = parse(EXP_CAST)
    assert dm(multi=False).match_or_mutate_dst_ty(inst(m, "e"), "bfloat16") is MutateState.Mutated


def test_whole_pipeline_text_for_a_weight() -> None:
    _, out = run(dm(), WEIGHT)
    filecheck(out, """
        CHECK-NOT:  tensor @w :
        CHECK:      tensor @w_bfloat16 : const bfloat16[2,2] = dense "zT1NPpo+zT4="
        CHECK:      %w = sb_atom_load @w_bfloat16 : bfloat16[2,2]
        CHECK-NEXT: %c = cast %w : bfloat16[2,2]
        CHECK-NEXT: %w2 = sb_atom_load @w_bfloat16 : bfloat16[2,2]
        CHECK-NEXT: %c2 = cast %w2 : bfloat16[2,2]
    """)


def test_note_n_loads_statistic_is_not_the_tensor_attribute() -> None:
    # the statistic DTypeMutator.n_loads (class counter) and gate 4's dst.tensor.n_loads (uses of a
    # value) share a name; the registered description tells them apart
    m = parse(EXP_CAST)
    e = inst(m, "e")
    assert e.dst.tensor.n_loads == 1
    assert isinstance(DTypeMutator.n_loads, int)
    assert STATISTICS["DTypeMutator.n_loads"].description == "Number of load whose tensor type mutated"
    before = DTypeMutator.n_loads
    dm().run(m)  # an op retype, not a load: the load statistic does not move
    assert DTypeMutator.n_loads == before
