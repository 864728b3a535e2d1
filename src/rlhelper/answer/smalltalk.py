"""Small talk in a conversation: "thanks", "hi", "谢谢" get a short reply, not a search.

    reply(message) -> the reply, or None when the message asks something

Searched, "thanks" found "No matching entry" and five unrelated entries. A message is small talk
only when every one of its (at most six) words is a courtesy word, so "thanks, but it still
OOMs" is a question.
"""

from __future__ import annotations

import re

MAX_WORDS = 6
_THANKS = frozenset("thanks thank thx ty cheers appreciated appreciate 谢谢 多谢 感谢 谢了 谢谢你".split())
_HELLO = frozenset("hi hello hey 你好 您好 嗨".split())
_BYE = frozenset("bye goodbye later 再见 拜拜".split())
# "that fixed it", "did the trick", "solved": how people say the answer worked, thanked for as thanks
# (issue 29: "ok thanks, that fixed it" was searched and found "No matching entry").
_WORKED = frozenset("fixed solved resolved sorted trick works worked helped 有用 解决 搞定 成功".split())
_FILLER = frozenset(
    "you so much a lot very great ok okay cool nice perfect awesome got it that now did the makes sense "
    "this good many again all for the help see 好的 好 了 非常 太 啦 哈 呀 明白 懂 收到 可以".split()) | _WORKED
_WORD = re.compile(r"[a-z]+|[\u3400-\u9fff]+")
_CHINESE = re.compile(r"[\u3400-\u9fff]")

REPLIES = {
    ("thanks", "en"): "Glad it helped. Paste the next error or ask another question when you have one.",
    ("thanks", "zh"): "很高兴能帮上忙。有新的报错或问题，直接贴过来即可。",
    ("hello", "en"): "Hello! Paste an error message, a traceback or a question about RL training.",
    ("hello", "zh"): "你好！请贴上报错信息、traceback 或关于 RL 训练的问题。",
    ("bye", "en"): "Good luck with the run.",
    ("bye", "zh"): "祝训练顺利。",
    ("ack", "en"): "Ask another question or paste the next error whenever you are ready.",
    ("ack", "zh"): "有新的问题或报错，随时贴过来。",
}


def _words(message: str) -> list[str]:
    words = []
    for chunk in _WORD.findall(message.lower()):
        # Chinese runs carry no spaces: "谢谢你" -> its known courtesy words, else the run itself
        words += [chunk] if not _CHINESE.match(chunk) or chunk in _THANKS | _HELLO | _BYE | _FILLER \
            else _split_courtesy(chunk)
    return words


def _split_courtesy(run: str) -> list[str]:
    known = sorted(_THANKS | _HELLO | _BYE | _FILLER, key=len, reverse=True)
    out, i = [], 0
    while i < len(run):
        word = next((k for k in known if run.startswith(k, i)), run[i:])
        out.append(word)
        i += len(word)
    return out


def reply(message: str) -> str | None:
    """A short reply when the message is only courtesy (thanks, hello, bye, ok); else None."""
    if not message or len(message) > 200:
        return None
    words = _words(message)
    if not words or len(words) > MAX_WORDS:
        return None
    if any(w not in _THANKS | _HELLO | _BYE | _FILLER for w in words):
        return None
    kind = ("thanks" if any(w in _THANKS | _WORKED for w in words) else "hello" if any(w in _HELLO for w in words)
            else "bye" if any(w in _BYE for w in words) else "ack")
    return REPLIES[(kind, "zh" if _CHINESE.search(message) else "en")]
