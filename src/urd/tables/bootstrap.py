"""Bootstrap confidence intervals for retention B/A, over episodes.

Method (stated in every table that uses it): the episodes of a cell are resampled with
replacement, `resamples` times; each resample's retention is the ratio of its means,
mean(score B) / mean(score A), exactly as the point estimate is computed (urd.harness.fold).
The interval is the percentile interval at `level` (numpy.quantile, linear interpolation).

The resampled episode indices come from the project's SHA-256 stream (urd.core.rng), named by the
seed and the number of episodes, so they are the same on every machine and numpy version, and
every cell with the same number of episodes is resampled with the same index draws (a paired
bootstrap: systems are compared on the same resampled episode sets).

A resample whose mean A is 0 has no ratio. If more than (1 - level) / 2 of the resamples have
none, an interval from the rest would hide that, so the interval itself is reported undefined.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..core.rng import Stream

METHOD = "percentile bootstrap over episodes (resampled with replacement), ratio of means"


@dataclass(frozen=True)
class Bootstrap:
    resamples: int = 10_000
    level: float = 0.95
    seed: int = 20260807

    def describe(self) -> str:
        return (f"{self.level:.0%} CI: {METHOD}; {self.resamples} resamples, seed {self.seed}, "
                "episode indices from urd.core.rng (SHA-256 stream)")

    def as_dict(self) -> dict:
        return {"method": METHOD, "resamples": self.resamples, "level": self.level, "seed": self.seed}


@dataclass(frozen=True)
class Interval:
    point: float | None          # mean(B) / mean(A) over all episodes; None when mean A <= 0
    low: float | None
    high: float | None
    n_episodes: int
    undefined_resamples: int     # resamples whose mean A is <= 0
    reason: str | None = None    # why the point or the interval is undefined

    def as_dict(self) -> dict:
        return {"retention": self.point, "ci_low": self.low, "ci_high": self.high,
                "n_episodes": self.n_episodes, "undefined_resamples": self.undefined_resamples,
                "undefined": self.reason}


@lru_cache(maxsize=64)
def resample_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) episode positions in [0, n), drawn with replacement."""
    if n < 1 or resamples < 1:
        raise ValueError(f"need n >= 1 and resamples >= 1, got n={n}, resamples={resamples}")
    stream = Stream("urd-bootstrap", seed, n, resamples)
    idx = np.fromiter((stream.below(n) for _ in range(n * resamples)), dtype=np.int64, count=n * resamples)
    idx = idx.reshape(resamples, n)
    idx.setflags(write=False)
    return idx


def ratio_of_means(a, b) -> float | None:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ma = a.mean()
    # a negative A (T2 discrimination below chance) would flip the ratio's sign: no value either
    return None if ma <= 0 else float(b.mean() / ma)


def retention_interval(score_a, score_b, boot: Bootstrap) -> Interval:
    """Point estimate and percentile interval of mean(B)/mean(A) over the paired episodes."""
    a, b = np.asarray(score_a, dtype=float), np.asarray(score_b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"score A and score B must be paired per episode, got {a.shape} and {b.shape}")
    n = a.size
    if n == 0:
        return Interval(None, None, None, 0, 0, "no scored episodes")
    point = ratio_of_means(a, b)
    if point is None:
        return Interval(None, None, None, n, boot.resamples, "A = 0" if a.mean() == 0 else "A < 0")
    idx = resample_indices(n, boot.resamples, boot.seed)
    ma, mb = a[idx].mean(axis=1), b[idx].mean(axis=1)
    ok = ma > 0
    undefined = int((~ok).sum())
    if undefined > boot.resamples * (1 - boot.level) / 2:
        share = undefined / boot.resamples
        what = "A = 0" if (ma[~ok] == 0).all() else "A <= 0"
        return Interval(point, None, None, n, undefined, f"{what} in {share:.1%} of resamples")
    ratios = mb[ok] / ma[ok]
    alpha = (1 - boot.level) / 2
    low, high = np.quantile(ratios, [alpha, 1 - alpha])
    return Interval(point, float(low), float(high), n, undefined)
