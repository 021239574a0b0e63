/* pdbench game timeline: an overview of the whole game with a brush, and a zoomed window of
   rounds with two labelled rows (agent A above agent B). Rounds are 1-based everywhere.
   Self-contained (no libraries); drawn on canvases, labels and ticks are HTML so they can be
   measured. Used by the View Results page and by the replay (with a cursor). */
"use strict";
var PDB = window.PDB || {};
window.PDB = PDB;

PDB.el = function (tag, cls, parent, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
};

PDB.fmt = function (n) {
  return Math.round(n).toLocaleString("en-US");
};

/* Game data as sent by Python: n, labels [A, B], a/b (played moves as strings of C/D),
   fa/fb (intended moves), xa/xb (fallback flags as strings of 0/1), and in a game with messages
   talk.sa/talk.sb (each agent's stated intention before each move: C, D or -). A broken promise
   is a round where an agent stated C and chose (fa/fb) D. */
PDB.prepareGame = function (g) {
  g.flip = [[], []];
  g.fall = [[], []];
  g.broken = [[], []];
  g.defect = [];
  var sides = [[g.a, g.fa, g.xa], [g.b, g.fb, g.xb]];
  for (var s = 0; s < 2; s++) {
    var played = sides[s][0], meant = sides[s][1], fb = sides[s][2];
    var stated = g.talk ? g.talk["s" + "ab"[s]] : null;
    for (var i = 0; i < g.n; i++) {
      if (played.charCodeAt(i) !== meant.charCodeAt(i)) g.flip[s].push(i + 1);
      if (fb.charCodeAt(i) === 49) g.fall[s].push(i + 1);
      if (stated && stated.charCodeAt(i) === 67 && meant.charCodeAt(i) === 68) {
        g.broken[s].push(i + 1);
      }
    }
  }
  g.brokenAny = PDB.mergeSorted(g.broken[0], g.broken[1]);
  for (var r = 0; r < g.n; r++) {
    if (g.a.charCodeAt(r) === 68 || g.b.charCodeAt(r) === 68) g.defect.push(r + 1);
  }
  g.flipAny = PDB.mergeSorted(g.flip[0], g.flip[1]);
  g.fallAny = PDB.mergeSorted(g.fall[0], g.fall[1]);
  return g;
};

PDB.mergeSorted = function (x, y) {
  var out = [], i = 0, j = 0;
  while (i < x.length || j < y.length) {
    var v = j >= y.length || (i < x.length && x[i] <= y[j]) ? x[i++] : y[j++];
    if (!out.length || out[out.length - 1] !== v) out.push(v);
  }
  return out;
};

/* The first value in sorted `list` after `r` (dir 1) or before it (dir -1), or null. */
PDB.neighbour = function (list, r, dir) {
  var lo = 0, hi = list.length;
  while (lo < hi) {
    var mid = (lo + hi) >> 1;
    if (list[mid] <= r) lo = mid + 1; else hi = mid;
  }
  if (dir > 0) return lo < list.length ? list[lo] : null;
  var k = lo - 1;
  if (k >= 0 && list[k] === r) k--;
  return k >= 0 ? list[k] : null;
};

PDB.niceStep = function (raw) {
  if (raw <= 1) return 1;
  var p = Math.pow(10, Math.floor(Math.log10(raw)));
  var m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
};

/* Whole-round ticks of rounds lo..hi drawn over `width` px: at least `gap` px apart. */
PDB.ticks = function (lo, hi, width, gap) {
  var span = hi - lo + 1;
  var step = PDB.niceStep(span / Math.max(1, Math.floor(width / gap)));
  var out = [];
  var first = Math.ceil(lo / step) * step;
  if (first - lo >= 0.6 * step || lo === 1 && first !== 1 && (first - lo) * width / span >= gap) {
    out.push(lo);
  }
  for (var t = first; t <= hi; t += step) if (t >= 1) out.push(t);
  return out;
};

function mix(c1, c2, t) {
  var a = parseInt(c1.slice(1), 16), b = parseInt(c2.slice(1), 16);
  var r = Math.round(((a >> 16) & 255) * (1 - t) + ((b >> 16) & 255) * t);
  var g = Math.round(((a >> 8) & 255) * (1 - t) + ((b >> 8) & 255) * t);
  var bl = Math.round((a & 255) * (1 - t) + (b & 255) * t);
  return "rgb(" + r + "," + g + "," + bl + ")";
}

