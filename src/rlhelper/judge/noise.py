"""Noise added by code to the question bank's questions, so the judge learns them as users paste them.

The bank (ingest/questions/) is written from the docs: clean, one line, in the docs' words. Users paste
what their terminal showed. Each kind below wraps a clean question the way a paste carries it; none is
modelled on an eval item, only on what the tools print and the issue templates ask for.

    prefix      every line gets a launcher's prefix: Ray prints a worker's output under
                `(WorkerDict pid=2231, ip=10.0.0.5)` or `(TaskRunner pid=…)`, torchrun's --tee under
                `[rank3]:` or `[default0]:`, Python logging under `ERROR:root:` or a glog header
                (`E1120 14:03:22.123456  4512 file.cc:88]`); the question is split into two lines where
                it is long, as a terminal wraps it
    timestamp   a time in front, as logging formatters write it (`2026-11-20 14:03:22,481 ERROR`,
                `[2026-11-20 14:03:22]`, `14:03:22 |`)
    env         the environment block issue templates ask for, before or after the question: versions
                of verl/vllm/sglang/torch/transformers/CUDA/Python, the GPUs, the OS (the shape of
                `python -m torch.utils.collect_env` and of a template's "Environment" section)
    unrelated   a few lines of a training run's ordinary output around the question: progress bars,
                NCCL INFO lines, wandb's banner, FutureWarnings, step metrics; what a copy of the
                terminal's last screen carries
    truncate    the question cut at a word boundary (a paste that stopped short, a line cut by the
                terminal's width), keeping at least half of its words, with or without an ellipsis
    buried      the question (its kind of line: an error line stays as it is, a question is wrapped in
                an `Error:` line) in the middle or near the end of 20 to 80 lines of an ordinary run's
                log, with prefixes and timestamps: a whole log pasted "in case it helps"

`noisy(question, rng)` picks one kind (or two, `prefix` or `timestamp` with another); `variants` gives
several for one question. Everything is drawn from `rng`, so a seed fixes the data.
"""

from __future__ import annotations

import random
import re

KINDS = ("prefix", "timestamp", "env", "unrelated", "truncate", "buried")

ACTORS = ("WorkerDict", "TaskRunner", "ActorRolloutRefWorker", "RolloutWorker", "vLLMHttpServer",
          "AsyncvLLMServer", "SGLangEngine", "RayPPOTrainer", "CriticWorker", "RewardModelWorker",
          "FSDPWorker", "MegatronPPOActor", "main_task", "RolloutManager", "raylet")
GPUS = ("8x NVIDIA H100 80GB HBM3", "8x A100-SXM4-80GB", "4x NVIDIA A100 40GB", "2x RTX 4090", "8x H800",
        "16x H20 (2 nodes)", "8x L40S", "1x A10G", "8x Ascend 910B", "4x MI300X")
