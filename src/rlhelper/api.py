"""The `Helper` facade: one object the CLI, the web app, notebooks and the eval all use.

    >>> from rlhelper import Helper
    >>> h = Helper.load()
    >>> h.ask("CUDA out of memory during rollout")      # Answer, with citations
    >>> h.search("wake_up timed out", k=5)              # list[Hit]
    >>> chat = h.conversation()                          # follow-ups read with the question before
    >>> chat.ask("weight sync timed out"); chat.ask("what about slime?")
    >>> h.as_retriever(k=4)                              # LangChain BaseRetriever
    >>> h.learn(answer, vote=1, source="cli")            # this answer's lead entry answers its question
    >>> for piece in h.write(answer, llm_settings): ...  # your LLM writes it from the cited entries

Loading reads the index folder only; the embedding model loads on the first
dense search, so a lexical-only use never pays for it. The user's own question
bank (userbank.py: questions learned from votes) is read on the first search;
each later search applies only what was written to it since (learned.py).
"""

from __future__ import annotations

import dataclasses
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from . import config
from .answer.extractive import FRAMEWORK_NAMES, build_answer
from .answer.model import Answer
from .catalogue import Phrase
from .errors import ConfigError, QueryError
from .schema import Entry, Hit
from .search import followup, phase
from .search.judge import default_mode
from .search.retrieve import MODES, Retrieval, Retriever

if TYPE_CHECKING:
    from .answer.llm import LLMSettings, LLMStream


DETAIL_WITHIN = 3  # a follow-up's detail is looked for among the first hits of its reading (_read_as_follow_up)


