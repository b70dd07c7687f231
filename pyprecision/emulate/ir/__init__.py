"""The loop-IR evaluator: an IR function executed on NumPy data, every result rounded to its dtype.
Imports ``emulate.shared`` and the ``ir``, ``hlo`` (element types) and ``kernel`` rooms; never the HLO
evaluator, the lowering or the passes."""