OS_NAMES = ("Ubuntu 22.04.4 LTS", "Ubuntu 20.04.6 LTS", "CentOS Linux 7", "Rocky Linux 9.3", "Debian 12")
VERSIONS = {
    "verl": ("0.3.0", "0.4.1", "0.5.0", "0.6.0.dev0", "main@3f2a1c9"),
    "vllm": ("0.6.3", "0.7.3", "0.8.5.post1", "0.9.2", "0.10.1"),
    "sglang": ("0.4.6.post5", "0.4.9", "0.5.0rc2"),
    "torch": ("2.4.0+cu121", "2.5.1+cu124", "2.6.0+cu124", "2.7.1+cu126"),
    "transformers": ("4.46.3", "4.51.3", "4.53.2", "4.55.0"),
    "ray": ("2.40.0", "2.43.0", "2.46.0", "2.48.0"),
    "flash-attn": ("2.6.3", "2.7.4.post1", "2.8.0"),
    "megatron-core": ("0.11.0", "0.12.1", "0.13.0"),
}
CUDA = ("12.1", "12.4", "12.6", "12.8")
PYTHONS = ("3.10.14", "3.11.9", "3.12.4")
UNRELATED = (
    "Loading checkpoint shards: 100%|██████████| 4/4 [00:03<00:00,  1.21it/s]",
    "Processed prompts: 100%|██████████| 512/512 [00:41<00:00, 12.3it/s, est. speed input: 2301.5 toks/s]",
    "NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
    "NCCL INFO NET/IB : No device found.",
    "NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7",
    "wandb: Currently logged in as: team-rl. Use `wandb login --relogin` to force relogin",
    "wandb: Tracking run with wandb version 0.19.1",
    "wandb: Run data is saved locally in /workspace/wandb/run-20261120_140322-3k2j1x9a",
    "FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.",
    "UserWarning: TypedStorage is deprecated. It will be removed in the future.",
    "INFO: Started server process [48211]",
    "INFO:     127.0.0.1:53422 - \"POST /generate HTTP/1.1\" 200 OK",
    "Started a local Ray instance. View the dashboard at 127.0.0.1:8265",
    "Using blocking ray.get inside async actor method.",
    "step:12 - actor/entropy:0.612 - actor/pg_loss:-0.004 - critic/score/mean:0.281 - timing_s/gen:48.2",
    "step:13 - actor/kl_loss:0.0012 - actor/grad_norm:0.341 - response_length/mean:612.4",
    "Training Progress:   3%|▎         | 13/435 [11:02<5:58:11, 50.93s/it]",
    "INFO 11-20 14:03:22 model_runner.py:1115] Loading model weights took 14.9889 GB",
    "INFO 11-20 14:03:25 worker.py:266] Memory profiling takes 2.87 seconds",
    "INFO 11-20 14:03:25 executor_base.py:110] # CUDA blocks: 25410, # CPU blocks: 4681",
    "[2026-11-20 14:03:22] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.01",
    "[2026-11-20 14:03:23] Decode batch. #running-req: 64, #token: 40123, token usage: 0.43, gen throughput (token/s): 3120.55",
    "Capturing CUDA graph shapes: 100%|██████████| 35/35 [00:12<00:00,  2.81it/s]",
    "Model config: {'architectures': ['Qwen2ForCausalLM'], 'hidden_size': 3584, 'num_hidden_layers': 28}",
    "Actor use_remove_padding=True",
    "Total steps: 435, num_warmup_steps: 0",
    "Size of train dataloader: 145, Size of val dataloader: 1",
    "[validate_config] All configuration checks passed successfully!",
    "Saved checkpoint to checkpoints/gsm8k/qwen2_7b_grpo/global_step_100",
    "huggingface/tokenizers: The current process just got forked, after parallelism has already been used.",
    "Gloo Rendezvous: 8 of 8 ranks joined",
    "[W1120 14:03:22.123456 ProcessGroupNCCL.cpp:4561] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is the default now",
)
ERROR_WORDS = re.compile(r"error|exception|traceback|failed|fatal|oom|timeout|killed|错误|报错|失败", re.IGNORECASE)


def _pid(rng: random.Random) -> int:
    return rng.randrange(1000, 400000)


def _ip(rng: random.Random) -> str:
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


def _time(rng: random.Random) -> str:
    return f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"


def _date(rng: random.Random) -> str:
    return f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"


def line_prefix(rng: random.Random) -> str:
    """One launcher's prefix, the same for every line of one paste."""
    choice = rng.randrange(6)
    if choice == 0:
        return f"({rng.choice(ACTORS)} pid={_pid(rng)}) "
    if choice == 1:
        return f"({rng.choice(ACTORS)} pid={_pid(rng)}, ip={_ip(rng)}) "
    if choice == 2:
        return f"[rank{rng.randrange(16)}]: "
    if choice == 3:
        return f"[default{rng.randrange(8)}]:"
    if choice == 4:
        return rng.choice(("ERROR:root:", "ERROR:__main__:", "WARNING:root:"))
    return f"E{rng.randrange(1, 13):02d}{rng.randrange(1, 29):02d} {_time(rng)}.{rng.randrange(10**6):06d} {_pid(rng):7d} {rng.choice(('core_worker.cc', 'task_manager.cc', 'gcs_server.cc'))}:{rng.randrange(40, 900)}] "


def timestamp(rng: random.Random) -> str:
    choice = rng.randrange(3)
    if choice == 0:
        return f"{_date(rng)} {_time(rng)},{rng.randrange(1000):03d} {rng.choice(('ERROR', 'WARNING', 'INFO'))} "
    if choice == 1:
        return f"[{_date(rng)} {_time(rng)}] "
    return f"{_time(rng)} | "


def wrap_lines(question: str, rng: random.Random, width: int = 100) -> list[str]:
    """The question as a terminal shows it: one line, or two when it is longer than `width`."""
    if len(question) <= width or rng.random() < 0.5:
        return [question]
    cut = question.rfind(" ", 0, width)
    return [question[:cut], question[cut + 1:]] if cut > 0 else [question]


