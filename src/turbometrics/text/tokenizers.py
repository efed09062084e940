"""Tokenizers: exactly the tokens the metrics see (sacrebleu's, applied after ``rstrip()``)."""

from __future__ import annotations

from .. import _validate
from .._ext import _text
from . import external_tokenizers

# The `regex` releases whose Unicode classes (\p{N}, \p{P}, \p{S}) the intl tokenizer reproduces: the tables
# were made from 2026.11.15, and `python tools/gen_unicode_tables.py --check` finds every code point classed the
# same under each of these (2026.9.10 and earlier differ).
REGEX_VERSIONS = ("2026.9.29", "2026.11.7", "2026.11.8", "2026.11.9", "2026.11.15", "2026.11.18", "2026.11.19")

# name -> kernel code (tokenizers.hpp: tmt::Tokenizer)
TOKENIZERS = {"13a": 0, "char": 1, "none": 2, "intl": 3, "zh": 4}
EXTERNAL = external_tokenizers.NAMES  # ja-mecab, ko-mecab, spm, flores101, flores200, spBLEU-1K
ROUGE_TOKENIZERS = ("rouge", "rouge-stem")


def intl_tables_current() -> bool:
    """Whether the installed ``regex`` is a release our intl tables reproduce (``REGEX_VERSIONS``): another
    may class a character (a newly assigned one, say) differently, so the patches then run sacrebleu's or
    torchmetrics' own intl tokenizer and count its tokens."""
    try:
        import regex
    except ImportError:  # (sacrebleu's intl tokenizer needs it: then it does not run at all)
        return True
    return getattr(regex, "__version__", None) in REGEX_VERSIONS


def tokenizer_code(name: str) -> int:
    """The kernel code of a sacrebleu tokenizer (BLEU's ``tokenize=``); the external ones
    (MeCab, SentencePiece) run first in Python and leave whitespace-separated tokens ("none")."""
    _validate.check_choice(name, "tokenize", tuple(TOKENIZERS) + EXTERNAL)
    return TOKENIZERS.get(name, TOKENIZERS["none"])


def tokenize(text: str, tokenizer: str = "13a", *, spm_model: str | None = None) -> list[str]:
    """The tokens of ``text`` as sacrebleu's tokenizer of that name produces them (then ``split()``).

    Parameters
    ----------
    text : str
        Trailing whitespace is stripped first, as sacrebleu does before tokenizing.
    tokenizer : str
        ``"13a"`` (mteval-v13a, sacrebleu's default), ``"intl"`` (mteval-v14,
        with the Unicode classes of the ``regex`` releases named in
        ``turbometrics.text.tokenizers.REGEX_VERSIONS``), ``"zh"`` (sacrebleu's,
        including its range quirk, sacrebleu issue #298), ``"char"`` (every
        non-space character), ``"none"`` (whitespace split); ``"rouge"`` and
        ``"rouge-stem"`` give rouge-score's tokens (lowercase ``[a-z0-9]``
        runs; with nltk's Porter stem of those longer than 3 characters).
        ``"ja-mecab"``, ``"ko-mecab"`` (MeCab; the ``ja``/``ko`` extras),
        ``"flores101"``/``"spm"``, ``"flores200"``, ``"spBLEU-1K"`` (SentencePiece;
        the ``spm`` extra and the model file sacrebleu downloads).
    spm_model : str, optional
        A local SentencePiece model for the SentencePiece tokenizers (default:
        sacrebleu's cache, ``$SACREBLEU/models/``, ``~/.sacrebleu`` by default).

    Returns
    -------
    list of str

    Raises
    ------
    TypeError, ValueError
        For a non-str ``text`` or an unknown tokenizer.

    Examples
    --------
    >>> import turbometrics as tm
    >>> tm.tokenize("Hello, world (2026).")
    ['Hello', ',', 'world', '(', '2026', ')', '.']
    >>> tm.tokenize("Running dogs!", "rouge-stem")
    ['run', 'dog']
    """
    text = _validate.check_str(text, "text")
    _validate.check_choice(tokenizer, "tokenizer", tuple(TOKENIZERS) + EXTERNAL + ROUGE_TOKENIZERS)
    if tokenizer in EXTERNAL:
        return external_tokenizers.external(tokenizer, spm_model).tokenize(text.rstrip()).split()
    if tokenizer in ROUGE_TOKENIZERS:
        return _text.rouge_tokenize(text, tokenizer == "rouge-stem")
    return _text.tokenize(text, TOKENIZERS[tokenizer])


def nrefs_label(streams: list) -> int | str:
    """sacrebleu's signature field: the number of references per segment, or "var" if it varies."""
    if not any(_text.str_scan(s, True)[1] for s in streams):  # (None in s compares every str with None)
        return len(streams)
    counts = {sum(r is not None for r in refs) for refs in zip(*streams)}
    return counts.pop() if len(counts) == 1 else "var"


def combine_nrefs(labels: list) -> int | str:
    """The signature's nrefs over chunks, each with its own ``nrefs_label`` (None: an empty batch of
    token IDs, which says nothing; 1 when nothing else was seen)."""
    distinct = set(labels) - {None}
    return distinct.pop() if len(distinct) == 1 else "var" if distinct else 1
