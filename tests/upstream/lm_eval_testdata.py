"""pytest plugin (``-p lm_eval_testdata``): what lm-eval 0.4.13's ``tests/test_evaluator.py`` downloads, made
here instead, so that its log-likelihood tests run with no network (tests/test_patch_upstream.py).

- ``EleutherAI/pythia-*``: a two-layer GPT-NeoX (pythia's architecture) with random weights and a byte-level
  BPE tokenizer trained here, saved to a temporary folder that ``HFLM`` is given instead. The tests compare
  ``simple_evaluate`` with ``evaluate`` on the same model, never with recorded numbers, so any weights do.
- ``datasets.load_dataset`` of ARC-Easy and MMLU's abstract_algebra: a few rows with the real columns.
"""

import shutil
import tempfile
from pathlib import Path

import datasets
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM, PreTrainedTokenizerFast

FOLDER = Path(tempfile.mkdtemp(prefix="lm_eval_testdata_"))


def _model_folder() -> str:
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    text = ["Question: Which item is right? Answer: alpha beta gamma delta", "Let G be a group. A. B. C. D. Answer:"]
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(text * 4, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = GPTNeoXConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    out = FOLDER / "pythia-stand-in"
    GPTNeoXForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def _arc(n: int) -> list[dict]:
    return [
        {
            "id": f"q{i}",
            "question": f"Which item number {i} is right?",
            "choices": {"text": ["alpha", "beta", "gamma", "delta"], "label": ["A", "B", "C", "D"]},
            "answerKey": "ABCD"[i % 4],
        }
        for i in range(n)
    ]


def _mmlu(n: int) -> list[dict]:
    return [
        {
            "question": f"Let G be a group of order {i + 2}. Is G cyclic?",
            "subject": "abstract_algebra",
            "choices": ["yes", "no", "maybe", "always"],
            "answer": i % 4,
        }
        for i in range(n)
    ]


DATASETS = {
    ("allenai/ai2_arc", "ARC-Easy"): lambda: {"train": _arc(5), "validation": _arc(5), "test": _arc(12)},
    ("cais/mmlu", "abstract_algebra"): lambda: {"dev": _mmlu(5), "validation": _mmlu(5), "test": _mmlu(8)},
}


def pytest_configure(config):
    from lm_eval.models import huggingface

    folder = _model_folder()
    load = datasets.load_dataset

    def load_dataset(path=None, name=None, *args, **kwargs):  # lm_eval.api.task calls it through the module
        rows = DATASETS.get((path, name))
        if rows is None:
            return load(path, name, *args, **kwargs)
        return datasets.DatasetDict({split: datasets.Dataset.from_list(r) for split, r in rows().items()})

    datasets.load_dataset = load_dataset
    init = huggingface.HFLM.__init__

    def __init__(self, pretrained, *args, **kwargs):
        if isinstance(pretrained, str) and pretrained.startswith("EleutherAI/pythia-"):
            pretrained = folder
        init(self, pretrained, *args, **kwargs)

    huggingface.HFLM.__init__ = __init__


def pytest_unconfigure(config):
    shutil.rmtree(FOLDER, ignore_errors=True)
