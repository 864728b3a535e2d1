"""rlhelper's own words, in English and Chinese: one catalogue of keys for everything it says.

    say("sources.title", "zh")                  -> "来源"
    say("place.lines", "en", start=3, end=9)    -> "lines 3–9"
    notice = Phrase("notice.weak_match")        # a str, in English, that remembers its key
    in_language(notice, "zh")                   -> the same notice in Chinese; other text as it is
    PAGE = page_words()                         # {"en": {...}, "zh": {...}}: the page's own words

Who decides the language: an answer and everything around it (notices, source lines, vote
messages) follows the asker's question (answer/language.py); the page itself follows the browser
(web/app.py hands PAGE to Gradio, which picks by navigator.language).

A notice is made where it is found (search/, answer/, api.py) as a Phrase: its text is English, so
`--json`, logs and `"Weak match" in notice` read as before, and it keeps its key and parameters,
so the page and the terminal say it again in the asker's language. A parameter that is itself a
Phrase ("2 error lines") is said in the same language. Document text is never translated.
"""

from __future__ import annotations

from typing import Any

LANGS = ("en", "zh")

# key -> {language: text}. str.format fields; "{s}" is English's plural "s" (Chinese has none).
WORDS: dict[str, dict[str, str]] = {
    # -- an answer's own labels (answer/html.py, cli/terminal.py) --
    "sources.title": {"en": "Sources", "zh": "来源"},
    "sources.also_related": {"en": "Also related (not quoted above)", "zh": "其他相关条目（上文未引用）"},
    "sources.related": {"en": "Related entries", "zh": "相关条目"},
    "sources.related_maybe": {"en": "Related (may not answer it)", "zh": "相关条目（未必能回答）"},
    "sources.nearest": {"en": "No entry clearly answers this; nearest entries", "zh": "没有条目明确回答这个问题；最接近的条目"},
    "sources.show_entry": {"en": "Show the whole entry", "zh": "查看完整条目"},
    "sources.matched": {"en": "matched: {question}", "zh": "匹配的问题：{question}"},
    "sources.also_at": {"en": "Also at {places}", "zh": "另见于 {places}"},
    "sources.also_in": {"en": "Also in {language}", "zh": "另有{language}版"},
    "sources.another_version": {"en": "Another version", "zh": "另一版本"},
    "sources.file_lines": {"en": "File {name}, lines {start}–{end}", "zh": "文件 {name}，第 {start}–{end} 行"},
    "sources.lines_of": {"en": "Lines {start}–{end} of {name}", "zh": "{name} 第 {start}–{end} 行"},
    "sources.no_upstream": {"en": "a community page with no known upstream", "zh": "社区页面，上游来源不明"},
    # Said where no link can be: the page offers the section itself below the row (issue 36, point 4).
    "sources.no_upstream_read": {"en": "a community page with no known upstream: read the whole section under "
                                       "“Show the whole entry” below",
                                 "zh": "社区页面，上游来源不明：完整内容见下方“查看完整条目”"},
    "place.lines": {"en": "lines {start}–{end}", "zh": "第 {start}–{end} 行"},
    "place.line": {"en": "line {start}", "zh": "第 {start} 行"},
    "place.in_doc": {"en": "{name}, {lines}", "zh": "{name}，{lines}"},
    "language.en": {"en": "English", "zh": "英文"},
    "language.zh": {"en": "中文", "zh": "中文"},
    "list.and": {"en": " and ", "zh": "和"},
    "punct.colon": {"en": ": ", "zh": "："},
    # what a collection holds: its name beside a source, its note on hover, its words in the header
    # Seeds are gathered from the frameworks' own repositories (RLinf's Chinese FAQ, verl's FAQ) as well as the
    # community's: "社区指南" (community guides) misnamed RLinf's own FAQ (issue 36).
    "collection.seeds.name": {"en": "seeds", "zh": "种子指南"},
    "collection.seeds.note": {"en": "Seed guides: troubleshooting pages gathered from the frameworks' and community "
                                    "repositories and captures",
                              "zh": "种子指南：从各框架和社区的仓库及网页存档收集的排障页面"},
    "collection.seeds.words": {"en": "seed guides (troubleshooting pages gathered from repositories)",
                               "zh": "种子指南（收集的排障页面）"},
    "collection.official.name": {"en": "official", "zh": "官方文档"},
    "collection.official.note": {"en": "Official docs: pages copied from the frameworks' own repositories",
                                 "zh": "官方文档：从各框架自己的仓库复制的页面"},
    "collection.official.words": {"en": "official docs (the frameworks' own pages)", "zh": "官方文档（各框架自己的页面）"},
    "collection.own.note": {"en": "Your collection “{name}”: documents you ingested", "zh": "你的文档集“{name}”：你导入的文档"},
    # the page's header (web/app.py), in both languages: a key of PAGE_WORDS holds no parameters
    "page.stats": {"en": "{n:,} entries from {collections} · offline · answers quote the docs verbatim",
                   "zh": "{n:,} 个条目，来自{collections} · 离线 · 回答逐字引用文档"},
    # the answer's text
    "answer.no_match": {"en": "No matching entry in the docs for this query.", "zh": "文档中没有与此问题匹配的条目。"},
    "answer.no_match_related": {"en": "No matching entry in the docs for this query. The nearest entries are listed as "
                                      "related; they may not answer it.",
                                "zh": "文档中没有与此问题匹配的条目。下面列出了最接近的条目，它们未必能回答这个问题。"},
    "answer.no_match_title": {"en": "No matching entry in the docs.", "zh": "文档中没有匹配的条目。"},
    "answer.nothing_near": {"en": "Nothing in the indexed troubleshooting docs answers this. The nearest entries are "
                                  "below; they may not answer it.",
                            "zh": "已索引的排障文档中没有能回答这个问题的内容。下面是最接近的条目，它们未必能回答。"},
    "answer.nothing_try": {"en": "Nothing in the indexed troubleshooting docs answers this. Try other words, paste the "
                                 "exact error line, or clear the filters.",
                           "zh": "已索引的排障文档中没有能回答这个问题的内容。请换个说法、贴上完整的报错行，或清除筛选条件。"},
    "answer.also_relevant": {"en": "Also relevant: ", "zh": "另见："},
    # a doc entry and a reported issue's thread that both answer, each introduced as what it is
    "answer.docs_lead": {"en": "The docs: ", "zh": "文档："},
    "answer.issue_lead": {"en": "A reported issue with the same error, and how it was fixed: ",
                          "zh": "报告过同样错误的 issue 及其解决方法："},
    "answer.continues": {"en": "The entry continues: {n:,} more lines at {where}", "zh": "条目未完：另有 {n:,} 行，见 {where}"},
    "kind.symptom": {"en": "Symptom", "zh": "症状"},
    "kind.cause": {"en": "Cause", "zh": "原因"},
    "kind.fix": {"en": "Fix", "zh": "解决方法"},
    "kind.reply": {"en": "Maintainer's reply", "zh": "维护者的回复"},
    "kind.maintainer_fix": {"en": "Maintainer's fix", "zh": "维护者给出的解决方法"},
    "kind.reporter_fix": {"en": "Reporter's fix", "zh": "报告者自己的解决方法"},
    "kind.user_fix": {"en": "Fix from another user", "zh": "其他用户给出的解决方法"},
    "kind.report_fix": {"en": "Workaround in the report", "zh": "报告中的临时解决方法"},
    "kind.pull": {"en": "Fixed by pull request", "zh": "修复它的拉取请求"},
    "kind.duplicates": {"en": "Also reported as", "zh": "重复的报告"},
    "kind.text": {"en": "", "zh": ""},
    # around an answer in the chat (web/answering.py, answer/html.py)
    "answer.searching": {"en": "Searching the docs…", "zh": "正在检索文档…"},
    "answer.searched_for": {"en": "Searched for:", "zh": "检索的内容："},
    "answer.more_lines": {"en": "… {n:,} more line{s}", "zh": "… 另有 {n:,} 行"},
    "answer.more_chars": {"en": "… {n:,} more characters not shown", "zh": "… 另有 {n:,} 个字符未显示"},
    "answer.link": {"en": "Link to this question", "zh": "此问题的链接"},
    "answer.copy": {"en": "Copy", "zh": "复制"},
    "answer.copied": {"en": "Copied", "zh": "已复制"},
    # the page's script's labels: the tab's title, the chat messages' screen-reader labels and the thumbs'
    # (Gradio writes these in English whatever the page's language)
    "script.title": {"en": "rlhelper — RL training troubleshooting", "zh": "rlhelper — RL 训练排障助手"},
    "script.answer_label": {"en": "Answer: ", "zh": "回答："},
    "script.message_label": {"en": "Your message: ", "zh": "你的消息："},
    "script.Like": {"en": "Like", "zh": "有帮助"},
    "script.Liked": {"en": "Liked", "zh": "已标为有帮助"},
    "script.Dislike": {"en": "Dislike", "zh": "没帮助"},
    "script.Disliked": {"en": "Disliked", "zh": "已标为没帮助"},
    # said by the page's script when a message is over the limit: it is not sent and stays in the box
    "script.too_long": {"en": "Not sent: the message is {n} characters long, over the limit of {most}. It is still in "
                              "the box: keep the end of the log (the error and the lines before it) and send again.",
                        "zh": "未发送：这条消息有 {n} 个字符，超过了 {most} 的上限。它仍在输入框中：保留日志的末尾"
                              "（错误及其前面的几行）后再发送。"},
    "answer.copy_title": {"en": "Copy to clipboard", "zh": "复制到剪贴板"},
    "answer.cannot": {"en": "Cannot answer:", "zh": "无法回答："},
    "error.out_of_time": {"en": "rlhelper stopped working on this answer after {budget:g} s, the time one answer may "
                                "take on this server. Try a shorter or more specific question, or a framework filter.",
                          "zh": "rlhelper 在 {budget:g} 秒后停止了这个回答，这是本服务器上一个回答可用的时间。请换一个更短或更具体的"
                                "问题，或选择一个框架筛选。"},
    "error.too_large": {"en": "This answer is too large to show ({mb:.1f} MB of HTML). Ask `rlhelper ask` in a terminal, "
                              "or narrow the question.",
                        "zh": "这个回答太大，无法显示（{mb:.1f} MB 的 HTML）。请在终端中使用 `rlhelper ask`，或缩小问题范围。"},
    "error.bug": {"en": "Something went wrong inside rlhelper; the details are in the server log.",
                  "zh": "rlhelper 内部出错了；详情在服务器日志中。"},
    # -- notices (search/query.py, answer/extractive.py, api.py, answer/llm.py) --
    "notice.controls_removed": {"en": "Removed {n:,} control character{s} from the query.",
                                "zh": "已从问题中删除 {n:,} 个控制字符。"},
    "notice.head_searched": {"en": "The query was {n:,} characters; searched its first {kept:,}.",
                             "zh": "问题共 {n:,} 个字符；只检索了前 {kept:,} 个。"},
    "notice.log_cut": {"en": "The query was {size}; searched the error lines found in its last {tail:,} characters (a "
                             "log ends with its errors), at most {most:,} characters of signature.",
                       "zh": "问题共 {size}；检索了最后 {tail:,} 个字符中的报错行（日志以报错结尾），签名最多 {most:,} 个字符。"},
    "notice.size_chars": {"en": "{n:,} characters", "zh": "{n:,} 个字符"},
    "notice.size_lines": {"en": "{n:,} lines", "zh": "{n:,} 行"},
    "notice.long_lines_cut": {"en": "{n:,} very long line{s} cut to their first {most:,} characters.",
                              "zh": "{n:,} 行过长，只保留了前 {most:,} 个字符。"},
    "notice.lines_left_out": {"en": "Searched the {n:,} most telling error line{s} ({most:,} characters at most); "
                                    "{left:,} other error line{left_s} left out.",
                              "zh": "检索了最关键的 {n:,} 行报错（最多 {most:,} 个字符）；其余 {left:,} 行报错未检索。"},
    "notice.log_errors": {"en": "Pasted log detected: searched its error signature ({counted}, last error first).",
                          "zh": "检测到粘贴的日志：检索了其中的报错签名（{counted}，最后的报错在前）。"},
    "notice.error_lines": {"en": "{n:,} error line{s}", "zh": "{n:,} 行报错"},
    "notice.lines_with_errors": {"en": "{lines:,} lines, {errors}", "zh": "{lines:,} 行，其中{errors}"},
    "notice.log_warnings": {"en": "Pasted log detected: no error line in it, searched its warnings.",
                            "zh": "检测到粘贴的日志：其中没有报错行，检索了其中的警告。"},
    "notice.log_last_lines": {"en": "Pasted log detected: no error line in it, searched its last lines.",
                              "zh": "检测到粘贴的日志：其中没有报错行，检索了最后几行。"},
    "notice.weak_match": {"en": "Weak match: this is the closest entry, but questions the docs do not answer often score "
                                "as high; check that it fits your case.",
                          "zh": "匹配较弱：这是最接近的条目，但文档无法回答的问题也常得到这么高的分数；请确认它符合你的情况。"},
    "notice.framework_absent": {"en": "Your query is about {asked}, but this index holds no {asked} docs; {this} is "
                                      "from {source}: its settings and flags may not apply to {asked}.",
                                "zh": "你的问题是关于 {asked} 的，但本索引中没有 {asked} 的文档；{this}来自{source}：其中的配置和"
                                      "参数未必适用于 {asked}。"},
    "notice.framework_other": {"en": "Your query is about {asked}, but {this} is from {source}: its settings and "
                                     "flags may not apply to {asked}.",
                               "zh": "你的问题是关于 {asked} 的，但{this}来自{source}：其中的配置和参数未必适用于 {asked}。"},
    "notice.this_entry": {"en": "this entry", "zh": "这个条目"},
    "notice.this_fix": {"en": "this fix", "zh": "这个解决方法"},
    "notice.source_docs": {"en": "{found}'s docs", "zh": " {found} 的文档"},
    "notice.source_tracker": {"en": "a reported issue of {found}'s tracker", "zh": " {found} 的 issue 跟踪器中报告的一个问题"},
    "notice.framework_closest": {"en": "{notice} {asked}'s closest entry is listed as related: “{heading}”.",
                                 "zh": "{notice}{asked} 最接近的条目列在相关条目中：“{heading}”。"},
    "notice.follow_up": {"en": "Read as a follow-up to your previous question (“{head}”).",
                         "zh": "已作为对你上一个问题（“{head}”）的追问来理解。"},
    "notice.follow_up_in": {"en": "Read as a follow-up to your previous question (“{head}”), in {framework}'s docs.",
                            "zh": "已作为对你上一个问题（“{head}”）的追问来理解，在 {framework} 的文档中检索。"},
    "notice.follow_up_none_in": {"en": "Read as a follow-up to your previous question (“{head}”): {framework}'s docs have "
                                       "no entry on it.",
                                 "zh": "已作为对你上一个问题（“{head}”）的追问来理解：{framework} 的文档中没有相关条目。"},
    # the question before was answered elsewhere and this framework's nearest entries are listed under it:
    # "no entry on it" above a list holding "Reward Collapse" for "reward is always 0" misled (issue 36)
    "notice.follow_up_near_in": {"en": "Read as a follow-up to your previous question (“{head}”): {framework}'s docs "
                                       "have no entry that surely answers it; the nearest are listed below.",
                                 "zh": "已作为对你上一个问题（“{head}”）的追问来理解：{framework} 的文档中没有能确定回答它的"
                                       "条目，下面列出最接近的几条。"},
    "notice.outside_filters": {"en": "Nothing matches within your filters, but outside them “{heading}” ({framework}, "
                                     "{collection}) does: clear the filters to see it.",
                               "zh": "在你的筛选条件内没有匹配的条目，但筛选范围外的“{heading}”（{framework}，{collection}）匹配：清除筛选"
                                     "条件即可看到。"},
    "notice.doc_changed": {"en": "{doc} changed since the index was built, so the cited lines may be off: run {hint} to "
                                 "update it.",
                           "zh": "{doc} 在建索引之后改动过，引用的行号可能不准：运行 {hint} 更新索引。"},
    "notice.doc_gone": {"en": "{doc} is no longer at {source}: the answer quotes the text indexed before it was moved or "
                              "deleted.",
                        "zh": "{doc} 已不在 {source}：回答引用的是它被移动或删除之前索引的文本。"},
    "notice.llm_written": {"en": "Written by the LLM {model!r} from the numbered sources; check commands against them.",
                           "zh": "由 LLM {model!r} 根据编号来源写成；请对照来源核对命令。"},
    # -- votes and comments (web/votes.py; the status line under the chat) --
    "vote.only_answers": {"en": "Only answers can be voted on.", "zh": "只能对回答投票。"},
    "vote.too_many": {"en": "Too many votes and comments from you in the last minute: wait a minute, then try again.",
                      "zh": "你在过去一分钟内投票和评论太多了：请等一分钟再试。"},
    "vote.removed": {"en": "Vote removed.", "zh": "已撤回投票。"},
    "vote.store_full": {"en": "Votes are not being recorded right now (the server's feedback store is full). Sorry.",
                        "zh": "目前无法记录投票（服务器的反馈存储已满）。抱歉。"},
    "vote.thanks": {"en": "Thanks: answer marked {how}. Add a comment below if you like (optional).",
                    "zh": "谢谢：已将回答标记为{how}。如果愿意，可以在下面补充评论（可选）。"},
    "vote.helpful": {"en": "helpful", "zh": "有帮助"},
    "vote.not_helpful": {"en": "not helpful", "zh": "没有帮助"},
    # what a vote taught (issue 31): the voter at once, others once the operator approves it, or everyone
    # at once on a server run with --learn-from-votes
    "vote.leads_for_you": {"en": " “{heading}” will lead for this question for you from now on. Others see it once "
                                 "the server's operator approves it.",
                           "zh": "从现在起，这个问题将为你优先显示“{heading}”。其他人要等服务器管理员审核通过后才会看到。"},
    "vote.not_lead_for_you": {"en": " “{heading}” will not lead for this question for you again. Others see it once "
                                    "the server's operator approves it.",
                              "zh": "这个问题将不再为你优先显示“{heading}”。其他人要等服务器管理员审核通过后才会看到。"},
    "vote.leads_for_all": {"en": " “{heading}” will lead for this question for everyone from now on.",
                           "zh": "从现在起，这个问题将为所有人优先显示“{heading}”。"},
    "vote.not_lead_for_all": {"en": " “{heading}” will not lead for this question for everyone again.",
                              "zh": "这个问题将不再为所有人优先显示“{heading}”。"},
    "vote.no_visitor": {"en": " (Not learned: this page has no visitor id yet; reload it to get one.)",
                        "zh": "（未学习：这个页面还没有访问者标识；请刷新页面以获取。）"},
    "vote.no_visitor_limit": {"en": " (Not learned: your address has had the {limit} new visitor ids this server hands "
                                    "one address an hour; everyone behind one proxy or NAT shares an address. Your vote "
                                    "is recorded for the operator, who can raise the limit (`rlhelper serve "
                                    "--new-visitors-per-hour`) or name the proxy (`--trusted-proxy`).)",
                              "zh": "（未学习：这个服务器每小时给一个地址发放 {limit} 个新访问者标识，你的地址已经用完；同一代理或 NAT "
                                    "后面的所有人共用一个地址。你的投票已记录给管理员，管理员可以提高上限（`rlhelper serve "
                                    "--new-visitors-per-hour`）或指定代理（`--trusted-proxy`）。）"},
    "vote.not_learned": {"en": " (Not learned: {reason})", "zh": "（未学习：{reason}）"},
    "comment.vote_first": {"en": "Vote on an answer first (thumbs up or down), then add a comment.",
                           "zh": "请先对回答投票（赞或踩），再添加评论。"},
    "comment.empty": {"en": "The comment is empty.", "zh": "评论是空的。"},
    "comment.store_full": {"en": "Comments are not being recorded right now (the server's feedback store is full). Sorry.",
                           "zh": "目前无法记录评论（服务器的反馈存储已满）。抱歉。"},
    "comment.refused": {"en": "Not saved: {reason}.", "zh": "未保存：{reason}。"},
    "comment.saved": {"en": "Comment saved with your vote. Thank you.", "zh": "评论已与你的投票一起保存。谢谢。"},
    # -- the terminal (cli/terminal.py) --
    "cli.note": {"en": "note: {text}", "zh": "提示：{text}"},
}

