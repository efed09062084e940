"""The ``turbometrics`` command line: ``bleu``, ``chrf``, ``rouge``, ``perplexity``, ``topk-accuracy``, ``bench``.

The text commands read files as the ``sacrebleu`` command does (UTF-8, lines
split on "\\n" only, trailing whitespace stripped, ``.gz`` allowed; the
hypotheses from standard input when ``-i`` is not given) and print sacrebleu's
score line or JSON. Confidence intervals and paired tests run in sacrebleu
mode, so their numbers are sacrebleu's too. Bad input exits with status 2 and
one line on stderr.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import sys
import zipfile
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._metric import Signature

_CHUNK = 50_000  # segments (or array rows) per accumulator update; the progress bar's step


class InputError(Exception):
    """Bad input found by the CLI itself (files, shapes); reported like ValueError."""


def _read_lines(path: str, encoding: str) -> list[str]:
    try:
        if path == "-":
            fh: Any = io.TextIOWrapper(sys.stdin.buffer, encoding=encoding, newline="\n")
        elif path.endswith(".gz"):
            fh = gzip.open(path, "rt", encoding=encoding, newline="\n")
        else:
            fh = open(path, encoding=encoding, newline="\n")
        with fh:
            return [line.rstrip() for line in fh]
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not valid {encoding}: {e.reason} at byte {e.start}") from None
    except LookupError:
        raise InputError(f"unknown encoding: {encoding}") from None
    except EOFError:  # a .gz file cut short
        raise InputError(f"{path} ends before its compressed stream does (a truncated .gz file?)") from None


def _progress(total: int, unit: str):
    """A tqdm bar on stderr for long inputs, only when stderr is a terminal."""
    from tqdm import tqdm

    return tqdm(
        total=total, unit=unit, file=sys.stderr, leave=False, disable=total <= _CHUNK or not sys.stderr.isatty()
    )


def _fill(acc, n: int, unit: str, update: Callable[[Any, slice], Any]):
    with _progress(n, unit) as bar:
        for start in range(0, max(n, 1), _CHUNK):
            part = slice(start, min(n, start + _CHUNK))
            update(acc, part)
            bar.update(part.stop - part.start)
    return acc


# ---------------------------------------------------------------- text metrics


def _text_inputs(args) -> tuple[list[tuple[str, list[str]]], list[list[str]]]:
    refs = [_read_lines(r, args.encoding) for r in args.refs]
    systems = [(p, _read_lines(p, args.encoding)) for p in (args.input or ["-"])]
    for path, lines in [*zip(args.refs, refs), *systems]:
        if not lines:  # (sacrebleu: "contains no sentence"; no score is defined)
            raise InputError(f"{path} holds no line")
    for path, hyps in systems:
        for r, lines in zip(args.refs, refs):
            if len(lines) != len(hyps):
                raise InputError(f"{path} has {len(hyps)} lines but the reference {r} has {len(lines)}")
    return systems, refs


def _score_record(score, width: int, signature: Signature, ci=None) -> tuple[str, dict]:
    """sacrebleu's score line (``Score.format``) and its JSON fields."""
    pair = None if ci is None else (ci.mean, ci.ci)
    text = score.format(width, signature=signature, ci=pair)
    d: dict[str, Any] = {"name": score.name, "score": float(f"{score.score:.{width}f}"), "signature": signature}
    if ci is not None:
        mean, var = f"{ci.mean:.{width}f}", f"{ci.ci:.{width}f}"
        d.update(confidence_mean=float(mean), confidence_var=float(var), confidence=f"μ = {mean} ± {var}")
    if score.verbose:
        d["verbose_score"] = score.verbose
    d.update(signature.fields)
    return text, d


def _text_update(hyps: list[str], refs: list[list[str]]) -> Callable[[Any, slice], Any]:
    """An accumulator update with the segments in ``part`` of the hypotheses and of each reference file."""
    return lambda acc, part: acc.update(hyps[part], [r[part] for r in refs])


