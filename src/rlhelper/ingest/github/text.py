"""A thread's text made fit to quote and to search: the markup trackers add taken out, and a
body split into its prose and its pasted blocks, each block told for what it is.

    clean(text)                  control characters, CRLF and <!-- template hints --> gone
    plain(text)                  clean, and HTML tags, images and template headings gone
    split_body(text)             -> Body(prose, blocks): fenced or <details> blocks, classified
    block_kind(text)             "log" | "script" | "env" | "code"
    holds_instructions(text)     code, config or a command a reader could apply

Issue templates and browsers leave much in a body that says nothing about the problem:
`<img>` tags and screenshots, `# Summary` / `### Describe the bug` headings, a checklist
("- [x] I searched the issues"), the environment dump the template asks for, and the launch
script a user pastes whole. Quoted as the Symptom they push the problem's words out; taken
as the error signature (a 40-line script reads as a log) they make the entry match every
report with a launch script. So the Symptom is the prose, the signature comes from the
log blocks and the prose's own error lines, and the rest is left to the link.

Every pattern here is anchored or bounded: a 64 KB body costs a few milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..parse.inline import CONTROL_CHARS

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_DETAILS_OPEN = re.compile(r"^\s*<details\b[^>]{0,200}>\s*$", re.I)
_DETAILS_CLOSE = re.compile(r"^\s*</details>\s*$", re.I)
_SUMMARY = re.compile(r"<summary\b[^>]{0,200}>(.{0,300}?)</summary>", re.I)
_IMAGE_MD = re.compile(r"!\[[^\]\n]{0,300}\]\([^)\s]{0,2000}(?:\s+\"[^\"\n]{0,200}\")?\)")
_IMAGE_TAG = re.compile(r"<img\b[^>]{0,2000}>", re.I)
_IMAGE_URL = re.compile(r"https?://\S{1,2000}?\.(?:png|jpe?g|gif|webp|svg)\b\S{0,200}"
                        r"|https?://(?:user-images\.githubusercontent\.com|github\.com/user-attachments)/\S{1,2000}",
                        re.I)
_DROPPED_ELEMENTS = re.compile(r"<(script|style)\b[^>]{0,500}>.{0,20000}?</\1\s*>", re.I | re.S)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]{0,20}(?:\s[^<>]{0,1000})?/?>")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_CHECKBOX = re.compile(r"^\s*[-*]\s+\[[ xX]\]\s")
_ERRORISH = re.compile(r"(?:Error|Exception|error|错误|报错|失败|Traceback|failed|FAILED|Killed|OOM|:)")
TEMPLATE_HEADING_WORDS = 6  # a heading this short with no error in it is a template's ("Describe the bug")

# What pasted blocks look like. A log names an error; a launch script continues its lines with
# backslashes, exports variables and passes flags or Hydra overrides; an environment dump lists
# versions (the template's "collect_env" output, `pip list`, `nvidia-smi`).
_LOG_LINE = re.compile(r"Traceback \(most recent call last\)|^\s*File \"|\b[A-Z][A-Za-z]{2,60}(?:Error|Exception)\b"
                       r"|\berror\b|\bERROR\b|\bFAILED\b|\bKilled\b|out of memory|Segmentation fault|core dumped"
                       r"|错误|报错|异常")
_SCRIPT_LINE = re.compile(r"\\\s*$|^\s*(?:export|set|source|cd|mkdir|conda|pip3?|uv|python3?|torchrun|deepspeed|ray|"
                          r"bash|sh|srun|sbatch|docker|git|CUDA_VISIBLE_DEVICES=\S+|[A-Z_][A-Z0-9_]{1,40}=\S*)\b"
                          r"|^\s*#!|^\s*--?[A-Za-z][\w.-]{0,60}(?:[= ]\S+)?\s*\\?\s*$"
                          r"|^\s*[a-z_][\w]*(?:\.[\w]+)+=\S*\s*\\?\s*$|^\s*(?:for|do|done|fi|if|then)\b")
_ENV_LINE = re.compile(r"^\s*(?:[A-Za-z][\w.\- ]{0,40}(?:version|Version|VERSION)\s*[:=]|[A-Za-z][\w.\-]{0,60}"
                       r"(?:==|\s{2,})v?\d+(?:\.\d+)+\S*\s*$|Package\s+Version|-{5,}\s+-{5,}|\|\s+NVIDIA-SMI"
                       r"|Collecting environment information|(?:OS|GPU|CPU|CUDA|cuDNN|Python|Driver)\b[^:\n]{0,40}:)")
# Every _LOG_LINE match holds one of these.
_LOG_STEMS = ("Traceback", "File \"", "Error", "Exception", "error", "ERROR", "FAILED", "Killed", "out of memory",
              "Segmentation", "core dumped", "错误", "报错", "异常")
SCRIPT_SHARE = 0.5  # share of a block's non-empty lines that look like a script for it to be one
ENV_SHARE = 0.5

# A reader could apply it: inline code that sets or names something, a config key, a flag, a command.
_INLINE_CODE = re.compile(r"`([^`\n]{2,300})`")
# In prose, a command is named with its verb ("pip install", "ray start"): "the ray job's workers" is none.
_COMMAND = re.compile(r"(?:^|\s)(?:pip3? (?:install|uninstall)|uv (?:pip|add|sync|run)|conda (?:install|create|activate)"
                      r"|export [A-Za-z_][A-Za-z0-9_]*=|python3? -[mc]\s|git (?:clone|checkout|pull|apply|cherry-pick|fetch)"
                      r"|apt(?:-get)? install|docker (?:run|pull|build)|torchrun --|ray (?:start|stop|job submit)|bash \S+\.sh)"
                      r"|(?:^|\s)--[A-Za-z][\w-]{1,60}(?:[= ]\S+)?|\b[a-z_]\w*(?:\.\w+){1,8}\s*=\s*\S"
                      r"|\b[A-Z][A-Z0-9_]{2,40}=\S|\b[\w.-]{2,60}(?:==|>=|<=)\d", re.M)


def clean(text) -> str:
    """Control characters (terminal escapes) and CRLF out, issue templates' <!-- hints --> removed."""
    return _clean(text) if isinstance(text, str) else ""