class Helper:
    """Search and answer over one index."""

    def __init__(self, index, *, embedder_spec: str | None = None, abstain_threshold: float | None = None,
                 user_bank: str | Path | bool | None = None, judge: str | Path | None = None,
                 mode: str | None = None):
        self.index = index
        mode = mode or default_mode(judge)
        if mode not in MODES:
            raise ConfigError(f"Unknown search mode {mode!r}: use one of {', '.join(MODES)}.")
        self.mode = mode  # the search mode of a call that names none
        self.embedder_spec = embedder_spec or index.embedder_id
        self.user_bank = _user_bank(user_bank)
        self.retriever = Retriever(index, self._make_embedder, threshold=abstain_threshold,
                                    user_bank=self.user_bank, judge_folder=judge)
        # How it was made, for a Helper over a newer version of the same index (LiveHelper).
        self._options = {"embedder": embedder_spec, "abstain_threshold": abstain_threshold, "judge": judge,
                         "mode": mode, "user_bank": self.user_bank.path if self.user_bank is not None else False}

    @classmethod
    def load(
        cls,
        index: str | Path | None = None,
        *,
        embedder: str | None = None,
        abstain_threshold: float | None = None,
        user_bank: str | Path | bool | None = None,
        judge: str | Path | None = None,
        mode: str | None = None,
        preload: bool = False,
    ) -> Helper:
        """Open an index by folder path or name (default: RLHELPER_INDEX_DIR / index/default).

        `user_bank`: the file of questions learned from votes (default: questions.jsonl in the
        data folder); False searches without one (the eval does: one user's votes must not move
        the figures).

        `mode`: the search mode of calls that name none (default "judge": hybrid search, then the
        trained judge's say, eval/README.md; "hybrid" where the judge cannot run; or "hybrid",
        "lexical", "dense"). `judge`: the folder of a judge model `rlhelper judge train` wrote
        (default: the one shipped with rlhelper).

        `embedder`, when given, must match the one the index was built with;
        a mismatch raises EmbedderMismatchError saying how to rebuild. An index
        built by an rlhelper that tokenized differently raises IndexStaleError.

        `preload`: start loading the models this helper's mode searches with (the embedder, the
        judge) on threads of their own at once, while the index is read, instead of at the first
        search: for a process that answers one question (`rlhelper ask`).
        """
        from .index.store import Index  # numpy + faiss: imported on load, not on `import rlhelper`

        path = config.resolve_index(index)
        if preload and mode != "lexical":
            from .index.embed import embedder_id
            from .index.embed import preload as preload_embedder
            from .index.folders import recorded_embedder

            preload_embedder(embedder_id(embedder) if embedder else recorded_embedder(path))
        loaded = Index.load(path, expected_embedder=embedder)
        loaded.check_current()
        helper = cls(loaded, embedder_spec=embedder, abstain_threshold=abstain_threshold, user_bank=user_bank,
                     judge=judge, mode=mode)
        if preload and helper.mode == "judge":
            helper.retriever.preload_judge()
        return helper

    def reloaded(self) -> Helper:
        """A Helper like this one over the version of its index live now (an ingest or sync swapped in
        another since this one loaded); raises as `load` does."""
        return Helper.load(self.index.path, **self._options)

    def _make_embedder(self):
        """The embedder, on the first dense search. One that cannot be loaded here is reported
        with the index that needs it and the rebuild that does without it."""
        from .errors import EmbedderError
        from .index.embed import get_embedder
        from .index.store import unusable_embedder

        try:
            embedder = get_embedder(self.embedder_spec)
            embedder.dim  # noqa: B018 - loads a model now (it would load for this search anyway)
        except EmbedderError as exc:
            raise unusable_embedder(self.index.path, self.index.embedder_id, exc) from exc
        return embedder

    # -- searching -----------------------------------------------------------------

    def retrieve(self, query: str, k: int = 10, *, framework=None, collection=None, lang=None,
                 mode: str | None = None, exclude=(), own_votes=None, held_phase: str | None = None) -> Retrieval:
        """Full search result: hits, normalised query, truncation, abstention and its confidence.
        `exclude`: entry ids whose sections to leave out. `own_votes`: one web visitor's votes
        (questions.Learned, web/visitors.py), applied for this search alone."""
        filters = self.filters(framework=framework, collection=collection, lang=lang)
        return self.retriever.search(query, k=k, mode=mode or self.mode, exclude=exclude, own_votes=own_votes,
                                     held_phase=held_phase, **filters)

    def filters(self, *, framework=None, collection=None, lang=None) -> dict:
        """Filter values as the index spells them (any case accepted). A value the index does not
        hold raises QueryError: it would silently match nothing and read as "no entry answers this"."""
        return {
            "framework": self._known_values("framework", framework, self.frameworks),
            "collection": self._known_values("collection", collection, self.collections),
            "lang": self._known_values("lang", lang, self.langs),
        }

    @staticmethod
    def _known_values(name: str, wanted, known: list[str]) -> list[str] | None:
        if not wanted:
            return None
        by_lower = {value.lower(): value for value in known}
        values = [wanted] if isinstance(wanted, str) else list(wanted)
        for value in values:
            if str(value).lower() not in by_lower:
                raise QueryError(
                    f"This index has no entries with {name} {value!r}; it holds {', '.join(known) or 'none'}. "
                    f"Filter on one of those, or ingest docs of that {name} first (rlhelper ingest --help)."
                )
        return [by_lower[str(value).lower()] for value in values]

    def search(self, query: str, k: int = 5, *, framework=None, collection=None, lang=None,
               mode: str | None = None) -> list[Hit]:
        """The top-k entries for a query, best first (no abstention: always the nearest)."""
        return self.retrieve(query, k=k, framework=framework, collection=collection, lang=lang, mode=mode).hits

    def ask(self, query: str, k: int = 5, *, framework=None, collection=None, lang=None,
            mode: str | None = None, previous: Answer | None = None, own_votes=None) -> Answer:
        """A grounded extractive answer with numbered citations, or an honest abstention.

        `previous`, the answer before this one in a conversation, lets a short follow-up
        ("what about verl?", "and on multiple nodes?") be read with the question it follows
        (followup.py). The answer says so when it was. `own_votes`: as for `retrieve`.
        """
        search = {"k": k, "framework": framework, "collection": collection, "lang": lang, "mode": mode or self.mode,
                  "own_votes": own_votes}
        if not self._may_follow(query, previous):
            return self._answer(query, **search)
        cued = followup.has_cue(query)
        alone = None if cued else self._answer(query, **search)
        if alone is not None and not alone.abstained and not alone.weak_match:
            return alone  # no cue, and it finds an entry by itself (a weak one: the conversation may say more)
        read, moved = self._read_as_follow_up(query, previous, **search)
        if moved and (cued or not read.abstained) or followup.names_only(query):
            return read  # "what about slime?" that slime's docs do not answer says so: not "Installing slime"
        # Without a cue, a continuation finds an entry about both what it adds and the question before:
        # "Megatron tensor parallel size mismatch" after "slime OOM during training" is a question of its
        # own, though read with it it found "Megatron Arguments" (a heading word of its own, nothing of OOM).
        lead = None if read.abstained else read.hits[0].entry
        if lead and followup.in_heading(query, lead) and (cued or followup.about(previous.normalized_query, lead)):
            return read
        return alone or self._answer(query, **search)

    def _may_follow(self, query: str, previous: Answer | None) -> bool:
        """Only a short message with a word the docs use: "thanks" or a new question must never get
        the last topic's entries. After a no-match answer, only one that says it follows ("what
        about slime?" asks that question of slime's docs; searched alone it quoted "Installation")."""
        if previous is None or not followup.is_short(query) \
                or not followup.knows_a_word(query, self.index.bm25.vocabulary):
            return False
        return not previous.abstained or followup.has_cue(query)

    def _read_as_follow_up(self, query: str, previous: Answer, **search) -> tuple[Answer, bool]:
        """The previous question asked again with this message, among the entries it did not quote;
        and whether the message moved it to another framework ("what about slime?")."""
        moved_to = followup.framework_named(query)
        answered_in = set() if previous.abstained else {hit.entry.framework for hit in previous.hits[:1]}
        if moved_to not in self.frameworks or search["framework"]:
            moved_to = None
        if moved_to:
            # that framework's entries, not a boost; also when the answer before was already its
            # ("what about slime?" after a slime lead asks for slime alone, and SkyRL's entries came)
            search = {**search, "framework": moved_to}
        stayed = moved_to in answered_in
        # What was quoted is no new answer, except an entry about what this message adds that did not
        # lead it: "on multiple nodes?" after a weight-sync answer that also quoted "Weight Sync Failures
        # in Multi-Node" asks for that entry; and, after a follow-up (a guess at a moved question), its lead too.
        quoted = {h.entry.id: h.entry for h in previous.hits[0 if previous.follow_up_of else 1:]}
        exclude = [c.entry_id for c in previous.citations
                   if not ((e := quoted.get(c.entry_id)) and followup.in_heading(query, e))]
        searched = followup.read_with(query, previous.normalized_query, moved_to)
        # The judge learnt single questions and reports, not a question glued to the message after it:
        # a conversation is read by the pipeline alone (hybrid). A move that adds nothing ("what about
        # slime?") is the question before, alone, asked of that framework: the judge may read it.
        if searched != " ".join(previous.normalized_query.split()):
            search = {**search, "mode": "hybrid" if search["mode"] == "judge" else search["mode"]}
        # The phase the question before named ("rollout OOM") is the conversation's: "what about slime?"
        # asks for slime's rollout OOM, not its training OOM (phase.py holds the other phase back).
        said = phase.phase_asked(query) or followup.names_a_phase(query)
        held = None if said else phase.phase_asked(previous.normalized_query)
        answer = self._answer(searched, **search, exclude=exclude, users_filters=not moved_to, held_phase=held,
                              about=previous.normalized_query if moved_to else None)
        # A detail the message adds ("on multiple nodes?") is what is asked now: an entry about it among
        # the first few leads, over entries that answer the question before again (its words dominate).
        about = next((i for i, h in enumerate(answer.hits[:DETAIL_WITHIN]) if followup.in_heading(query, h.entry)), 0)
        if not moved_to and about:
            exclude = [*exclude, *(h.entry.id for h in answer.hits[:about])]
            answer = self._answer(searched, **search, exclude=exclude, users_filters=True, held_phase=held)
        head = " ".join(previous.normalized_query.split())  # what was searched: a pasted log's error line
        head = head if len(head) <= 80 else head[:79] + "…"
        named = FRAMEWORK_NAMES.get(moved_to, moved_to)
        if not moved_to or stayed:
            notice = Phrase("notice.follow_up", head=head)
        elif answer.abstained:  # that framework's docs have nothing: said, not left to "No matching entry"
            near = answer.hits and not previous.abstained  # its nearest entries are shown: not "nothing"
            notice = Phrase("notice.follow_up_near_in" if near else "notice.follow_up_none_in", head=head,
                            framework=named)
        else:
            notice = Phrase("notice.follow_up_in", head=head, framework=named)
        return dataclasses.replace(answer, query=query, follow_up_of=previous.normalized_query,
                                   notices=[notice, *answer.notices]), moved_to is not None

    def _answer(self, query: str, *, k: int, framework, collection, lang, mode: str, exclude=(),
                users_filters: bool = True, own_votes=None, held_phase: str | None = None,
                about: str | None = None) -> Answer:
        """`about`: the question a moved follow-up asks again. The first listed entry whose headings name
        its problem leads, flagged weak, over a lead that does not and over a "no entry on it" above a list
        that shows it ("reward is always 0", then "what about slime?": slime's "Reward Collapse")."""
        result = self.retrieve(query, k=k, framework=framework, collection=collection, lang=lang, mode=mode,
                               exclude=exclude, own_votes=own_votes, held_phase=held_phase)
        lead = next((i for i, h in enumerate(result.hits) if followup.about(about, h.entry)
                     and phase.phase_of_entry(h.entry) in (None, held_phase or phase.phase_of_entry(h.entry))),
                    None) if about else None  # not another phase's ("OOM During Training" for a rollout OOM)
        if lead is not None and (lead > 0 or result.abstained):  # it leads; the others follow in order
            hits = [result.hits[lead], *result.hits[:lead], *result.hits[lead + 1:]]
            hits = [dataclasses.replace(h, rank=r) for r, h in enumerate(hits, start=1)]
            result = dataclasses.replace(result, hits=hits, abstained=False, weak=True, companion=None)
        notices = list(result.notices)
        if result.abstained and (framework or collection or lang) and users_filters:
            notices += self._outside_the_filters(query, mode)
        answer = build_answer(
            query,
            result.normalized_query,
            result.hits,
            abstained=result.abstained,
            truncated=result.truncated,
            notices=notices,
            weak=result.weak,
            named_frameworks=result.normalized.frameworks,
            indexed_frameworks=self.frameworks,
            companion=result.companion,
        )
        answer.notices += self._changed_sources(answer)
        answer.confidence = result.confidence
        return answer

    def _changed_sources(self, answer: Answer) -> list[str]:
        """A notice per cited document edited since the build: its cited line numbers may be off."""
        from .index.folders import rebuild_hint
        from .ingest.changes import changed_since_build

        notices = []
        for collection, doc in dict.fromkeys((c.collection, c.doc) for c in answer.citations):  # once each
            record = self._documents.get((collection, doc), {})
            what = changed_since_build(record)
            if what == "changed":
                notices.append(Phrase("notice.doc_changed", doc=doc, hint=rebuild_hint(self.index.path, rebuild=False)))
            elif what == "gone":
                notices.append(Phrase("notice.doc_gone", doc=doc, source=record["source"]))
        return notices

    @cached_property
    def _documents(self) -> dict[tuple[str, str], dict]:
        return {(d["collection"], d["doc"]): d for d in self.index.manifest.get("documents", [])}

    def _outside_the_filters(self, query: str, mode: str) -> list[str]:
        """When a filtered search finds nothing, whether the whole index has an answer: a filter
        chosen for the last question should not hide the entry that answers this one."""
        unfiltered = self.retriever.search(query, k=1, mode=mode or self.mode)
        if unfiltered.abstained or not unfiltered.hits:
            return []
        e = unfiltered.hits[0].entry
        return [Phrase("notice.outside_filters", heading=e.heading, framework=e.framework, collection=e.collection)]

    # -- the LLM-written answer (answer/llm.py) -----------------------------------------

    def write(self, answer: Answer, settings: LLMSettings, *, stream: bool = True) -> LLMStream:
        """`answer` written again by the user's LLM from the entries it found, checked against them.

        Iterate the result for the text as the model writes it, then read its `.answer`: the
        LLM's text with the citations it kept and a note per unverified command; the extractive
        answer with a notice saying why it stayed (the model failed or sent nothing; or the
        answer found no entry, so the model was not asked); or "no matching entry" when the
        model found no answer in the entries. `stream=False` asks for the whole reply in one
        response (`.finish()` returns the answer). Raises LLMError when the llm extra is missing.
        """
        from .answer.llm import LLMStream

        return LLMStream.for_answer(answer, settings, streaming=stream)

    # -- learning from votes (userbank.py) -----------------------------------------------

    def learn(self, answer: Answer, vote: int = 1, *, source: str = "web", hit: int = 1):
        """Record a vote on `answer` in the user's question bank: +1 adds what it searched as a
        question of its lead entry (`hit`: the n-th entry found instead), -1 demotes that entry
        for that question. Used from the next search. Returns the LearnedQuestion, or None when
        there is nothing to learn (no entry found, or no user bank)."""
        from .index.lastanswer import entry_key

        entries = _learnable_entries(answer)
        if self.user_bank is None or not 1 <= hit <= len(entries):
            return None
        return self.user_bank.add(answer.normalized_query, entry_key(entries[hit - 1]), vote, source)

    # -- the corpus ------------------------------------------------------------------

    def entry(self, entry_id: str) -> Entry:
        return self.index.entries[self.index.row_of(entry_id)]

    @property
    def entries(self) -> list[Entry]:
        return self.index.entries

    # The index never changes under a Helper, so these are computed once.
    @cached_property
    def frameworks(self) -> list[str]:
        return sorted({e.framework for e in self.index.entries})

    @cached_property
    def collections(self) -> list[str]:
        return sorted({e.collection for e in self.index.entries})

    @cached_property
    def langs(self) -> list[str]:
        return sorted({e.lang for e in self.index.entries})

    def info(self):
        """What the index holds and whether its documents changed since it was built (status.IndexInfo)."""
        from .ingest.status import index_info

        return index_info(self.index.path)

    def conversation(self, k: int = 5, **search) -> Conversation:
        """A conversation over this index: each answer is kept for the next message's follow-up."""
        return Conversation(self, k=k, **search)

    def as_retriever(self, k: int = 4, **filters):
        """A LangChain BaseRetriever whose Documents carry the citation metadata."""
        from .langchain import HelperRetriever

        return HelperRetriever(helper=self, k=k, filters=filters)

    def __repr__(self) -> str:
        return (f"<Helper {len(self.index.entries)} entries in {', '.join(self.collections)}; "
                f"embedder {self.index.embedder_id}>")


