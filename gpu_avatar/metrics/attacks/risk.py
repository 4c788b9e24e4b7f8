"""The risk statistics shared by the attacks: Wilson score success rates and the residual risk
``(attack - control) / (1 - control)`` with its propagated error, bounded to [0, 1]."""

from __future__ import annotations

import math


def probit(confidence_level: float) -> float:
    """The two-sided normal quantile of ``confidence_level``."""
    from scipy.stats import norm

    return float(norm.ppf(0.5 * (1.0 + confidence_level)))


def success_rate(n_total: int, n_success: float, confidence_level: float) -> tuple[float, float]:
    """Wilson score estimate of a success rate and its error bound, ``(rate, error)``."""
    z = probit(confidence_level)
    z2 = z * z
    variance = n_success * (n_total - n_success) / n_total
    denominator = n_total + z2
    rate = (n_success + 0.5 * z2) / denominator
    return rate, (z / denominator) * math.sqrt(max(variance, 0.0) + 0.25 * z2)


def residual_risk(attack: tuple[float, float], control: tuple[float, float]):
    """``(attack - control) / (1 - control)`` and its propagated error."""
    (a, da), (c, dc) = attack, control
    value = (a - c) / (1.0 - c)
    error = math.hypot(da / abs(1.0 - c), dc * (a - 1.0) / (1.0 - c) ** 2)
    return value, error


def bounded(value: float, error: float) -> tuple[float, float, float]:
    """``value`` and its interval ``value -/+ error``, each clipped to [0, 1]."""

    def clip(x):
        return min(max(x, 0.0), 1.0)

    return clip(value), clip(value - error), clip(value + error)
