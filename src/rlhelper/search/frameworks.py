"""Which framework a query is about, from the names, config keys, launch commands and log
prefixes each project's docs show: evidence per framework (0..1), so retrieval can prefer
that framework's entries without filtering the others out."""

from __future__ import annotations

import re

# Each hint: pattern, evidence per framework (0..1), and where the docs show it.
# Evidence from distinct patterns combines as a noisy-or, so two weak hints
# (a `trainer.` key and a `rollout.` key) stay weaker than one strong one.
_K = r"(?<![\w.])"  # a config key starts here, not inside actor_rollout_ref.rollout.x
_NOT_CALL = r"(?![\w.]*\()"  # ...and is not a method call in quoted code (trainer.fit())
HINTED_NAMES = frozenset({"verl", "skyrl", "slime", "rlinf", "sglang", "vllm"})  # the keys of the hints
_FRAMEWORK_HINTS: list[tuple[re.Pattern, dict[str, float]]] = [
    (re.compile(p, flags), evidence)
    for p, flags, evidence in [
        # Names, as the projects write them in their own docs.
        (r"\bverl\b", re.I, {"verl": 0.8}),
        (r"\bsky-?rl\b|\bskyrl[-_](?:train|gym)\b", re.I, {"skyrl": 0.8}),
        (r"\bslime\b", re.I, {"slime": 0.6}),  # also an English word, so less than the others
        (r"\brlinf\b", re.I, {"rlinf": 0.8}),
        (r"\bsglang\b", re.I, {"sglang": 0.8}),
        (r"\bvllm\b", re.I, {"vllm": 0.8}),
        # Module paths and dotted modules: verl.model_merger (verl faq.rst "Checkpoints"),
        # verl.trainer.main_ppo (install.rst); skyrl_train.entrypoints.main_base (SkyRL seed),
        # skyrl.train.entrypoints (skyrl installation.mdx); slime/utils/arguments.py and
        # slime.utils.types (slime seed); rlinf.__file__ (rlinf installation.rst);
        # sglang.srt.server_args (SkyRL seed); vllm/ paths in engine tracebacks.
        (r"(?<![\w-])verl[/\\.](?=[a-z_])", 0, {"verl": 0.9}),
        (r"(?<![\w-])skyrl(?:_train|_gym)?[/\\.](?=[a-z_])", 0, {"skyrl": 0.9}),
        (r"(?<![\w-])slime[/\\.](?=[a-z_])", 0, {"slime": 0.9}),
        (r"(?<![\w-])rlinf[/\\.](?=[a-z_])", 0, {"rlinf": 0.9}),
        (r"(?<![\w-])sglang[/\\.](?=[a-z_])", 0, {"sglang": 0.9}),
        (r"(?<![\w-])vllm[/\\.](?=[a-z_])", 0, {"vllm": 0.9}),
        # verl's Hydra keys: actor_rollout_ref.* (verl seed OOM fixes, faq.rst, ascend faq.rst),
        # critic.ppo_micro_batch_size_per_gpu, algorithm.kl_ctrl, reward_model.reward_fn (verl seed),
        # ray_init.num_cpus (faq.rst), ray_kwargs.ray_init (install.rst), global_profiler.* (precision debugger).
        (_K + r"actor_rollout_ref\.[a-z_]" + _NOT_CALL, 0, {"verl": 0.9}),
        (_K + r"(?:ray_init|ray_kwargs|global_profiler|reward_model|algorithm)\.[a-z_]" + _NOT_CALL, 0, {"verl": 0.6}),
        (_K + r"critic\.[a-z_]" + _NOT_CALL, 0, {"verl": 0.5}),
        (_K + r"trainer\.(?:nnodes?|n_gpus_per_node|wandb_proxy)\b" + _NOT_CALL, 0, {"verl": 0.7}),  # faq.rst, install.rst
        # SkyRL: generator.* throughout the SkyRL seed and troubleshooting.mdx;
        # trainer.placement.colocate_all, trainer.use_expandable_segments (troubleshooting.mdx),
        # trainer.policy.* / trainer.algorithm.* (SkyRL seed).
        (_K + r"generator\.[a-z_]" + _NOT_CALL, 0, {"skyrl": 0.7}),
        (_K + r"trainer\.(?:placement|policy|algorithm|use_expandable_segments|strategy)\b" + _NOT_CALL, 0, {"skyrl": 0.7}),
        # trainer.* alone is used by both verl and SkyRL: weak evidence for each.
        (_K + r"trainer\.[a-z_]" + _NOT_CALL, 0, {"verl": 0.2, "skyrl": 0.2}),
        # RLinf: cluster.component_placement (rlinf faq.rst, NCCL "cuda invalid argument");
        # rollout.attention_backend (rlinf faq.rst) but verl writes rollout.temperature
        # (verl seed) and rollout.update_weights_bucket_megabytes (ascend faq.rst): weak for both.
        (_K + r"cluster\.component_placement\b" + _NOT_CALL, 0, {"rlinf": 0.9}),
        (_K + r"cluster\.[a-z_]" + _NOT_CALL, 0, {"rlinf": 0.3}),
        (_K + r"rollout\.[a-z_]" + _NOT_CALL, 0, {"rlinf": 0.2, "verl": 0.2}),
        (r"\brun_embodiment\.sh\b|\bexamples/embodiment\b", 0, {"rlinf": 0.6}),  # rlinf faq.rst debugging steps
        # Environment variables named after the project: SKYRL_RAY_PG_TIMEOUT_IN_S,
        # SKYRL_LD_LIBRARY_PATH_EXPORT (skyrl troubleshooting.mdx); VERL_USE_UV (install.rst),
        # VERL_LOGGING_LEVEL (ascend faq.rst).
        (r"\bSKYRL_[A-Z_]+", 0, {"skyrl": 0.8}),
        (r"\bVERL_[A-Z_]+", 0, {"verl": 0.8}),
        # verl's Ray driver actor, named in install.rst ("so the TaskRunner and every worker"). An
        # actor's name is any Ray program's to choose, so alone it leans towards verl without
        # naming it (below answer.extractive.NAMED: no "your query is about verl" on its strength).
        (r"\(TaskRunner pid=", 0, {"verl": 0.3}),
        # slime's command-line flags: "SGLang arguments are prefixed with --sglang-" (slime seed),
        # --sglang-mem-fraction-static (qa.md); --rollout-stop (qa.md), --rollout-health-check-*
        # (fault-tolerance.md); --actor-num-nodes / --actor-num-gpus-per-node (slime seed, qa.md);
        # debug flags (debug.md), --use-fault-tolerance (fault-tolerance.md), others from qa.md.
        (r"--sglang-[a-z]", 0, {"slime": 0.7}),
        (r"--rollout-[a-z]", 0, {"slime": 0.6}),
        (r"--actor-num-(?:nodes|gpus-per-node)\b", 0, {"slime": 0.8}),
        (r"--(?:debug-rollout-only|debug-train-only|(?:save|load)-debug-(?:rollout|train)-data|use-fault-tolerance"
         r"|check-weight-update-equal|hf-checkpoint|ref-load|max-tokens-per-gpu|use-dynamic-batch-size|colocate)\b",
         0, {"slime": 0.7}),
    ]
]


def detect_frameworks(text: str) -> dict[str, float]:
    """Which frameworks (and rollout engines) the text points at, with strengths in (0, 1].

    Keys are verl, skyrl, slime, rlinf, and sglang / vllm for the engines.
    Each pattern counts once however often it occurs.
    """
    missing: dict[str, float] = {}  # framework -> probability that no hint is right
    for pattern, evidence in _FRAMEWORK_HINTS:
        if pattern.search(text):
            for name, weight in evidence.items():
                missing[name] = missing.get(name, 1.0) * (1.0 - weight)
    return {name: round(1.0 - miss, 2) for name, miss in sorted(missing.items())}
