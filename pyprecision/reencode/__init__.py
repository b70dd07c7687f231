"""Re-encoding a checkpoint into another format, tensor by tensor, streaming (docs/io.md).

An application above :mod:`pyprecision.io`: it reads through ``io``'s readers, rounds through
``kernel`` and writes through ``io``'s atomic writers, publishing every output without replacing
anything unless asked.

Arrows: ``reencode`` imports ``io``, ``kernel``, ``formats`` and ``errors``; only ``tools`` (and
users) import ``reencode``.
"""

from pyprecision.reencode.core import amax_scale, reencode
from pyprecision.reencode.distributed import DistributedSummary, connect, reencode_distributed
from pyprecision.reencode.plan import SCALE_SUFFIX, ReencodeOptions, tensor_seed
from pyprecision.reencode.stats import ReencodeSummary, TensorResult

__all__ = [
    "reencode",
    "reencode_distributed",
    "connect",
    "DistributedSummary",
    "ReencodeOptions",
    "ReencodeSummary",
    "TensorResult",
    "SCALE_SUFFIX",
    "amax_scale",
    "tensor_seed",
]
