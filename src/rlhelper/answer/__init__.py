"""Answer: hits in, a cited answer out. The extractive answer quotes the entries it cites; the
LLM-written one is checked against them; both render as text, Markdown and HTML.
"""
