"""The timing protocol of steptp's own measurements (src/lower/measure/measure.cc), for baselines
timed from Python: 2 untimed warm-up runs, then timed runs until at least `min_time` seconds and 5
repeats have passed and the median moved by at most 1% between the first 3/4 of the sample and
all of it (hard stop at 20 s or 10,000 repeats); warm caches; the statistic is the median.
Keep the constants equal to MeasureOptions' defaults."""
import json
import math
import statistics
import time

WARMUP = 2
MIN_REPEATS = 5
MAX_REPEATS = 10000
MAX_TIME_S = 20.0
STABLE_REL = 0.01


def _stable(ms):
    k = len(ms) * 3 // 4
    if k < 3:
        return False
    m_all = statistics.median(ms)
    return abs(m_all - statistics.median(ms[:k])) <= STABLE_REL * m_all


def summarize(ms):
    """{"median_ms","min_ms","max_ms","cv","repeats"}: the fields `steptp bench --json` prints."""
    mean = sum(ms) / len(ms)
    var = sum((x - mean) ** 2 for x in ms) / max(len(ms) - 1, 1)
    return {"median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms),
            "cv": math.sqrt(var) / mean if mean > 0 else 0.0, "repeats": len(ms)}


def measure(run, min_time_s):
    """Times the callable `run` (which must finish its work before returning)."""
    for _ in range(WARMUP):
        run()
    ms = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        run()
        ms.append((time.perf_counter() - t0) * 1e3)
        elapsed = time.perf_counter() - start
        if len(ms) >= MAX_REPEATS or elapsed >= MAX_TIME_S:
            break
        if len(ms) >= MIN_REPEATS and elapsed >= min_time_s and _stable(ms):
            break
    return summarize(ms)


def print_stats(name, stats, as_json):
    if as_json:
        print(json.dumps(stats), flush=True)
    else:
        print(f"{name}: median {stats['median_ms']:.4f} ms (min {stats['min_ms']:.4f}, max {stats['max_ms']:.4f}, "
              f"cv {stats['cv']:.3f}, {stats['repeats']} repeats)", flush=True)
