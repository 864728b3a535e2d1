"""From whatever was pasted to what is searched: the error signature.

    normalize_query(raw)      -> NormalizedQuery(text, truncated, notices, frameworks, is_log, context, detail, phase)
    detect_frameworks(text)   -> {"verl": 0.9, "sglang": 0.8, ...}
    is_binary(raw)            -> True for data that is not text

A question or a one-line error passes through with its whitespace collapsed.
A pasted log or traceback is reduced to its error lines: stack frames, the
source lines under them, log prefixes, timestamps, pids, ips, Ray actor ids,
hex addresses, ANSI colours, progress bars and repeats are noise for both
retrievers (they never occur in the docs, and they drown the few words that
do). The last exception comes first, then the other exceptions (a chained
"During handling of the above exception" keeps both), then other error lines,
then warnings, all within `max_chars`.

Trade-offs:

* Bounded work. Only the last 200,000 characters and 5,000 lines are scanned
  (errors sit at the end of a log) and each line is clipped to 2,000
  characters; the first 20,000 characters are still read for framework hints,
  because the launch command (`python -m verl.trainer.main_ppo`) sits at the
  top. Every regex is anchored or free of nested quantifiers, so a 1 MB paste
  costs tens of milliseconds. Whatever is cut sets `truncated` and a notice.
* Paths are replaced by their file name (`unbound_buffer.cc`,
  `torch_memory_saver.cpp` are in the docs) plus any library directory on
  them (`third_party/gloo/...` keeps "gloo"); user directories go.
* Nothing is rejected here: emptiness and binary data are the caller's to
  report (see `is_binary`); control characters are simply removed.
* An exception's message names the error in its first sentence; the sentences after it
  (an allocator's statistics, a library's generic advice) are kept apart as `detail`, and
  retrieval weighs their words less: they matched an entry about memory that stays free.
* The deepest stack frame inside a framework's own package is kept apart as
  `context` ("workers rollout vllm_rollout generate_sequences"): where the
  error surfaced tells a rollout OOM from a training OOM, but frame words are
  not the error, so retrieval gives them a fraction of a query word's weight.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..catalogue import Phrase, plural
from .frameworks import detect_frameworks
from .phase import phase_asked, phase_of_frame

MAX_SCAN_CHARS = 200_000
MAX_SCAN_LINES = 5_000
MAX_LINE_CHARS = 2_000
HEAD_HINT_CHARS = 20_000
MAX_CONTINUATION_LINES = 8  # message lines following an exception line
MAX_OTHER_LINES = 12  # error lines besides the final exception, so it keeps its weight
FALLBACK_TAIL_LINES = 15  # a log with no error line at all: search its last lines
LONG_PLAIN_LINES = 30  # this many lines without log markers is still treated as a log
BINARY_SHARE = 0.1


@dataclass(frozen=True)
class NormalizedQuery:
    text: str
    truncated: bool = False
    notices: list[str] = field(default_factory=list)
    frameworks: dict[str, float] = field(default_factory=dict)
    is_log: bool = False
    # Where in a framework's code the error surfaced: the words of the deepest stack frame
    # inside verl/, skyrl_train/, slime/, rlinf/ ("workers rollout vllm_rollout generate_sequences").
    context: str = ""
    # The sentences after the first of the final exception's message ("Tried to allocate 2.00 GiB.
    # GPU 0 has a total capacity of ..."): numbers and advice that follow the error, not the error.
    detail: str = ""
    # The phase of an RL step the traceback failed in (phase.py): "training", "generation",
    # "weight sync", "checkpoint", or "" when its frames do not say.
    phase: str = ""
    # The phase was said before in the conversation (a follow-up's question named it): held as firmly as
    # a traceback's frames, so an entry about another phase is held back (phase.py, phase_factors).
    phase_held: bool = False


# --- character-level cleaning -------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# C0 controls except \t \n \r, DEL, C1 controls, zero-width and bidi overrides
# (harmless to search, harmful to display).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200d\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd\udc80-\udcff]")


def looks_like_error(text: str) -> bool:
    """Whether the text names an error the way a log line does (an error word, not a warning alone)."""
    return bool(_ERRORISH.search(text))


def is_binary(raw: str) -> bool:
    """True when the text looks like decoded binary data (NULs, control bytes, U+FFFD)."""
    sample = raw[:65_536]
    if not sample:
        return False
    return len(_BINARY.findall(sample)) / len(sample) > BINARY_SHARE


def _clean_characters(text: str) -> tuple[str, int]:
    """Text without ANSI sequences or control characters, and how many controls went."""
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n")
    removed = 0
    if _CONTROL.search(text):
        text, removed = _CONTROL.subn("", text)
    return text, removed


def _visible(line: str) -> str:
    """What a terminal shows of a line redrawn with carriage returns (progress bars)."""
    if "\r" not in line:
        return line
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-1] if parts else ""


# --- line classification ------------------------------------------------------

_FRAME = re.compile(r'\s*File "(?P<path>[^"\n]*)", line \d+(?:, in (?P<func>[\w<>.]+))?')
# A frame in a framework's own package: the path below the package root, and the function.
_FRAMEWORK_FRAME = re.compile(
    r'\s*File "[^"\n]*[/\\](?:verl|skyrl_train|skyrl|slime|rlinf)[/\\](?P<module>[^"\n]+?)\.py", line \d+, in (?P<func>[\w<>]+)')
_CPP_FRAME = re.compile(r"\s*(?:frame #\d+:|#\d+\s+0x[0-9a-f]+ in |Exception raised from \S+ at \S+ \(most recent call first\))")
_CARETS = re.compile(r"\s*[\^~]+\s*$")
_RULE = re.compile(r"[=\-_*#~+]{3,}$")  # ==== and ---- decoration (torchrun's failure report)
# "path.py:12: UserWarning: ...": the warnings module prints the source line under it.
_PY_WARNING = re.compile(r"\S+\.py:\d+: \w*Warning: ")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):\s*$")
_CHAINED = re.compile(
    r"\s*(?:During handling of the above exception, another exception occurred|"
    r"The above exception was the direct cause of the following exception):?\s*$"
)
_PROGRESS = re.compile(r"\d{1,3}%\s*\||[█▉▊▋▌▍▎▏]{3,}|\[\d{1,2}:\d{2}(?::\d{2})?<|\d+(?:\.\d+)?\s?(?:it|s)/(?:s|it)\]")
# Ray's per-actor detail lines under an ActorDiedError ("\tactor_id: 8b3a...", "\tpid: 123").
_FIELD_LINE = re.compile(r"\s*(?:class_name|actor_id|pid|ip|namespace|name|node_id|job_id|worker_id|task_id)\s*[:=]\s*\S*\s*$")

# Prefixes removed repeatedly from the start of a line, with the log level they imply.
_LEVEL_WORD = r"(?P<level>INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL|TRACE)"
_PREFIXES = [
    re.compile(r"\((?:[\w.\-<>]+ )?pid=\d+(?:, ?[\w]+=[^,()\s]*)*\)\s?"),  # (TaskRunner pid=1, ip=10.0.0.1)
    re.compile(r"\((?:raylet|gcs_server|autoscaler|monitor|dashboard|log_monitor)[^)\n]{0,40}\)\s?"),  # (raylet)
    re.compile(r"\[rank\d+\]:\s?", re.I),  # torchrun: [rank0]:
    re.compile(r"[\w.\-]+:\d+:\d+ \[\d+\] "),  # NCCL: host:pid:tid [rank]
    re.compile(r"\[(?P<level>[IWEF])\d{4} \d{2}:\d{2}:\d{2}[^\]\n]{0,80}\]\s?"),  # [E301 12:00:01.123 ProcessGroupNCCL.cpp:616]
    re.compile(r"(?P<level>[IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+\s+[\w.\-/]+:\d+\]\s?"),  # glog, torch elastic
    re.compile(r"\[(?P<level>[IWEF]) [\w.\-]+:\d+\]\s?"),  # [E ProcessGroupGloo.cpp:138]
    re.compile(r"\[[^\[\]\n]{0,60}\d{1,2}:\d{2}:\d{2}[^\[\]\n]{0,60}\]\s?"),  # [2025-03-01 12:00:01 TP0], [.. ,740 E 27 27]
    re.compile(_LEVEL_WORD + r" \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? \[[^\]\n]{1,80}\]\s?"),  # vLLM
    re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s*(?:[|\-:]\s+)?"),  # ISO
    re.compile(r"\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s+(?:[|\-]\s+)?"),  # bare time
    re.compile(r"\[" + _LEVEL_WORD + r"\]\s?"),  # [ERROR]
    re.compile(r"[\w.]+ - " + _LEVEL_WORD + r" - "),  # logging's "%(name)s - %(levelname)s - " format
    re.compile(_LEVEL_WORD + r"(?::(?:[\w.]+:)?\s*|\s*\|\s*|\s+-\s+|\s+)"),  # INFO:root: / ERROR - / WARNING
]
_LEVELS = {"I": "info", "W": "warning", "E": "error", "F": "error", "INFO": "info", "DEBUG": "info",
           "TRACE": "info", "WARNING": "warning", "WARN": "warning", "ERROR": "error", "CRITICAL": "error",
           "FATAL": "error"}

_EXCEPTION = re.compile(
    r"(?:[A-Za-z_]\w*\.)*\w*(?:Error|Exception|Exit|Interrupt|Warning|Failure|Fault|StopIteration)"
    r"(?:\([^()\n]{0,200}\))?(?::\s|:?\s*$)"
)
_ERRORISH = re.compile(
    r"\b(?:errors?|exceptions?|failed|failure|fatal|timed out|timeout|abort(?:ed)?|killed|oom|out of memory"
    r"|segmentation fault|core dumped|sig(?:abrt|segv|kill|term)|illegal|unhandled|refused|denied|cannot|can't"
    r"|unable to|not found|no module named|mismatch|exceeded|died|dead|crash(?:ed)?|hang(?:s|ing)?|stuck|nan)\b"
    r"|NCCL WARN|错误|报错|失败|超时|异常|不足|崩溃|卡住",
    re.I,
)
_WARNISH = re.compile(r"\bwarn(?:ing)?s?\b|\w+Warning:", re.I)
# A line reporting that all is well ("worker heartbeat ok", "health check passed, 0 errors",
# "timeout=30s ... alive"): its error words describe what was checked, not what went wrong.
_ALL_WELL = re.compile(
    r"\b(?:ok|okay|healthy|alive|passed|succeeded|successful(?:ly)?|no errors?|0 (?:errors?|failures?)"
    r"|errors?\s*[=:]\s*0)(?!\w)",
    re.I,
)
# Ray re-raising a worker's exception in the driver: "RayTaskError(RuntimeError): ray::WorkerDict.f() (pid=..)".
# It names the process boundary the error crossed; the error itself is printed under it.
_RAY_WRAPPER = re.compile(r"(?:ray\.exceptions\.)?RayTaskError\(\w+\): ray::")

# Inline noise, removed wherever it appears.
_INLINE_NOISE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"  # timestamps
    r"|\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
    r"|\b(?:pid|tid|ip|node_id|actor_id|worker_id|job_id|task_id|object_id|placement_group_id)=[^\s,()\[\]]*"
    r"|\b0x[0-9a-fA-F]+\b"  # addresses
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # uuids
    r"|\b[0-9a-f]{16,}\b"  # Ray ids, hashes
    r"|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"  # ip[:port]
    r"|\[repeated \d+x across cluster\]"
)
# A time of day in a log prefix: each record of a log carries its own.
_STAMPED = re.compile(r"\d{1,2}:\d{2}:\d{2}")
_LINE_NUMBER = re.compile(r"(\.(?:py|pyx|cc|cpp|cxx|c|h|hpp|cu|cuh)):\d+(?::\d+)?")
# Directories on a path that name the library the error comes from.
_PATH_KEEP = frozenset(
    "verl skyrl skyrl_train skyrl_gym slime rlinf sglang vllm megatron ray torch gloo nccl triton "
    "flashinfer flash_attn transformers deepspeed tensordict torch_memory_saver c10d distributed".split()
)
_FILE_NAME = re.compile(r"\.[A-Za-z]\w{0,5}(?::\d+)*$")
_WHITESPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[a-z)\]])\.\s+(?=[A-Z])")


def _detail(line: str) -> str:
    """The sentences after the first of an exception line's message ("" for other lines)."""
    if not _EXCEPTION.match(line):
        return ""
    colon = line.find(": ")
    end = _SENTENCE_END.search(line, colon + 2) if colon > 0 else None
    return line[end.end():] if end else ""