# The page's own words (web/app.py), picked by the browser's language. Kept apart from WORDS: Gradio
# looks these up by key in the browser, so they hold no parameters.
PAGE_WORDS: dict[str, dict[str, str]] = {
    "page.intro": {"en": "Troubleshooting for RL post-training of LLMs: verl, SkyRL, slime and RLinf, with SGLang or "
                         "vLLM rollouts. Paste an error, a traceback or a question; get the documented fix with "
                         "numbered citations.",
                   "zh": "LLM 强化学习后训练的排障助手：verl、SkyRL、slime 和 RLinf，rollout 使用 SGLang 或 vLLM。"
                         "贴上报错、traceback 或问题，得到文档中的解决方法和编号引用。"},
    "page.all_frameworks": {"en": "All frameworks", "zh": "全部框架"},
    "page.all_collections": {"en": "All collections", "zh": "全部文档集"},
    "page.filters_note": {"en": "Filters apply to the next question.", "zh": "筛选条件对下一个问题生效。"},
    "page.welcome": {"en": "### Ask about an RL training problem\n"
                           "Paste an error message, a traceback or a question, in English or 中文. The answer quotes "
                           "the matching troubleshooting entry and cites the exact section. A short follow-up (“what "
                           "about slime?”) is read with your last question, and says so.\n\n"
                           "**Try one:**",
                     "zh": "### 询问 RL 训练中的问题\n"
                           "贴上报错信息、traceback 或问题，中文或 English 均可。回答会引用匹配的排障条目，并注明具体章节。"
                           "简短的追问（“slime 呢？”）会结合你的上一个问题来理解，并会注明。\n\n"
                           "**试试这些：**"},
    "page.input": {"en": "Paste an error, a traceback or a question (English or 中文) and press Enter",
                   "zh": "贴上报错、traceback 或问题（中文或 English），按回车提问"},
    "page.ask": {"en": "Ask", "zh": "提问"},
    "page.clear_filters": {"en": "Clear the filters and ask again", "zh": "清除筛选条件并重新提问"},
    "page.comment": {"en": "Optional comment on your last vote", "zh": "可选：对你上一次投票的评论"},
    "page.save_comment": {"en": "Save comment", "zh": "保存评论"},
    # what a vote does, said before anyone votes (issue 31: a vote teaches the voter's browser at once,
    # everyone else once the operator approves it; everyone at once with `serve --learn-from-votes`)
    "page.votes_teach_you": {"en": "A thumbs up or down on an answer teaches rlhelper for you, in this browser, at once; "
                                   "other visitors get it once the server's operator approves it.",
                             "zh": "对回答点赞或点踩，会立即为你（在这个浏览器中）调整 rlhelper；其他访问者要等服务器管理员审核通过后才会看到。"},
    "page.votes_teach_all": {"en": "A thumbs up or down on an answer teaches rlhelper at once, for everyone using this "
                                   "server.",
                             "zh": "对回答点赞或点踩，会立即为这个服务器的所有使用者调整 rlhelper。"},
    "page.votes_recorded": {"en": "A thumbs up or down on an answer tells the server's operator whether it helped.",
                            "zh": "对回答点赞或点踩，告诉服务器管理员这个回答是否有帮助。"},
    "page.llm_title": {"en": "Write the answer with an LLM (optional)", "zh": "用 LLM 写回答（可选）"},
    "page.llm_text": {"en": "An OpenAI-compatible model set up by whoever runs this server writes a short answer from "
                            "the retrieved entries; rlhelper checks its citations and flags commands found in no source. "
                            "When the model finds no answer in the entries, you get \"No matching entry\". Any failure "
                            "keeps the extractive answer.",
                      "zh": "由服务器管理员配置的 OpenAI 兼容模型根据检索到的条目写一个简短回答；rlhelper 会检查它的引用，并标出"
                            "在任何来源中都找不到的命令。模型在条目中找不到答案时，你会看到“没有匹配的条目”。任何失败都会保留"
                            "摘录式回答。"},
    "page.llm_unavailable": {"en": "*Not available in this install.*", "zh": "*本安装中不可用。*"},
    "page.llm_off": {"en": "Off: quote the docs", "zh": "关闭：引用文档"},
}


