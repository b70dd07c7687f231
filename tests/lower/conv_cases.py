"""Random convolutions for the lowering tests: every dim_labels order, 1 or 2 spatial dimensions,
window size / stride / padding (negative too) / lhs and rhs dilation, feature or batch groups;
the HLO text of one ``convolution`` and its operand shapes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import assume
from hypothesis import strategies as st

from pyprecision import hlo


@dataclass(frozen=True)
class ConvCase:
    """One random convolution: operand and result shapes and its attribute text."""

    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    out: tuple[int, ...]
    attrs: str

    def text(self, dtype: str = "f32") -> str:
        """The module: ``ROOT c = convolution(x, k)``."""
        sh = lambda s: ",".join(map(str, s))  # noqa: E731
        return (f"HloModule conv\n\nENTRY main {{\n  x = {dtype}[{sh(self.lhs)}] parameter(0)\n"
                f"  k = {dtype}[{sh(self.rhs)}] parameter(1)\n"
                f"  ROOT c = {dtype}[{sh(self.out)}] convolution(x, k), {self.attrs}\n}}\n")


def _labels(draw: st.DrawFn, pair: str, nsp: int) -> str:
    return "".join(draw(st.permutations(list(pair) + [str(i) for i in range(nsp)])))


@st.composite
def conv_cases(draw: st.DrawFn, groups: bool = True) -> ConvCase:
    """A valid convolution with a non-empty result (feature or batch groups when ``groups``)."""
    nsp = draw(st.integers(1, 2))
    li, ki, lo = _labels(draw, "bf", nsp), _labels(draw, "io", nsp), _labels(draw, "bf", nsp)
    g = draw(st.integers(1, 3)) if groups else 1
    kind = draw(st.sampled_from(["feature", "batch"]))
    fgc, bgc = (g, 1) if kind == "feature" else (1, g)
    ci_g, co_g, nb = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 2)) * bgc
    ci = ci_g * fgc
    win, sp_in, sp_k = [], [], []
    for _ in range(nsp):
        size, base = draw(st.integers(1, 3)), draw(st.integers(1, 5))
        stride, lhs_d, rhs_d = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
        lo_p, hi_p = draw(st.integers(-1, 2)), draw(st.integers(-1, 2))
        eff_base = (base - 1) * lhs_d + 1 + lo_p + hi_p
        assume(eff_base >= (size - 1) * rhs_d + 1)
        win.append(f"size={size} stride={stride} pad={lo_p}_{hi_p} lhs_dilate={lhs_d} "
                   f"rhs_dilate={rhs_d}")
        sp_in.append(base)
        sp_k.append(size)
    keys = ["size", "stride", "pad", "lhs_dilate", "rhs_dilate"]
    parts = [dict(p.split("=") for p in w.split()) for w in win]
    window = "window={" + " ".join(f"{k}={'x'.join(p[k] for p in parts)}" for k in keys) + "}"
    lhs = tuple(nb if c == "b" else ci if c == "f" else sp_in[int(c)] for c in li)
    rhs = tuple(ci_g if c == "i" else co_g * g if c == "o" else sp_k[int(c)] for c in ki)
    attrs = f"{window}, dim_labels={li}_{ki}->{lo}"
    attrs += f", feature_group_count={fgc}" if fgc > 1 else ""
    attrs += f", batch_group_count={bgc}" if bgc > 1 else ""
    dn = hlo.parse_dim_labels(f"{li}_{ki}->{lo}", nsp + 2)
    out = hlo.conv_output_dims(lhs, rhs, dn, hlo.parse_window(window[len("window="):], nsp), fgc, bgc)
    assume(math.prod(out) > 0)
    return ConvCase(lhs, rhs, out, attrs)
