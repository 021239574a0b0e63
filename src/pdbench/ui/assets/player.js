/* pdbench animations in the browser: the replay of one game and the evolution of a population.
   All frames arrive as data; playback runs here on the browser's clock (no server round trip per
   frame). The frame on stage is shown by one function that sets the label and the slider
   together, and playback always ends on the last frame. The state is exposed on the root element
   (data-frame, data-last, data-playing) for tests. */
"use strict";
var PDB = window.PDB || {};
window.PDB = PDB;

/* Controls (play/pause, restart, back, step, speed, scrub) driving show(frame). */
PDB.Playback = function (root, first, last, start, speed, unit, show) {
  var self = this, el = PDB.el;
  this.first = first;
  this.last = last;
  this.frame = start;
  this.playing = false;
  this.speed = speed;
  this.onChange = null;  // called when the frame changes or playback pauses
  var bar = el("div", "pdb-controls", root);
  this.play = el("button", "pdb-btn primary", bar, "▶ Play");
  this.play.id = "pdb-play";
  var restart = el("button", "pdb-btn", bar, "⏮ Restart");
  restart.id = "pdb-restart";
  var back = el("button", "pdb-btn", bar, "◀ Back");
  back.id = "pdb-back";
  var step = el("button", "pdb-btn", bar, "Step ▶");
  step.id = "pdb-step";
  var sp = el("label", "pdb-speed", bar);
  this.speedText = el("span", "pdb-speed-text", sp);
  this.speedInput = el("input", "", sp);
  this.speedInput.id = "pdb-speed";
  this.speedInput.type = "range";
  this.speedInput.min = 0;  // a log scale: 0 is 20 ms, 100 is 2 s (see PDB.speedAt)
  this.speedInput.max = 100;
  this.speedInput.step = 1;
  this.speedInput.value = PDB.speedPosition(speed);
  this.unit = unit;
  var scrub = el("div", "pdb-scrub", root);
  el("span", "pdb-scrub-end", scrub, String(first));
  this.slider = el("input", "", scrub);
  this.slider.id = "pdb-scrub";
  this.slider.type = "range";
  this.slider.min = first;
  this.slider.max = last;
  this.slider.step = 1;
  el("span", "pdb-scrub-end", scrub, PDB.fmt(last));
  this.show = show;
  this.play.onclick = function () { self.playing ? self.pause() : self.start(); };
  restart.onclick = function () { self.pause(); self.go(self.first); };
  back.onclick = function () { self.pause(); self.go(self.frame - 1); };
  step.onclick = function () { self.pause(); self.go(self.frame + 1); };
  this.slider.oninput = function () { self.pause(); self.go(parseInt(self.slider.value, 10)); };
  this.speedInput.oninput = function () {
    self.setSpeed(PDB.speedAt(parseInt(self.speedInput.value, 10)));
  };
  (document.getElementById("pdb-root") || root).addEventListener("keydown", function (ev) {
    if (ev.target.tagName === "INPUT") return;
    if (ev.key === " ") { ev.preventDefault(); self.play.onclick(); }
    if (ev.key === "ArrowRight") step.onclick();
    if (ev.key === "ArrowLeft") back.onclick();
  });
  this.root = document.getElementById("pdb-root") || root;
  this.root.dataset.last = last;
  this.setSpeed(speed);
  this.go(start);
};

/* The speed slider is logarithmic: position 0..100 is 20 ms..2 s a frame (20, 50, 100, 200 ms
   ... are as easy to pick as 1 and 2 s). */
PDB.speedAt = function (pos) {
  var ms = 20 * Math.pow(100, pos / 100);
  return ms < 100 ? Math.round(ms) : Math.round(ms / 10) * 10;
};
PDB.speedPosition = function (ms) {
  return Math.round(100 * Math.log(Math.max(20, ms) / 20) / Math.log(100));
};

PDB.Playback.prototype.setSpeed = function (ms) {
  this.speed = Math.max(20, ms);
  this.speedText.textContent = this.speed + " " + this.unit;
  this.root.dataset.speed = this.speed;
  this.t0 = performance.now();
  this.f0 = this.frame;
};

/* Put frame f on stage: the view, the label (inside show), the slider and the data attributes. */
PDB.Playback.prototype.go = function (f) {
  f = Math.max(this.first, Math.min(this.last, f));
  this.frame = f;
  this.slider.value = f;
  this.root.dataset.frame = f;
  this.show(f);
  if (this.onChange) this.onChange();
};