def say(key: str, lang: str = "en", /, **params: Any) -> str:
    """The words for `key` in `lang` (English when the catalogue has no such language), with
    `params` filled in; a Phrase among them is said in `lang` too. KeyError for an unknown key: a
    typo must fail in the tests, not show a key to a user."""
    words = WORDS[key]
    template = words.get(lang) if lang in words else words["en"]
    return template.format(**{name: in_language(value, lang) for name, value in params.items()})


def plural(n: int) -> str:
    """English's plural ending for a count ("{n} line{s}"); Chinese templates ignore it."""
    return "" if n == 1 else "s"


class Phrase(str):
    """Words from the catalogue, as English text that keeps its key and parameters, so it can be
    said again in another language (in_language). Pickles and copies as itself (a browser
    session keeps answers and their notices)."""

    key: str
    params: dict[str, Any]

    def __new__(cls, key: str, /, **params: Any) -> Phrase:
        text = super().__new__(cls, say(key, "en", **params))
        text.key, text.params = key, params
        return text

    def __getnewargs_ex__(self):
        return (self.key,), self.params

    def __deepcopy__(self, memo):
        return self  # immutable, like the str it is

    def __copy__(self):
        return self

    def __repr__(self) -> str:
        return f"Phrase({self.key!r}, {super().__repr__()})"


def in_language(text: Any, lang: str) -> Any:
    """A Phrase said in `lang`; anything else as it is (document text, a user's words, numbers)."""
    if isinstance(text, Phrase):
        return say(text.key, lang, **text.params)
    return text


def page_words() -> dict[str, dict[str, str]]:
    """The page's words by language ({"en": {key: text}, "zh": {...}}), as gr.I18n takes them."""
    return {lang: {key: words.get(lang, words["en"]) for key, words in PAGE_WORDS.items()} for lang in LANGS}
