"""The HLO verifier: every rule gives one located error (a table), the malformed cases of issue 12
each as a named test, and verify() after a pass."""
from __future__ import annotations

import pytest

from pyprecision import hlo
from pyprecision.errors import ParseError, VerifyError

REDUCER = """add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

"""
SELECT_GE = """ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}

"""
LESS = """less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}

"""


def module(body: str, prelude: str = "") -> str:
    """A module whose ENTRY holds ``body`` (lines); the first ENTRY line is line N."""
    return f"HloModule m\n\n{prelude}ENTRY e {{\n{body}\n}}\n"


def entry_line(prelude: str = "") -> int:
    return 4 + prelude.count("\n")


# (name, prelude, entry body, message fragment, line offset within the body (0 = first line))
BAD = [
    ("unknown_opcode", "", "  p = f32[2] parameter(0)\n  ROOT a = f32[2] ad(p, p)",
     "unknown opcode 'ad'", 1),
    ("add_result_shape", "", "  p = f32[8,32] parameter(0)\n  ROOT a = f32[8,33] add(p, p)",
     "gives f32[8,32], but the instruction says f32[8,33]", 1),
    ("add_needs_same_dims", "", "  p = f32[8,4] parameter(0)\n  q = f32[4] parameter(1)\n"
     "  ROOT a = f32[8,4] add(p, q)", "no implicit broadcasting", 2),
    ("add_needs_same_type", "", "  p = f32[4] parameter(0)\n  q = s32[4] parameter(1)\n"
     "  ROOT a = f32[4] add(p, q)", "one element type", 2),
    ("binary_operand_count", "", "  p = f32[4] parameter(0)\n  ROOT a = f32[4] add(p)",
     "takes 2 operand(s), got 1", 1),
    ("unary_operand_count", "", "  p = f32[4] parameter(0)\n  ROOT a = f32[4] negate(p, p)",
     "takes 1 operand(s), got 2", 1),
    ("compare_gives_pred", "", "  p = f32[4] parameter(0)\n"
     "  ROOT c = f32[4] compare(p, p), direction=LT", "gives pred[4]", 1),
    ("compare_direction", "", "  p = f32[4] parameter(0)\n"
     "  ROOT c = pred[4] compare(p, p), direction=XX", "direction", 1),
    ("select_branches", "", "  p = pred[4] parameter(0)\n  a = f32[4] parameter(1)\n"
     "  b = f32[3] parameter(2)\n  ROOT s = f32[4] select(p, a, b)", "branches differ", 3),
    ("select_predicate_type", "", "  p = s32[4] parameter(0)\n  a = f32[4] parameter(1)\n"
     "  ROOT s = f32[4] select(p, a, a)", "predicate must be pred", 2),
    ("broadcast_rank", "", "  p = f32[4] parameter(0)\n"
     "  ROOT b = f32[2,4] broadcast(p), dimensions={0,1}", "do not match the operand rank", 1),
    ("broadcast_size", "", "  p = f32[3] parameter(0)\n"
     "  ROOT b = f32[2,4] broadcast(p), dimensions={1}", "cannot broadcast", 1),
    ("broadcast_degenerate", "", "  p = f32[1] parameter(0)\n"
     "  ROOT b = f32[2,4] broadcast(p), dimensions={1}", "sizes must be equal", 1),
    ("reshape_count", "", "  p = f32[4,2] parameter(0)\n  ROOT r = f32[9] reshape(p)",
     "changes the element count", 1),
    ("transpose_permutation", "", "  p = f32[4,2] parameter(0)\n"
     "  ROOT t = f32[2,4] transpose(p), dimensions={0,0}", "not a permutation", 1),
    ("transpose_result", "", "  p = f32[4,2] parameter(0)\n"
     "  ROOT t = f32[4,2] transpose(p), dimensions={1,0}", "gives f32[2,4]", 1),
    ("dot_contracting_sizes", "", "  a = f32[2,3] parameter(0)\n  b = f32[4,5] parameter(1)\n"
     "  ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     "contracting dimensions differ", 2),
    ("dot_result", "", "  a = f32[2,3] parameter(0)\n  b = f32[3,5] parameter(1)\n"
     "  ROOT d = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     "gives f32[2,5]", 2),
    ("dot_batch_count", "", "  a = f32[2,3] parameter(0)\n  b = f32[3,5] parameter(1)\n"
     "  ROOT d = f32[2,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, "
     "rhs_contracting_dims={0}", "as many lhs as rhs batch", 2),
    ("reduce_dims", REDUCER, "  p = f32[4,2] parameter(0)\n  z = f32[] constant(0)\n"
     "  ROOT r = f32[4] reduce(p, z), dimensions={2}, to_apply=add", "distinct dimensions", 2),
    ("reduce_result", REDUCER, "  p = f32[4,2] parameter(0)\n  z = f32[] constant(0)\n"
     "  ROOT r = f32[2] reduce(p, z), dimensions={1}, to_apply=add", "gives f32[4]", 2),
    ("reduce_init_scalar", REDUCER, "  p = f32[4,2] parameter(0)\n  z = f32[2] parameter(1)\n"
     "  ROOT r = f32[4] reduce(p, z), dimensions={1}, to_apply=add", "init value 0 must be", 2),
    ("reduce_reducer_signature", REDUCER, "  p = s32[4,2] parameter(0)\n  z = s32[] constant(0)\n"
     "  ROOT r = s32[4] reduce(p, z), dimensions={1}, to_apply=add", "parameter 0 is f32[]", 2),
    ("slice_bounds", "", "  p = f32[4] parameter(0)\n  ROOT s = f32[3] slice(p), slice={[2:5]}",
     "does not fit dimension 0", 1),
    ("slice_result", "", "  p = f32[8] parameter(0)\n  ROOT s = f32[3] slice(p), slice={[0:8:2]}",
     "gives f32[4]", 1),
    ("concatenate_mismatch", "", "  p = f32[4,2] parameter(0)\n  q = f32[4,3] parameter(1)\n"
     "  ROOT c = f32[8,2] concatenate(p, q), dimensions={0}", "differ outside dimension 0", 2),
    ("convert_dims", "", "  p = f32[4] parameter(0)\n  ROOT c = s32[5] convert(p)",
     "gives s32[4]", 1),
    ("tuple_shape", "", "  p = f32[4] parameter(0)\n  ROOT t = (f32[4], f32[4]) tuple(p)",
     "gives (f32[4])", 1),
    ("get_tuple_element_index", "", "  p = (f32[4], s32[]) parameter(0)\n"
     "  ROOT g = f32[4] get-tuple-element(p), index=2", "out of range", 1),
    ("parameter_operands", "", "  p = f32[4] parameter(0)\n  ROOT i = s32[4] iota(p), "
     "iota_dimension=0", "takes 0 operand(s), got 1", 1),
    ("iota_dimension", "", "  ROOT i = s32[4] iota(), iota_dimension=1", "iota_dimension", 0),
    ("pad_result", "", "  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
     "  ROOT q = f32[7] pad(p, z), padding=1_1_1", "gives f32[9]", 2),
    ("dynamic_slice_index_count", "", "  p = f32[4,4] parameter(0)\n  i = s32[] parameter(1)\n"
     "  ROOT d = f32[2,2] dynamic-slice(p, i), dynamic_slice_sizes={2,2}", "start indices", 2),
    ("layout_rank", "", "  p = f32[4,2]{0} parameter(0)\n  ROOT n = f32[4,2] negate(p)",
     "does not fit the rank-2", 0),
    ("layout_permutation", "", "  p = f32[4,2]{1,1} parameter(0)\n  ROOT n = f32[4,2] negate(p)",
     "each dimension once", 0),
    ("two_roots", "", "  p = f32[4] parameter(0)\n  ROOT a = f32[4] negate(p)\n"
     "  ROOT b = f32[4] abs(p)", "2 ROOT instructions", 2),
    ("parameters_not_dense", "", "  p = f32[4] parameter(0)\n  q = f32[4] parameter(2)\n"
     "  ROOT a = f32[4] add(p, q)", "parameter(1) is missing", 1),
    ("parameter_twice", "", "  p = f32[4] parameter(0)\n  q = f32[4] parameter(0)\n"
     "  ROOT a = f32[4] add(p, q)", "parameter(0) appears twice", 1),
    ("self_reference", "", "  p = f32[4] parameter(0)\n  a = f32[4] add(p, a)\n"
     "  ROOT r = f32[4] negate(a)", "a uses itself", 1),
    ("operand_cycle", "", "  p = f32[4] parameter(0)\n  a = f32[4] add(p, b)\n"
     "  b = f32[4] add(a, p)\n  ROOT r = f32[4] negate(b)", "operand cycle", 2),
    ("while_body_signature", "body {\n  s = f32[] parameter(0)\n  ROOT t = s32[] convert(s)\n}\n\n"
     "cond {\n  s = f32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\n",
     "  p = f32[] parameter(0)\n  ROOT w = f32[] while(p), condition=cond, body=body",
     "while body returns s32[]", 1),
    ("while_condition_pred", "body {\n  s = f32[] parameter(0)\n  ROOT t = f32[] negate(s)\n}\n\n"
     "cond {\n  s = f32[] parameter(0)\n  ROOT t = f32[] negate(s)\n}\n\n",
     "  p = f32[] parameter(0)\n  ROOT w = f32[] while(p), condition=cond, body=body",
     "condition must return pred[]", 1),
    ("call_signature", "f {\n  s = f32[2] parameter(0)\n  ROOT t = f32[2] negate(s)\n}\n\n",
     "  p = f32[3] parameter(0)\n  ROOT c = f32[2] call(p), to_apply=f", "parameter 0 is f32[2]", 1),
    ("call_result", "f {\n  s = f32[2] parameter(0)\n  ROOT t = f32[2] negate(s)\n}\n\n",
     "  p = f32[2] parameter(0)\n  ROOT c = f32[3] call(p), to_apply=f", "gives f32[2]", 1),
    ("computation_calls_itself", "", "  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=e",
     "calls itself", 1),
    ("convolution_features", "", "  x = f32[1,5,5,3] parameter(0)\n  k = f32[3,3,4,8] parameter(1)\n"
     "  ROOT c = f32[1,3,3,8] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f",
     "input features 3 != kernel input features 4", 2),
    ("convolution_result", "", "  x = f32[1,5,5,3] parameter(0)\n  k = f32[3,3,3,8] parameter(1)\n"
     "  ROOT c = f32[1,5,5,8] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f",
     "gives f32[1,3,3,8]", 2),
    ("convolution_window_rank", "", "  x = f32[1,5,5,3] parameter(0)\n  k = f32[3,3,3,8] parameter(1)\n"
     "  ROOT c = f32[1,3,3,8] convolution(x, k), window={size=3}, dim_labels=b01f_01io->b01f",
     "window has 1 dimension(s), 2 needed", 2),
    ("reduce_window_result", REDUCER, "  x = f32[4,6] parameter(0)\n  z = f32[] constant(0)\n"
     "  ROOT r = f32[2,2] reduce-window(x, z), window={size=2x2 stride=2x2}, to_apply=add",
     "gives f32[2,3]", 2),
    ("select_and_scatter_source", SELECT_GE + REDUCER,
     "  x = f32[4,6] parameter(0)\n  s = f32[2,2] parameter(1)\n  z = f32[] constant(0)\n"
     "  ROOT r = f32[4,6] select-and-scatter(x, s, z), window={size=2x2 stride=2x2}, "
     "select=ge, scatter=add", "window output dimensions [2, 3]", 3),
    ("gather_result", "", "  x = f32[5,3] parameter(0)\n  i = s32[4,1] parameter(1)\n"
     "  ROOT g = f32[4,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, "
     "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}", "gives f32[4,3]", 2),
    ("scatter_updates", REDUCER, "  x = f32[5,3] parameter(0)\n  i = s32[4,1] parameter(1)\n"
     "  u = f32[4,2,3] parameter(2)\n  ROOT s = f32[5,3] scatter(x, i, u), update_window_dims={1}, "
     "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
     "to_apply=add", "updates rank 3", 3),
    ("sort_comparator", LESS, "  x = f32[5] parameter(0)\n"
     "  ROOT s = f32[5] sort(x), dimensions={0}, to_apply=less", "takes 4 parameter(s), 2 are", 1),
    ("topk_result", "", "  x = f32[3,8] parameter(0)\n"
     "  ROOT t = (f32[3,2], s32[3,2]) topk(x), k=3, largest=true", "gives (f32[3,3], s32[3,3])", 1),
    ("entry_layout_mismatch", "", "  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)",
     "entry_computation_layout gives parameter 0", 0),
]


@pytest.mark.parametrize("name,prelude,body,fragment,offset", BAD, ids=[b[0] for b in BAD])
def test_verifier_rule_gives_one_located_error(name, prelude, body, fragment, offset) -> None:
    text = module(body, prelude)
    if name == "entry_layout_mismatch":
        text = text.replace("HloModule m", "HloModule m, entry_computation_layout={(f32[5])->f32[4]}")
    with pytest.raises(ParseError) as info:
        hlo.parse(text, "bad.hlo")
    err = info.value
    assert fragment in err.message, err.message
    assert err.filename == "bad.hlo"
    assert (err.line, err.col) == (entry_line(prelude) + offset, 3), str(err)


GOOD = [
    ("convolution_every_attribute", "  x = f32[2,3,9,8] parameter(0)\n  k = f32[4,3,3,2] parameter(1)\n"
     "  ROOT c = f32[2,4,5,15] convolution(x, k), window={size=3x2 stride=2x1 pad=1_1x0_1 "
     "lhs_dilate=1x2 rhs_dilate=1x1 rhs_reversal=1x0}, dim_labels=bf01_oi01->bf01"),
    ("convolution_feature_groups", "  x = f32[1,4,4,6] parameter(0)\n  k = f32[3,3,2,6] parameter(1)\n"
     "  ROOT c = f32[1,2,2,6] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f, "
     "feature_group_count=3"),
    ("convolution_batch_groups", "  x = f32[4,4,4,2] parameter(0)\n  k = f32[3,3,2,6] parameter(1)\n"
     "  ROOT c = f32[2,2,2,6] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f, "
     "batch_group_count=2"),
    ("gather_batching_dims", "  x = f32[2,5,3] parameter(0)\n  i = s32[2,4,1] parameter(1)\n"
     "  ROOT g = f32[2,4,3] gather(x, i), offset_dims={2}, collapsed_slice_dims={1}, "
     "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
     "index_vector_dim=2, slice_sizes={1,1,3}"),
    ("select_with_scalar_pred", "  p = pred[] parameter(0)\n  a = f32[4] parameter(1)\n"
     "  ROOT s = f32[4] select(p, a, a)"),
    ("pad_negative_and_interior", "  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
     "  ROOT q = f32[6] pad(p, z), padding=-1_0_1"),
    ("bitcast_convert_narrower", "  p = f32[4] parameter(0)\n  ROOT b = u8[4,4] bitcast-convert(p)"),
    ("layout_whitespace_kinds", "  p = f32[4,2]{1,\t0} parameter(0)\n  ROOT n = f32[4,2]{1,\n0} negate(p)"),
]


@pytest.mark.parametrize("name,body", GOOD, ids=[g[0] for g in GOOD])
def test_verifier_accepts_valid_forms(name, body) -> None:
    hlo.parse(module(body))


# -- the malformed modules of issue 12, one test each ----------------------------------------

def test_opcode_typo_ad_is_a_located_parse_error() -> None:
    with pytest.raises(ParseError, match=r"x.hlo:5:3: .*unknown opcode 'ad'"):
        hlo.parse(module("  p = f32[8,32] parameter(0)\n  ROOT a = f32[8,32] ad(p, p)"), "x.hlo")


def test_add_result_f32_8x33_of_8x32_operands_is_rejected() -> None:
    with pytest.raises(ParseError, match="f32.8,33."):
        hlo.parse(module("  p = f32[8,32] parameter(0)\n  q = f32[8,32] parameter(1)\n"
                         "  ROOT a = f32[8,33] add(p, q)"))


def test_add_8x4_and_4_without_broadcast_is_rejected() -> None:
    with pytest.raises(ParseError, match="implicit broadcasting"):
        hlo.parse(module("  p = f32[8,4] parameter(0)\n  q = f32[4] parameter(1)\n"
                         "  ROOT a = f32[8,4] add(p, q)"))


def test_layout_1_space_0_is_an_error_not_layout_10() -> None:
    with pytest.raises(ParseError, match=r":4:18: expected ','"):
        hlo.parse(module("  p = f32[4,2]{1 0} parameter(0)\n  ROOT n = f32[4,2] negate(p)"))


def test_operand_cycle_is_an_error_not_a_hang() -> None:
    with pytest.raises(ParseError, match=r"a -> b -> a|b -> a -> b"):
        hlo.parse(module("  p = f32[4] parameter(0)\n  a = f32[4] add(p, b)\n"
                         "  b = f32[4] add(a, p)\n  ROOT r = f32[4] negate(b)"))


def test_self_loop_is_an_error_not_a_hang() -> None:
    with pytest.raises(ParseError, match="uses itself"):
        hlo.parse(module("  p = f32[4] parameter(0)\n  ROOT a = f32[4] add(p, a)"))


def test_inline_operand_shape_must_match_the_operand() -> None:
    text = ("HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n"
            "  ROOT %n = f32[4]{0} negate(f32[5]{0} %p)\n}\n")
    with pytest.raises(ParseError, match=r":5:30: operand 0 of 'n' is written as f32\[5\]"):
        hlo.parse(text)


def test_verify_after_a_pass_raises_verify_error_naming_the_pass() -> None:
    m = hlo.parse(module("  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)"), "v.hlo")
    hlo.verify(m)
    root = m.entry.root
    root.shape = hlo.parse_shape("f32[5]")
    with pytest.raises(VerifyError, match=r"^v.hlo:5:3: e: n: .*gives f32\[4\].*after pass 'x'"):
        hlo.verify(m, after="x")


def test_parse_without_verify_reads_a_broken_module() -> None:
    m = hlo.parse(module("  p = f32[4] parameter(0)\n  ROOT a = f32[4] ad(p, p)"), verify=False)
    assert m.entry.root.opcode == "ad"
    with pytest.raises(VerifyError, match="unknown opcode"):
        hlo.verify(m)
