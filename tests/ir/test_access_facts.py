"""The per-tensor access facts the passes ask about (n_loads, n_stores, load_insts, store_insts,
is_reinterpreted, are_all_dim_affine) are kept incrementally; after every kind of mutation they must
equal the facts recomputed from the attached views, and the verifier must notice when they do not."""

from __future__ import annotations

import pytest

from pyprecision import ir
from pyprecision.errors import VerifyError

TEXT = """func @main {
  tensor @x : input float32[3,2]
  tensor @q : input float8e4m3fn[3,2]
  tensor @i : input int32[3]
  tensor @t : internal float32[3,2]
  tensor @y : output float32[3,2]
^bb0:
  %x = affine_load @x : float32[3,2]
  %x2 = affine_load @x : float32[3,2]
  %q = affine_load @q as float8e4 : float8e4[3,2]
  %i = affine_load @i : int32[3]
  %g = generic_load @x[%i] : float32[3,2]
  %a = add %x, %x2 : float32[3,2]
  affine_store %a, @t
  %l = affine_load @t : float32[3,2]
  affine_store %l, @y
}
"""


def recomputed(t: ir.Tensor) -> tuple:
    """The facts straight from the attached views (the definition the cached values must match)."""
    aps = t.accesses
    loads = [ap.owner for ap in aps if ap.role == "load"]
    stores = [ap.owner for ap in aps if ap.role == "store"]
    return (
        len(loads),
        len(stores),
        list(dict.fromkeys(loads)),
        list(dict.fromkeys(stores)),
        any(ap.reinterpret is not None for ap in aps),
        all(ap.index is None for ap in aps),
    )


def facts(t: ir.Tensor) -> tuple:
    return (
        t.n_loads,
        t.n_stores,
        t.load_insts,
        t.store_insts,
        t.is_reinterpreted,
        t.are_all_dim_affine,
    )


def check_all(f: ir.Function) -> None:
    for t in f.tensors:
        assert facts(t) == recomputed(t), t.name


def setup():
    m = ir.parse(TEXT)
    f = m.main
    return m, f, {i.result.name: i for i in f.instructions() if i.result is not None}


def test_facts_after_parse():
    m, f, ops = setup()
    check_all(f)
    x = f.get_tensor("x")
    assert x.n_loads == 3 and x.load_insts == [ops["x"], ops["x2"], ops["g"]]
    assert not x.are_all_dim_affine and f.get_tensor("q").is_reinterpreted


def test_facts_follow_erase_replace_tensor_and_clone():
    m, f, ops = setup()
    x, t = f.get_tensor("x"), f.get_tensor("t")
    assert x.load_insts == [ops["x"], ops["x2"], ops["g"]]  # fill the cache
    ops["g"].erase_from_parent()
    check_all(f)
    assert x.are_all_dim_affine and x.load_insts == [ops["x"], ops["x2"]]
    ops["x2"].src.replace_tensor(t)  # now reads @t
    check_all(f)
    assert t.load_insts == [ops["l"], ops["x2"]] and x.load_insts == [ops["x"]]
    c = ops["l"].clone()  # registered with @t at creation
    check_all(f)
    assert t.n_loads == 3 and t.load_insts[-1] is c
    c.drop_all_references()
    check_all(f)
    ir.verify(m)


def test_setting_reinterpret_or_index_on_an_attached_view_updates_the_tensor():
    m, f, ops = setup()
    x = f.get_tensor("x")
    ap = ops["x"].src
    ap.reinterpret = "float32r"
    assert x.is_reinterpreted and ap.reinterpret is ir.float32r
    check_all(f)
    ap.reinterpret = None
    assert not x.is_reinterpreted
    ops["g"].src.index = None
    assert x.are_all_dim_affine
    check_all(f)
    q = f.get_tensor("q")
    ops["q"].src.replace_tensor(x)  # the reinterpreted view moves to @x
    assert x.is_reinterpreted and not q.is_reinterpreted
    check_all(f)


def test_load_insts_is_a_fresh_list_each_time():
    m, f, ops = setup()
    x = f.get_tensor("x")
    got = x.load_insts
    got.clear()
    assert x.load_insts == [ops["x"], ops["x2"], ops["g"]]


def test_verifier_catches_stale_access_facts():
    m, f, _ops = setup()
    x = f.get_tensor("x")
    x._n_reinterpreted += 1
    with pytest.raises(VerifyError, match="stale access counts"):
        ir.verify(m)
    x._n_reinterpreted -= 1
    ir.verify(m)
    x.load_insts  # noqa: B018 - fills the cache
    x._insts[1].reverse()  # type: ignore[index]
    with pytest.raises(VerifyError, match="stale access counts"):
        ir.verify(m)
