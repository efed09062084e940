"""sacrebleu's tokenizers that need outside software: MeCab (Japanese, Korean) and SentencePiece.

Each turns a line into space-separated tokens exactly as sacrebleu's does
(MeCab with the IPA dictionary / mecab-ko-dic in wakati mode; SentencePiece
pieces); the n-gram counting after that stays ours (the ``none`` kernel
splits on whitespace). The packages are optional extras, imported on first
use: ``pip install "turbometrics[ja]"``, ``[ko]`` or ``[spm]``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import NamedTuple

MECAB = {  # name -> (python module, dictionary module, dictionary size sacrebleu asserts, signature suffix, extra)
    "ja-mecab": ("MeCab", "ipadic", 392126, "IPA", "ja"),
    "ko-mecab": ("mecab_ko", "mecab_ko_dic", 811795, "KO", "ko"),
}
# sacrebleu's SentencePiece tokenizers: the model file it downloads, and the name in its signature.
SPM = {
    "spm": ("https://dl.fbaipublicfiles.com/fairseq/models/flores/sacrebleu_tokenizer_spm.model", "flores101"),
    "flores101": ("https://dl.fbaipublicfiles.com/fairseq/models/flores/sacrebleu_tokenizer_spm.model", "flores101"),
    "flores200": ("https://tinyurl.com/flores200sacrebleuspm", "flores200"),
    "spBLEU-1K": ("https://www.dlnlp.ai/spBLEU-1K/spbleu-1k_tokenizer_spm.model", "spBLEU-1K"),
}
NAMES = tuple(MECAB) + tuple(SPM)


class External(NamedTuple):
    tokenize: Callable[[str], str]  # a line -> its tokens joined by single spaces
    signature: str  # what sacrebleu's signature shows in tok:


def sacrebleu_model_path(name: str) -> str:
    """Where sacrebleu keeps (downloads) the SentencePiece model of ``name``: $SACREBLEU/models/..."""
    home = os.environ.get("SACREBLEU", os.path.join(os.path.expanduser("~"), ".sacrebleu"))
    return os.path.join(home, "models", os.path.basename(SPM[name][0]))


@functools.cache
def external(name: str, spm_model: str | None = None) -> External:
    """The tokenizer ``name`` (one of ``NAMES``), loaded once per process."""
    if name in MECAB:
        return _mecab(name)
    return _spm(name, spm_model)


def _mecab(name: str) -> External:
    module, dic_module, size, suffix, extra = MECAB[name]
    try:
        mecab = __import__(module)
        dic = __import__(dic_module)
    except ImportError:
        raise ImportError(
            f'tokenize={name!r} needs MeCab and its dictionary: pip install "turbometrics[{extra}]"'
        ) from None
    tagger = mecab.Tagger(dic.MECAB_ARGS + " -Owakati")
    info = tagger.dictionary_info()
    if info.size != size or info.next is not None:  # sacrebleu's own checks: that dictionary, no user one
        raise RuntimeError(
            f"tokenize={name!r} needs MeCab with the {dic_module} dictionary only "
            f"({size} entries); this one has {info.size}"
        )

    @functools.lru_cache(maxsize=1 << 16)
    def tokenize(line: str) -> str:
        return tagger.parse(line.strip()).strip()

    return External(tokenize, f"{name}-{tagger.version()}-{suffix}")


def _spm(name: str, spm_model: str | None) -> External:
    if spm_model is not None and not isinstance(spm_model, (str, os.PathLike)):
        raise TypeError(f"spm_model must be a path to a SentencePiece model, got {type(spm_model).__name__}")
    try:
        import sentencepiece
    except ImportError:
        raise ImportError(f'tokenize={name!r} needs SentencePiece: pip install "turbometrics[spm]"') from None
    path = os.fspath(spm_model) if spm_model else sacrebleu_model_path(name)
    if not os.path.isfile(path):
        url = SPM[name][0]
        raise FileNotFoundError(
            f"tokenize={name!r} needs its SentencePiece model: download {url} to {path} "
            f"(sacrebleu's cache; $SACREBLEU moves it), or pass spm_model='path/to/model'"
        )
    sp = sentencepiece.SentencePieceProcessor()
    try:
        sp.Load(path)
    except (RuntimeError, OSError) as e:  # not a model file (SentencePiece's own message follows)
        raise ValueError(f"spm_model {path!r} is not a SentencePiece model: {e}") from None

    @functools.lru_cache(maxsize=1 << 16)
    def tokenize(line: str) -> str:
        return " ".join(sp.EncodeAsPieces(line))

    return External(tokenize, SPM[name][1])
