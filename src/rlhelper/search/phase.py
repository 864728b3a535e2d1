"""Which phase of an RL step failed, from the frames of a traceback, and which phase an entry is about.

    phase_of_frame(path, function)  -> "training" | "generation" | "weight sync" | "checkpoint" | None
    phase_named(text)               -> the phase a heading or a question names in words, or None
    phase_asked(question)           -> "training" | "generation" when a question names one, or None
    phase_of_entry(entry)           -> the phase its heading names, or None
    phase_factors(phase, entries)   -> score factors: x(1 + PHASE_BOOST) same phase, x PHASE_CONFLICT another

An RL step alternates generation (the rollout engine samples), training (the actor's forward and
backward), a weight sync between them, and checkpoints; the docs split the same error by it ("OOM
during rollout (vLLM)" and "OOM during training" in the verl seed; "CUDA out of memory during
generation" and "... during training" in SkyRL's). The error line of an OOM is the same in both: the
frames under it are what differ (verl's dp_actor.update_policy and loss.backward() against
vllm_rollout.generate_sequences). The frame patterns are the framework and engine function names
that own each phase; the heading patterns, the words the docs use for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..schema import Entry

PHASE_BOOST = 0.3  # an entry whose heading names the phase the traceback failed in
PHASE_CONFLICT = 0.7  # an entry whose heading names another phase

# Per phase, checked in this order on one frame (a weight sync inside the engine is a sync, not
# generation). Matched against "<path> <function>" of a frame.
_FRAME_PHASES: list[tuple[str, re.Pattern]] = [
    ("weight sync", re.compile(
        r"\b(?:\w*sync_weights?\w*|\w*update_weights?\w*|\w*weight_sync\w*|broadcast_weights?\w*"
        r"|load_weights|\w*weights_update\w*|\w*refit\w*)\b|sharding_manager", re.I)),
    ("checkpoint", re.compile(r"\b(?:\w*save_checkpoint\w*|\w*load_checkpoint\w*|checkpoint_manager\w*|model_merger"
                              r"|save_pretrained|save_model|\w*_ckpt\w*)\b", re.I)),
    ("training", re.compile(
        r"\b(?:update_policy|update_actor|update_critic|\w*train_step\w*|training_step|train_batch"
        r"|forward_backward\w*|backward|_engine_run_backward|optimizer_step|clip_grad_norm_?|\w*_loss)\b"
        r"|[/\\](?:megatron|deepspeed)[/\\].*\b(?:schedules|optimizer)\b", re.I)),
    ("generation", re.compile(
        r"\b(?:generate_sequences|generate|\w*rollout\w*|execute_model|model_runner|llm_engine|engine_core)\b"
        r"|[/\\](?:vllm|sglang)[/\\]", re.I)),
]

# How a heading, or a user's own words, name a phase: "OOM during rollout (vLLM)", "rollout 阶段显存不足".
_NAMED_PHASES: list[tuple[str, re.Pattern]] = [
    ("weight sync", re.compile(r"\bweights? (?:sync|update|transfer)|\bsync(?:ing)? weights|权重同步|权重更新", re.I)),
    ("checkpoint", re.compile(r"\bcheckpoint|\bmodel merger|保存模型|检查点", re.I)),
    ("training", re.compile(r"\b(?:during|in) (?:the )?training\b|\btraining step\b|\bbackward\b"
                            r"|训练(?:时|中|阶段|的时候)", re.I)),
    ("generation", re.compile(r"\b(?:during|in) (?:the )?(?:rollout|generation|sampling|inference)\b|\bgeneration\b"
                              r"|(?:rollout|推理|生成|采样) ?(?:阶段|时|的时候)", re.I)),
]


# The words the docs name each phase with, searched as hints beside a traceback's error line.
PHASE_WORDS = {
    "weight sync": ("weight", "sync"),
    "checkpoint": ("checkpoint",),
    "training": ("training",),
    "generation": ("rollout", "generation"),
}


def phase_of_frame(path: str, function: str) -> str | None:
    where = f"{path} {function}"
    for phase, pattern in _FRAME_PHASES:
        if pattern.search(where):
            return phase
    return None


def phase_of_frames(frames: Iterable[tuple[str, str]]) -> str | None:
    """The phase of the deepest frame that names one (frames outermost first, as Python prints them)."""
    found = None
    for path, function in frames:
        found = phase_of_frame(path, function) or found
    return found


def phase_named(text: str) -> str | None:
    """The phase a heading or a question names in words, if one."""
    for phase, pattern in _NAMED_PHASES:
        if pattern.search(text):
            return phase
    return None


def phase_asked(question: str) -> str | None:
    """The phase a question names, of the two the docs split one error by (rollout or training:
    "rollout 阶段显存不足"). Weight sync and checkpoints named in words are the question's topic,
    which its words already search for."""
    phase = phase_named(question)
    return phase if phase in ("training", "generation") else None


def phase_of_entry(entry: Entry) -> str | None:
    return phase_named(entry.heading or "")


def phase_factors(phase: str | None, rows: Iterable[int], entries: list[Entry], *,
                  from_frames: bool = True) -> dict[int, float]:
    """Score factors for the entries at `rows`: favour the phase's entries; when the frames said it,
    also hold back entries about another phase, which the error line alone cannot tell apart (a
    phase the user names in words is searched as words too, and may be loosely said)."""
    if not phase:
        return {}
    factors = {}
    for row in rows:
        named = phase_of_entry(entries[row])
        if named == phase:
            factors[row] = 1.0 + PHASE_BOOST
        elif named is not None and from_frames:
            factors[row] = PHASE_CONFLICT
    return factors
