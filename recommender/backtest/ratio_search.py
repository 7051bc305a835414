"""A certified lower bound on a ratio S / R under a budget of N, by Lagrangian duality.

Both hindsight references ask the same question of a different feasible set:
how low can relative slack S / R go with at most B shortfall windows? For any
lambda >= 0, g(theta, lambda) = min over the set of (S - theta R + lambda N)
- lambda B is a lower bound on min (S - theta R) over the choices within the
budget, so g > 0 proves every one of them has S / R > theta. The search only
needs the minimiser of each set (`Minimiser`); it bisects lambda on the sign of
N - B around Newton (Dinkelbach) roots in theta, and certifies a ratio just
below the best root. Every minimiser it meets that keeps to the budget is a
choice that reaches its own S / R: the lowest of those is what is `achieved`.
Values are in units where the mean usage is 1 (`LAMBDA_RANGE`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

LAMBDA_RANGE = (1e-5, 1e5)  # multipliers searched, in units of the mean usage
MARGIN = 1e-7  # the certified ratio sits this far below the numerical root


@dataclass(frozen=True)
class Minimum:
    """min over the feasible set of S - theta R + lambda N, with the R and N of a minimiser."""

    value: float
    requested: float
    shortfalls: float

    def slack(self, theta: float, lam: float) -> float:
        """S of the minimiser (lambda N is 0 when N is, even for an infinite lambda)."""
        penalty = lam * self.shortfalls if self.shortfalls > 0 else 0.0
        return self.value + theta * self.requested - penalty


Minimiser = Callable[[float, float], Minimum]  # (theta, lambda) -> Minimum


@dataclass(frozen=True)
class _Evaluation:
    g: float
    requested: float
    shortfalls: float


class RatioSearch:
    """Bisection on lambda (sign of N - B) around Newton (Dinkelbach) roots in theta."""

    def __init__(self, minimise: Minimiser, budget: float, total: float) -> None:
        """budget: B (whole windows); total: the summed usage, which sets the tolerance."""
        self.minimise, self.budget = minimise, budget
        self.evaluations = 0
        self.certified, self.certifier = 0.0, 0.0
        self.achieved, self.achieved_shortfalls = math.inf, math.nan
        self.tolerance = 1e-9 * (total + 1.0)

    def evaluate(self, theta: float, lam: float) -> _Evaluation:
        self.evaluations += 1
        found = self.minimise(theta, lam)
        penalty = lam * self.budget if self.budget > 0 else 0.0
        result = _Evaluation(found.value - penalty, found.requested, found.shortfalls)
        scale = self.tolerance * (1.0 + (lam if math.isfinite(lam) else 0.0))
        if result.g > scale and theta > self.certified:
            self.certified, self.certifier = theta, lam
        if found.shortfalls <= self.budget and found.requested > 0:
            ratio = found.slack(theta, lam) / found.requested
            if ratio < self.achieved:
                self.achieved, self.achieved_shortfalls = ratio, found.shortfalls
        return result

    def root(self, lam: float, theta: float) -> tuple[float, _Evaluation]:
        """The theta where g(., lambda) crosses 0 (Newton from above: monotone, finite)."""
        result = self.evaluate(theta, lam)
        for _ in range(100):
            if result.requested <= 0:  # g flat in theta: above 0 everywhere or nowhere
                if result.g <= 0:
                    return -math.inf, result
                theta, result = 1.0, self.evaluate(1.0, lam)
                continue
            step = result.g / result.requested
            if abs(step) <= 1e-10:
                break
            theta = min(theta + step, 1.0)  # above 1 no request set can have g > 0
            result = self.evaluate(theta, lam)
        return theta, result

    def run(self) -> None:
        if self.budget <= 0:
            self._certify(math.inf, self.root(math.inf, 0.0)[0])
            return
        low, high = (math.log(bound) for bound in LAMBDA_RANGE)
        best_theta, best_lam, theta = -math.inf, 1.0, 0.0
        while high - low > math.log(1.001):
            lam = math.exp((low + high) / 2)
            root, result = self.root(lam, max(theta, 0.0))
            if root > best_theta:
                best_theta, best_lam = root, lam
            theta = root if math.isfinite(root) else 0.0
            if result.shortfalls > self.budget:
                low = math.log(lam)
            else:
                high = math.log(lam)
        self._certify(best_lam, best_theta)

    def _certify(self, lam: float, root: float) -> None:
        """Prove a ratio just below the numerical root (Newton from above if it fails)."""
        theta = root - MARGIN
        for _ in range(20):
            if theta <= self.certified:
                return
            result = self.evaluate(theta, lam)
            if result.requested <= 0:
                return
            theta += min(result.g / result.requested, 0.0) - MARGIN
