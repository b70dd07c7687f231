"""Re-encoding a checkpoint into another format, tensor by tensor, streaming (docs/io.md).

An application above :mod:`pyprecision.io`: it reads through ``io``'s readers, rounds through
``kernel`` and writes through ``io``'s atomic writers, publishing every output without replacing
anything unless asked.

Arrows: ``reencode`` imports ``io``, ``kernel``, ``formats`` and ``errors``; only ``tools`` (and
users) import ``reencode``.
"""

from typing import TYPE_CHECKING, Any

from pyprecision.reencode.core import amax_scale, reencode
from pyprecision.reencode.plan import SCALE_SUFFIX, ReencodeOptions, tensor_seed
from pyprecision.reencode.stats import ReencodeSummary, TensorResult

if TYPE_CHECKING:  # the Dask engine's module loads on first use (PEP 562)
    from pyprecision.reencode.distributed import DistributedSummary, connect, reencode_distributed

_DISTRIBUTED = ("reencode_distributed", "connect", "DistributedSummary")


def __getattr__(name: str) -> Any:
    if name not in _DISTRIBUTED:
        raise AttributeError(f"module 'pyprecision.reencode' has no attribute {name!r}")
    from pyprecision.reencode import distributed

    return getattr(distributed, name)


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
