"""Which cases run, at which sizes: ``turbometrics bench`` and the pytest-benchmark suites."""

from __future__ import annotations

from .case import Case, _have_16bit, have
from .cases_dense import perplexity_case, topk_accuracy_case, topk_case
from .cases_pairwise import pairwise_case
from .cases_per_call import per_call_sentence_bleu_case, per_call_topk_accuracy_case
from .cases_text import (
    bootstrap_case,
    bootstrap_scale_case,
    corpus_bleu_case,
    corpus_chrf_case,
    corpus_ter_case,
    rouge_case,
    rouge_lsum_split_case,
    segment_bleu_case,
)
from .cases_token_ids import token_bleu_case


def cases(quick: bool, data_dir: str | None = None) -> list[Case]:
    """The benchmark cases; with ``data_dir`` (the shared test data) also the WMT17 data tiled."""
    size = 5000 if quick else 200_000  # issue 28's size: 100x sacrebleu on 200,000 WMT17 segments
    real = [corpus_bleu_case(size, data_dir), corpus_chrf_case(size, data_dir=data_dir)] if data_dir else []
    if data_dir and not quick:  # sacrebleu's TER takes about 10 s on one WMT17 system
        real.append(corpus_ter_case(3004, data_dir))
    if have("punkt"):  # the lsum extra
        real.append(rouge_lsum_split_case(500 if quick else 20000, data_dir))
    pairs = [pairwise_case(m, 300 if quick else 1000, data_dir) for m in ("BLEU", "chrF", "ROUGE-L")]
    pairs.append(pairwise_case("TER", 100 if quick else 200, data_dir))
    pairs.append(token_bleu_case(64 if quick else 256))
    return _generated_cases(quick) + real + pairs


def _generated_cases(quick: bool) -> list[Case]:
    half = (
        [perplexity_case(512 if quick else 4096, 32000 if quick else 128256, dt) for dt in ("bfloat16", "float16")]
        if _have_16bit()
        else []
    )
    if quick:
        return [
            perplexity_case(512, 32000),
            *half,
            topk_accuracy_case(20000, 1000),
            topk_accuracy_case(512, 32000, with_sklearn=False),
            topk_case(512, 32000),
            corpus_bleu_case(5000),
            segment_bleu_case(5000),
            corpus_chrf_case(5000),
            corpus_chrf_case(5000, word_order=2),
            rouge_case(2000),
            bootstrap_case(3000),
            bootstrap_scale_case(100_000),
            per_call_topk_accuracy_case(),
            per_call_sentence_bleu_case(),
        ]
    return [
        perplexity_case(4096, 128256),
        *half,
        topk_accuracy_case(100000, 1000),
        topk_accuracy_case(4096, 128256, with_sklearn=False),
        topk_case(4096, 128256),
        corpus_bleu_case(100000),
        segment_bleu_case(100000),
        corpus_chrf_case(100000),
        corpus_chrf_case(100000, word_order=2),
        rouge_case(20000),
        bootstrap_case(100000),
        bootstrap_scale_case(1_000_000),
        per_call_topk_accuracy_case(),
        per_call_sentence_bleu_case(),
        corpus_ter_case(100000),
    ]


LONG_PAIRS = [("chrF", (1_700_000,)), ("chrF++", (1_700_000,)), ("ROUGE-L", (300_000,)), ("TER", (33_000, 50))]


# The 1,000,000-pair run: (case function, args, implementation) measured for time and memory.
SCALE = [
    ("corpus_bleu_case", (1_000_000,), "turbometrics"),
    ("corpus_bleu_case", (1_000_000,), "sacrebleu"),
    ("segment_bleu_case", (1_000_000,), "turbometrics"),
    ("corpus_chrf_case", (1_000_000,), "turbometrics"),
    ("corpus_chrf_case", (1_000_000, 2), "turbometrics"),
    ("rouge_case", (1_000_000,), "turbometrics"),
    ("corpus_ter_case", (1_000_000,), "turbometrics"),
]
