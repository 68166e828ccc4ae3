"""The logistic win-probability fit and its scores, shared by the games whose V_t is a model fitted on
match records (sc2, dota2): L2-penalised maximum likelihood by Newton's method, rows weighted."""
from __future__ import annotations

import numpy as np


def fit(X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float) -> np.ndarray:
    """Coefficients of P(y = 1) = sigmoid(X @ beta) minimising the weighted log loss + l2 / 2 * |beta|^2."""
    beta = np.zeros(X.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(X @ beta, -40, 40)))
        g = X.T @ (w * (p - y)) + l2 * beta
        Hm = (X * (w * p * (1 - p))[:, None]).T @ X + l2 * np.eye(X.shape[1])
        step = np.linalg.solve(Hm, g)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return beta


def scores(p, y) -> dict[str, float]:
    """Brier score and log loss of probabilities `p` for outcomes `y` (p clipped to [0.01, 0.99]), 4 decimals."""
    p, y = np.clip(np.asarray(p, float), 0.01, 0.99), np.asarray(y, float)
    return {"brier": round(float(np.mean((p - y) ** 2)), 4),
            "log_loss": round(float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))), 4)}