@lru_cache(maxsize=256)  # the same comment is cleaned by each judgement that reads it
def _clean(text: str) -> str:
    return without_html_comments(CONTROL_CHARS.sub("", text.replace("\r\n", "\n").replace("\r", "\n")))


def without_html_comments(text: str) -> str:
    """<!-- hints --> removed (a loop of finds: no regex backtracking); an unclosed one ends the text."""
    out, at = [], 0
    while True:
        start = text.find("<!--", at)
        if start < 0:
            out.append(text[at:])
            return "".join(out)
        out.append(text[at:start])
        end = text.find("-->", start + 4)
        if end < 0:
            return "".join(out)
        at = end + 3


def plain(text: str) -> str:
    """Prose without HTML tags (a <summary> keeps its words), images, template headings and
    checklists; a heading that says something (an error) keeps its words without the #s.
    Fenced code is kept as it is (a `# comment` in a script is no heading)."""
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        marker = _FENCE.match(line)
        if fence is None and marker:
            out += _plain_prose("\n".join(prose))
            prose, fence = [], marker.group(1)
            out.append(line)
        elif fence is not None:
            out.append(line)
            if marker and line.strip().startswith(fence) and not line.strip()[len(fence):].strip():
                fence = None
        else:
            prose.append(line)
    out += _plain_prose("\n".join(prose))
    if fence is not None:
        out.append(fence)  # an unclosed fence closes here, so nothing after it turns into code
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


def _plain_prose(text: str) -> list[str]:
    if not text:
        return []
    if "<" in text:  # most comments hold no HTML: skip the tag patterns for them
        text = _DROPPED_ELEMENTS.sub(" ", text)
        text = _SUMMARY.sub(lambda m: m.group(1), _IMAGE_TAG.sub(" ", text))
        text = _TAG.sub(" ", text)
    if "![" in text:
        text = _IMAGE_MD.sub(" ", text)
    if "://" in text:
        text = _IMAGE_URL.sub(" ", text)
    out = []
    for line in text.split("\n"):
        if line[:12].lstrip()[:1] in ("-", "*") and _CHECKBOX.match(line):
            continue
        heading = _HEADING.match(line) if "#" in line[:8] else None
        if heading:
            words = heading.group(1).strip()
            if len(words.split()) <= TEMPLATE_HEADING_WORDS and not _ERRORISH.search(words):
                continue
            line = words
        out.append(line.rstrip())
    return out


