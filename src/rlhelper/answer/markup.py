"""Document text (Markdown or rst source) to safe HTML, and the helpers every view uses.

Everything that comes from a document or a user is untrusted. The parser is
markdown-it in CommonMark mode with raw HTML off, so a `<script>` or
`<img onerror=...>` in a doc is text; every text, code and attribute value is
escaped with html.escape here, in the renderer, and nowhere else. Links are
made only for http(s) URLs: a relative link keeps its label, anything with
another scheme (javascript:, data:, file: ...) is not a link and stays visible
as the markup it is. Images are never loaded: their markup is shown as text.
The browser-side sanitiser of the chat widget is a second fence, not the first.

rst constructs come from rst_rules; code is highlighted by Pygments into the
page's own `tok-*` classes. markdown-it and Pygments are imported on first
use, so the command line, which prints Markdown, never pays for them.
"""

from __future__ import annotations

import html
import re
import textwrap
from functools import cache
from urllib.parse import unquote

from ..catalogue import say

MAX_HIGHLIGHT = 20_000  # characters of one code block given colours; a longer one is shown plain


def esc(text: str) -> str:
    return html.escape(text or "", quote=True)


def safe_url(url: str | None) -> str | None:
    """The URL if it is a plain http(s) URL, else None (javascript:, data:, relative ...)."""
    if not url:
        return None
    url = url.strip()
    if re.match(r"^https?://[^\s/?#]+[^\s]*$", url, re.IGNORECASE) and not re.search(r"[\x00-\x1f<>\"'`]", url):
        return url
    return None


def link(url: str | None, label_html: str, cls: str = "") -> str:
    """An <a> to a safe URL (label already HTML); just the label when the URL is not safe."""
    href = safe_url(url)
    if not href:
        return label_html
    klass = f' class="{cls}"' if cls else ""
    return f'<a{klass} href="{esc(href)}" target="_blank" rel="noopener noreferrer">{label_html}</a>'


def _link_allowed(url: str) -> bool:
    """The parser's link check: http(s) or relative, and no quote or control character even
    percent-encoded (a `"` in a destination would be a way out of the attribute)."""
    raw = unquote(url)
    if re.search(r"[\x00-\x20<>\"'`\\]", raw):
        return False
    return safe_url(raw) is not None or not re.match(r"^[a-z][a-z0-9+.-]*:", raw, re.IGNORECASE)


# -- code ---------------------------------------------------------------------------

_LEXER_NAMES = {"ipython": "python", "python3": "python", "shell-session": "console"}
_ERROR_WORD = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b")


def code_language(lang: str | None) -> str:
    """A class-safe language name ([\\w+-] only), lower case; "" when none."""
    return re.sub(r"[^\w+-]", "", (lang or "").lower())[:20]


@cache
def _token_class(kind) -> str:
    from pygments.token import Comment, Generic, Keyword, Name, Number, String

    for parent, cls in ((Comment, "tok-c"), (String, "tok-s"), (Number, "tok-n"), (Keyword, "tok-k"),
                        (Name.Builtin, "tok-k"), (Name.Exception, "tok-e"), (Generic.Error, "tok-e"),
                        (Generic.Traceback, "tok-e")):
        if kind in parent:
            return cls
    return ""


def _plain(text: str) -> str:
    """Escaped text with exception names marked, as a log or traceback shows them."""
    out, pos = [], 0
    for m in _ERROR_WORD.finditer(text):
        out += [esc(text[pos:m.start()]), f'<span class="tok-e">{esc(m.group())}</span>']
        pos = m.end()
    return "".join(out) + esc(text[pos:])


