"""Array algorithms both executors share: rounding to an HLO element type, folds in a stated order,
gather/scatter, sort keys, windows, convolution positions, bit recipes and the RNG streams. Imports no
executor (``emulate.hlo``, ``emulate.ir``) and no compiler room."""
