// The page's script (rlhelper.web.server puts it in the page's head): one delegated listener for the
// copy buttons in answers (plain HTML without handlers), accessible labels for chat messages, and the
// scroll and focus that show each new answer from its start.
(function () {
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
    var text = code.textContent;
    var done = function () { btn.textContent = "Copied"; setTimeout(function () { btn.textContent = "Copy"; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else { fallbackCopy(text); done(); }
  }, true);
  // Gradio labels each chat message with its raw HTML ("bot's message: <div class=...");
  // a screen reader would read the markup. Label it with its text instead.
  var WHO = {bot: "Answer: ", user: "Your message: "};
  function relabel(el) {
    var who = WHO[el.getAttribute("data-testid")];
    if (!who) return;
    var text = who + (el.innerText || el.textContent || "").replace(/\s+/g, " ").trim();
    if (el.getAttribute("aria-label") !== text) el.setAttribute("aria-label", text);  // unchanged: no new mutation
  }
  // A new question: once its answer starts, scroll the chat so the question is at the top and the
  // answer reads from its start (the chat does not follow the stream down to the last related entry).
  // The question stays pinned there while its answer streams in (the pane can only scroll that far once
  // the answer is long enough), until the final answer is in or the reader scrolls.
  var asked = 0, pinned = null;
  function showNewAnswer() {
    var users = document.querySelectorAll("#rl-chat [data-testid='user']");
    if (users.length < asked) { asked = users.length; pinned = null; return; }  // cleared
    if (users.length > asked) { asked = users.length; pinned = users[users.length - 1]; }
    if (!pinned || !pinned.isConnected) { pinned = null; return; }
    var pane = pinned.closest(".bubble-wrap");
    if (!pane) return;
    pane.scrollTop += pinned.getBoundingClientRect().top - pane.getBoundingClientRect().top - 40;  // below Clear
    var bots = document.querySelectorAll("#rl-chat [data-testid='bot']"), answer = bots[bots.length - 1];
    var after = answer && (pinned.compareDocumentPosition(answer) & Node.DOCUMENT_POSITION_FOLLOWING);
    if (after && answer.querySelector(".rl-sources, .rl-abstain, .rl-error, .rl-smalltalk")) pinned = null;
  }
  ["wheel", "touchmove", "keydown"].forEach(function (kind) {
    document.addEventListener(kind, function (ev) {
      if (ev.target && ev.target.closest && ev.target.closest("#rl-chat")) pinned = null;
    }, {passive: true, capture: true});
  });
  new MutationObserver(function () { showNewAnswer(); }).observe(document.documentElement, {subtree: true, childList: true});
  // The box takes focus without scrolling the page; not on a phone, where focus opens the keyboard.
  window.addEventListener("load", function () {
    if (window.innerWidth < 700) return;
    var tries = 0, wait = setInterval(function () {
      var box = document.querySelector("#rl-input textarea");
      if (box || ++tries > 50) clearInterval(wait);
      if (box) box.focus({preventScroll: true});
    }, 100);
  });
  new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      var root = change.target;
      if (root.nodeType !== 1) root = root.parentElement;
      if (!root) return;
      var el = root.closest && root.closest("[data-testid][aria-label]");
      if (el) relabel(el);
      if (root.querySelectorAll) root.querySelectorAll("[data-testid][aria-label]").forEach(relabel);
    });
  }).observe(document.documentElement, {subtree: true, childList: true, characterData: true,
                                        attributes: true, attributeFilter: ["aria-label"]});
})();