def _run_text(args, make: Callable[[], Any]) -> str:
    from .resampling import bootstrap_ci, paired_test

    systems, refs = _text_inputs(args)
    accs = [_fill(make(), len(hyps), "seg", _text_update(hyps, refs)) for _, hyps in systems]
    seed_str = str(args.seed).lower()
    paired = args.paired_bs or args.paired_ar
    if paired:
        if len(systems) < 2:
            raise InputError("a paired test needs the baseline and at least one system: -i BASELINE SYSTEM ...")
        method, n = ("bootstrap", args.paired_bs_n) if args.paired_bs else ("randomization", args.paired_ar_n)
        results = [
            paired_test(accs[0], a, method=method, n_resamples=n, seed=args.seed, mode="sacrebleu") for a in accs[1:]
        ]
        score0 = accs[0].compute()
        sig = score0.signature.insert_after("nrefs", **{"bs" if args.paired_bs else "ar": n, "seed": seed_str})
        return _paired_report(args, [p for p, _ in systems], score0.name, sig, results)
    out_text, out_json = [], []
    for (path, _), acc in zip(systems, accs):
        score, ci, sig = acc.compute(), None, None
        sig = score.signature
        if args.confidence:
            ci = bootstrap_ci(acc, n_resamples=args.confidence_n, seed=args.seed, mode="sacrebleu")
            sig = sig.insert_after("nrefs", bs=args.confidence_n, seed=seed_str)
        text, d = _score_record(score, args.width, sig, ci)
        if len(systems) > 1:
            text, d = f"{path}: {text}", {"system": path, **d}
        out_text.append(text)
        out_json.append(d)
    if args.json:
        return json.dumps(out_json[0] if len(out_json) == 1 else out_json, indent=1, ensure_ascii=False)
    return "\n".join(out_text)


def _paired_report(args, paths: list[str], name: str, signature: str, results: list) -> str:
    w = args.width
    rows = [(f"Baseline: {paths[0]}", results[0].baseline, results[0].baseline_mean, results[0].baseline_ci, None)]
    rows += [(p, r.system, r.mean, r.ci, r.p_value) for p, r in zip(paths[1:], results)]
    if args.json:
        return json.dumps(
            {
                "name": name,
                "signature": signature,
                "systems": [
                    {
                        "system": p,
                        "score": round(s, w),
                        "mean": None if m is None else round(m, w),
                        "ci": None if c is None else round(c, w),
                        "p_value": pv,
                    }
                    for p, s, m, c, pv in rows
                ],
            },
            indent=1,
            ensure_ascii=False,
        )
    width = max(len(r[0]) for r in rows)
    lines = [f"{'System':<{width}}  {name:>20}  p-value"]
    for p, s, m, c, pv in rows:
        sc = f"{s:.{w}f}" + ("" if m is None else f" ({m:.{w}f} ± {c:.{w}f})")
        lines.append(f"{p:<{width}}  {sc:>20}  " + ("" if pv is None else f"{pv:.4f}" + ("*" if pv < 0.05 else "")))
    lines.append(f"\n{name}|{signature}")
    lines.append(
        "* p < 0.05: the difference from the baseline is unlikely to be chance "
        "(significance says 'different', not 'better')."
    )
    return "\n".join(lines)


def _run_rouge(args) -> str:
    from . import metrics
    from .resampling import bootstrap_ci

    systems, refs = _text_inputs(args)
    if len(systems) != 1:
        raise InputError("rouge scores one prediction file at a time")
    preds = systems[0][1]
    acc = _fill(
        metrics.ROUGE(args.types, use_stemmer=args.stem, split_summaries=args.split_summaries),
        len(preds),
        "pair",
        lambda a, part: a.update(preds[part], [list(r) for r in zip(*(f[part] for f in refs))]),
    )
    out: dict[str, Any] = {}
    if args.confidence:
        cis = bootstrap_ci(acc, n_resamples=args.confidence_n, seed=args.seed, mode="rouge_score")
        for t, ci in cis.items():
            out[t] = {
                b: dict(zip(("precision", "recall", "fmeasure"), v))
                for b, v in (("low", ci.low), ("mid", ci.mean), ("high", ci.high))
            }
    else:
        for t, s in acc.compute().items():
            out[t] = {f: float(getattr(s, f).mean()) for f in ("precision", "recall", "fmeasure")}
    if args.json:
        return json.dumps(out, indent=1)
    w = args.width
    lines = []
    for t, v in out.items():
        if args.confidence:
            lo, mid, hi = v["low"], v["mid"], v["high"]
            lines.append(
                f"{t:<10} "
                + "  ".join(
                    f"{f[0].upper()} {mid[f]:.{w}f} [{lo[f]:.{w}f}, {hi[f]:.{w}f}]"
                    for f in ("precision", "recall", "fmeasure")
                )
            )
        else:
            lines.append(f"{t:<10} " + "  ".join(f"{f[0].upper()} {v[f]:.{w}f}" for f in v))
    return "\n".join(lines)


