"""LangChain adapter: `Helper.as_retriever()` as a `BaseRetriever`.

Imported only when asked for, so `import rlhelper` never loads LangChain.
Each Document's metadata is the hit's citation record (doc, breadcrumb, lines,
url ...), so a chain built on it can cite exactly like rlhelper does.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever


class HelperRetriever(BaseRetriever):
    helper: Any
    k: int = 4
    filters: dict = {}

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.helper.search(query, k=self.k, **self.filters)
        return [Document(id=h.entry.id, page_content=h.entry.text, metadata=h.to_dict()) for h in hits]
