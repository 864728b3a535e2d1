"""Checks on an LLM-written answer: are its citations real, are its commands in the sources?

Pure functions over strings, standard library only. A model can cite a source
it was never given ("[9]") or invent a flag that looks plausible
("--rollout-offload"); both are the mistakes that cost a user an afternoon, so
the first is removed from the text and the second is reported as unverified.
Text inside code (fences and `inline spans`) is never rewritten: `x[0]` there
is indexing, not a citation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# [3], [1, 2], [1，2] and 【1】: Chinese answers use full-width commas and brackets.
# Kept markers are rewritten as [n] so the UI finds them in one form.
_CITATION = re.compile(r"(?P<space>[ \t]?)[\[【](?P<nums>\d{1,3}(?:\s*[,，]\s*\d{1,3})*)[\]】]")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_URL = re.compile(r"https?://[^\s)>\]`'\"]+")

# ASCII-only look-arounds: in Python's Unicode \w a Han character is a word
# character, and "设置CUDA_VISIBLE_DEVICES为" must still yield the variable.
_FLAG = re.compile(r"(?<![A-Za-z0-9_-])--[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9_]")
_ENV_VAR = re.compile(r"(?<![A-Za-z0-9_-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![A-Za-z0-9_])")
_DOTTED = re.compile(r"(?<![A-Za-z0-9_./-])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?![A-Za-z0-9_/-])")
_SNAKE = re.compile(r"(?<![A-Za-z0-9_./-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![A-Za-z0-9_/-]|\.[A-Za-z_])")
_COMMAND_WORD = re.compile(r"^[A-Za-z0-9_][\w./:@+-]*$")
_SHELL_PROMPT = re.compile(r"^(?:\$|>>>|#)\s+")


@dataclass
class CitationCheck:
    text: str  # the answer with citations of unknown sources removed
    cited: list[int] = field(default_factory=list)  # valid source numbers, in order of first use
    removed: list[int] = field(default_factory=list)


def split_code(text: str) -> list[tuple[str, str]]:
    """Cut text into (kind, piece) runs, kind "prose", "inline" (`code`) or "fence" (a code block)."""
    runs: list[tuple[str, str]] = []
    prose: list[str] = []
    fence: list[str] | None = None
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            if fence is None:
                runs.extend(_split_inline("".join(prose)))
                prose, fence = [], [line]
            else:
                fence.append(line)
                runs.append(("fence", "".join(fence)))
                fence = None
        elif fence is not None:
            fence.append(line)
        else:
            prose.append(line)
    if fence is not None:  # an unclosed fence (a cut-off reply) is still code
        runs.append(("fence", "".join(fence)))
    runs.extend(_split_inline("".join(prose)))
    return [(kind, piece) for kind, piece in runs if piece]


def _split_inline(prose: str) -> list[tuple[str, str]]:
    runs, pos = [], 0
    for m in _INLINE_CODE.finditer(prose):
        runs.append(("prose", prose[pos:m.start()]))
        runs.append(("inline", m.group(0)))
        pos = m.end()
    runs.append(("prose", prose[pos:]))
    return runs


def check_citations(text: str, n_sources: int) -> CitationCheck:
    """Keep [n] for 1 <= n <= n_sources; drop the others from the text and report them."""
    result = CitationCheck(text="")
    pieces = []
    for kind, piece in split_code(text):
        pieces.append(piece if kind != "prose" else _CITATION.sub(lambda m: _keep_valid(m, n_sources, result), piece))
    result.text = "".join(pieces)
    return result


def _keep_valid(match: re.Match, n_sources: int, result: CitationCheck) -> str:
    numbers = [int(n) for n in re.split(r"\s*[,，]\s*", match.group("nums"))]
    kept = []
    for n in numbers:
        if 1 <= n <= n_sources:
            kept.append(n)
            if n not in result.cited:
                result.cited.append(n)
        elif n not in result.removed:
            result.removed.append(n)
    if not kept:
        return ""  # the space before it goes too: "see [9]." -> "see."
    return match.group("space") + "".join(f"[{n}]" for n in dict.fromkeys(kept))


def technical_tokens(text: str) -> list[str]:
    """Strings in an answer that a reader would copy: they must come from the sources.

    Inline code spans (whole), commands at the start of a code-block line
    (program and sub-command words, e.g. "pip install flash-attn"), long flags
    (--foo-bar), environment variables (FOO_BAR), dotted config keys
    (a.b_c, a.b.c; the key, not the value) and snake_case keys. URLs are skipped.
    Unique, in order of appearance.
    """
    found: list[str] = []
    for kind, piece in split_code(text):
        if kind == "inline":
            span = " ".join(piece.strip("`").split())
            if span:
                found.append(span)
        elif kind == "fence":
            found.extend(_command_heads(piece))
        found.extend(_word_tokens(_URL.sub(" ", piece)))
    return list(dict.fromkeys(found))


def _command_heads(block: str) -> list[str]:
    heads = []
    for line in block.splitlines()[1:]:
        if _FENCE.match(line):
            continue
        words = _SHELL_PROMPT.sub("", line.strip()).rstrip("\\").split()
        head = []
        for word in words[:4]:
            if word.startswith("-") or "=" in word or not _COMMAND_WORD.match(word):
                break
            if not head and word.endswith(":"):
                break  # a YAML line, not a command
            head.append(word)
        if len(head) >= 2:
            heads.append(" ".join(head))
    return heads


def _word_tokens(text: str) -> list[str]:
    hits: list[tuple[int, str]] = []
    for pattern in (_FLAG, _ENV_VAR, _SNAKE):
        hits.extend((m.start(), m.group(0)) for m in pattern.finditer(text))
    for m in _DOTTED.finditer(text):
        key = m.group(0)
        # "e.g" and "config.yaml" are prose; keys have an underscore or two dots.
        if "_" in key or key.count(".") >= 2:
            hits.append((m.start(), key))
    return [token for _, token in sorted(hits)]


def normalize_source(text: str) -> str:
    """Source text as the answer would quote it: markdown escapes undone, whitespace collapsed."""
    return " ".join(re.sub(r"\\([_*\-`#.\[\]])", r"\1", text).split())


_YAML_KEY = re.compile(
    r"^(?P<indent>[ \t]*)(?P<key>[A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(?P<value>[^#\n]*?))?[ \t]*(?:#.*)?$"
)


def yaml_key_paths(text: str) -> list[str]:
    """Dotted forms of nested YAML keys in a source, with their values in both notations.

    The docs show config as YAML blocks; an answer usually gives the same
    setting as a Hydra override. "generator:\n  gpu_memory_utilization: 0.5"
    yields "generator.gpu_memory_utilization", "...: 0.5" and "...=0.5".
    """
    paths: list[str] = []
    stack: list[tuple[int, str]] = []  # (indent, key) from the outermost key in
    for line in text.splitlines():
        m = _YAML_KEY.match(line)
        if not m:
            continue
        indent = len(m.group("indent").expandtabs(2))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m.group("key")))
        if len(stack) < 2:
            continue  # a top-level key is in the text as it is
        path = ".".join(key for _, key in stack)
        value = (m.group("value") or "").strip()
        paths.append(path)
        if value:
            paths += [f"{path}: {value}", f"{path}={value}"]
    return paths


def appears_in(token: str, haystack: str) -> bool:
    """Is `token` in the (normalized) source text as a whole token, not part of a longer name?"""
    token = " ".join(token.split())
    if not re.match(r"^[\w-]", token) or not re.search(r"[\w-]$", token):
        return token in haystack
    # A flag must not match a longer flag ("--foo" in "--foo-bar"); a dotted key
    # may be the tail of a longer one ("rollout.n" in "actor_rollout_ref.rollout.n").
    after = r"(?![A-Za-z0-9_-])" if token.startswith("-") or token.endswith("-") else r"(?![A-Za-z0-9_])"
    before = r"(?<![A-Za-z0-9_-])" if token.startswith("-") else r"(?<![A-Za-z0-9_])"
    return re.search(before + re.escape(token) + after, haystack) is not None


def unverified_tokens(answer: str, sources: list[str], *, also_allowed: str = "") -> list[str]:
    """Tokens of `answer` found in none of `sources` (nor in `also_allowed`, e.g. the question).

    A token inside an already-unverified inline span is not listed again.
    """
    haystacks = [normalize_source("\n".join([s, *yaml_key_paths(s)])) for s in sources]
    allowed = normalize_source(also_allowed)
    missing: list[str] = []
    for token in technical_tokens(answer):
        if any(appears_in(token, h) for h in haystacks) or (allowed and appears_in(token, allowed)):
            continue
        if any(token in m for m in missing):
            continue
        missing.append(token)
    return missing
