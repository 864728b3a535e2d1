"""The judge's vocabulary, pruned: the pieces of e5's 250,002 that this domain's text uses.

multilingual-e5-small spends 96 M of its 118 M weights on word embeddings, one row per piece of a
vocabulary made for a hundred languages; int8, that table alone is 96 MB. The judge keeps the rows of the
pieces that these texts need, and every piece of one character (with and without the word-start "▁"), so
no character the full vocabulary spells becomes unknown:

    the shipped corpus and question bank (every text file under ingest/)
    the judge's training questions (every text file under train/judge/: reports, unanswerable
    questions) and the lines its noise is made of (noise.py)
    English words: the word list pyspellchecker ships (160 k words, as written and capitalised)
    Chinese words: jieba's dictionary (349 k words, in runs as running text has them, and apart)

A text whose best segmentation uses a piece left out is segmented with the pieces kept (the Unigram
search picks the best path among them), which moves its vector a little (eval/DECISIONS.md has the
figures). The kept set depends only on files in the repository and in the installed packages, not on a
pairs file, so the same inputs keep the same pieces (and a run that changes only the pairs reuses the
exported encoder); the trained model's manifest records how many and their hash.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..config import REPO_ROOT

TEXT_SUFFIXES = (".md", ".mdx", ".rst", ".txt", ".html", ".jsonl", ".json")
BATCH = 256


def corpus_texts(root: Path = REPO_ROOT / "ingest") -> Iterator[str]:
    """Every line of every text file under `root`."""
    for path in sorted(Path(root).rglob("*")):
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            yield from (line for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip())


def english_words() -> list[str]:
    import spellchecker

    path = Path(spellchecker.__file__).parent / "resources" / "en.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        frequencies = json.load(f)
    return sorted(frequencies, key=lambda w: (-frequencies[w], w))


def chinese_words() -> list[str]:
    import jieba

    path = Path(jieba.__file__).parent / "dict.txt"
    rows = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r[0] for r in sorted(rows, key=lambda r: (-int(r[1]) if len(r) > 1 and r[1].isdigit() else 0, r[0]))]


def word_texts() -> Iterator[str]:
    """The word lists as texts: fifty English words to a line (lower-case, then capitalised),
    twenty Chinese words run together (no spaces in Chinese text) and then apart."""
    english = english_words()
    for start in range(0, len(english), 50):
        chunk = english[start:start + 50]
        yield " ".join(chunk)
        yield " ".join(w.capitalize() for w in chunk)
    chinese = chinese_words()
    for start in range(0, len(chinese), 20):
        chunk = chinese[start:start + 20]
        yield "".join(chunk)
        yield " ".join(chunk)


def training_texts(root: Path = REPO_ROOT / "train" / "judge") -> Iterator[str]:
    """The judge's training questions as written (the JSON Lines of train/judge/ and its reports/, not
    the models or pairs built there), and its noise's lines."""
    from . import noise

    for path in [*sorted(Path(root).glob("*.jsonl")), *sorted((Path(root) / "reports").rglob("*.jsonl"))]:
        if path.name != "pairs.jsonl":
            yield from (line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    yield from noise.UNRELATED
    yield " ".join(noise.ACTORS + noise.GPUS + noise.OS_NAMES)
    yield " ".join(f"{name}=={v}" for name, versions in noise.VERSIONS.items() for v in versions)


def all_texts() -> Iterator[str]:
    """Every text the kept pieces are chosen from, prefixes first."""
    from ..search.judge import PASSAGE_PREFIX, QUERY_PREFIX

    yield QUERY_PREFIX
    yield PASSAGE_PREFIX
    yield from corpus_texts()
    yield from training_texts()
    yield from word_texts()


def kept_pieces(pieces: list[str], tokenizer, texts: Iterable[str], always: Iterable[int] = ()) -> list[int]:
    """Sorted ids: `always`, every one-character piece (bare or after "▁"), and every piece the
    full `tokenizer` uses on `texts`."""
    keep = set(always)
    keep.update(i for i, p in enumerate(pieces) if len(p) == 1 or (len(p) == 2 and p[0] == "▁"))
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == BATCH:
            keep.update(i for e in tokenizer.encode_batch(batch, add_special_tokens=False) for i in e.ids)
            batch = []
    if batch:
        keep.update(i for e in tokenizer.encode_batch(batch, add_special_tokens=False) for i in e.ids)
    return sorted(keep)


def base_vocabulary(base_folder: Path) -> tuple[list[str], list[int]]:
    """(the base tokenizer's pieces, the ids of its added tokens: <s>, <pad>, </s>, <unk>, <mask>)."""
    spec = json.loads((Path(base_folder) / "tokenizer.json").read_text(encoding="utf-8"))
    return [piece for piece, _ in spec["model"]["vocab"]], [t["id"] for t in spec.get("added_tokens", [])]


def pruned_tokenizer(base_folder: Path, keep: list[int]):
    """The base tokenizer over the pieces `keep` (sorted base ids), renumbered in that order."""
    from tokenizers import Tokenizer

    spec = json.loads((Path(base_folder) / "tokenizer.json").read_text(encoding="utf-8"))
    new_id = {old: new for new, old in enumerate(keep)}
    spec["model"]["vocab"] = [spec["model"]["vocab"][i] for i in keep]
    spec["model"]["unk_id"] = new_id[spec["model"]["unk_id"]]
    spec["added_tokens"] = [dict(t, id=new_id[t["id"]]) for t in spec.get("added_tokens", []) if t["id"] in new_id]
    for special in (spec.get("post_processor") or {}).get("special_tokens", {}).values():
        special["ids"] = [new_id[i] for i in special["ids"]]
    return Tokenizer.from_str(json.dumps(spec, ensure_ascii=False))


def write_pruned(base_folder: Path, keep: list[int], out: Path) -> Path:
    """A copy of the base model whose vocabulary is `keep` (sorted ids of the base, its added tokens
    among them): the word-embedding rows taken, the tokenizer rebuilt over those pieces. Loads as the
    base does."""
    import torch
    from transformers import AutoModel, PreTrainedTokenizerFast

    base_folder = Path(base_folder)
    model = AutoModel.from_pretrained(str(base_folder), add_pooling_layer=False)
    table = model.embeddings.word_embeddings.weight.data[torch.tensor(keep)].clone()
    model.resize_token_embeddings(len(keep))
    model.embeddings.word_embeddings.weight.data.copy_(table)
    model.config.pad_token_id = keep.index(model.config.pad_token_id)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    config = json.loads((base_folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    names = {k: config[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token", "cls_token", "sep_token")
             if isinstance(config.get(k), str)}
    PreTrainedTokenizerFast(tokenizer_object=pruned_tokenizer(base_folder, keep),
                            model_max_length=config.get("model_max_length", 512), **names).save_pretrained(str(out))
    return out