def highlight(code: str, lang: str | None) -> str:
    """Escaped code with <span class="tok-..."> around comments, strings, keywords, numbers and
    errors, by the Pygments lexer of `lang`; plain escaped text for no or an unknown language."""
    name = code_language(lang)
    if not name or len(code) > MAX_HIGHLIGHT:
        return esc(code)
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(_LEXER_NAMES.get(name, name), stripnl=False)
    except ClassNotFound:
        return esc(code)
    runs: list[list] = []  # [class, text]: neighbouring tokens of one class make one span
    for kind, text in lexer.get_tokens(code):  # the lexer ends the code with a line break: lexers
        cls = _token_class(kind)               # match a comment up to one
        if runs and runs[-1][0] == cls:
            runs[-1][1] += text
        else:
            runs.append([cls, text])
    if not code.endswith("\n") and runs and runs[-1][1].endswith("\n"):
        runs[-1][1] = runs[-1][1][:-1]
    return "".join(f'<span class="{cls}">{esc(text)}</span>' if cls else _plain(text) for cls, text in runs)


def preformatted(escaped: str) -> str:
    """Text for a <pre>, with its line breaks as character references.

    Gradio's Chatbot passes every message through inspect.cleandoc, which strips
    the indentation that lines 2+ share: a YAML fix quoted in the chat lost two
    spaces on its nested keys, and so its meaning. One physical line leaves it
    nothing to strip; the browser still shows (and copies) real line breaks.
    """
    return escaped.replace("\r", "").replace("\n", "&#10;")


def code_block(code: str, lang: str | None = None, reader: str = "en") -> str:
    """<pre><code class="language-x"> with highlighting and a copy button (wired by the page's script),
    its words in the `reader`'s language."""
    language = code_language(lang)
    klass = f' class="language-{language}"' if language else ""
    label = f'<span class="rl-lang">{esc(language)}</span>' if language else ""
    return (
        f'<div class="rl-code">{label}<button class="rl-copy" type="button" title="{esc(say("answer.copy_title", reader))}"'
        f'>{esc(say("answer.copy", reader))}</button>'
        f"<pre><code{klass}>{preformatted(highlight(code.strip(chr(10)), lang))}</code></pre></div>"
    )


# -- the parser and its renderer ------------------------------------------------------

_BARE_URL = re.compile(r"https?://[^\s<>()\[\]`\"']*[^\s<>()\[\]`\"'.,;:!?。，；：）]")
_REF = re.compile(r"(?<![\w\]])\[(\d{1,2})\]")
_BARE = re.compile(f"(?P<url>{_BARE_URL.pattern})|{_REF.pattern}")


def _open_link(tokens, idx) -> bool:
    """Whether the link that tokens[idx] opens or closes becomes an <a> (http(s) only)."""
    while tokens[idx].type != "link_open":
        idx -= 1
    return bool(safe_url(tokens[idx].attrGet("href")))


def _render_rules() -> dict:
    def link_open(self, tokens, idx, options, env):
        if not env.get("links", True) or not _open_link(tokens, idx):
            return ""  # a relative link (or none wanted): its label only
        return f'<a href="{esc(tokens[idx].attrGet("href"))}" target="_blank" rel="noopener noreferrer">'

    def link_close(self, tokens, idx, options, env):
        return "</a>" if env.get("links", True) and _open_link(tokens, idx) else ""

    def heading(self, tokens, idx, options, env):
        # Markdown's # is h3 (the chat message is under the page's own h1, h2); rst and setext titles h4
        token = tokens[idx]
        level = 4 if token.markup in ("rst", "=", "-") else min(int(token.tag[1]) + 2, 6)
        return f"<h{level}>" if token.nesting == 1 else f"</h{level}>"

    def ref(self, tokens, idx, options, env):
        number = tokens[idx].meta["number"]
        label = esc(f"[{number}]")
        shown = link(env["refs"][number], label) if env.get("links", True) else label
        return f'<sup class="rl-ref">{shown}</sup>'

    return {
        "text": lambda self, tokens, idx, options, env: esc(tokens[idx].content),
        "code_inline": lambda self, tokens, idx, options, env: f"<code>{esc(tokens[idx].content)}</code>",
        "fence": lambda self, tokens, idx, options, env: code_block(tokens[idx].content,
                                                                    (tokens[idx].info.split() or [""])[0],
                                                                    env.get("lang", "en")),
        "image": lambda self, tokens, idx, options, env: esc(f"![{tokens[idx].content}]({tokens[idx].attrGet('src')})"),
        "softbreak": lambda self, tokens, idx, options, env: " ",
        "hardbreak": lambda self, tokens, idx, options, env: "<br>",
        "table_open": lambda self, tokens, idx, options, env: '<div class="rl-table-wrap"><table>',
        "table_close": lambda self, tokens, idx, options, env: "</table></div>",
        "rst_table": lambda self, tokens, idx, options, env:
            f'<pre class="rl-table">{preformatted(esc(tokens[idx].content.rstrip(chr(10))))}</pre>',
        "rst_literal_line": lambda self, tokens, idx, options, env:
            f'<p class="rl-directive">{esc(tokens[idx].content)}</p>',
        "link_open": link_open, "link_close": link_close, "heading_open": heading, "heading_close": heading,
        "rl_ref": ref,
    }