PDB.SHARE_MID = "#f3e6b3";  // the colour of a stretch with as many C as D

PDB.shareColor = function (colors, share) {
  var mid = PDB.SHARE_MID;
  return share <= 0.5 ? mix(colors.D, mid, share * 2) : mix(mid, colors.C, share * 2 - 1);
};

function setupCanvas(canvas, w, h) {
  var dpr = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(w * dpr));
  canvas.height = Math.max(1, Math.round(h * dpr));
  canvas.style.width = w + "px";
  canvas.style.height = h + "px";
  var ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  return ctx;
}

/* Draw rounds lo..hi of both agents into ctx over width w; rows at tops[s] of height rh, with a
   flip lane above and a fallback lane below each row. */
function drawRows(ctx, g, lo, hi, w, tops, rh, colors, detail) {
  var span = hi - lo + 1;
  var cell = w / span;
  var moves = [g.a, g.b];
  var lane = 5;
  for (var s = 0; s < 2; s++) {
    var top = tops[s], str = moves[s];
    if (cell >= 2) {
      for (var r = lo; r <= hi; r++) {
        var x = (r - lo) * cell;
        ctx.fillStyle = str.charCodeAt(r - 1) === 67 ? colors.C : colors.D;
        ctx.fillRect(x, top, Math.max(1, cell - (cell >= 5 ? 1 : 0)), rh);
      }
    } else {
      var cols = Math.floor(w);
      for (var px = 0; px < cols; px++) {
        var r0 = lo + Math.floor(px * span / cols), r1 = lo + Math.floor((px + 1) * span / cols);
        if (r1 <= r0) r1 = r0 + 1;
        var c = 0;
        for (var k = r0; k < r1 && k <= hi; k++) if (str.charCodeAt(k - 1) === 67) c++;
        ctx.fillStyle = PDB.shareColor(colors, c / Math.max(1, Math.min(r1, hi + 1) - r0));
        ctx.fillRect(px, top, 1.05, rh);
      }
    }
    if (detail && cell >= 16) {
      ctx.fillStyle = "#fff";
      ctx.font = "bold " + Math.min(15, rh - 8) + "px sans-serif";
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      for (var q = lo; q <= hi; q++) ctx.fillText(str[q - 1], (q - lo + 0.5) * cell, top + rh / 2);
    }
    var marks = [[g.flip[s], colors.flip, top - lane - 1], [g.fall[s], "#111", top + rh + 1]];
    for (var m = 0; m < 2; m++) {
      var list = marks[m][0];
      ctx.fillStyle = marks[m][1];
      var start = PDB.neighbour(list, lo - 1, 1);
      var idx = start === null ? list.length : list.indexOf(start);
      for (var j = idx; j < list.length && list[j] <= hi; j++) {
        var cx = (list[j] - lo) * cell;
        ctx.fillRect(cx, marks[m][2], Math.max(1.5, cell - (cell >= 5 ? 1 : 0)), lane);
        if (detail && cell >= 16) {
          // the cell shows its letter: the mark goes in the corner (flip top right, fallback
          // bottom right)
          drawMark(ctx, m, cx + cell - 5, m === 0 ? top + 5 : top + rh - 6, 14);
        } else if (detail && cell >= 9) {
          drawMark(ctx, m, cx + cell / 2, top + rh / 2, Math.min(cell, rh));
        }
      }
    }
    if (detail && g.talk) {
      // broken promises: a lane above the flip lane, and a cross in the top left corner of a
      // wide cell (the zoomed window only; the whole-game strip has no room for the lane)
      var blist = g.broken[s], by = top - 2 * lane - 2;
      var b0 = PDB.neighbour(blist, lo - 1, 1);
      ctx.fillStyle = colors.broken;
      for (var bi = b0 === null ? blist.length : blist.indexOf(b0);
        bi < blist.length && blist[bi] <= hi; bi++) {
        var bx = (blist[bi] - lo) * cell;
        ctx.fillRect(bx, by, Math.max(1.5, cell - (cell >= 5 ? 1 : 0)), lane);
        if (cell >= 16) drawMark(ctx, 2, bx + 6, top + 6, 14, colors.broken);
      }
    }
  }
}

