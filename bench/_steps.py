"""Step timers for the probe scripts: wrap a module's function so each call's seconds and count
are added under a label, then print the totals."""
import collections
import time

T: collections.Counter = collections.Counter()
N: collections.Counter = collections.Counter()


def wrap(mod, name, label):
    """Replace ``mod.name`` by a wrapper that adds its time to ``T[label]`` and a call to ``N``."""
    f = getattr(mod, name)

    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            T[label] += time.perf_counter() - t
            N[label] += 1

    setattr(mod, name, g)


def report():
    """Each label's seconds and calls, largest first."""
    for k, v in T.most_common():
        print(f"  {k:24s} {v:7.2f} s  ({N[k]} calls)")