PDB.Playback.prototype.start = function () {
  var self = this;
  if (this.frame >= this.last) this.go(this.first);
  this.playing = true;
  this.root.dataset.playing = "1";
  this.play.textContent = "⏸ Pause";
  this.t0 = performance.now();
  this.f0 = this.frame;
  this.seen = this.t0;
  var tick = function (now) {
    if (!self.playing) return;
    if (now - self.seen > 400) { self.t0 += now - self.seen; }  // the page was hidden
    self.seen = now;
    var target = self.f0 + Math.floor((now - self.t0) / self.speed);
    if (target >= self.last) {
      self.go(self.last);
      self.pause();
      return;
    }
    if (target !== self.frame) self.go(target);
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
};

PDB.Playback.prototype.pause = function () {
  this.playing = false;
  this.root.dataset.playing = "0";
  this.play.textContent = "▶ Play";
  if (this.onChange) this.onChange();
};

var OUTCOMES = {CC: "both cooperate 🤝", DD: "both defect 🗡️", CD: "B exploits A", DC: "A exploits B"};
var EMOJI = {C: "🤝", D: "🗡️"}, WORD = {C: "Cooperate", D: "Defect"};

function cumsum(xs) {
  var out = new Float64Array(xs.length), t = 0;
  for (var i = 0; i < xs.length; i++) { t += xs[i]; out[i] = t; }
  return out;
}

function num(x) {
  return Math.abs(x - Math.round(x)) < 1e-9 ? PDB.fmt(x) : x.toFixed(2);
}

/* The replay of game `g` (see PDB.prepareGame; also pa/pb, each round's payoffs, for LLM
   agents `replies`, shown under each move by PDB.replyPanel, and in a game with messages
   `talk`, each agent's messages before the move, shown under it by PDB.talkPanel). With
   `place` (round, zoom: [first, last]) it opens there, and keeps its place in the app's URL
   (place.js). */
PDB.replay = function (root, g, colors, speed, place) {
  place = place || {};
  var el = PDB.el;
  PDB.prepareGame(g);
  var ca = cumsum(g.pa), cb = cumsum(g.pb);
  var label = el("div", "pdb-label", root);
  label.id = "pdb-label";
  // The controls and the jumps sit above the stage: a move card grows with its reply's retries
  // and notes, and buttons below it would move under the pointer from one round to the next.
  var panel = el("div", "pdb-panel", root);
  var jumps = el("div", "pdb-jumps", root);
  var stage = el("div", "pdb-stage", root);
  var cards = [], mid;
  for (var s = 0; s < 2; s++) {
    var card = el("div", "pdb-move", stage);
    card.dataset.agent = "AB"[s];
    var c = {
      who: el("div", "pdb-move-who", card, g.labels[s]),
      face: el("div", "pdb-move-face", card),
      word: el("div", "pdb-move-word", card),
      note: el("div", "pdb-move-note", card),
      score: el("div", "pdb-move-score", card),
    };
    c.say = g.talk ? PDB.talkPanel(card, g, s) : null;  // replies.js: the messages
    c.reply = g.replies ? PDB.replyPanel(card, g, s) : null;  // replies.js
    cards.push(c);
    if (s === 0) mid = el("div", "pdb-lead", stage);
  }
  var tl = null;
  var start = Math.max(1, Math.min(g.n, place.round || 1));
  var pb = new PDB.Playback(panel, 1, g.n, start, speed, "ms per round",
    function (r) {
      var mv = [g.a[r - 1], g.b[r - 1]], meant = [g.fa[r - 1], g.fb[r - 1]];
      var fb = [g.xa[r - 1] === "1", g.xb[r - 1] === "1"], pay = [g.pa[r - 1], g.pb[r - 1]];
      var cum = [ca[r - 1], cb[r - 1]];
      label.textContent = "Round " + PDB.fmt(r) + " of " + PDB.fmt(g.n) + " · " +
        OUTCOMES[mv[0] + mv[1]];
      label.dataset.round = r;
      for (var s = 0; s < 2; s++) {
        var c = cards[s];
        c.face.textContent = EMOJI[mv[s]];
        c.face.style.background = mv[s] === "C" ? colors.C : colors.D;
        c.word.textContent = WORD[mv[s]];
        var notes = [];
        if (meant[s] !== mv[s]) notes.push("✚ noise flip: meant " + WORD[meant[s]]);
        if (fb[s]) notes.push("▲ fallback after invalid replies");
        c.note.textContent = notes.join(" · ");
        c.score.textContent = "score " + num(cum[s]) + " (" + (pay[s] >= 0 ? "+" : "") +
          num(pay[s]) + " this round)";
        if (c.say) c.say.show(r);
        if (c.reply) c.reply.show(r);
      }
      var lead = cum[0] - cum[1];
      mid.textContent = lead === 0 ? "⚖️ level" :
        (lead > 0 ? "A" : "B") + " leads by " + num(Math.abs(lead));
      if (tl) tl.setCursor(r);
    });
  var kinds = [["defection", g.defect], ["noise flip", g.flipAny], ["fallback", g.fallAny]];
  if (g.talk) kinds.push(["broken promise", g.brokenAny]);
  kinds.forEach(function (k) {
    var grp = el("span", "pdb-jump", jumps);
    var prev = el("button", "pdb-btn small", grp, "◀");
    prev.title = "previous " + k[0];
    prev.dataset.jump = "prev-" + k[0].replace(" ", "-");  // e.g. prev-broken-promise
    el("span", "pdb-jump-name", grp, k[0] + " (" + PDB.fmt(k[1].length) + ")");
    var next = el("button", "pdb-btn small", grp, "▶");
    next.title = "next " + k[0];
    next.dataset.jump = "next-" + k[0].replace(" ", "-");
    [[prev, -1], [next, 1]].forEach(function (b) {
      b[0].disabled = k[1].length === 0;
      b[0].onclick = function () {
        var r = PDB.neighbour(k[1], pb.frame, b[1]);
        pb.pause();
        if (r !== null) pb.go(r);
      };
    });
  });
  var changed = function () {};
  tl = PDB.timeline(el("div", "", root), g, colors, {
    onSeek: function (r) { pb.pause(); pb.go(r); },
    onWindow: function () { changed(); },
  });
  if (place.zoom) tl.setWindow(place.zoom[0], place.zoom[1]);
  tl.setCursor(pb.frame);
  if (PDB.keepPlace) changed = PDB.keepPlace(pb, tl, place);
  pb.onChange = function () { changed(); };
  return pb;
};

/* Slots of the ring per generation: each member keeps its place; when a strategy loses k members
   its last k places are freed and the growing strategies' clones take them. */
function ringSlots(counts, S) {
  var G = counts.length, size = 0, slots = [], g, s, i;
  for (g = 0; g < G; g++) {
    var tot = 0;
    for (s = 0; s < S; s++) tot += counts[g][s];
    size = Math.max(size, tot);
  }
  var cur = new Int16Array(size).fill(-1), k = 0;
  for (s = 0; s < S; s++) for (i = 0; i < counts[0][s]; i++) cur[k++] = s;
  slots.push(cur);
  for (g = 1; g < G; g++) {
    var next = Int16Array.from(cur), free;
    for (s = 0; s < S; s++) {
      var lose = counts[g - 1][s] - counts[g][s];
      for (i = size - 1; i >= 0 && lose > 0; i--) {
        if (next[i] === s) { next[i] = -1; lose--; }
      }
    }
    free = [];
    for (i = 0; i < size; i++) if (next[i] === -1) free.push(i);
    var f = 0;
    for (s = 0; s < S; s++) {
      var gain = counts[g][s] - counts[g - 1][s];
      while (gain-- > 0 && f < free.length) next[free[f++]] = s;
    }
    slots.push(next);
    cur = next;
  }
  return slots;
}

/* The evolution: counts[g][s] members of strategy s in generation g (g = 0..last), strategies
   with label, emoji and color. A ring of members (Nicky Case style) and a bar per strategy. */
PDB.evolution = function (root, ev, speed) {
  var el = PDB.el, S = ev.strategies.length, last = ev.counts.length - 1;
  var slots = ringSlots(ev.counts, S), size = slots[0].length;
  var label = el("div", "pdb-label", root);
  label.id = "pdb-label";
  var stage = el("div", "pdb-evo", root);
  var NS = "http://www.w3.org/2000/svg", D = 360;
  var svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 " + D + " " + D);
  svg.setAttribute("class", "pdb-ring");
  stage.appendChild(svg);
  var R = D / 2 - 24, cx = D / 2, cy = D / 2;
  var rings = size > 120 ? 2 : 1;
  var dot = Math.max(3, Math.min(16, (Math.PI * 2 * R * rings) / size * 0.42));
  var emoji = size <= 40;
  var members = [], ghosts = [], halos = [];
  for (var i = 0; i < size; i++) {
    var ring = rings === 2 ? i % 2 : 0, rr = R - ring * (dot * 2.6);
    var a = -Math.PI / 2 + 2 * Math.PI * i / size;
    var x = cx + rr * Math.cos(a), y = cy + rr * Math.sin(a);
    var gh = document.createElementNS(NS, "circle");
    gh.setAttribute("cx", x); gh.setAttribute("cy", y); gh.setAttribute("r", dot);
    gh.setAttribute("class", "pdb-ghost");
    svg.appendChild(gh);
    ghosts.push(gh);
    var m = document.createElementNS(NS, emoji ? "text" : "circle");
    if (emoji) {
      var halo = document.createElementNS(NS, "circle");
      halo.setAttribute("cx", x); halo.setAttribute("cy", y); halo.setAttribute("r", dot * 1.2);
      halo.setAttribute("class", "pdb-halo");
      svg.appendChild(halo);
      halos.push(halo);
      m.setAttribute("x", x); m.setAttribute("y", y + 1);
      m.setAttribute("class", "pdb-member emoji");
      m.setAttribute("font-size", Math.round(dot * 1.9));
    } else {
      m.setAttribute("cx", x); m.setAttribute("cy", y); m.setAttribute("r", dot);
      m.setAttribute("class", "pdb-member");
    }
    svg.appendChild(m);
    members.push(m);
  }
  var centre = document.createElementNS(NS, "text");
  centre.setAttribute("x", cx); centre.setAttribute("y", cy);
  centre.setAttribute("class", "pdb-ring-centre");
  svg.appendChild(centre);
  var bars = el("div", "pdb-evo-bars", stage), barEls = [];
  ev.strategies.forEach(function (st) {
    var row = el("div", "pdb-bar-row", bars);
    el("span", "pdb-bar-label", row, st.label).title = st.label;
    var track = el("span", "pdb-bar-track", row);
    var b = el("span", "pdb-bar", track);
    b.style.background = st.color;
    barEls.push({bar: b, value: el("span", "pdb-bar-value", row), row: row});
  });
  el("div", "pdb-evo-key", bars,
    "Each dot is one member. After each generation the lowest scorers fade out and clones of " +
    "the highest scorers appear in their places (white ring).");
  var shown = null;
  function show(gen) {
    var counts = ev.counts[gen], total = 0, s;
    for (s = 0; s < S; s++) total += counts[s];
    label.textContent = "Generation " + gen + " of " + last + " · " + total + " individuals";
    label.dataset.generation = gen;
    var dur = Math.max(15, Math.min(600, pb ? pb.speed * 0.9 : 300));
    var animate = shown !== null && Math.abs(gen - shown) === 1 && size <= 400;
    var before = shown === null ? null : slots[shown], now = slots[gen];
    for (var i = 0; i < size; i++) {
      var k = now[i], m = members[i];
      var st = k >= 0 ? ev.strategies[k] : null;
      if (emoji) {
        m.textContent = st ? st.emoji : "";
        halos[i].setAttribute("fill", st ? st.color : "none");
      }
      else m.setAttribute("fill", st ? st.color : "none");
      m.style.opacity = st ? 1 : 0;
      m.classList.toggle("clone", false);
      if (before && before[i] !== k && animate) {
        var old = before[i] >= 0 ? ev.strategies[before[i]] : null;
        if (old) {
          ghosts[i].setAttribute("fill", old.color);
          ghosts[i].animate([{opacity: 0.9}, {opacity: 0}], {duration: dur, fill: "forwards"});
        }
        if (st) {
          m.classList.toggle("clone", true);
          m.animate([{opacity: 0}, {opacity: 1}], {duration: dur});
          if (emoji) halos[i].animate([{opacity: 0}, {opacity: 0.35}], {duration: dur});
        }
      }
    }
    for (s = 0; s < S; s++) {
      var share = total ? counts[s] / total : 0;
      barEls[s].bar.style.width = (100 * share).toFixed(2) + "%";
      barEls[s].value.textContent = counts[s] + " · " + Math.round(100 * share) + "%";
      barEls[s].row.style.opacity = counts[s] || ev.counts[0][s] ? 1 : 0.45;
    }
    centre.textContent = "gen " + gen;
    shown = gen;
  }
  var pb = null;
  pb = new PDB.Playback(el("div", "pdb-panel", root), 0, last, last, speed,
    "ms per generation", show);
  return pb;
};
