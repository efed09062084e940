"""Issue 28's text rows in one run: corpus BLEU (WMT17 tiled to 200,000 segments, and the same with every
tile made distinct, which defeats sacrebleu's per-line tokenizer cache) and corpus chrF against sacrebleu:
python tools/text_200k.py (shared data at /work/shared/data or $TURBOMETRICS_DATA)."""

import os
import time

import sacrebleu
from sacrebleu.metrics import CHRF

import turbometrics as tm
from turbometrics import _bench

d = _bench.wmt17_tiled(os.environ.get("TURBOMETRICS_DATA", "../shared/data"), 200_000)
h, r = d["hyps"], d["refs"]


def ours(f):
    ts = []
    for _ in range(7):
        t = time.perf_counter()
        v = f()
        ts.append(time.perf_counter() - t)
    return min(ts), v


for name, H, R in (
    ("tiled", h, r),
    ("distinct", [f"{x} {i // 3004}" for i, x in enumerate(h)], [f"{x} {i // 3004}" for i, x in enumerate(r)]),
):
    t = time.perf_counter()
    a = sacrebleu.corpus_bleu(H, [R]).score
    ts = time.perf_counter() - t
    tt, b = ours(lambda: tm.corpus_bleu(H, [R]).score)  # noqa: B023 - called here
    print(
        f"corpus BLEU 200,000 WMT17 {name}: sacrebleu {ts:.2f} s, turbometrics {tt:.3f} s, "
        f"{ts / tt:.0f}x, equal {a == b}",
        flush=True,
    )
t = time.perf_counter()
a = CHRF().corpus_score(h, [r]).score
ts = time.perf_counter() - t
tt, b = ours(lambda: tm.corpus_chrf(h, [r]).score)
print(f"corpus chrF 200,000 WMT17 tiled: sacrebleu {ts:.2f} s, turbometrics {tt:.3f} s, {ts / tt:.0f}x, equal {a == b}")