def env_block(rng: random.Random) -> str:
    """An environment section as issue templates ask for it, in one of three shapes."""
    packages = rng.sample(sorted(VERSIONS), k=rng.randrange(3, 6))
    pairs = [(name, rng.choice(VERSIONS[name])) for name in packages]
    gpu, cuda, python = rng.choice(GPUS), rng.choice(CUDA), rng.choice(PYTHONS)
    shape = rng.randrange(3)
    if shape == 0:
        lines = ["Environment:", *(f"- {n}: {v}" for n, v in pairs), f"- CUDA: {cuda}", f"- Python: {python}",
                 f"- GPU: {gpu}"]
    elif shape == 1:
        lines = [f"PyTorch version: {rng.choice(VERSIONS['torch'])}", f"CUDA used to build PyTorch: {cuda}",
                 f"OS: {rng.choice(OS_NAMES)} (x86_64)", f"Python version: {python} (64-bit runtime)",
                 f"GPU models and configuration: {gpu}", "Versions of relevant libraries:",
                 *(f"[pip3] {n}=={v}" for n, v in pairs)]
    else:
        lines = [", ".join(f"{n} {v}" for n, v in pairs) + f", CUDA {cuda}, {gpu}"]
    return "\n".join(lines)


def unrelated_lines(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(UNRELATED) for _ in range(n)]


def truncated(question: str, rng: random.Random) -> str:
    words = question.split(" ")
    if len(words) < 4:  # a Chinese sentence has no spaces: cut its characters instead
        if len(question) < 12:
            return question
        keep = rng.randrange(len(question) // 2 + 1, len(question))
        return question[:keep] + rng.choice(("", "…", "..."))
    keep = rng.randrange(len(words) // 2 + 1, len(words))
    return " ".join(words[:keep]) + rng.choice(("", " ...", "…"))


def as_error_line(question: str, rng: random.Random) -> str:
    """An error line stays itself; a question in a log is the error the user means."""
    if ERROR_WORDS.search(question):
        return question
    return f"{rng.choice(('Error', 'RuntimeError', 'ERROR'))}: {question}"


def buried(question: str, rng: random.Random) -> str:
    prefix = line_prefix(rng) if rng.random() < 0.6 else ""
    stamp = rng.random() < 0.5
    n = rng.randrange(20, 81)
    at = rng.randrange(n // 2, n)  # errors sit in the second half of a log
    lines = unrelated_lines(rng, n)
    lines.insert(at, as_error_line(question, rng))
    return "\n".join(f"{prefix}{timestamp(rng) if stamp else ''}{line}" for line in lines)


def apply(kind: str, question: str, rng: random.Random) -> str:
    """`question` with one kind of noise."""
    if kind == "prefix":
        prefix = line_prefix(rng)
        return "\n".join(prefix + line for line in wrap_lines(question, rng))
    if kind == "timestamp":
        return timestamp(rng) + question
    if kind == "env":
        block = env_block(rng)
        return f"{question}\n\n{block}" if rng.random() < 0.6 else f"{block}\n\n{question}"
    if kind == "unrelated":
        before, after = unrelated_lines(rng, rng.randrange(1, 5)), unrelated_lines(rng, rng.randrange(0, 3))
        return "\n".join([*before, question, *after])
    if kind == "truncate":
        return truncated(question, rng)
    if kind == "buried":
        return buried(question, rng)
    raise ValueError(f"unknown noise kind {kind!r}: one of {', '.join(KINDS)}")


def noisy(question: str, rng: random.Random) -> tuple[str, str]:
    """(the question with noise, the kinds applied, joined by '+')."""
    kind = rng.choice(KINDS)
    text = apply(kind, question, rng)
    if kind in ("env", "unrelated", "truncate") and rng.random() < 0.3:  # a prefixed or timed line as well
        extra = rng.choice(("prefix", "timestamp"))
        return apply(extra, text, rng) if extra == "timestamp" else _prefix_every_line(text, rng), f"{kind}+{extra}"
    return text, kind


def _prefix_every_line(text: str, rng: random.Random) -> str:
    prefix = line_prefix(rng)
    return "\n".join(prefix + line if line else line for line in text.split("\n"))


def variants(question: str, n: int, rng: random.Random) -> list[tuple[str, str]]:
    """`n` noisy forms of one question (distinct where the draws allow)."""
    seen, out = set(), []
    for _ in range(n * 3):
        text, kind = noisy(question, rng)
        if text not in seen and text != question:
            seen.add(text)
            out.append((text, kind))
        if len(out) == n:
            break
    return out