/* A gold cross (noise flip), a black triangle (fallback) or a diagonal cross in `color`
   (broken promise) inside a wide cell. */
function drawMark(ctx, kind, x, y, size, color) {
  var h = Math.max(3, size * 0.36);
  if (kind === 2) {
    var d = h * 0.75;
    ctx.save();
    ctx.beginPath();
    ctx.moveTo(x - d, y - d); ctx.lineTo(x + d, y + d); ctx.moveTo(x + d, y - d); ctx.lineTo(x - d, y + d);
    ctx.strokeStyle = "#fff";
    ctx.lineWidth = 4;
    ctx.stroke();
    ctx.strokeStyle = color;
    ctx.lineWidth = 2.2;
    ctx.stroke();
    ctx.restore();
  } else if (kind === 0) {
    ctx.save();
    ctx.strokeStyle = "#5a4300";
    ctx.lineWidth = 4;
    ctx.beginPath();
    ctx.moveTo(x - h, y); ctx.lineTo(x + h, y); ctx.moveTo(x, y - h); ctx.lineTo(x, y + h);
    ctx.stroke();
    ctx.strokeStyle = "#f5b301";
    ctx.lineWidth = 2.2;
    ctx.stroke();
    ctx.restore();
  } else {
    ctx.save();
    ctx.fillStyle = "#111";
    ctx.beginPath();
    ctx.moveTo(x, y - h); ctx.lineTo(x + h, y + h * 0.8); ctx.lineTo(x - h, y + h * 0.8);
    ctx.closePath();
    ctx.fill();
    ctx.restore();
  }
}

/* The timeline widget in `root` for prepared game `g`; opts.onSeek(round) makes the zoomed rows
   clickable, opts.onWindow(first, last) hears of each window drawn, tl.setCursor(round) draws
   a cursor. Returns the widget. */