# ---------------------------------------------------------------- array metrics


def _load_arrays(args, names: Sequence[str]) -> list:
    """``.npy`` files (memory-mapped) in order, or one ``.npz`` holding the named arrays."""
    import numpy as np

    try:
        if len(args.arrays) == 1 and args.arrays[0].endswith(".npz"):
            try:
                z = np.load(args.arrays[0], allow_pickle=False)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
                if isinstance(e, FileNotFoundError):
                    raise
                raise InputError(f"{args.arrays[0]} is not a readable .npz file ({e})") from None
            missing = [n for n in names[:2] if n not in z.files]
            if missing:
                raise InputError(f"{args.arrays[0]} has no array {missing[0]!r} (it has {', '.join(z.files)})")
            return [z[n] for n in names if n in z.files]
        if len(args.arrays) < 2:
            raise InputError(
                f"give {names[0]}.npy and {names[1]}.npy, or one .npz with arrays {', '.join(repr(n) for n in names)}"
            )
        return [_load_npy(np, p) for p in args.arrays]
    except FileNotFoundError as e:
        raise InputError(f"no such file: {e.filename}") from None


def _load_npy(np, path: str):
    """One ``.npy`` array, memory-mapped; anything else is an InputError saying what was expected."""
    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise InputError(f"{path} is not a .npy file (save arrays with numpy.save, or pass one .npz)")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as e:  # e.g. an object array, which would need pickle
        raise InputError(f"{path}: cannot read it as a numeric .npy array ({str(e).splitlines()[0]})") from None


def _run_arrays(args, acc, names: Sequence[str]) -> Any:
    arrays = _load_arrays(args, names)
    for name, a in zip(names, arrays):
        if getattr(a, "ndim", 1) == 0:
            raise InputError(f"{name} is a single number (0-d); it needs rows")
        if len(a) == 0:  # (as an empty text file: no score is defined)
            raise InputError(f"{name} holds no row")
    if args.command == "perplexity" and getattr(arrays[0], "ndim", 0) != 3:
        return acc.update(*arrays).compute()  # (T, V) is one sequence: not split into chunks
    n = len(arrays[0])
    for a in arrays[1:]:
        if len(a) != n:
            raise InputError(f"{names[0]} has {n} rows but another input has {len(a)}")
    return _fill(acc, n, "row", lambda a, part: a.update(*(x[part] for x in arrays))).compute()


def _print_value(args, name: str, value: Any) -> str:
    import numpy as np

    v = np.asarray(value).tolist()
    if args.json:
        return json.dumps({"name": name, "value": v})
    if isinstance(v, list):
        return "\n".join(f"{name}[{i}] = {x:.{args.width}f}" for i, x in enumerate(v))
    return f"{name} = {v:.{args.width}f}"


# ---------------------------------------------------------------- parser