def _strip_prefixes(line: str) -> tuple[str, str | None]:
    """The line without log prefixes, and the level they carried (if any)."""
    line, level, _ = _split_prefixes(line)
    return line, level


def _split_prefixes(line: str) -> tuple[str, str | None, str]:
    """The line without log prefixes, the level they carried (if any), and the prefixes removed."""
    level = None
    original = line
    for _ in range(8):  # prefixes stack: "(pid=1) [time TP0] ERROR ..."
        candidate = line.lstrip(" \t")
        for prefix in _PREFIXES:
            m = prefix.match(candidate)
            if m and m.end() > 0:
                found = m.groupdict().get("level")
                if found:
                    level = level or _LEVELS.get(found.upper())
                line = candidate[m.end():]  # keeps the indentation after the prefix (frames, source)
                break
        else:
            break
    return line, level, original[: len(original) - len(line)].strip()


def _continues(prefix: str, record_prefix: str) -> bool:
    """Whether a line with `prefix` goes on with the record opened under `record_prefix`.

    A multi-line message is printed under one log record: its further lines come bare, or, from a
    Ray worker, under the same actor prefix. A line with a prefix of its own (another process's,
    a timestamp, a level) starts a new record, however error-like its words: the heartbeats after
    an exception are the raylet's, not the exception's message."""
    if not prefix:
        return True
    return prefix == record_prefix and not _STAMPED.search(prefix)


