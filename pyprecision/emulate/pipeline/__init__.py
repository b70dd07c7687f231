"""The compiler driver: HLO passes → lowering → precision passes → loop-IR emulation, as neuronx-cc
runs them. The one sub-room of ``emulate`` that imports ``lower``, ``passes`` and ``frontend``."""
