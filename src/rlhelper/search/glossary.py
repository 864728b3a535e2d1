"""A small English/Chinese glossary of RL-training troubleshooting terms, for queries.

    expand(tokenize("rollout 阶段显存不足"))  -> the tokens + "oom", "out", "memory", ...

BM25 cannot match 显存不足 with "out of memory"; the embedder can, but pasted
errors are mostly matched lexically. So a query's tokens are expanded with
the other language's words for the terms it contains. Documents are never
expanded: the index stays a faithful record of the docs.

Every row is read off the docs themselves, mostly from the pages that exist
in both languages, side by side: RLinf's FAQ (ingest/official/rlinf/faq.rst
and zh/faq.rst, the latter also seed 001), its installation page, and slime's
Q&A and debugging guides (ingest/official/slime/*.md and zh/*.md). The
evidence column quotes the pair (tests/test_glossary.py checks that every
term occurs in the corpus and every quote is verbatim). No row comes from
anywhere else (USERS_TERMS, below, are the exception, one way).

Matching works on tokens, so the same tokenizer as the index decides: a term
matches when its tokens occur contiguously in the query's tokens (an
identifier's parts count: `weight_sync_timeout` holds "weight sync" and
"timeout"; Chinese terms are matched as runs of character bigrams).

What a match adds (the figures, on cross-language questions and on the eval's
dev split, are in eval/DECISIONS.md):

* A Chinese term adds the English terms' tokens: 显存不足 -> oom, out, memory.
* An English term adds the Chinese terms' tokens when the query itself
  contains Chinese ("rollout 的时候 OOM 了" -> 显存不足). In a purely English
  query the added bigrams, rare in a mostly English corpus and so weighted
  high by IDF, pulled Chinese entries above the English ones for
  "CUDA out of memory" at full weight; so they are offered separately
  (`cross_language`) and searched at half weight (retrieve.py), which lifts
  English questions about the Chinese RLinf FAQ ("gloo timed out in recv")
  without costing English ones.
* One-token synonyms in the same language are added (oom, ckpt/checkpoint,
  grad/gradient); multi-word ones are not ("timeout" would bring "time" and
  "out", and "out" pulls in every out-of-memory entry).

Tokens already in the query are not added twice.

USERS_TERMS adds a few RL terms the docs write only in English (no Chinese page covers rewards or
gradients) while Chinese users write them in Chinese: "奖励一直是 0 怎么办" found the garbled-output
entry, not "Rewards are always 0", because no word of it met an English one. Each row quotes the
English docs and the question bank's Chinese questions (ingest/questions/, the ways users ask for
each entry), and each works one way: the Chinese term adds the English words, never the reverse
(the docs hold no Chinese to find, only the bank's questions, which would pull English queries
toward whatever Chinese entry a question with that word belongs to).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..index.lexical import tokenize


@dataclass(frozen=True)
class Concept:
    en: tuple[str, ...]
    zh: tuple[str, ...]
    evidence: str  # where the docs pair the terms
    one_way: bool = False  # only the Chinese term adds the English (USERS_TERMS)


# Abbreviations for the evidence column.
_RL = "rlinf faq.rst = zh/faq.rst"
_RLI = "rlinf installation.rst = zh/installation.rst"
_SQ = "slime qa.md = zh/qa.md"
_SD = "slime debug.md = zh/debug.md"
_AS = "verl ascend/faq.rst (zh page quoting the English error)"

GLOSSARY: tuple[Concept, ...] = (
    # 内存不足 is not written in the docs; its parts are: 内存 (ascend faq.rst Q3, where too much
    # 内存占用 "会导致 OOM") and 不足 (RLinf's 显存不足 = "Insufficient free GPU memory").
    Concept(("oom", "out of memory"), ("显存不足", "内存不足"),
            f"{_RL}, CUresult entry: 'Insufficient free GPU memory' = '可用显存不足'; {_SQ} 3: "
            f"'Out-of-Memory (OOM) error' = 'OOM'; {_AS} Q3: '内存占用 ... 设置过大会导致 OOM'"),
    Concept(("gpu memory",), ("显存",),
            f"{_RL}: 'Reduce SGLang static memory usage' = '降低 SGLang 的静态显存占用'; {_SD}: "
            "'do not accumulate on the GPU' = '避免它们在显存中累计'"),
    Concept(("weight sync", "weight synchronization", "weight update", "update weights"), ("权重同步", "权重更新"),
            f"{_SD}: 'weights after a Megatron → SGLang sync' = 'Megatron → SGLang 权重同步后'; "
            "'online weight updates' = '在线权重更新'"),
    Concept(("weight",), ("权重",),
            f"{_RL}: 'inference weights were not unloaded' = '没有卸载推理权重'; {_SD}: "
            "'MoE router weights' = 'MoE 路由权重'"),
    Concept(("timeout", "timed out", "time out"), ("超时",),
            f"{_RL}: 'Gloo Timeout' = 'Gloo 超时'; 'waits until Gloo times out' = '直到 Gloo 超时'"),
    Concept(("checkpoint", "ckpt"), (),
            f"{_SQ} 1: 'a corresponding checkpoint' = '对应的 ckpt'; {_SD}: 'loaded the checkpoint (ckpt)'"),
    Concept(("inference",), ("推理",),
            f"{_SD}: 'Separate Debugging for Training and Inference' = '训练推理单独 debug'; "
            f"{_RL}: 'Inference backend' = '推理后端'"),
    Concept(("training",), ("训练",),
            f"{_SQ} 2: 'training and inference share the same GPUs' = '训练和推理共用 GPU'; "
            f"{_SD}: 'First Training Step' = '训练第一步'"),
    Concept(("generation",), ("生成",),
            f"{_SQ} 10: 'My sglang generation takes an extremely long time' = '我的 sglang 生成时间特别特别久'; "
            f"{_RL}: 'prevents generation from completing' = '导致生成阶段未完成'"),
    Concept(("sampling",), ("采样",),
            f"{_SQ} 6: 'n_samples_per_prompt samples are generated' = '会采 n_samples_per_prompt 条'; "
            f"{_SD}: 'speculative decoding' = '投机采样'"),
    Concept(("speculative decoding",), ("投机采样",),
            f"{_SD}, IMA section: 'Enable or disable speculative decoding' = '开启关闭投机采样'"),
    Concept(("stuck", "hang", "hanging"), ("卡在",),
            f"{_SQ} 2: 'Why is my task stuck on the Ray submission page?' = '为什么我的任务一直卡在 ray 提交的页面上？'"),
    Concept(("garbled",), ("乱码",),
            f"{_SQ} 1: 'garbled text during training' = '训练过程中 ... 乱码'; {_SD}: 'garbled output' = '乱码'"),
    Concept(("resume",), ("续训",), f"{_SQ} 5: 'How do I resume training?' = '如何续训？'"),
    Concept(("multi-node",), ("多机",),
            f"{_SQ} 4: 'During multi-node training' = '多机训练的时候'"),
    Concept(("node",), ("节点",),
            f"{_RL}, GCS entry: 'Worker nodes cannot reach the Ray head' = 'Worker 节点无法连接到 ... Ray head'"),
    Concept(("port",), ("端口",), f"{_SQ} 8: 'port conflicts' = '端口冲突'"),
    Concept(("conflict",), ("冲突",),
            f"{_SQ} 4: 'file system write conflicts' = '文件系统的写冲突'; 8: 'port conflicts' = '端口冲突'"),
    Concept(("file system", "filesystem"), ("文件系统",), f"{_SQ} 4: 'file system write conflicts' = '文件系统的写冲突'"),
    Concept(("breakpoint",), ("断点",),
            f"{_RL}: 'Breakpoint Debugging' = '断点调试方法'; {_SD}: 'set breakpoints' = '设置断点'"),
    Concept(("debug", "debugging", "debugger"), ("调试",),
            f"{_RL}: 'Ray Distributed Debugger' = 'Ray 分布式调试器'; {_SD}: 'separate debugging' = '分离调试'"),
    Concept(("distributed",), ("分布式",), f"{_RL}: 'Ray distributed debugger' = 'Ray 分布式调试器'"),
    Concept(("rendering", "render"), ("渲染",), f"{_RL}: 'Rendering Issues' = '渲染问题'"),
    Concept(("driver",), ("驱动",), f"{_RL}: 'the NVIDIA driver' = 'NVIDIA 驱动程序'"),
    Concept(("incompatible", "compatibility", "compatible"), ("兼容",),
            f"{_RL}: 'Incompatible GPU driver' = '驱动不兼容'; 'stability or compatibility' = '稳定性或兼容性'"),
    Concept(("network",), ("网络",), f"{_RL}: 'Network Issues' = '网络问题'"),
    Concept(("nic",), ("网卡",),
            f"{_RL}, GCS entry: 'wrong NIC order' = '网卡顺序不一致'"),
    Concept(("connect", "connection"), ("连接",), f"{_RL}: 'Cannot Connect to GCS' = '无法连接 GCS'"),
    Concept(("not found", "cannot find"), ("找不到",),
            f"{_SQ} 4: 'reports it cannot find a model' = '找不到某个模型'; {_AS} Q4: 'FileNotFoundError: "
            "common.pt' = '找不到 common.pt'"),
    Concept(("fail", "failed", "failure"), ("失败",),
            f"{_RL}: 'P2P task transmission fails' = 'P2P 任务传输失败'; 'workers will fail to connect' = "
            "'Worker 将连接失败'"),
    Concept(("log", "logs"), ("日志",),
            f"{_RL}: 'Check logs for the SGLang error' = '在日志中定位 ... SGLang 错误'; {_SD}: "
            "'check the logs for a confirmation' = '查看是否有 ... 的日志'"),
    Concept(("load", "loading", "loaded"), ("加载",),
            f"{_SD}: 'Parameters were not loaded correctly' = '参数没有正常加载'; {_RL}: "
            "'When SGLang Loads parameters' = 'SGLang 加载参数时'"),
    Concept(("save", "saved"), ("保存",),
            f"{_SD}: 'the results of each rollout will be saved' = '会保存每次 rollout 的结果'"),
    Concept(("parameter",), ("参数",),
            f"{_SD}: 'Parameters were not loaded correctly' = '参数没有正常加载'; {_SQ} 2: "
            "'the --colocate parameter' = '--colocate 参数'"),
    Concept(("precision",), ("精度",),
            f"{_SD}: 'Aligning Precision' = '对齐精度'; {_RL}: 'Numerical Precision' = '数值精度'"),
    Concept(("numerical instability",), ("数值不稳定",),
            f"{_SD}: 'avoiding numerical instability' = '避免 ... 数值不稳定'"),
    Concept(("quantization", "quantized"), ("量化",),
            f"{_SD}: 'Quantization Checkpoint Issues' = '量化 Checkpoint 问题'"),
    Concept(("missing",), ("缺失",), f"{_SD}: 'Missing safetensors shards' = 'safetensors 分片缺失'"),
    Concept(("shard",), ("分片",), f"{_SD}: 'Missing safetensors shards' = 'safetensors 分片缺失'"),
    Concept(("cache",), ("缓存",),
            f"{_RL}, CUresult entry: 'restore cached buffers' = '恢复缓存缓冲区'"),
    Concept(("buffer",), ("缓冲区",),
            f"{_RL}, CUresult entry: 'restore cached buffers' = '恢复缓存缓冲区'; {_AS} Q3: 'bucket（缓冲区）'"),
    Concept(("release", "released", "unloaded"), ("释放", "卸载"),
            f"{_RL}: 'weights were not unloaded' = '没有卸载推理权重', 'properly released' = '已正确释放'; "
            f"{_SD}: 'released during the release process' = '在 release 的时候被释放了'"),
    Concept(("mismatch",), ("不匹配",), f"{_RL}: 'Placement mismatch' = 'Placement 不匹配'"),
    Concept(("colocate", "colocated", "co-located", "collocated"), ("训推一体", "共享式"),
            f"{_SQ} 2: 'co-located training and inference' = '训推一体'; {_RL}: 'the config uses colocate' = "
            "'配置使用 共享式（collocated）'"),
    Concept(("decoupled",), ("训推分离",), f"{_SQ} 2: 'decoupled training and inference' = '训推分离'"),
    Concept(("gradient", "grad"), (),
            f"{_SQ} 9: 'My gradient norm is very high' = 'grad norm 好高'; 13: 'Gradient becomes NaN' = 'grad NaN'"),
    Concept(("parallel", "parallelism", "parallelization"), ("并行",),
            f"{_SD}: 'according to the parallelization strategy' = '根据并行做了转换'"),
    Concept(("device",), ("设备",),
            f"{_RL}, EGL entry: 'EGL device indices and CUDA device ids' = 'EGL 设备索引与 CUDA 设备号'"),
    Concept(("visible",), ("可见",),
            f"{_RL}, EGL entry: 'EGL lists every device the driver can see' = '列出驱动可见的所有设备'; "
            f"{_AS}: 'NPU device is not available or visible' = 'NPU 驱动未正确安装或设备不可见'"),
    Concept(("task", "job"), ("任务", "作业"),
            f"{_SQ} 2: 'my task stuck' = '我的任务'; {_RL}: 'Relaunch the job' = '重新启动作业'"),
    Concept(("register", "registered"), ("注册",),
            f"{_RL}: 'click the \"+\" button to register the cluster endpoint' = '点击 “+” 注册集群地址'"),
    Concept(("start", "started", "startup", "launch"), ("启动",),
            f"{_RL}: 'started the Ray cluster via ray start --head' = '通过 ray start --head 启动的地址'; "
            f"{_RLI}: 'before launching an example' = '再启动示例'"),
    Concept(("restart", "relaunch"), ("重启", "重新启动"),
            f"{_RL}: 'stop Ray and relaunch' = '停止 Ray 并重新启动'; 'and Ray, if needed' = '必要时也重启 Ray'"),
    Concept(("config", "configuration"), ("配置",),
            f"{_SD}: 'the training configuration' = '训练配置'; {_RL}: 'the config uses colocate' = '配置使用'"),
    Concept(("install", "installation"), ("安装",),
            f"{_RLI}: 'Installation' = '安装说明'; {_SD}: 'Install debugpy' = '安装 debugpy'"),
    Concept(("environment variable",), ("环境变量",),
            f"{_RL}: 'MUJOCO_GL environment variable' = 'MUJOCO_GL 环境变量'"),
    Concept(("virtual environment", "venv"), ("虚拟环境",),
            f"{_RLI}: 'UV virtual environment' = 'UV 虚拟环境'"),
    Concept(("version",), ("版本",), f"{_RL}: 'driver version 535' = '535 版本'"),
    Concept(("container",), ("容器",), f"{_RLI}: 'inside the container' = '在容器内'"),
    Concept(("image",), ("镜像",), f"{_RLI}: 'Each image bundles' = '每个镜像都打包了'"),
)

# The bank's Chinese questions, for USERS_TERMS.
_QB = "question bank (ingest/questions/)"

USERS_TERMS: tuple[Concept, ...] = (
    Concept(("reward",), ("奖励",),
            "skyrl seed 000: 'Rewards are always 0'; slime seed 002: 'Reward drops to zero'; "
            f"{_QB}, slime zh/qa.md: '奖励一直是 0'", one_way=True),
    Concept(("gradient", "grad"), ("梯度",),
            "slime qa.md 13: 'Gradient becomes NaN or Inf during training'; "
            f"{_QB}, verl seed 004: '梯度爆炸怎么处理'", one_way=True),
)

ALL_CONCEPTS: tuple[Concept, ...] = GLOSSARY + USERS_TERMS


@dataclass(frozen=True)
class _Term:
    tokens: tuple[str, ...]
    lang: str
    concept: int


@cache
def _terms() -> dict[str, list[_Term]]:
    """Glossary terms as token tuples, indexed by their first token (built on first use)."""
    by_first: dict[str, list[_Term]] = {}
    for number, concept in enumerate(ALL_CONCEPTS):
        for lang, surfaces in (("en", concept.en), ("zh", concept.zh)):
            for surface in surfaces:
                tokens = tuple(tokenize(surface))
                if tokens:
                    by_first.setdefault(tokens[0], []).append(_Term(tokens, lang, number))
    return by_first


@cache
def _additions(concept: int, lang: str, cross: bool) -> tuple[str, ...]:
    """Tokens a match of `concept` in language `lang` adds (see the module docstring)."""
    entry = ALL_CONCEPTS[concept]
    other = entry.zh if lang == "en" else entry.en
    same = entry.en if lang == "en" else entry.zh
    out: list[str] = []
    if cross and not (entry.one_way and lang == "en"):
        for surface in other:
            out.extend(tokenize(surface))
    for surface in same:
        tokens = tokenize(surface)
        if len(tokens) == 1:
            out.extend(tokens)
    return tuple(dict.fromkeys(out))


def matches(tokens: list[str]) -> list[tuple[int, str]]:
    """(concept number, language) of every glossary term found in the tokens, first match per concept."""
    index = _terms()
    found: dict[int, str] = {}
    for i, token in enumerate(tokens):
        for term in index.get(token, ()):
            if term.concept not in found and tuple(tokens[i : i + len(term.tokens)]) == term.tokens:
                found[term.concept] = term.lang
    return list(found.items())


def terms_in(tokens: list[str]) -> dict[int, set[str]]:
    """The tokens of each glossary term found in them, by concept ("out of memory" -> its 3 words)."""
    index = _terms()
    found: dict[int, set[str]] = {}
    for i, token in enumerate(tokens):
        for term in index.get(token, ()):
            if tuple(tokens[i : i + len(term.tokens)]) == term.tokens:
                found.setdefault(term.concept, set()).update(term.tokens)
    return found


def expand(tokens: list[str]) -> list[str]:
    """The query tokens followed by the glossary's additions for the terms in them."""
    chinese_query = any(_is_han(t[0]) for t in tokens if t)
    present = set(tokens)
    added: list[str] = []
    for concept, lang in matches(tokens):
        for token in _additions(concept, lang, lang == "zh" or chinese_query):
            if token not in present:
                present.add(token)
                added.append(token)
    return list(tokens) + added


def cross_language(tokens: list[str]) -> list[str]:
    """For a query without Chinese: the Chinese tokens of the glossary terms it contains
    (what expand() leaves out of an English query)."""
    if any(_is_han(t[0]) for t in tokens if t):
        return []  # expand() adds them already
    present = set(tokens)
    added: list[str] = []
    for concept, lang in matches(tokens):
        for token in _additions(concept, lang, True):
            if token not in present and _is_han(token[0]):
                present.add(token)
                added.append(token)
    return added


def _is_han(char: str) -> bool:
    return "\u3400" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"