def _shorten_path(chunk: str) -> str:
    """A path chunk -> library directories on it + the file name; other chunks unchanged."""
    core = chunk.strip("\"'()[],;:<>`")
    if core.startswith(("http://", "https://")):
        return chunk
    parts = [p for p in re.split(r"[/\\]+", core) if p]
    rooted = core.startswith(("/", "./", "../", "~/", "\\")) or re.match(r"[A-Za-z]:\\", core)
    relative_file = len(parts) >= 3 and _FILE_NAME.search(parts[-1])
    if not parts or not (rooted or relative_file):
        return chunk  # actor/grad_norm, critic/score/mean, Megatron/SGLang: names, not paths
    keep = [p for p in parts[:-1] if p.lower() in _PATH_KEEP]
    return " ".join(dict.fromkeys(keep + [parts[-1]]))


def _scrub(line: str) -> str:
    """Inline noise out, paths shortened, whitespace collapsed."""
    line = _INLINE_NOISE.sub(" ", line)
    line = _LINE_NUMBER.sub(r"\1", line)
    # Chunk by chunk rather than one path regex: linear on any line.
    return " ".join(_shorten_path(c) if ("/" in c or "\\" in c) else c for c in line.split())


def _dedup_key(line: str) -> str:
    return re.sub(r"\d+", "0", line.lower())