PDB.timeline = function (root, g, colors, opts) {
  opts = opts || {};
  var GUT = 190, tl = {lo: 1, hi: Math.min(g.n, opts.window || 100), cursor: null};
  if (g.n <= 150) tl.hi = g.n;
  var box = PDB.el("div", "pdb-tl2", root);
  var head = PDB.el("div", "pdb-tl-head", box);
  var title = PDB.el("span", "pdb-tl-title", head);
  var zoom = PDB.el("span", "pdb-tl-zoom", head);
  var bAll = PDB.el("button", "pdb-btn small", zoom, "Whole game");
  var bOut = PDB.el("button", "pdb-btn small", zoom, "Zoom out");
  var bIn = PDB.el("button", "pdb-btn small", zoom, "Zoom in");
  // The zoomed window: two rows with labels in a gutter, an axis of whole rounds.
  var det = PDB.el("div", "pdb-tl-detail", box);
  // a game with messages has a lane for broken promises above each row's flip lane
  var RH = 30, LANE = 7, PL = g.talk ? 6 : 0;
  var tops = [LANE + PL, LANE + PL + RH + 2 * LANE + 8 + PL];
  var DH = tops[1] + RH + LANE;
  var labels = [], rows = [];
  for (var s = 0; s < 2; s++) {
    var lab = PDB.el("div", "pdb-row-label", det);
    PDB.el("span", "pdb-row-name", lab, g.labels[s]);
    lab.title = g.labels[s];
    lab.dataset.agent = "AB"[s];
    // centred on its row and as tall as the row with its lanes: a long name wraps onto three
    // lines; a longer one ends in an ellipsis (title: in full)
    lab.style.top = (tops[s] - LANE) + "px";
    lab.style.height = (RH + 2 * LANE) + "px";
    labels.push(lab);
    var row = PDB.el("div", "pdb-row", det);
    row.dataset.agent = "AB"[s];
    row.style.top = tops[s] + "px";
    row.style.height = RH + "px";
    row.style.left = GUT + "px";
    rows.push(row);
  }
  var hint = PDB.el("div", "pdb-tl-hint", box);
  hint.textContent = "Drag on the whole-game strip to choose the rounds shown · mouse wheel " +
    "over the timeline zooms at the pointer, Shift+wheel moves along" +
    (opts.onSeek ? " · click a round to jump the replay there" : "");
  box.insertBefore(hint, det);
  var dcanvas = PDB.el("canvas", "pdb-tl-canvas", det);
  dcanvas.style.left = GUT + "px";
  var dcur = PDB.el("div", "pdb-cursor", det);
  var axis = PDB.el("div", "pdb-axis", box);
  var axisTitle = PDB.el("div", "pdb-axis-title", box);
  var tip = PDB.el("div", "pdb-tip", box);
  // The overview: the whole game, each pixel column a share of C, with the brush.
  var ov = PDB.el("div", "pdb-tl-overview", box);
  var OH = 52, otops = [6, 32], ORH = 12;
  var olab = PDB.el("div", "pdb-ov-label", ov, "whole game");
  olab.style.height = OH + "px";
  olab.style.lineHeight = OH + "px";
  for (var os = 0; os < 2; os++) {
    var ol = PDB.el("div", "pdb-ov-row", ov, "AB"[os]);
    ol.style.top = otops[os] - 2 + "px";
  }
  var ocanvas = PDB.el("canvas", "pdb-tl-canvas", ov);
  ocanvas.style.left = GUT + "px";
  var brush = PDB.el("div", "pdb-brush", ov);
  var ocur = PDB.el("div", "pdb-cursor thin", ov);
  var oaxis = PDB.el("div", "pdb-axis small", box);
  det.style.height = DH + "px";
  ov.style.height = OH + "px";
  box.dataset.rounds = g.n;

  function width() {
    return Math.max(100, box.clientWidth - GUT - 8);
  }

  function drawAxis(el, lo, hi, w, gap) {
    el.textContent = "";
    var span = hi - lo + 1;
    var ts = PDB.ticks(lo, hi, w, gap);
    for (var i = 0; i < ts.length; i++) {
      var x = GUT + (ts[i] - lo + 0.5) * w / span;
      var t = PDB.el("span", "pdb-tick", el, PDB.fmt(ts[i]));
      t.style.left = x + "px";
      var half = t.offsetWidth / 2;
      if (x + half > box.clientWidth) t.style.left = box.clientWidth - half + "px";
      var line = PDB.el("span", "pdb-tick-line", el);
      line.style.left = x + "px";
    }
  }

  tl.draw = function () {
    var w = width();
    var lo = tl.lo, hi = tl.hi, span = hi - lo + 1;
    var ctx = setupCanvas(dcanvas, w, DH);
    drawRows(ctx, g, lo, hi, w, tops, RH, colors, true);
    drawAxis(axis, lo, hi, w, 64);
    var per = span / w;
    axisTitle.textContent = "round (1-based)" + (per > 1 ? " · each pixel column: " +
      per.toFixed(per < 10 ? 1 : 0) + " rounds, colour = share of C" : "");
    var octx = setupCanvas(ocanvas, w, OH);
    drawRows(octx, g, 1, g.n, w, otops, ORH, colors, false);
    drawAxis(oaxis, 1, g.n, w, 80);
    brush.style.left = GUT + (lo - 1) * w / g.n + "px";
    brush.style.width = Math.max(3, span * w / g.n) + "px";
    title.textContent = "Rounds " + PDB.fmt(lo) + "–" + PDB.fmt(hi) + " of " + PDB.fmt(g.n);
    // the share-of-C scale is shown whenever a pixel column holds several rounds
    scale.style.display = g.n > w ? "" : "none";
    box.dataset.lo = lo;
    box.dataset.hi = hi;
    bAll.disabled = span >= g.n;
    bIn.disabled = span <= 10;
    bOut.disabled = span >= g.n;
    tl.placeCursor();
    if (opts.onWindow) opts.onWindow(lo, hi);
  };

  tl.placeCursor = function () {
    var w = width();
    if (tl.cursor === null) {
      dcur.style.display = ocur.style.display = "none";
      return;
    }
    var r = tl.cursor, span = tl.hi - tl.lo + 1;
    ocur.style.display = "block";
    ocur.style.left = GUT + (r - 0.5) * w / g.n + "px";
    var inside = r >= tl.lo && r <= tl.hi;
    dcur.style.display = inside ? "block" : "none";
    dcur.style.left = GUT + (r - tl.lo) * w / span + "px";
    dcur.style.width = Math.max(2, w / span) + "px";
  };

  tl.setWindow = function (lo, hi) {
    var span = Math.max(Math.min(10, g.n), Math.min(g.n, Math.round(hi - lo + 1)));
    lo = Math.round(lo);
    lo = Math.max(1, Math.min(g.n - span + 1, lo));
    tl.lo = lo;
    tl.hi = lo + span - 1;
    tl.draw();
  };

  /* Move the cursor; the window pages along so the cursor stays in view. */
  tl.setCursor = function (r) {
    tl.cursor = r;
    var span = tl.hi - tl.lo + 1;
    if (r < tl.lo || r > tl.hi) {
      tl.setWindow(r - Math.floor(span * 0.1), r - Math.floor(span * 0.1) + span - 1);
    } else {
      tl.placeCursor();
    }
  };

  function zoomBy(f) {
    var span = tl.hi - tl.lo + 1, mid = tl.cursor !== null && tl.cursor >= tl.lo &&
      tl.cursor <= tl.hi ? tl.cursor : (tl.lo + tl.hi) / 2;
    var ns = Math.max(10, Math.round(span * f));
    tl.setWindow(mid - ns / 2, mid - ns / 2 + ns - 1);
  }

  /* Zoom by `f` keeping round `r` under the pointer where it is. */
  function zoomAt(f, r) {
    var span = tl.hi - tl.lo + 1;
    var ns = Math.max(Math.min(10, g.n), Math.min(g.n, Math.round(span * f)));
    var lo = r - (r - tl.lo) * ns / span;
    tl.setWindow(lo, lo + ns - 1);
  }

  /* The wheel over either strip: zoom at the pointer; Shift (or a sideways wheel) moves the
     window along. At a limit (whole game, or 10 rounds) the page scrolls as usual. */
  function onWheel(ev, canvas, lo, span) {
    var cur = tl.hi - tl.lo + 1;
    var sideways = ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY);
    if (sideways) {
      var d = (ev.deltaX || ev.deltaY) > 0 ? 1 : -1;
      if (cur >= g.n) return;
      ev.preventDefault();
      tl.setWindow(tl.lo + d * Math.max(1, Math.round(cur * 0.1)), tl.hi + d *
        Math.max(1, Math.round(cur * 0.1)));
      return;
    }
    var out = ev.deltaY > 0;
    if ((out && cur >= g.n) || (!out && cur <= Math.min(10, g.n))) return;
    ev.preventDefault();
    var r = Math.max(1, Math.min(g.n, roundAt(ev, canvas, lo, span)));
    zoomAt(out ? 1.25 : 0.8, r);
  }
  bAll.onclick = function () { tl.setWindow(1, g.n); };
  bIn.onclick = function () { zoomBy(0.4); };
  bOut.onclick = function () { zoomBy(2.5); };

  // Brush: drag inside to move, drag an edge to resize, drag elsewhere to draw a new window.
  var drag = null;
  function roundAt(ev, canvas, lo, span) {
    var rect = canvas.getBoundingClientRect();
    return lo + (ev.clientX - rect.left) / rect.width * span;
  }
  ov.addEventListener("mousedown", function (ev) {
    var r = roundAt(ev, ocanvas, 1, g.n);
    var rect = brush.getBoundingClientRect();
    var edge = Math.min(5, rect.width / 4);
    // the window is the whole game: any drag draws a new window
    var mode = tl.hi - tl.lo + 1 >= g.n ? "new" :
      ev.clientX < rect.left - 4 || ev.clientX > rect.right + 4 ? "new" :
      ev.clientX < rect.left + edge ? "left" : ev.clientX > rect.right - edge ? "right" : "move";
    drag = {mode: mode, start: r, lo: tl.lo, hi: tl.hi};
    ev.preventDefault();
  });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) return;
    var r = roundAt(ev, ocanvas, 1, g.n), d = r - drag.start;
    if (drag.mode === "move") tl.setWindow(drag.lo + d, drag.hi + d);
    else if (drag.mode === "left") tl.setWindow(Math.min(drag.lo + d, drag.hi - 9), drag.hi);
    else if (drag.mode === "right") tl.setWindow(drag.lo, Math.max(drag.hi + d, drag.lo + 9));
    else if (Math.abs(d) * width() / g.n > 3) {
      tl.setWindow(Math.min(r, drag.start), Math.max(r, drag.start));
    }
  });
  window.addEventListener("mouseup", function (ev) {
    if (drag && drag.mode === "new") {
      var r = roundAt(ev, ocanvas, 1, g.n), span = tl.hi - tl.lo + 1;
      // a click on the strip centres the window there (from the whole game: the default width)
      if (span >= g.n) span = Math.min(g.n, opts.window || 100);
      if (Math.abs(r - drag.start) * width() / g.n <= 3) tl.setWindow(r - span / 2, r + span / 2 - 1);
    }
    drag = null;
  });
  // The zoomed rows: hover for the round, wheel to zoom, click to seek (replay).
  det.addEventListener("mousemove", function (ev) {
    var span = tl.hi - tl.lo + 1, r = Math.floor(roundAt(ev, dcanvas, tl.lo, span));
    if (r < tl.lo || r > tl.hi) { tip.style.display = "none"; return; }
    var parts = ["round " + PDB.fmt(r)];
    var mv = [g.a, g.b], meant = [g.fa, g.fb], fb = [g.xa, g.xb];
    for (var s = 0; s < 2; s++) {
      var t = "AB"[s] + ": " + mv[s][r - 1];
      if (meant[s][r - 1] !== mv[s][r - 1]) t += " (meant " + meant[s][r - 1] + ", noise flip)";
      if (fb[s][r - 1] === "1") t += " (fallback)";
      if (g.talk && g.talk["s" + "ab"[s]][r - 1] === "C" && meant[s][r - 1] === "D") {
        t += " (broken promise)";
      }
      parts.push(t);
    }
    tip.textContent = parts.join(" · ");
    tip.style.top = hint.offsetTop + "px";  // on the hint line: never over the zoom buttons
    tip.style.display = "block";
  });
  det.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  det.addEventListener("wheel", function (ev) {
    onWheel(ev, dcanvas, tl.lo, tl.hi - tl.lo + 1);
  }, {passive: false});
  ov.addEventListener("wheel", function (ev) { onWheel(ev, ocanvas, 1, g.n); }, {passive: false});
  det.addEventListener("click", function (ev) {
    if (!opts.onSeek) return;
    var span = tl.hi - tl.lo + 1, r = Math.floor(roundAt(ev, dcanvas, tl.lo, span));
    if (r >= 1 && r <= g.n) opts.onSeek(r);
  });
  if (opts.onSeek) det.style.cursor = "pointer";
  var legend = PDB.el("div", "pdb-tl-legend", box);
  legend.innerHTML =
    '<span class="sw" style="background:' + colors.C + '"></span>C cooperate' +
    '<span class="sw" style="background:' + colors.D + '"></span>D defect' +
    '<span class="sw" style="background:' + colors.flip + '"></span>noise flip ' +
    "(gold tick above the row, ✚ in wide cells)" +
    '<span class="sw" style="background:#111"></span>fallback after invalid replies ' +
    "(black tick below the row, ▲ in wide cells)" +
    (g.talk ? '<span class="sw" style="background:' + colors.broken + '"></span>broken ' +
      "promise: promised C, chose D (purple tick above the row, ✗ in wide cells)" : "");
  var scale = PDB.el("div", "pdb-share-scale", box);
  scale.appendChild(document.createTextNode("Stretches of many rounds (one pixel column): " +
    "colour = share of C  "));
  PDB.el("span", "pdb-share-end", scale, "0% (all D)");
  var grad = PDB.el("span", "pdb-share-grad", scale);
  grad.style.background = "linear-gradient(to right, " + colors.D + ", " + PDB.SHARE_MID +
    ", " + colors.C + ")";
  PDB.el("span", "pdb-share-end", scale, "100% (all C)");
  window.addEventListener("resize", function () { tl.draw(); });
  tl.draw();
  return tl;
};