def _user_bank(spec: str | Path | bool | None):
    if spec is False:
        return None
    from .index.userbank import UserBank

    return UserBank(None if spec in (None, True) else spec)


def _learnable_entries(answer: Answer) -> list[Entry]:
    """The entries a vote on `answer` can be about: its cited lead first, then the others found."""
    if answer.abstained or not answer.citations:
        return []
    lead = answer.citations[0].entry_id
    return sorted((h.entry for h in answer.hits), key=lambda e: e.id != lead)




class LiveHelper:
    """The Helper of an index that an ingest or `rlhelper sync` may update while it serves: the web
    server's. `current()` is what a request calls first and then uses throughout, so one request sees
    one version of the index from start to end.

    A new version is noticed by the index link moving (one readlink per request: build.py swaps a
    version in by renaming a symlink), and loaded in a background thread while the old version keeps
    answering; the next request after the load gets the new one. A version that cannot be loaded
    (damaged, another embedder) is logged and passed over: the old one keeps serving. Old versions are
    freed when the requests still using them end (build.py deletes their folders at the next ingest;
    what a request reads was loaded into memory).
    """

    def __init__(self, helper: Helper):
        import threading

        self._helper = helper
        self._lock = threading.Lock()
        self._loading: str | None = None  # the folder being loaded
        self._refused: str | None = None  # a folder that could not be loaded: not tried again

    def current(self) -> Helper:
        from .index.folders import live_folder

        helper = self._helper
        folder = live_folder(helper.index.path)
        live = str(Path(folder).resolve()) if folder is not None else None
        if live is None or live == str(Path(helper.index.folder).resolve()) or live == self._refused:
            return helper
        with self._lock:
            helper = self._helper  # a load may have ended since the check above
            if self._loading is not None or live == str(Path(helper.index.folder).resolve()):
                return helper
            self._loading = live
        import threading

        threading.Thread(target=self._load, args=(helper, live), daemon=True, name="rlhelper-reload").start()
        return helper

    def _load(self, old: Helper, live: str) -> None:
        import logging

        from .errors import RlhelperError

        try:
            new = old.reloaded()
            new.entries  # noqa: B018 - loaded whole before it serves
            with self._lock:
                self._helper = new
            logging.getLogger(__name__).info("serving the new version of %s (%d entries)", old.index.path,
                                             len(new.entries))
        except (RlhelperError, OSError) as exc:
            self._refused = live
            logging.getLogger(__name__).warning("kept serving the previous index: the new version of %s "
                                                "cannot be loaded (%s)", old.index.path, exc)
        finally:
            with self._lock:
                self._loading = None

    def wait_for_load(self, timeout: float = 60.0) -> Helper:
        """`current()`, after any load in progress has ended (tests, and a caller that would rather wait)."""
        import time

        self.current()
        deadline = time.monotonic() + timeout
        while self._loading is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.current()


class Conversation:
    """Messages answered in turn, each read with the answer before it when it is a follow-up
    (`Helper.ask(previous=...)`): what `rlhelper chat` keeps. (The web chat keeps its own
    `previous` in the browser session, the same way.)"""

    def __init__(self, helper: Helper, **search):
        self.helper = helper
        self.search = search  # k, framework, collection, lang, mode: as Helper.ask takes them
        self.previous: Answer | None = None

    def ask(self, message: str) -> Answer:
        answer = self.helper.ask(message, previous=self.previous, **self.search)
        self.previous = answer
        return answer

    def new_topic(self) -> None:
        """Forget the last answer: the next message is read on its own."""
        self.previous = None