# --- extraction ---------------------------------------------------------------

@dataclass
class _Line:
    text: str
    position: int
    tier: int  # 0 exception, 1 error, 2 warning, 3 info line with error words, 4 context
    continuation: list[str] = field(default_factory=list)

    def block(self) -> str:
        return "\n".join([self.text, *self.continuation])


def _classify(text: str, level: str | None) -> int:
    if _RAY_WRAPPER.match(text):
        return 4  # context: searched only when the log holds no error line at all
    if _EXCEPTION.match(text):
        return 0
    if level == "error":
        return 1
    if level == "warning":
        return 1 if _ERRORISH.search(text) else 2
    if _ALL_WELL.search(text):
        return 4  # heartbeats and health checks: their error words are what was checked
    if level == "info":
        return 3 if _ERRORISH.search(text) or _WARNISH.search(text) else 4
    if _ERRORISH.search(text):
        return 1
    return 2 if _WARNISH.search(text) else 4


def _has_log_markers(lines: list[str]) -> bool:
    several = sum(1 for line in lines[:MAX_SCAN_LINES] if line.strip()) >= 3
    for line in lines[-MAX_SCAN_LINES:]:
        if _FRAME.match(line) or _TRACEBACK.search(line) or _CPP_FRAME.match(line):
            return True
        stripped, level = _strip_prefixes(line)
        if stripped != line or level:
            return True
        # Lines of a report without prefixes: torchrun's "ChildFailedError:" over ==== rules.
        if several and (_RULE.match(stripped.strip()) or _EXCEPTION.match(stripped.strip())):
            return True
    return False


