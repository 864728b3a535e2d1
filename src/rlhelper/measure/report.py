"""What an eval run shows: the terminal table, the Markdown report and its matplotlib chart.

    print(format_table(result))
    write_report(result, Path("eval/reports"))   # Markdown + PNG + JSON, timestamped and latest-<split>

Test-split misses are folded in the report: they are for reporting only, never
for tuning (eval/README.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from .. import config
from . import bootstrap
from .harness import MISSING_DOCUMENTS, EvalResult, ItemResult
from .metrics import TARGET_ABSTENTION_RECALL

DEFAULT_REPORT_DIR = config.REPO_ROOT / "eval" / "reports"
WARNINGS_SHOWN = 10  # on the terminal; the report and --json keep them all
TOP_SHOWN = 3  # hits listed per miss in reports


ROWS = (("recall@1", "Recall@1"), ("recall@3", "Recall@3"), ("recall@5", "Recall@5"), ("mrr@10", "MRR@10"),
        ("ndcg@10", "nDCG@10"), ("answered_correctly", "answered correctly"), ("correct", "correct end to end"),
        ("abstention_precision", "abstention precision"), ("abstention_recall", "abstention recall"),
        ("wrongly_abstained", "wrongly abstained"),
        ("unanswerable_abstained_or_weak", "unanswerable abstained or weak"),
        ("answerable_weak", "answerable flagged weak"), ("abstention_auroc", "abstention AUROC"),
        ("wrongly_abstained_at_target", f"wrongly abstained at {TARGET_ABSTENTION_RECALL:.0%} recall"))
BREAKDOWN_TITLES = {"doc": "By document", "lang": "By query language", "kind": "By kind",
                    "crosslingual": "Cross-lingual (query language != expected entry language)"}


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _overall_rows(result: EvalResult) -> list[list[str]]:
    per_mode = {m: result.metrics(m) for m in result.modes}
    return [[label, *(_fmt(per_mode[m][key]) for m in result.modes)] for key, label in ROWS]


def _breakdown_rows(result: EvalResult, name: str) -> tuple[list[str], list[list[str]]]:
    per_mode = {m: result.breakdown(name, m) for m in result.modes}
    groups = list(per_mode[result.modes[0]])
    slash = lambda key, g: " / ".join(_fmt(per_mode[m][g][key]) for m in result.modes)  # noqa: E731
    # Wrongly abstained per group: a language or kind the abstention model is unfair to shows here.
    header = [name, "n", "R@1", "R@3", "R@5", "MRR@10", "wrongly abstained", "correct end to end"]
    rows = [[g, str(per_mode[result.modes[0]][g]["n"]), slash("recall@1", g), slash("recall@3", g),
             slash("recall@5", g), slash("mrr@10", g), slash("wrongly_abstained", g), slash("correct", g)]
            for g in groups]
    return header, rows


def _summary_line(result: EvalResult) -> str:
    n = len(result.items)
    unanswerable = sum(1 for r in result.items if not r.item.answerable)
    known = {m: t for m, t in result.thresholds.items() if t is not None}
    thresholds = f"; abstain below {', '.join(f'{m} {t:.3f}' for m, t in known.items())}" if known else ""
    judge = f"; hybrid answers judged by the LLM {result.llm}" if result.llm else ""
    return (f"{Path(result.eval_file).name}, split {result.split or 'all'}: {n} items ({n - unanswerable} answerable, "
            f"{unanswerable} unanswerable); index: {result.index}; embedder: {result.embedder}; k={result.k}"
            f"{thresholds}{judge}; {result.seconds:.1f} s")


def compared_modes(result: EvalResult) -> tuple[str, str] | None:
    """(a, b) when the run holds a mode to compare with hybrid: the judge, else the default one."""
    if "hybrid" not in result.modes:
        return None
    other = next((m for m in ("judge",) if m in result.modes), None)
    return ("hybrid", other) if other else None


def comparison_rows(result: EvalResult) -> tuple[str, list[list[str]]] | None:
    pair = compared_modes(result)
    if pair is None:
        return None
    a, b = pair
    rows = [[d.metric, _fmt(d.a), _fmt(d.b), "–" if d.difference is None else f"{d.difference:+.3f}",
             "–" if d.low is None else f"[{d.low:+.3f}, {d.high:+.3f}]"]
            for d in bootstrap.compare(result.items, a, b)]
    title = (f"{b} - {a}, paired bootstrap {bootstrap.LEVEL:.0%} interval ({bootstrap.RESAMPLES} draws of the "
             "answerable and the unanswerable items apart)")
    return title, rows


def format_table(result: EvalResult) -> str:
    """The terminal view: metrics by mode, then the breakdowns (cells are lexical / dense / hybrid)."""
    parts = [_summary_line(result)]
    # Every miss has one cause then: said above the figures it explains, not after them.
    parts += [f"warning: {w}" for w in result.warnings if w.startswith(MISSING_DOCUMENTS)]
    parts += ["", _grid(["metric", *result.modes], _overall_rows(result))]
    compared = comparison_rows(result)
    if compared:
        title, rows = compared
        a, b = compared_modes(result)
        parts += ["", title, _grid(["metric", a, b, "difference", "95 % interval"], rows)]
    for name, title in BREAKDOWN_TITLES.items():
        header, rows = _breakdown_rows(result, name)
        if rows:
            parts += ["", f"{title} — cells: {' / '.join(result.modes)}", _grid(header, rows)]
    rest = [w for w in result.warnings if not w.startswith(MISSING_DOCUMENTS)]
    parts += [f"warning: {warning}" for warning in rest[:WARNINGS_SHOWN]]
    if len(rest) > WARNINGS_SHOWN:
        parts.append(f"... and {len(rest) - WARNINGS_SHOWN} more warnings (all of them in the report and in --json)")
    return "\n".join(parts)


def _miss_lines(misses: Sequence[ItemResult], mode: str) -> list[str]:
    lines = []
    for r in misses:
        o = r.outcomes[mode]
        want = "; ".join(f"{e['doc']} > {e['heading']}" for e in r.item.expected) or "(nothing: should abstain)"
        got = "; ".join(f"#{t['rank']} {t['doc']} > {t['heading']}" for t in o.top[:TOP_SHOWN]) or "(no hits)"
        state = "abstained" if o.abstained else "answered"
        query = " ".join(r.item.query.split())
        query = (query if len(query) <= 160 else query[:157] + "...").replace("`", "'")
        lines.append(f"- **{r.item.id}** ({r.item.kind}, {r.item.lang}, {state}, confidence {o.confidence:.3f}) "
                     f"`{query}`  \n  expected: {want}  \n  got: {got}")
        if o.error:
            lines.append(f"  error: {o.error}")
    return lines


def format_markdown(result: EvalResult, chart_name: str | None = None) -> str:
    parts = [f"# Retrieval eval: {result.split or 'all'} split", "", _summary_line(result), "",
             f"Created {result.created}.", "", "## Metrics by mode", "",
             _md_table(["metric", *result.modes], _overall_rows(result))]
    compared = comparison_rows(result)
    if compared:
        title, rows = compared
        a, b = compared_modes(result)
        parts += ["", f"## {title[0].upper()}{title[1:]}", "",
                  _md_table(["metric", a, b, "difference", "95 % interval"], rows)]
    if chart_name:
        parts += ["", f"![Recall@k and MRR by mode and by document]({chart_name})"]
    for name, title in BREAKDOWN_TITLES.items():
        header, rows = _breakdown_rows(result, name)
        if rows:
            parts += ["", f"## {title}", "", f"Cells: {' / '.join(result.modes)}.", "", _md_table(header, rows)]
    if result.warnings:
        parts += ["", "## Eval set warnings", "", *(f"- {w}" for w in result.warnings)]
    mode = "hybrid" if "hybrid" in result.modes else result.modes[-1]
    misses = result.misses(mode)
    open_misses = [r for r in misses if r.item.split != "test"]
    test_misses = [r for r in misses if r.item.split == "test"]
    parts += ["", f"## Misses ({mode})", "", *(_miss_lines(open_misses, mode) or ["None."])]
    if test_misses:
        # eval/README.md: test results are for reporting only; folded so nobody tunes on them by accident.
        parts += ["", f"<details><summary>{len(test_misses)} test-split misses: for reporting only, never tune "
                  "on them (eval/README.md)</summary>", "", *_miss_lines(test_misses, mode), "", "</details>"]
    return "\n".join(parts) + "\n"


def write_chart(result: EvalResult, path: Path) -> Path:
    """PNG: Recall@1/3/5, MRR@10 and nDCG@10 by mode, the same by document for hybrid, and, when the
    set has unanswerable items, abstention by mode."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the eval runs in terminals and CI
    import matplotlib.pyplot as plt

    keys = [("recall@1", "R@1"), ("recall@3", "R@3"), ("recall@5", "R@5"), ("mrr@10", "MRR"), ("ndcg@10", "nDCG")]
    abstention = [("abstention_recall", "unanswerable\nabstained"), ("wrongly_abstained", "answerable wrongly\nabstained")]
    mode = "hybrid" if "hybrid" in result.modes else result.modes[-1]
    overall = {m: result.metrics(m) for m in result.modes}
    by_doc = {d: m for d, m in result.breakdown("doc", mode).items() if m["n_answerable"]}
    panels = [("By mode", [label for _, label in keys], {m: [overall[m][k] for k, _ in keys] for m in result.modes}),
              (f"By document ({mode})", [_short_doc(d) for d in by_doc],
               {label: [m[k] for m in by_doc.values()] for k, label in keys})]
    if overall[mode]["n_unanswerable"]:
        panels.append(("Abstention by mode", [label for _, label in abstention],
                       {m: [overall[m][k] for k, _ in abstention] for m in result.modes}))
    widths = [1, max(1.5, len(by_doc) / 3), 0.6][: len(panels)]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * sum(widths), 4.8), gridspec_kw={"width_ratios": widths})
    for ax, (title, groups, series) in zip(axes, panels, strict=True):
        _bars(ax, groups, series, title)
    fig.suptitle(f"{Path(result.eval_file).name} — {result.split or 'all'} split, {len(result.items)} items")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _bars(ax, groups: list[str], series: dict[str, list[float | None]], title: str) -> None:
    """Grouped bars, one colour per series, the legend under the axes so that it hides no bar."""
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(groups))]
        ax.bar(xs, [v or 0.0 for v in values], width, label=label)
    tilted = len(groups) > 5
    ax.set_xticks(range(len(groups)), groups, rotation=20 if tilted else 0, ha="right" if tilted else "center",
                  fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14 if not tilted else -0.2),
              ncol=len(series), frameon=False)


def _short_doc(doc: str) -> str:
    """Seeds' hashed names -> "000"; other documents keep their path (two pages may share a name)."""
    return re.sub(r"^(?:.*/)?(\d{3})_[0-9a-f]{16}\.txt$", r"\1", doc)


def write_report(result: EvalResult, report_dir: Path) -> list[Path]:
    """Markdown report (timestamped and latest-<split>.md), its PNG chart, and the JSON; returns the paths."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    split = result.split or "all"
    stamp = result.created.replace("-", "").replace(":", "").replace("T", "-").rstrip("Z")
    chart = write_chart(result, report_dir / f"{split}-{stamp}.png")
    latest_chart = report_dir / f"latest-{split}.png"
    latest_chart.write_bytes(chart.read_bytes())
    md = report_dir / f"{split}-{stamp}.md"
    md.write_text(format_markdown(result, chart.name), encoding="utf-8")
    latest = report_dir / f"latest-{split}.md"
    latest.write_text(format_markdown(result, latest_chart.name), encoding="utf-8")
    data = report_dir / f"latest-{split}.json"
    data.write_text(json.dumps(result.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return [md, chart, latest, latest_chart, data]
