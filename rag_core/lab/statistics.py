"""The relevance lab's statistics over a query set: means with 95% bootstrap intervals, paired
tests between two methods, and how much two lists agree without any judgment.

A mean over queries carries a percentile bootstrap interval (``scipy.stats.bootstrap``); two
methods are compared with a paired randomisation test (``scipy.stats.permutation_test``, sign
flips) and a paired t-test. :func:`overlap_at_k` and :func:`rank_biased_overlap` need no
judgments. The per-query figures themselves are :func:`rag_core.evaluation.metrics.query_metrics`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass

from rag_core.evaluation.metrics import DEPTH, METRIC_LABELS
from rag_core.settings import PAIRED_TEST_MIN_QUERIES


@dataclass(frozen=True)
class Estimate:
    """A mean over queries with its 95% bootstrap confidence interval (None with < 2 values)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self, digits: int = 3) -> str:
        if self.mean is None:
            return "–"
        if self.low is None:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def mean_ci(values: Sequence[float | None], *, confidence: float = 0.95, resamples: int = 5000,
            seed: int = 0) -> Estimate:
    """The mean of the values that are not None, with a percentile bootstrap interval."""
    data = [float(v) for v in values if v is not None]
    if not data:
        return Estimate(None, None, None, 0)
    mean = sum(data) / len(data)
    if len(data) < 2:
        return Estimate(mean, None, None, len(data))
    if max(data) == min(data):
        return Estimate(mean, mean, mean, len(data))
    import numpy as np
    from scipy.stats import bootstrap

    result = bootstrap((np.asarray(data),), np.mean, confidence_level=confidence, n_resamples=resamples,
                       method="percentile", random_state=np.random.default_rng(seed), vectorized=True)
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return Estimate(mean, low, high, len(data))


@dataclass(frozen=True)
class PairedTest:
    """Method ``a`` against ``b`` on the queries both could be scored on."""

    a: str
    b: str
    metric: str
    n: int
    mean_a: float | None
    mean_b: float | None
    difference: Estimate  # mean of a - b, with its bootstrap interval
    p_randomisation: float | None  # two-sided paired randomisation (sign-flip) test
    p_ttest: float | None  # two-sided paired t-test
    wins: int  # queries where a > b
    losses: int
    ties: int

    def to_dict(self) -> dict:
        out = asdict(self)
        out["difference"] = self.difference.to_dict()
        return out

    def verdict(self, alpha: float = 0.05) -> str:
        if self.n < 2 or self.p_randomisation is None:
            return "Too few queries scored by both methods for a test (judge more queries)."
        diff = self.difference.mean or 0.0
        better, worse = (self.a, self.b) if diff > 0 else (self.b, self.a)
        metric = METRIC_LABELS.get(self.metric, self.metric)
        if self.p_randomisation < alpha:
            return (f"{better} beats {worse} by {abs(diff):.3f} {metric} on average over {self.n} queries; "
                    f"a difference this large would arise by chance with p = {self.p_randomisation:.3f}.")
        return (f"No reliable difference: {abs(diff):.3f} {metric} in favour of {better} over {self.n} "
                f"queries, p = {self.p_randomisation:.3f} (≥ {alpha}); judge more queries to tell them apart.")


    def cautions(self, alpha: float = 0.05) -> list[str]:
        """What a reader must know before trusting :meth:`verdict`: too few queries, and an interval
        and a p-value that disagree (and why)."""
        out = []
        if 2 <= self.n < PAIRED_TEST_MIN_QUERIES:
            smallest = 2 / 2 ** self.n
            out.append(f"Only {self.n} queries: too few for a paired test. With {self.n} queries the randomisation "
                       f"test cannot give a p below {smallest:.3g} however large the difference, and the "
                       f"bootstrap interval is too narrow; judge at least {PAIRED_TEST_MIN_QUERIES} queries.")
        low, high, p = self.difference.low, self.difference.high, self.p_randomisation
        if low is not None and high is not None and p is not None:
            excludes_zero = low > 0 or high < 0
            if excludes_zero and p >= alpha:
                out.append(f"The 95% interval [{low:.3f}, {high:.3f}] excludes zero while p = {p:.3f}: the bootstrap "
                           "only resamples the queries judged, so with few queries its interval is too narrow. "
                           "Trust the test: the difference is not established.")
            elif not excludes_zero and p < alpha:
                out.append(f"p = {p:.3f} while the 95% interval [{low:.3f}, {high:.3f}] includes zero: the two "
                           "disagree at the edge; treat the difference as tentative and judge more queries.")
        return out


def paired_test(a: Mapping[str, float | None], b: Mapping[str, float | None], *, names: tuple[str, str] = ("a", "b"),
                metric: str = "ndcg@10", resamples: int = 10000, seed: int = 0) -> PairedTest:
    """Compare per-query values (query -> value) of two methods on the queries both have."""
    import numpy as np

    common = [q for q in a if q in b and a[q] is not None and b[q] is not None]
    x = np.asarray([float(a[q]) for q in common])
    y = np.asarray([float(b[q]) for q in common])
    d = x - y
    n = len(common)
    wins, losses = int((d > 1e-12).sum()), int((d < -1e-12).sum())
    diff = mean_ci(list(d), seed=seed)
    p_rand = p_t = None
    if n >= 2:
        if not np.any(np.abs(d) > 1e-12):
            p_rand = p_t = 1.0
        else:
            from scipy.stats import permutation_test, ttest_rel

            result = permutation_test((x, y), lambda u, v, axis=-1: np.mean(u - v, axis=axis),
                                      permutation_type="samples", n_resamples=resamples, vectorized=True,
                                      alternative="two-sided", random_state=np.random.default_rng(seed))
            p_rand = float(result.pvalue)
            p_t = float(ttest_rel(x, y).pvalue) if np.std(d) > 0 else 0.0
    return PairedTest(names[0], names[1], metric, n, float(x.mean()) if n else None, float(y.mean()) if n else None,
                      diff, p_rand, p_t, wins, losses, n - wins - losses)