def _extract(lines: list[str]) -> tuple[list[_Line], int, str, str]:
    """Classified lines of a log, frames and noise dropped; how many lines were clipped; the
    context of the deepest framework frame (see NormalizedQuery.context); and the phase its frames
    name (phase.py)."""
    kept: list[_Line] = []
    clipped = 0
    context = ""
    phase = ""
    in_frame = False  # the previous line was a stack frame: the next indented one is source
    open_exception: _Line | None = None
    record_prefix = ""  # the log prefix the open exception was printed under
    for position, raw in enumerate(lines):
        raw = _visible(raw)
        if len(raw) > MAX_LINE_CHARS:
            raw, clipped = raw[:MAX_LINE_CHARS], clipped + 1
        line, level, prefix = _split_prefixes(raw)
        if (frame := _FRAME.match(line)) or _CPP_FRAME.match(line):
            in_frame, open_exception = True, None
            if frame:
                phase = phase_of_frame(frame["path"], frame["func"] or "") or phase  # the deepest says
            if framework_frame := _FRAMEWORK_FRAME.match(line):
                module = re.sub(r"[/\\_.]+", " ", framework_frame["module"])
                context = f"{module} {framework_frame['func'].strip('<>')}".strip()
            continue
        if in_frame and line[:1].isspace() and not _EXCEPTION.match(line.strip()):
            continue  # the source line under a frame (or under a Python warning)
        in_frame = bool(_PY_WARNING.match(line.lstrip()))
        stripped = line.strip()
        if not stripped:
            open_exception = None
            continue
        if (_TRACEBACK.match(stripped) or _CHAINED.match(stripped) or _CARETS.match(stripped)
                or _RULE.match(stripped) or _PROGRESS.search(stripped) or _FIELD_LINE.match(stripped)):
            continue
        stripped = _TRACEBACK.sub("", stripped)  # "Scheduler hit an exception: Traceback (most recent ...)"
        text = _scrub(stripped)
        if not text:
            continue
        tier = _classify(text, level)
        if tier == 0:
            open_exception, record_prefix = _Line(text, position, 0), prefix
            kept.append(open_exception)
        elif (open_exception is not None and level is None and tier >= 1 and _continues(prefix, record_prefix)
              and len(open_exception.continuation) < MAX_CONTINUATION_LINES):
            open_exception.continuation.append(text)  # the message goes on under the exception line
        else:
            open_exception = None
            kept.append(_Line(text, position, tier))
    return kept, clipped, context, phase


def _signature(kept: list[_Line], max_chars: int) -> tuple[list[str], int]:
    """Ordered signature lines within max_chars, and how many error lines did not fit.

    The strongest tier leads wherever it stands in the log (an exception, else an error line,
    else a warning, else an INFO line with error words), its last occurrence first; a line
    repeated (up to its numbers) counts once, so a hundred heartbeats weigh as one.
    """
    telling = [k for k in kept if k.tier < 4]
    if not telling:
        latest_first = _distinct([k for k in reversed(kept) if k.tier == 4])
        context = latest_first[:FALLBACK_TAIL_LINES][::-1]
        return _fit([k.block() for k in context], max_chars, prefer_tail=True)
    # Strongest tier first, latest first within a tier: when lines must go, the earliest go.
    ranked = _distinct(sorted(telling, key=lambda k: (k.tier, -k.position)))
    final, others = ranked[0], ranked[1:]
    dropped = max(0, len(others) - MAX_OTHER_LINES)
    others = sorted(others[:MAX_OTHER_LINES], key=lambda k: (k.tier > 0, k.tier, k.position))
    lines, cut = _fit([final.block()] + [k.block() for k in others], max_chars, prefer_tail=False)
    return lines, cut + dropped


def _distinct(lines: list[_Line]) -> list[_Line]:
    """Lines without repeats (equal up to their numbers), each kept where it first comes in `lines`."""
    seen: set[str] = set()
    kept = []
    for line in lines:
        key = _dedup_key(line.text)
        if key not in seen:
            seen.add(key)
            kept.append(line)
    return kept


def _fit(blocks: list[str], max_chars: int, *, prefer_tail: bool) -> tuple[list[str], int]:
    """Blocks that fit in max_chars (joined by newlines); the first block is cut to fit if alone too long."""
    order = range(len(blocks) - 1, -1, -1) if prefer_tail else range(len(blocks))
    chosen: dict[int, str] = {}
    used = 0
    for i in order:
        block = blocks[i]
        cost = len(block) + (1 if chosen else 0)
        if used + cost <= max_chars:
            chosen[i] = block
            used += cost
        elif not chosen:
            chosen[i] = _cut(block, max_chars)
            used = len(chosen[i])
    kept = [chosen[i] for i in sorted(chosen)]
    return kept, len(blocks) - len(kept)


