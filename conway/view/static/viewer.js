/* Conway viewer: timeline, filters, keyboard, zoom and (with --serve) review. Vanilla JS, no build step.
   Text from the model is only ever set with textContent; nothing here builds HTML from data. */
(function () {
  "use strict";
  var body = document.body;
  var D = window.CONWAY_DATA;
  if (!D || (body.dataset.view !== "session" && body.dataset.view !== "report")) return;
  var page = +body.dataset.page || 1;
  var n = D.steps.length;
  var stepToIndex = new Map();
  D.steps.forEach(function (s, i) { stepToIndex.set(String(s), i); });
  var cards = new Map();
  document.querySelectorAll("article.card").forEach(function (c) { cards.set(+c.dataset.index, c); });
  var f = { kind: "", outcome: "", q: "" };
  var current = -1;
  var fk = document.getElementById("f-kind"), fo = document.getElementById("f-outcome"), ft = document.getElementById("f-text");
  var count = document.getElementById("f-count");
  var canvas = document.getElementById("timeline");

  function pageOf(i) { return Math.floor(i / D.page_size) + 1; }
  function pageFile(p) { return "page-" + String(p).padStart(4, "0") + ".html"; }
  function matches(i) {
    if (f.kind && D.kind[i] !== f.kind) return false;
    if (f.outcome && D.outcome[i] !== f.outcome) return false;
    if (f.q && String(D.text[i] || "").toLowerCase().indexOf(f.q.toLowerCase()) < 0) return false;
    return true;
  }
  function hashFor(i) {
    var p = new URLSearchParams();
    if (i >= 0) p.set("s", D.steps[i]);
    if (f.kind) p.set("kind", f.kind);
    if (f.outcome) p.set("outcome", f.outcome);
    if (f.q) p.set("q", f.q);
    return "#" + p.toString();
  }
  function setHash(i) {  // no bare "#" left behind when there is nothing to keep
    var h = hashFor(i);
    history.replaceState(null, "", h === "#" ? location.pathname + location.search : h);
  }
  function readHash() {
    var p = new URLSearchParams(location.hash.slice(1));
    f.kind = p.get("kind") || ""; f.outcome = p.get("outcome") || ""; f.q = p.get("q") || "";
    if (fk) fk.value = f.kind;
    if (fo) fo.value = f.outcome;
    if (ft) ft.value = f.q;
    var s = p.get("s");
    return s !== null && stepToIndex.has(s) ? stepToIndex.get(s) : -1;
  }
  function go(i) {
    if (i < 0 || i >= n) return;
    if (pageOf(i) !== page) { location.href = pageFile(pageOf(i)) + hashFor(i); return; }
    select(i, true);
  }
  function select(i, scroll) {
    if (current >= 0 && cards.get(current)) cards.get(current).classList.remove("current");
    current = i;
    var c = cards.get(i);
    if (c) {
      c.hidden = false;
      c.classList.add("current");
      if (scroll) c.scrollIntoView({ block: "start" });
    }
    setHash(i);
    draw();
  }
  function apply() {
    var shown = 0, total = 0;
    cards.forEach(function (c, i) { var m = matches(i); c.hidden = !m; if (m) shown++; });
    for (var i = 0; i < n; i++) if (matches(i)) total++;
    if (count) count.textContent = total + " of " + n + " match" + (D.pages > 1 ? " (" + shown + " on this page)" : "");
    setHash(current);
    draw();
  }
  function next(from, dir, pred) {
    for (var i = from + dir; i >= 0 && i < n; i += dir) if (matches(i) && (!pred || pred(i))) return i;
    return -1;
  }
  function firstOnPage() {
    var lo = (page - 1) * D.page_size;
    return lo - 1;
  }

  // --- timeline: one mark per step, coloured by outcome; filtered-out steps are faint ---
  var colours = {};
  var css = getComputedStyle(document.documentElement);
  D.outcomes.forEach(function (o) { colours[o] = css.getPropertyValue("--" + o).trim() || "#999"; });
  function draw() {
    if (!canvas) return;
    var dpr = window.devicePixelRatio || 1;
    var w = canvas.clientWidth, h = canvas.clientHeight;
    canvas.width = Math.max(1, Math.round(w * dpr)); canvas.height = Math.max(1, Math.round(h * dpr));
    var g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    var per = w / Math.max(n, 1);
    var pageLo = (page - 1) * D.page_size, pageHi = Math.min(n, page * D.page_size);
    g.fillStyle = "rgba(34,87,201,.10)";
    g.fillRect(pageLo * per, 0, (pageHi - pageLo) * per, h);
    var rank = {}; D.outcomes.forEach(function (o, k) { rank[o] = k; });
    var cols = per >= 1 ? n : Math.ceil(w);
    for (var k = 0; k < cols; k++) {
      var lo = per >= 1 ? k : Math.floor(k / per), hi = per >= 1 ? k + 1 : Math.min(n, Math.floor((k + 1) / per));
      if (hi <= lo) hi = lo + 1;
      var best = null, any = false;
      for (var i = lo; i < hi && i < n; i++) {
        var m = matches(i); any = any || m;
        if (best === null || rank[D.outcome[i]] < rank[best]) best = D.outcome[i];
      }
      if (best === null) continue;
      g.globalAlpha = any ? 1 : 0.18;
      g.fillStyle = colours[best] || "#999";
      var x = per >= 1 ? k * per : k, bw = per >= 1 ? Math.max(1, per - (per > 4 ? 1 : 0)) : 1;
      var tall = D.error_outcomes.indexOf(best) >= 0;
      g.fillRect(x, tall ? 2 : 7, bw, tall ? h - 4 : h - 14);
    }
    g.globalAlpha = 1;
    if (current >= 0) {
      g.fillStyle = "#111";
      g.fillRect(current * per + per / 2 - 1, 0, 2, h);
    }
  }
  if (canvas) {
    canvas.addEventListener("click", function (ev) {
      var r = canvas.getBoundingClientRect();
      var i = Math.min(n - 1, Math.max(0, Math.floor((ev.clientX - r.left) / r.width * n)));
      go(i);
    });
    window.addEventListener("resize", draw);
  }

  // --- filters and keyboard ---
  function onFilter() {
    f.kind = fk ? fk.value : ""; f.outcome = fo ? fo.value : ""; f.q = ft ? ft.value : "";
    if (current >= 0 && !matches(current)) {
      if (cards.get(current)) cards.get(current).classList.remove("current");
      current = -1;
    }
    apply();
  }
  [fk, fo].forEach(function (el) { if (el) el.addEventListener("change", onFilter); });
  if (ft) ft.addEventListener("input", onFilter);
  document.addEventListener("keydown", function (ev) {
    var t = ev.target;
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) return;
    var from = current >= 0 ? current : firstOnPage();
    var i = -1;
    if (ev.key === "ArrowRight") i = next(from, 1);
    else if (ev.key === "ArrowLeft") i = next(current >= 0 ? current : from + 1, -1);
    else if (ev.key === "e") i = next(from, 1, function (k) { return D.error_outcomes.indexOf(D.outcome[k]) >= 0; });
    else return;
    ev.preventDefault();
    if (i >= 0) go(i);
  });
  window.addEventListener("hashchange", function () { var i = readHash(); apply(); if (i >= 0) select(i, true); });
  document.querySelectorAll("article.card a.step").forEach(function (a) {  // keep the filters: select, no new hash
    a.addEventListener("click", function (ev) { ev.preventDefault(); select(+a.closest("article.card").dataset.index, true); });
  });

  // --- screenshots: click to toggle full size (or, while correcting, to set the point) ---
  document.querySelectorAll(".frame").forEach(function (fr) {
    fr.addEventListener("click", function (ev) {
      var card = fr.closest("article.card");
      if (card.classList.contains("picking")) { pick(card, fr, ev); return; }
      var img = fr.querySelector("img");
      var big = card.classList.toggle("big");
      if (img && img.dataset.full) img.src = big ? img.dataset.full : img.dataset.thumb;
      select(+card.dataset.index, false);
    });
  });

  // --- review (served pages only: the POST needs the server's token) ---
  var tokenMeta = document.querySelector('meta[name="conway-token"]');
  var SVGNS = "http://www.w3.org/2000/svg";
  function pick(card, fr, ev) {
    var r = (fr.querySelector("svg") || fr).getBoundingClientRect();  // the image's box, inside the border
    var w = +fr.dataset.w, h = +fr.dataset.h;
    if (!w || !h) return;
    var x = Math.round((ev.clientX - r.left) * w / r.width), y = Math.round((ev.clientY - r.top) * h / r.height);
    x = Math.min(w - 1, Math.max(0, x)); y = Math.min(h - 1, Math.max(0, y));
    card.querySelector(".c-x").value = x; card.querySelector(".c-y").value = y;
    showPoint(card, x, y);
  }
  function showPoint(card, x, y) {
    var fr = card.querySelector(".frame"), svg = fr && fr.querySelector("svg");
    if (!svg) return;
    var old = svg.querySelector(".mark.picked"); if (old) old.remove();
    var w = +fr.dataset.w, h = +fr.dataset.h, r = Math.max(w, h) / 70;
    var g = document.createElementNS(SVGNS, "g");
    g.setAttribute("class", "mark corrected picked");
    g.setAttribute("data-x", x); g.setAttribute("data-y", y);
    [["circle", { cx: x, cy: y, r: r }], ["circle", { cx: x, cy: y, r: Math.max(r / 4, 1.5), "class": "dot" }]].forEach(function (d) {
      var el = document.createElementNS(SVGNS, d[0]);
      Object.keys(d[1]).forEach(function (k) { el.setAttribute(k, d[1][k]); });
      g.appendChild(el);
    });
    svg.appendChild(g);
  }
  function status(card, text, good) {
    var s = card.querySelector(".review .status");
    s.textContent = text; s.className = "status " + (good ? "good" : "bad");
  }
  function send(card, verdict, corrected, note) {
    var payload = { session: card.dataset.session, step: +card.dataset.step, verdict: verdict, note: note || "" };
    if (corrected) payload.corrected_action = corrected;
    status(card, "saving…", true);
    return fetch("/api/label", {
      method: "POST", headers: { "Content-Type": "application/json", "X-Conway-Token": tokenMeta.content },
      body: JSON.stringify(payload)
    }).then(function (r) {
      return r.json().then(function (j) { return { ok: r.ok, j: j }; });
    }).then(function (res) {
      if (!res.ok) { status(card, res.j.error || "not saved", false); return; }
      status(card, "saved: " + verdict + (corrected ? " with a corrected action" : ""), true);
      card.querySelectorAll(".review button[data-verdict]").forEach(function (b) {
        b.classList.toggle("on", b.dataset.verdict === verdict);
      });
      var line = card.querySelector(".label-line");
      if (line) {
        line.textContent = "";
        var k = document.createElement("span"); k.className = "k"; k.textContent = "label"; line.appendChild(k);
        line.appendChild(document.createTextNode(res.j.summary || verdict));
      }
      D.label[+card.dataset.index] = verdict;
      card.classList.remove("picking");
      var c = card.querySelector(".correction"); if (c) c.hidden = true;
    }).catch(function (e) { status(card, "not saved: " + e, false); });
  }
  if (tokenMeta) {
    document.querySelectorAll("article.card .review").forEach(function (rv) {
      var card = rv.closest("article.card");
      rv.querySelectorAll("button[data-verdict]").forEach(function (b) {
        b.addEventListener("click", function () {
          select(+card.dataset.index, false);
          if (b.dataset.verdict === "wrong") {
            rv.querySelector(".correction").hidden = false;
            card.classList.add("picking");
            status(card, "click the screenshot where the action should have been, then save", true);
          } else {
            send(card, b.dataset.verdict, null, "");
          }
        });
      });
      rv.querySelector(".c-cancel").addEventListener("click", function () {
        rv.querySelector(".correction").hidden = true; card.classList.remove("picking"); status(card, "", true);
      });
      rv.querySelector(".c-save").addEventListener("click", function () {
        var js = rv.querySelector(".c-json").value.trim(), corrected = null;
        var x = rv.querySelector(".c-x").value, y = rv.querySelector(".c-y").value;
        var t = rv.querySelector(".c-type").value, text = rv.querySelector(".c-text").value;
        var point = x !== "" && y !== "";
        if (js) {
          try { corrected = JSON.parse(js); } catch (e) { status(card, "the corrected action is not JSON: " + e.message, false); return; }
        } else if (t === "type" && text) {
          corrected = { type: "type", text: text };
        } else if (t === "key" && text) {
          corrected = { type: "key", key: text.trim() };
        } else if (t === "hotkey" && text) {
          corrected = { type: "hotkey", keys: text.split("+").map(function (k) { return k.trim(); }) };
        } else if (t === "scroll" && text) {
          corrected = { type: "scroll", dy: +text };
          if (point) { corrected.x = +x; corrected.y = +y; }
        } else if (point && ["type", "key", "hotkey", "scroll"].indexOf(t) < 0) {
          corrected = { type: t, x: +x, y: +y };
        } else if (point || text) {
          status(card, t + " needs " + (["type", "key", "hotkey", "scroll"].indexOf(t) >= 0 ? "the text field" : "a point"), false);
          return;
        }
        send(card, "wrong", corrected, rv.querySelector(".c-note").value);
      });
    });
  }

  var start = readHash();
  apply();
  if (start >= 0 && pageOf(start) === page) select(start, true);
})();
