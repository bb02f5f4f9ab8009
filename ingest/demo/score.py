"""bench_moe score and ``latency_ms`` blocks (schema 2.5): per-iteration slowest rank,
MAD-trimmed mean. Sums run left to right so the vectorised and the pure-Python
versions agree bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np


def _seq_sum(a: np.ndarray) -> np.ndarray:
    """Left-to-right sum over the last axis (same rounding as a Python for-loop)."""
    s = a[..., 0].copy()
    for j in range(1, a.shape[-1]):
        s = s + a[..., j]
    return s


def _stats_arrays(x: np.ndarray) -> dict[str, np.ndarray]:
    """_compute_stats over the last axis: mean, median, stdev (population), min, max, p90."""
    n = x.shape[-1]
    srt = np.sort(x, axis=-1)
    mean = _seq_sum(x) / n
    d = x - mean[..., None]
    stdev = np.sqrt(_seq_sum(d * d) / n)
    median = srt[..., n // 2] if n % 2 else (srt[..., n // 2 - 1] + srt[..., n // 2]) / 2.0
    p90 = srt[..., round(0.9 * (n - 1))]
    return {
        "mean": mean,
        "median": median,
        "stdev": stdev,
        "min": srt[..., 0],
        "max": srt[..., -1],
        "p90": p90,
    }


def compute_score(per_rank: dict[str, list[float]]) -> dict[str, Any]:
    """Reference (pure Python) implementation of the bench_moe score, schema 2.5.

    Returns ``{"score", "score_type", "raw_score", "iter_max", "outliers"}``. Sums run
    left to right, like the vectorised generator, so results match bit for bit.
    """
    ranks = list(per_rank.values())
    n = min(len(r) for r in ranks)
    iter_max = [max(r[i] for r in ranks) for i in range(n)]
    total = 0.0
    for v in iter_max:
        total += v
    raw = total / n
    srt = sorted(iter_max)
    center = srt[n // 2] if n % 2 else (srt[n // 2 - 1] + srt[n // 2]) / 2.0
    if n < 8:
        return {
            "score": center,
            "score_type": "slowest_rank_median",
            "raw_score": raw,
            "iter_max": iter_max,
            "outliers": [],
        }
    devs = sorted(abs(v - center) for v in iter_max)
    mad = devs[n // 2] if n % 2 else (devs[n // 2 - 1] + devs[n // 2]) / 2.0
    outliers = []
    for idx, v in enumerate(iter_max):
        if mad == 0.0:
            if abs(v - center) > 0.05 * center:
                outliers.append(idx)
        elif abs(0.6745 * (v - center) / mad) > 3.5:
            outliers.append(idx)
    kept = [v for idx, v in enumerate(iter_max) if idx not in outliers] or iter_max
    s = 0.0
    for v in kept:
        s += v
    return {
        "score": s / len(kept),
        "score_type": "slowest_rank_trimmed_mean",
        "raw_score": raw,
        "iter_max": iter_max,
        "outliers": outliers,
    }


def _latency_blocks(samples: np.ndarray) -> list[dict[str, Any]]:
    """latency_ms blocks for C success rows from samples shaped (C, R, I)."""
    c_n, r_n, n = samples.shape
    iter_max = samples.max(axis=1)  # (C, I)
    im = _stats_arrays(iter_max)
    raw = im["mean"]
    center = im["median"]
    ad = np.abs(iter_max - center[:, None])
    ad_s = np.sort(ad, axis=1)
    mad = ad_s[:, n // 2] if n % 2 else (ad_s[:, n // 2 - 1] + ad_s[:, n // 2]) / 2.0
    zero = mad == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = 0.6745 * (iter_max - center[:, None]) / np.where(zero, 1.0, mad)[:, None]
    out = np.where(zero[:, None], ad > 0.05 * center[:, None], np.abs(z) > 3.5)
    if n < 8:
        out[:] = False
    all_out = out.all(axis=1)
    keep = ~out | all_out[:, None]
    kept_n = keep.sum(axis=1)
    score = _seq_sum(np.where(keep, iter_max, 0.0)) / kept_n
    if n < 8:
        score = center
    pr = _stats_arrays(samples)  # each (C, R)

    im_l = {k: v.tolist() for k, v in im.items()}
    pr_l = {k: v.tolist() for k, v in pr.items()}
    score_l, raw_l, center_l, mad_l = score.tolist(), raw.tolist(), center.tolist(), mad.tolist()
    rank_names = [f"rank{r}" for r in range(r_n)]
    blocks = []
    out_rows = np.nonzero(out.any(axis=1))[0].tolist()
    out_items: dict[int, list[dict[str, Any]]] = {}
    for c in out_rows:
        items = []
        for idx in np.nonzero(out[c])[0].tolist():
            v = float(iter_max[c, idx])
            items.append(
                {
                    "index": idx,
                    "value": v,
                    "center": center_l[c],
                    "modified_z_score": None if zero[c] else float(z[c, idx]),
                    "absolute_deviation": float(ad[c, idx]),
                    "direction": "high" if v > center_l[c] else "low",
                }
            )
        out_items[c] = items
    for c in range(c_n):
        if n < 8:
            outl: dict[str, Any] = {
                "method": "disabled_insufficient_samples",
                "count": 0,
                "samples_used": n,
                "samples_total": n,
                "items": [],
            }
        else:
            items = out_items.get(c, [])
            outl = {
                "method": "modified_z_score_mad",
                "threshold": 3.5,
                "center": center_l[c],
                "mad": mad_l[c],
                "count": len(items),
                "samples_used": n - len(items) if len(items) < n else n,
                "samples_total": n,
                "items": items,
            }
        blocks.append(
            {
                "score": score_l[c],
                "score_type": "slowest_rank_trimmed_mean" if n >= 8 else "slowest_rank_median",
                "raw_score": raw_l[c],
                "raw_score_type": "slowest_rank_mean",
                "iter_max_stats": {
                    "mean": im_l["mean"][c],
                    "median": im_l["median"][c],
                    "stdev": im_l["stdev"][c],
                    "min": im_l["min"][c],
                    "max": im_l["max"][c],
                    "p90": im_l["p90"][c],
                },
                "iter_max_outliers": outl,
                "per_rank": {
                    rank_names[r]: {
                        "mean": pr_l["mean"][c][r],
                        "median": pr_l["median"][c][r],
                        "stdev": pr_l["stdev"][c][r],
                        "min": pr_l["min"][c][r],
                        "max": pr_l["max"][c][r],
                        "p90": pr_l["p90"][c][r],
                    }
                    for r in range(r_n)
                },
            }
        )
    return blocks