def _cut(text: str, max_chars: int) -> str:
    """The head of text within max_chars, ended at a space when one is near."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    space = head.rfind(" ", max(0, max_chars - 80))
    return head[:space] if space > 0 else head


# --- entry point --------------------------------------------------------------

def normalize_query(raw: str, *, max_chars: int = 4000) -> NormalizedQuery:
    """The searchable form of a pasted query; see the module docstring."""
    raw = raw or ""
    scanned = _tail(raw, MAX_SCAN_CHARS)
    frameworks = detect_frameworks(raw if scanned is raw else raw[:HEAD_HINT_CHARS] + "\n" + scanned)
    text, removed = _clean_characters(scanned)
    if removed and scanned is not raw:  # said of the whole message: 50,000 NULs read "10,527" counting the tail
        removed = len(_CONTROL.findall(_ANSI.sub("", raw).replace("\r\n", "\n")))
    notices = [Phrase("notice.controls_removed", n=removed, s=plural(removed))] if removed else []
    lines = text.split("\n")
    scanned_lines = lines[-MAX_SCAN_LINES:]

    if not (_has_log_markers(scanned_lines) or sum(1 for line in scanned_lines if line.strip()) > LONG_PLAIN_LINES):
        return _plain_query(raw, max_chars, notices, frameworks)

    notices_after: list[str] = []
    truncated = False
    if scanned is not raw or len(lines) > MAX_SCAN_LINES:
        truncated = True
        size = Phrase("notice.size_chars", n=len(raw)) if scanned is not raw else Phrase("notice.size_lines",
                                                                                          n=len(lines))
        notices_after.append(Phrase("notice.log_cut", size=size, tail=len(chr(10).join(scanned_lines)), most=max_chars))
    kept, clipped, context, phase = _extract(scanned_lines)
    signature, left_out = _signature(kept, max_chars)
    if clipped:
        truncated = True
        notices_after.append(Phrase("notice.long_lines_cut", n=clipped, s=plural(clipped), most=MAX_LINE_CHARS))
    if left_out:
        truncated = True
        notices_after.append(Phrase("notice.lines_left_out", n=len(signature), s=plural(len(signature)),
                                    most=max_chars, left=left_out, left_s=plural(left_out)))
    errors_found = len({_dedup_key(k.text) for k in kept if k.tier <= 1})
    searched = sum(block.count("\n") + 1 for block in signature)
    if signature and errors_found:
        counted = Phrase("notice.error_lines", n=errors_found, s=plural(errors_found))
        if searched > errors_found:  # an exception's message lines, warnings: say what was searched
            counted = Phrase("notice.lines_with_errors", lines=searched, errors=counted)
        notices.append(Phrase("notice.log_errors", counted=counted))
    elif signature and any(k.tier in (2, 3) for k in kept):
        notices.append(Phrase("notice.log_warnings"))
    elif signature:
        notices.append(Phrase("notice.log_last_lines"))
    return NormalizedQuery("\n".join(signature), truncated, notices + notices_after, frameworks, True, context,
                           _detail(signature[0]) if signature else "", phase)


def _plain_query(raw: str, max_chars: int, notices: list[str], frameworks: dict[str, float]) -> NormalizedQuery:
    """A question or short error: whitespace collapsed, the head kept if too long."""
    head, _ = _clean_characters(raw[: max_chars * 4])  # whitespace and escapes shrink; 4x is plenty
    plain = _WHITESPACE.sub(" ", " ".join(_visible(line) for line in head.split("\n"))).strip()
    truncated = len(plain) > max_chars or len(raw) > max_chars * 4
    if truncated:
        plain = _cut(plain, max_chars)
        notices = notices + [Phrase("notice.head_searched", n=len(raw), kept=len(plain))]
    return NormalizedQuery(plain, truncated, notices, frameworks, False, detail=_detail(plain),
                           phase=phase_asked(plain) or "")


def _tail(raw: str, limit: int) -> str:
    """The last `limit` characters of raw, starting on a whole line when one starts near."""
    if len(raw) <= limit:
        return raw
    tail = raw[-limit:]
    newline = tail.find("\n")
    return tail[newline + 1 :] if 0 <= newline < 10_000 else tail
