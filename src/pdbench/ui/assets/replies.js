/* The reply panel of the replay: under each agent's move, the LLM's raw reply that was parsed
   into the move, its earlier invalid replies (one line per attempt, numbered from 1 as in View
   Results) and a fallback mark when no reply was valid. Replies are data (DATA.replies, see
   pdbench.ui.replies.encode) and are only ever set as text (textContent), never as HTML. */
"use strict";
var PDB = window.PDB || {};
window.PDB = PDB;

var MOVE_WORD = {C: "Cooperate", D: "Defect"};

/* Fill `node` with a raw reply (null: not stored; "": an empty reply). */
PDB.replyText = function (node, raw) {
  node.classList.toggle("none", raw === null || raw === "");
  node.textContent = raw === null ? "(reply not stored)" : raw === "" ? "(empty reply)" : raw;
};

/* The panel of side s (0: A, 1: B) of game g in `parent`; show(r) puts round r (1-based) on it. */
PDB.replyPanel = function (parent, g, s) {
  var el = PDB.el, who = "AB"[s], rounds = g.replies["ab"[s]], texts = g.replies.texts;
  var box = el("div", "pdb-reply", parent);
  box.dataset.agent = who;
  if (!rounds) {
    box.classList.add("policy");
    el("div", "pdb-reply-main", box, "policy: no reply");
    return {show: function () {}};
  }
  var main = el("div", "pdb-reply-main", box);
  var head = el("span", "pdb-reply-head", main);
  var text = el("span", "pdb-reply-text", main);
  text.id = "pdb-reply-" + who;
  var retries = el("ol", "pdb-reply-retries", box);
  var fall = el("div", "pdb-reply-fallback", box);
  return {
    show: function (r) {
      var ids = rounds[r - 1] || [], fallback = g["x" + "ab"[s]][r - 1] === "1";
      var last = ids.length ? texts[ids[ids.length - 1]] : null;
      var valid = last !== null && last[1] === 1 && !fallback;
      var earlier = valid ? ids.slice(0, -1) : ids;
      box.dataset.round = r;
      box.dataset.attempts = ids.length;
      head.textContent = who + "'s reply" + (valid && ids.length > 1 ?
        " (attempt " + ids.length + ")" : "") + ": ";
      if (valid) PDB.replyText(text, last[0]);
      else {
        text.classList.add("none");
        text.textContent = ids.length ? "no valid reply" : "(no reply recorded)";
      }
      retries.textContent = "";
      earlier.forEach(function (id, k) {
        var t = texts[id], li = el("li", "", retries);
        li.dataset.attempt = k + 1;
        el("span", "pdb-reply-tag", li, "attempt " + (k + 1) + " (" +
          (t[1] === 1 ? "valid" : "invalid") + "): ");
        PDB.replyText(el("span", "pdb-reply-text", li), t[0]);
        if (t[2]) li.title = t[2];
      });
      var meant = g["f" + "ab"[s]][r - 1];  // the agent's move before any noise flip
      fall.textContent = fallback ? "▲ fallback move " + MOVE_WORD[meant] + " after " +
        ids.length + (ids.length === 1 ? " invalid reply" : " invalid replies") : "";
      fall.style.display = fallback ? "" : "none";
    },
  };
};

/* The messages panel of side s of game g (DATA.talk, see pdbench.ui.talk.encode) in `parent`:
   what the agent wrote before the round's move, each with its stated intention ("promised C",
   "announced D"), and whether it then broke a promise. Texts are data: set with textContent. */
var INTENT_TAG = {C: "promised C", D: "announced D"};
var SOURCE_NOTE = {declared: "declared by the agent", phrases: "read from the text"};

PDB.talkPanel = function (parent, g, s) {
  var el = PDB.el, who = "AB"[s], rounds = g.talk["ab"[s]], texts = g.talk.texts;
  var box = el("div", "pdb-say", parent);
  box.dataset.agent = who;
  var head = el("div", "pdb-say-head", box);
  var list = el("ul", "pdb-say-list", box);
  var broke = el("div", "pdb-say-broken", box);
  return {
    show: function (r) {
      var ids = rounds[r - 1] || [];
      box.dataset.round = r;
      box.dataset.messages = ids.length;
      head.textContent = ids.length ? "💬 " + who + " said before this move:" :
        "💬 " + who + " said nothing before this move";
      list.textContent = "";
      ids.forEach(function (id) {
        var t = texts[id], li = el("li", "pdb-say-msg", list);
        if (t[3] === 1) {
          el("span", "pdb-say-text none", li, "(no usable message: the agent said nothing)");
          return;
        }
        el("span", "pdb-say-text", li, "“" + t[0] + "”");
        if (t[1]) {
          var tag = el("span", "pdb-say-tag " + t[1], li, INTENT_TAG[t[1]]);
          tag.title = "intention " + (SOURCE_NOTE[t[2]] || t[2]);
        }
      });
      var broken = g.talk["s" + "ab"[s]][r - 1] === "C" && g["f" + "ab"[s]][r - 1] === "D";
      box.classList.toggle("broken", broken);
      box.dataset.broken = broken ? "1" : "0";
      broke.textContent = broken ? "✗ broken promise: promised C, chose D" : "";
      broke.style.display = broken ? "" : "none";
    },
  };
};