# --------------------------------------------------------------------------- without judgments


def overlap_at_k(a: Sequence[Hashable], b: Sequence[Hashable], k: int = DEPTH) -> float | None:
    """Share of the top ``k`` the two lists have in common (None when both are empty)."""
    top_a, top_b = list(dict.fromkeys(a))[:k], list(dict.fromkeys(b))[:k]
    if not top_a and not top_b:
        return None
    return len(set(top_a) & set(top_b)) / k


def rank_biased_overlap(a: Sequence[Hashable], b: Sequence[Hashable], p: float = 0.9) -> float | None:
    """Extrapolated rank-biased overlap (Webber, Moffat and Zobel 2010, eq. 32; lists of any
    lengths): 1 for identical rankings, 0 for disjoint ones; the top weighs most (``p`` = 0.9:
    the first 10 ranks carry about 86% of the weight)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1, got {p}")
    a, b = list(dict.fromkeys(a)), list(dict.fromkeys(b))
    if not a and not b:
        return None
    if not a or not b:
        return 0.0
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    s, l_ = len(short), len(long_)
    seen_s: set = set()
    seen_l: set = set()
    overlap = 0
    x = [0] * (l_ + 1)  # x[d]: overlap of the first d items (the short list stops at s)
    for d in range(1, l_ + 1):
        if d <= s:
            item_s = short[d - 1]
            if item_s in seen_l:
                overlap += 1
            seen_s.add(item_s)
        item_l = long_[d - 1]
        if item_l in seen_s:
            overlap += 1
        seen_l.add(item_l)
        x[d] = overlap
    total = sum(x[d] / d * p ** d for d in range(1, l_ + 1))
    total += sum(x[s] * (d - s) / (s * d) * p ** d for d in range(s + 1, l_ + 1))
    value = (1 - p) / p * total + ((x[l_] - x[s]) / l_ + x[s] / s) * p ** l_
    return float(min(max(value, 0.0), 1.0))


@dataclass(frozen=True)
class ListChange:
    """How one ranked list (``after``) differs from another (``before``, a baseline): each row's
    move, what fell out, and how much the two agree (overlap and rank-biased overlap)."""

    moves: dict[Hashable, tuple[int | None, int]]  # item of ``after`` -> (rank before or None, rank after)
    dropped: list[tuple[Hashable, int]]  # items of ``before`` not in ``after``, with their rank before
    overlap: float | None  # overlap@k of the two
    rbo: float | None  # rank-biased overlap of the two tops
    k: int

    @property
    def up(self) -> int:
        return sum(1 for b, a in self.moves.values() if b is not None and a < b)

    @property
    def down(self) -> int:
        return sum(1 for b, a in self.moves.values() if b is not None and a > b)

    @property
    def same(self) -> int:
        return sum(1 for b, a in self.moves.values() if b == a)

    @property
    def new(self) -> int:
        return sum(1 for b, _ in self.moves.values() if b is None)

    @property
    def identical(self) -> bool:
        return not self.dropped and self.same == len(self.moves)

    def summary(self) -> str:
        """ "overlap@10 0.80 · RBO 0.74 · 3 up, 2 down, 4 same, 1 new, 1 fell out"."""
        def share(value: float | None) -> str:
            return "–" if value is None else f"{value:.2f}"
        counts = ", ".join(f"{n} {word}" for n, word in ((self.up, "up"), (self.down, "down"), (self.same, "same"),
                                                          (self.new, "new"), (len(self.dropped), "fell out")) if n)
        return f"overlap@{self.k} {share(self.overlap)} · RBO {share(self.rbo)} · {counts or 'both empty'}"

    def to_dict(self) -> dict:
        return {"moves": [{"item": item, "before": b, "after": a} for item, (b, a) in self.moves.items()],
                "dropped": [{"item": item, "before": b} for item, b in self.dropped], "overlap": self.overlap,
                "rbo": self.rbo, "k": self.k, "up": self.up, "down": self.down, "same": self.same, "new": self.new}


def list_change(before: Sequence[Hashable], after: Sequence[Hashable], *, k: int = DEPTH) -> ListChange:
    """``after`` against ``before`` (items best first, ranks from 1): every item's rank in each, the
    items that fell out, overlap@``k`` and the rank-biased overlap of the two top ``k``."""
    before, after = list(dict.fromkeys(before)), list(dict.fromkeys(after))
    rank_before = {item: rank for rank, item in enumerate(before, start=1)}
    present = set(after)
    moves = {item: (rank_before.get(item), rank) for rank, item in enumerate(after, start=1)}
    dropped = [(item, rank) for item, rank in rank_before.items() if item not in present]
    return ListChange(moves, dropped, overlap_at_k(before, after, k), rank_biased_overlap(before[:k], after[:k]), k)
