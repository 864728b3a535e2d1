// The page's script (rlhelper.web.server puts it in the page's head): one delegated listener for the
// copy buttons in answers (plain HTML without handlers), accessible labels for chat messages, the
// scroll that shows each new answer from its start, the chat's height in a desktop window, a pasted
// log's echo ended at a whole line, and the box's focus on load.
(function () {
  // The browser's language, as Gradio's i18n reads it: the page's texts written in both languages
  // (web/app.py, in_both) show the one it picks (style.css).
  var LANG = /^zh\b/i.test(navigator.language || "") ? "zh" : "en";
  document.documentElement.setAttribute("data-rl-lang", LANG);
  var SAID = (window.RL_WORDS || {})[LANG] || {};  // the page's words the script says (web/server.py)
  function fallbackCopy(text) {
    var ta = document.createElement("textarea");
    ta.value = text; ta.style.position = "fixed"; ta.style.opacity = "0";
    document.body.appendChild(ta); ta.select();
    try { document.execCommand("copy"); } catch (e) {}
    document.body.removeChild(ta);
  }
  document.addEventListener("click", function (ev) {
    var path = ev.composedPath ? ev.composedPath() : [ev.target], btn = null;
    for (var i = 0; i < path.length; i++) {
      if (path[i].classList && path[i].classList.contains("rl-copy")) { btn = path[i]; break; }
    }
    if (!btn) return;
    ev.preventDefault(); ev.stopPropagation();
    var code = btn.parentElement && btn.parentElement.querySelector("code");
    if (!code) return;
    // In the answer's language, as the button's own label (answer/markup.py; RL_WORDS: web/server.py).
    var answer = btn.closest(".rl-answer"), lang = (answer && answer.getAttribute("lang")) || "en";
    var text = code.textContent, label = btn.textContent, said = (window.RL_WORDS || {})[lang] || {};
    var done = function () {
      btn.textContent = said.copied || label;
      setTimeout(function () { btn.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else { fallbackCopy(text); done(); }
  }, true);
  // Gradio labels each chat message with its raw HTML ("bot's message: <div class=...");
  // a screen reader would read the markup. Label it with its text instead.
  // In the page's language, as are the tab's title and the thumbs' labels (Gradio writes them in English).
  var WHO = {bot: SAID.answer_label || "Answer: ", user: SAID.message_label || "Your message: "};
  var THUMB_LABELS = ["Like", "Liked", "Dislike", "Disliked"];
  function relabel(el) {
    var thumb = el.tagName === "BUTTON" && THUMB_LABELS.indexOf(el.getAttribute("aria-label")) >= 0;
    if (thumb && SAID[el.getAttribute("aria-label")] && LANG !== "en") {
      var said = SAID[el.getAttribute("aria-label")];
      el.setAttribute("title", said); el.setAttribute("aria-label", said);
      return;
    }
    var who = WHO[el.getAttribute("data-testid")];
    if (!who) return;
    var text = who + (el.innerText || el.textContent || "").replace(/\s+/g, " ").trim();
    if (el.getAttribute("aria-label") !== text) el.setAttribute("aria-label", text);  // unchanged: no new mutation
  }
  // A new question: once its answer starts, scroll the chat so the question is at the top and the
  // answer reads from its start (the chat does not follow the stream down to the last related entry).
  // A tall question (a pasted log) scrolls further, so the answer starts no lower than ANSWER_BY of the
  // pane. The question stays pinned while its answer streams in (the pane can only scroll that far once
  // the answer is long enough), until the final answer is in or the reader scrolls.
  var asked = 0, pinned = null, ANSWER_BY = 0.45;
  function showNewAnswer() {
    var users = document.querySelectorAll("#rl-chat [data-testid='user']");
    if (users.length < asked) { asked = users.length; pinned = null; return; }  // cleared
    if (users.length > asked) { asked = users.length; pinned = users[users.length - 1]; }
    if (!pinned || !pinned.isConnected) { pinned = null; return; }
    var pane = pinned.closest(".bubble-wrap");
    if (!pane) return;
    var box = pane.getBoundingClientRect(), by = pinned.getBoundingClientRect().top - box.top - 40;  // 8 px below the band Clear sits in (style.css)
    var bots = document.querySelectorAll("#rl-chat [data-testid='bot']"), answer = bots[bots.length - 1];
    var after = answer && (pinned.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING);
    if (after) by = Math.max(by, answer.getBoundingClientRect().top - box.top - ANSWER_BY * box.height);
    pane.scrollTop += by;
    if (after && answer.querySelector(".rl-sources, .rl-abstain, .rl-error, .rl-smalltalk")) pinned = null;
  }
  ["wheel", "touchmove", "keydown"].forEach(function (kind) {
    document.addEventListener(kind, function (ev) {
      if (ev.target && ev.target.closest && ev.target.closest("#rl-chat")) pinned = null;
    }, {passive: true, capture: true});
  });
  // The chat is as tall as the window leaves room for (style.css, --rl-chat-height): the page fits, so it
  // cannot creep down, and what appears under the box (a vote's note and comment row, "Clear the
  // filters") takes its room from the chat, in view; on a phone too, where the box was below the fold on
  // first open and a vote's note below it (issue 36). A phone's chat keeps a shorter least height.
  var DESKTOP = 700, SHORTEST = 320, PHONE_SHORTEST = 240, TALLEST = 900, BELOW = 16;  // px; BELOW: the page's bottom padding
  function fitChat() {
    var chat = document.querySelector("#rl-chat"), root = document.documentElement;
    var column = chat && chat.closest(".column");
    if (!column) return;
    var least = window.innerWidth < DESKTOP ? PHONE_SHORTEST : SHORTEST;
    var bottom = 0;  // of the page's content (its container stretches to the window)
    for (var i = 0; i < column.children.length; i++) {
      var box = column.children[i].getBoundingClientRect();
      if (box.height > 0) bottom = Math.max(bottom, box.bottom + window.scrollY);
    }
    var now = chat.getBoundingClientRect().height;
    var want = Math.round(Math.max(least, Math.min(TALLEST, now + window.innerHeight - BELOW - bottom)));
    if (Math.abs(want - now) >= 1) root.style.setProperty("--rl-chat-height", want + "px");
  }
  // What an action shows under the box (a vote's note, its comment row, "Clear the filters") is brought
  // into view when it appears, where the chat's least height left it below the fold.
  var SHOWN_BY_ACTIONS = ["#rl-status", "#rl-comment-row", "#rl-clear-filters"], shown = {};
  function showChanges() {
    SHOWN_BY_ACTIONS.forEach(function (sel) {
      var el = document.querySelector(sel), box = el && el.getBoundingClientRect();
      var now = !!box && box.height > 0 && el.offsetParent !== null;
      if (now && !shown[sel] && (box.bottom > window.innerHeight || box.top < 0)) el.scrollIntoView({block: "nearest"});
      shown[sel] = now;
    });
  }
  // The box takes focus once it is there, without scrolling the page, unless the reader has already
  // put it elsewhere; not on a phone, where focus opens the keyboard.
  var focused = false;
  function focusBox() {
    if (focused || window.innerWidth < DESKTOP) return;
    var box = document.querySelector("#rl-input textarea");
    if (!box) return;
    focused = true;
    if (!document.activeElement || document.activeElement === document.body) box.focus({preventScroll: true});
  }
  // A pasted log's echo (pre.rl-query) is as tall as style.css allows, ten rows; on a phone a line of the
  // log wraps over several rows, and the echo ended inside one ("(raylet) [...] worker"). It ends at the
  // last line of the paste that fits whole (measured again when its width changes).
  function fitPastes() {
    document.querySelectorAll("#rl-chat pre.rl-query").forEach(function (pre) {
      var width = String(pre.clientWidth);
      if (pre.getAttribute("data-rl-fitted") === width) return;
      pre.setAttribute("data-rl-fitted", width);
      pre.style.removeProperty("max-height");
      pre.classList.toggle("rl-more", pre.scrollHeight > pre.clientHeight);  // more of it below: style.css
      if (pre.scrollHeight <= pre.clientHeight) return;
      var style = getComputedStyle(pre), row = parseFloat(style.lineHeight);
      var rows = Math.floor(parseFloat(style.maxHeight) / row), top = pre.getBoundingClientRect().top - pre.scrollTop;
      var walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT), range = document.createRange();
      var node, fits = 0, full = false;
      while (!full && (node = walker.nextNode())) {
        for (var at = 0; at < node.data.length;) {
          var end = node.data.indexOf("\n", at);
          if (end < 0) end = node.data.length;
          if (end > at) {
            range.setStart(node, at); range.setEnd(node, end);
            var ends = Math.round((range.getBoundingClientRect().bottom - top) / row);  // the row it ends on
            if (ends > rows) { full = true; break; }
            fits = ends;
          }
          at = end + 1;
        }
      }
      if (fits > 0) pre.style.maxHeight = fits * row + "px";
    });
  }
  // Keyboard and focus (issue 36): an example or Clear gives the focus back to the box (it fell to the
  // page's body, so typing went nowhere); tabbing out of a filter closes its option list, which stayed
  // open over the chat.
  document.addEventListener("click", function (ev) {
    var hit = ev.target && ev.target.closest && ev.target.closest("#rl-chat button.example, #rl-chat button[aria-label='Clear']");
    if (!hit || window.innerWidth < DESKTOP) return;  // a phone: focus would open its keyboard
    setTimeout(function () {  // after the chat redrew without the button
      var box = document.querySelector("#rl-input textarea"), now = document.activeElement;
      if (box && (!now || now === document.body || !now.isConnected || now.closest("#rl-chat"))) box.focus({preventScroll: true});
    }, 0);
  }, true);
  document.addEventListener("focusout", function (ev) {
    var filter = ev.target && ev.target.closest && ev.target.closest("#rl-framework, #rl-collection");
    if (!filter || (ev.relatedTarget && filter.contains(ev.relatedTarget))) return;
    if (filter.querySelector("[role=listbox]")) {
      ev.target.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape", bubbles: true}));
    }
  }, true);
  var fitting = 0;
  new MutationObserver(function () {
    showNewAnswer();
    focusBox();
    if (!fitting) fitting = requestAnimationFrame(function () { fitting = 0; fitPastes(); fitChat(); showChanges(); });
  }).observe(document.documentElement, {subtree: true, childList: true, attributes: true,
                                        attributeFilter: ["style", "class"]});
  window.addEventListener("resize", function () { fitPastes(); fitChat(); });
  new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      var root = change.target;
      if (root.nodeType !== 1) root = root.parentElement;
      if (!root) return;
      var el = root.closest && root.closest("[data-testid][aria-label], button[aria-label]");
      if (el) relabel(el);
      if (root.querySelectorAll) root.querySelectorAll("[data-testid][aria-label], #rl-chat button[aria-label]").forEach(relabel);
      if (SAID.title && document.title !== SAID.title) document.title = SAID.title;
    });
  }).observe(document.documentElement, {subtree: true, childList: true, characterData: true,
                                        attributes: true, attributeFilter: ["aria-label"]});
})();
