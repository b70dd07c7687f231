"""The HLO evaluator: an HLO module executed as written, every result rounded to its element type.
Imports ``emulate.shared`` and the ``hlo`` and ``kernel`` rooms; never the loop IR or the passes."""
