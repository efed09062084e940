"""Benchmark cases shared by ``turbometrics bench`` and the pytest-benchmark suites.

Each case builds its own data and names the implementations to time:
turbometrics itself, the oracle and PyTorch when installed, the pure-Python
baseline of ``turbometrics.slow`` (on a few rows, scaled up, since it would
take minutes on the full input), and a plain multi-threaded read of the same
array: the physical limit of a one-pass kernel.

Modules: ``case`` (``Case``, ``Impl``, shared helpers), ``data`` (inputs several groups use), the
groups of cases (``cases_dense``, ``cases_text``, ``cases_lm``, ``cases_lm_eval``, ``cases_pairwise``,
``cases_token_ids``,
``cases_per_call``, and ``cases_patch``: users' code with ``tm.patch()``), ``suite`` (which cases at
which sizes), ``report`` (timing and the printed report), ``memory`` and ``first_call`` (probes in a
fresh process). The names below are what the command, the benchmarks, the tests and tools/ use;
``memory.measure_in_subprocess`` finds a case function here by its name.
"""

from __future__ import annotations

from .case import Case, Impl, build_variant, have
from .cases_dense import perplexity_case, topk_accuracy_case, topk_case
from .cases_lm import _causal_lm, hidden_case, lm_case, lm_head_case
from .cases_lm_eval import lm_eval_case
from .cases_pairwise import pairwise_case
from .cases_per_call import per_call_sentence_bleu_case, per_call_topk_accuracy_case
from .cases_text import (
    bootstrap_case,
    bootstrap_scale_case,
    corpus_bleu_case,
    corpus_chrf_case,
    corpus_ter_case,
    long_pair_case,
    rouge_case,
    rouge_lsum_split_case,
    segment_bleu_case,
)
from .cases_token_ids import tensorbleu_torch, token_bleu_case
from .data import _lm_data, _text_data, wmt17_tiled, zipf_corpus
from .first_call import FIRST_CALLS, first_call
from .memory import _reset_peak_rss, _rss_mib, extra_memory_mib, measure_in_subprocess
from .report import best_time, format_seconds, run, write_json
from .suite import LONG_PAIRS, SCALE, cases

__all__ = [
    "FIRST_CALLS",
    "LONG_PAIRS",
    "SCALE",
    "Case",
    "Impl",
    "_causal_lm",
    "_lm_data",
    "_reset_peak_rss",
    "_rss_mib",
    "_text_data",
    "best_time",
    "bootstrap_case",
    "bootstrap_scale_case",
    "build_variant",
    "cases",
    "corpus_bleu_case",
    "corpus_chrf_case",
    "corpus_ter_case",
    "extra_memory_mib",
    "first_call",
    "format_seconds",
    "have",
    "hidden_case",
    "lm_case",
    "lm_head_case",
    "lm_eval_case",
    "long_pair_case",
    "measure_in_subprocess",
    "pairwise_case",
    "per_call_sentence_bleu_case",
    "per_call_topk_accuracy_case",
    "perplexity_case",
    "rouge_case",
    "rouge_lsum_split_case",
    "run",
    "segment_bleu_case",
    "tensorbleu_torch",
    "token_bleu_case",
    "topk_accuracy_case",
    "topk_case",
    "write_json",
    "wmt17_tiled",
    "zipf_corpus",
]