@dataclass(frozen=True)
class Block:
    kind: str  # "log" | "script" | "env" | "code"
    text: str


@dataclass
class Body:
    prose: str
    blocks: list[Block] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> list[Block]:
        return [b for b in self.blocks if b.kind in kinds]


def split_body(text: str) -> Body:
    """The body's prose (plain), and its fenced and <details> blocks with what each is."""
    prose, blocks = _split(text if isinstance(text, str) else "")
    return Body(prose, list(blocks))


@lru_cache(maxsize=1024)  # a comment is read by the notice pass, the fix's judgement and the entry
def _split(text: str) -> tuple[str, tuple[Block, ...]]:
    prose: list[str] = []
    blocks: list[Block] = []
    current: list[str] | None = None
    fence: str | None = None
    details = 0
    for line in clean(text).split("\n"):
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and line.strip().startswith(fence):
                blocks.append(Block(block_kind("\n".join(current)), "\n".join(current)))
                current, fence = ([] if details else None), None
            else:
                current.append(line)
            continue
        if marker:
            if current:  # a fence inside <details>: what was before it is a block of its own
                blocks.append(Block(block_kind("\n".join(current)), "\n".join(current)))
            fence, current = marker.group(1), []
            continue
        if _DETAILS_OPEN.match(line):
            details += 1
            current = current if current is not None else []
            continue
        if details and _DETAILS_CLOSE.match(line):
            details -= 1
            if not details and current:
                blocks.append(Block(block_kind("\n".join(current)), "\n".join(current)))
                current = None
            continue
        if details and _SUMMARY.search(line):
            continue  # a folded block's label ("Environment", "log"): no words of the problem
        if details and current is not None:
            current.append(line)
        else:
            prose.append(line)
    if current:  # an unclosed fence or <details>: what it held is still a block
        blocks.append(Block(block_kind("\n".join(current)), "\n".join(current)))
    return plain("\n".join(prose)), tuple(b for b in blocks if b.text.strip())


KIND_SAMPLE = 40  # lines read from each end of a block to tell what it is: a 5,000-line log is a log at its ends


def block_kind(text: str) -> str:
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines:
        return "code"
    if len(lines) > 2 * KIND_SAMPLE:
        lines = lines[:KIND_SAMPLE] + lines[-KIND_SAMPLE:]
    enough, logged = 0.25 * len(lines), 0
    for line in lines:
        logged += _is_log_line(line)
        if logged >= enough:
            return "log"  # whatever else it holds, a quarter of error lines make it a log (the rule below)
    scripted = sum(1 for line in lines if _SCRIPT_LINE.search(line))
    if logged and logged >= scripted * 0.25:
        return "log"
    if scripted >= SCRIPT_SHARE * len(lines):
        return "script"
    listed = sum(1 for line in lines if _ENV_LINE.search(line))
    if listed >= ENV_SHARE * len(lines):
        return "env"
    return "code"


@lru_cache(maxsize=4096)
def _is_log_line(line: str) -> bool:
    """_LOG_LINE, after a substring check that most lines fail at once."""
    return any(stem in line for stem in _LOG_STEMS) and bool(_LOG_LINE.search(line))


def holds_instructions(text: str) -> bool:
    """Code, config or a command a reader could apply: a fence that is not a pasted log, inline
    code, a flag, a `key.sub=value`, a `pip install`. An error message quoted back is none."""
    body = split_body(text)
    if body.of_kind("script", "code"):
        return True
    prose = body.prose
    if any(_COMMAND.search(code) or "/" in code or "_" in code or "." in code.strip(".")
           for code in _INLINE_CODE.findall(prose) if not _LOG_LINE.search(code)):
        return True
    return bool(_COMMAND.search(_INLINE_CODE.sub(" ", prose)))