def _text_links(state) -> None:
    """Core rule: bare http(s) URLs become links and [n] a citation marker (for a number in
    env["refs"]); a line break before a bold label ("**Fix:** ...") is kept, as these docs mean it."""
    from markdown_it.token import Token

    refs = state.env.get("refs") or {}
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out, in_link = [], 0
        children = [t for t in block.children if t.type != "text" or t.content]
        for i, token in enumerate(children):
            in_link += {"link_open": 1, "link_close": -1}.get(token.type, 0)
            if token.type == "softbreak" and i + 1 < len(children) and children[i + 1].type == "strong_open":
                token.type = "hardbreak"
            if token.type != "text" or in_link:
                out.append(token)
                continue
            pos = 0
            for m in _BARE.finditer(token.content):
                if not m.group("url") and int(m.group(2)) not in refs:
                    continue
                out.append(Token("text", "", 0, content=token.content[pos:m.start()]))
                if m.group("url"):
                    out += [Token("link_open", "a", 1, attrs={"href": m.group()}),
                            Token("text", "", 0, content=m.group()), Token("link_close", "a", -1)]
                else:
                    out.append(Token("rl_ref", "sup", 0, meta={"number": int(m.group(2))}))
                pos = m.end()
            out.append(Token("text", "", 0, content=token.content[pos:]))
        block.children = [t for t in out if t.type != "text" or t.content]


@cache
def _parser():
    from markdown_it import MarkdownIt

    from . import rst_rules

    md = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # No indented code blocks: an entry is a section cut from a document and may start inside a list
    # item, indented; code in these docs is fenced, or an rst literal block (rst_rules).
    md.disable("code")
    md.validateLink = _link_allowed
    rst_rules.use(md)
    md.core.ruler.push("rl_text_links", _text_links)
    for name, rule in _render_rules().items():
        md.add_render_rule(name, rule)
    return md


def _source(text: str) -> str:
    return (text or "").replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")


def markdown_html(text: str, refs: dict[int, str | None] | None = None, *, lang: str = "en") -> str:
    """Markdown or rst source to safe HTML on one physical line (see preformatted for why).

    `refs` maps citation numbers to URLs: "[n]" becomes a numbered link. `lang`: the reader's
    language, for the copy buttons' words (the document's text stays as written).
    """
    # An entry cut from inside a list is indented as a whole: its own indentation means nothing.
    rendered = _parser().render(textwrap.dedent(_source(text)), {"refs": refs or {}, "links": True, "lang": lang})
    return rendered.replace("\n", "")  # only the renderer's own line ends: text and code carry none


def inline(text: str, refs: dict[int, str | None] | None = None, *, links: bool = True) -> str:
    """One line of inline Markdown/rst to HTML; `links=False` shows link labels without links."""
    return _parser().renderInline(_source(text), {"refs": refs or {}, "links": links}).replace("\n", "")
