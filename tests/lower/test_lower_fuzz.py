"""Fuzzing the lowering and the pipeline: mutated real modules that still parse (and so verify)
either lower, pass and emulate, or fail with a pyprecision error — never another exception, never
a hang. Deterministic (derandomized), bounded: 200 inputs, each timed."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lower_cases import DATA

from pyprecision import emulate, frontend, hlo
from pyprecision.errors import PyPrecisionError

SEEDS = ["dot_f32", "dot_general_batched_f32", "elementwise_f32", "reduce_f32", "shape_ops",
         "conditionals", "bf16_mix", "tuples"]  # fmt: skip
#: gather / scatter / sort seeds (h6gather): gathers of every form, scatters with add/set/max/mul
#: combiners, sorts with JAX's comparators
INDEXED = ["gather_ops", "../../hlo-eval/jax-0.10.2/embedding",
           "../../hlo-eval/jax-0.10.2/scatter_updates", "../../hlo-eval/jax-0.10.2/draw_scatter_03",
           "../../hlo-eval/jax-0.10.2/argsort"]
#: grouped / depthwise convolutions and select-and-scatter seeds (h7conv)
CONV = ["../../hlo-eval/jax-0.10.2/cnn_grad", "../../hlo-eval/jax-0.10.2/depthwise_conv_grad",
        "../../hlo-eval/jax-0.10.2/draw_conv_01", "../../hlo-eval/jax-0.10.2/draw_conv_07",
        "../../models/jax-0.10.2/dw_separable_grad"]
#: argmax / argmin / top-k / cbrt / bit-op seeds (h7red)
ARG = ["../../hlo-eval/jax-0.10.2/argmax", "../../hlo-eval/jax-0.10.2/top_k_sampling",
       "../../models/jax-0.10.2/argmax_cases", "../../hlo-eval/jax-0.10.2/elementwise_misc"]
TEXTS = [(DATA / f"{n}.hlo.txt").read_text() for n in SEEDS + INDEXED + CONV + ARG]
OPCODES = ["add", "multiply", "maximum", "tanh", "negate", "transpose", "reshape", "dot", "reduce",
           "broadcast", "convert", "select", "compare", "gather", "scatter", "sort", "while",
           "copy", "convolution", "select-and-scatter", "topk", "cbrt", "popcnt"]  # fmt: skip
MODES = ["none", "matmult", "matmult-bf16", "all", "all-fp8e4", "matmult-fp8e4"]
TIME_LIMIT = 10.0


@st.composite
def mutated(draw) -> str:
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 3))):
        n = len(text)
        i = draw(st.integers(0, max(n - 1, 0)))
        kind = draw(st.integers(0, 2))
        if kind == 0:  # change a number
            k = next((p for p in range(i, n) if text[p].isdigit()), -1)
            if k >= 0:
                text = text[:k] + str(draw(st.sampled_from([0, 1, 2, 3, 7, 64]))) + text[k + 1:]
        elif kind == 1:  # swap an opcode
            k = text.find(" ", i)
            e = text.find("(", k)
            if 0 <= k < e and "\n" not in text[k:e]:
                text = text[:k + 1] + draw(st.sampled_from(OPCODES)) + text[e:]
        else:  # drop a line
            a = text.rfind("\n", 0, i)
            b = text.find("\n", i)
            if 0 <= a < b:
                text = text[:a] + text[b:]
    return text


def _zeros(module: hlo.HloModule) -> list:
    args = []
    for p in sorted(module.entry.parameters, key=lambda q: q.parameter_number or 0):
        dt = hlo.numpy_dtype(p.shape.element_type)
        args.append(np.zeros(tuple(p.shape.dimensions), dt) + np.asarray(1, dt))
    return args


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])  # fmt: skip
@given(mutated(), st.sampled_from(MODES))
def test_mutated_modules_lower_or_fail_with_a_project_error(text, mode):
    start = time.perf_counter()
    try:
        module = hlo.parse(text, "fuzz.hlo.txt")
    except PyPrecisionError:
        return
    try:
        compiled = emulate.compile_hlo(module, frontend.parse_flags(["--fp32-cast", mode]),
                                       filename="fuzz.hlo.txt", text=text)  # fmt: skip
        if not any(p.shape.is_tuple for p in module.entry.parameters):
            emulate.run_compiled(compiled, _zeros(module))
    except PyPrecisionError:
        pass
    assert time.perf_counter() - start < TIME_LIMIT