def _text_parser(sub, name: str, help: str, width: int = 1):
    p = sub.add_parser(name, help=help)
    p.add_argument("refs", nargs="+", help="reference file(s), one segment per line")
    p.add_argument("-i", "--input", nargs="+", help="hypothesis file(s); standard input if not given")
    p.add_argument("-e", "--encoding", default="utf-8", help="file encoding (default: utf-8)")
    p.add_argument("-w", "--width", type=int, default=width, help=f"decimal places (default: {width})")
    p.add_argument("--json", action="store_true", help="print JSON (sacrebleu's fields)")
    p.add_argument("--confidence", action="store_true", help="bootstrap 95%% confidence interval")
    p.add_argument("--confidence-n", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    p.add_argument("--seed", type=int, default=12345, help="resampling seed (default: 12345, sacrebleu's)")
    return p


def _sacrebleu_commands(sub) -> None:
    """bleu, chrf and ter: sacrebleu's command-line options, and its paired tests."""
    for name, help, options in (
        ("bleu", "corpus BLEU (sacrebleu's numbers)", _bleu_options),
        ("chrf", "corpus chrF / chrF++", _chrf_options),
        ("ter", "corpus TER (sacrebleu's numbers)", _ter_options),
    ):
        p = _text_parser(sub, name, help)
        if name != "ter":
            p.add_argument("-lc", "--lowercase", action="store_true", help="case-insensitive")
        _paired_options(p)
        options(p)


def _paired_options(p) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--paired-bs", action="store_true", help="paired bootstrap test: first -i is the baseline")
    group.add_argument("--paired-ar", action="store_true", help="paired approximate randomization test")
    p.add_argument("--paired-bs-n", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    p.add_argument("--paired-ar-n", type=int, default=10000, help="randomization trials (default: 10000)")


def _bleu_options(p) -> None:
    p.add_argument(
        "-tok",
        "--tokenize",
        default="13a",
        help="13a (default), intl, zh, char, none, ja-mecab, ko-mecab, flores101 (spm), flores200, spBLEU-1K",
    )
    p.add_argument(
        "--spm-model",
        default=None,
        help="a local SentencePiece model for flores101/flores200/spBLEU-1K "
        "(default: sacrebleu's cache, $SACREBLEU/models)",
    )
    p.add_argument("-s", "--smooth-method", default="exp", choices=["none", "floor", "add-k", "exp"])
    p.add_argument("-sv", "--smooth-value", type=float, default=None)
    p.add_argument("--max-ngram-order", type=int, default=4)
    p.add_argument("--effective-order", action="store_true")


def _chrf_options(p) -> None:
    p.add_argument("--char-order", type=int, default=6)
    p.add_argument("--word-order", type=int, default=0, help="2 for chrF++")
    p.add_argument("--beta", type=int, default=2)
    p.add_argument("--whitespace", action="store_true", help="keep whitespace in character n-grams")
    p.add_argument("--eps-smoothing", action="store_true")


def _ter_options(p) -> None:
    """sacrebleu's --ter-* options."""
    p.add_argument("--ter-case-sensitive", action="store_true", help="keep case (TER lowercases)")
    p.add_argument("--ter-asian-support", action="store_true", help="CJK characters and punctuation")
    p.add_argument("--ter-no-punct", action="store_true", help="remove punctuation")
    p.add_argument("--ter-normalized", action="store_true", help="Tercom's normalisation")


def _rouge_command(sub) -> None:
    p = _text_parser(sub, "rouge", "ROUGE-N/L/Lsum (rouge-score's numbers): mean P/R/F over pairs", width=4)
    p.add_argument("--types", nargs="+", default=["rouge1", "rouge2", "rougeL", "rougeLsum"])
    p.add_argument("--stem", action="store_true", help="Porter stemming (rouge-score's use_stemmer)")
    p.add_argument(
        "--split-summaries",
        action="store_true",
        help="ROUGE-Lsum on Punkt sentences, not lines (rouge-score's split_summaries; the lsum extra)",
    )


def _array_commands(sub) -> None:
    """perplexity and topk-accuracy: arrays from .npy or .npz files."""
    for name, help, names in (
        ("perplexity", "perplexity from logits (B, T, V) or (T, V) and integer targets", ("logits", "targets", "mask")),
        (
            "topk-accuracy",
            "top-k accuracy from scores (N, C) and integer targets",
            ("scores", "targets", "sample_weight"),
        ),
    ):
        p = sub.add_parser(name, help=help)
        p.add_argument(
            "arrays",
            nargs="+",
            metavar="ARRAY",
            help=f"{'.npy '.join(names[:2])}.npy [{names[2]}.npy], or one .npz with those names",
        )
        p.add_argument("--ignore-index", type=int, default=None, help="target value to skip")
        p.add_argument("-w", "--width", type=int, default=4, help="decimal places (default: 4)")
        p.add_argument("--json", action="store_true")
        p.set_defaults(names=names)
        if name == "perplexity":
            p.add_argument("--reduction", default="token", choices=["token", "sequence"])
        else:
            p.add_argument("-k", type=int, nargs="+", default=[5], help="k value(s) (default: 5)")
            p.add_argument("--ties", default="sklearn", choices=["sklearn", "optimistic", "pessimistic"])


def _bench_command(sub) -> None:
    bench = sub.add_parser("bench", help="time every metric on generated data against its baselines")
    bench.add_argument("--quick", action="store_true", help="small inputs: about a minute (the default)")
    bench.add_argument("--full", action="store_true", help="the issue-sized inputs (several GB, minutes)")
    bench.add_argument("--repeat", type=int, default=3, help="timed runs per implementation (best is kept)")
    bench.add_argument(
        "--first-call", action="store_true", help="also time a few calls made first in a fresh process (and made again)"
    )
    bench.add_argument(
        "--json",
        metavar="PATH",
        default=None,
        help="also write every row, and the machine (show_config's fields), as JSON to PATH",
    )


def _parser() -> argparse.ArgumentParser:
    from ._version import __version__

    parser = argparse.ArgumentParser(prog="turbometrics", description="Fast ML evaluation metrics.")
    parser.add_argument("--version", action="version", version=f"turbometrics {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _sacrebleu_commands(sub)
    _rouge_command(sub)
    _array_commands(sub)
    _bench_command(sub)
    return parser


def _run(args, parser) -> str | None:
    from . import metrics

    cmd = args.command
    if cmd == "bench":
        if args.quick and args.full:
            parser.error("choose one of --quick and --full")
        if args.repeat < 1:
            parser.error("--repeat must be >= 1")
        from . import _bench
        from ._bench import cases_patch

        rows = _bench.run(
            _bench.cases(not args.full) + cases_patch.cases(not args.full, None),
            quick=not args.full,
            repeat=args.repeat,
        )
        if args.json:
            _bench.write_json(args.json, rows, not args.full, args.repeat)
        if args.first_call:
            print("\nFirst call after import, fresh process (seconds)")
            for name, t in _bench.first_call().items():
                print(f"  {name:<40} first {t['first']:.4f}   second {t['second']:.4f}")
        return None
    if getattr(args, "width", 0) < 0:
        parser.error("--width must be >= 0")
    if cmd == "bleu":
        return _run_text(
            args,
            lambda: metrics.BLEU(
                args.tokenize,
                args.lowercase,
                args.smooth_method,
                args.smooth_value,
                args.max_ngram_order,
                args.effective_order,
                spm_model=args.spm_model,
            ),
        )
    if cmd == "ter":
        return _run_text(
            args,
            lambda: metrics.TER(
                args.ter_normalized, args.ter_no_punct, args.ter_asian_support, args.ter_case_sensitive
            ),
        )
    if cmd == "chrf":
        return _run_text(
            args,
            lambda: metrics.CHRF(
                args.char_order, args.word_order, args.beta, args.lowercase, args.whitespace, args.eps_smoothing
            ),
        )
    if cmd == "rouge":
        return _run_rouge(args)
    if cmd == "perplexity":
        ppl = metrics.Perplexity(ignore_index=args.ignore_index, reduction=args.reduction)
        return _print_value(args, "perplexity", _run_arrays(args, ppl, args.names))
    k = args.k[0] if len(args.k) == 1 else tuple(args.k)
    acc = metrics.TopKAccuracy(k=k, ties=args.ties, ignore_index=args.ignore_index)
    return _print_value(args, "topk_accuracy", _run_arrays(args, acc, args.names))


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        out = _run(args, parser)
    except (InputError, ValueError, TypeError, OSError, ImportError, RuntimeError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"turbometrics {args.command}: error: {msg}", file=sys.stderr)
        return 2
    if out is not None:
        try:
            print(out, flush=True)
        except BrokenPipeError:  # `| head`: the reader left; no traceback (Python's own advice for EPIPE)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
