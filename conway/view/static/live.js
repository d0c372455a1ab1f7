"use strict";
(function () {
  const token = document.querySelector('meta[name="conway-token"]').content;
  const tiles = document.getElementById("tiles");
  const note = document.getElementById("live-note");
  const known = new Map();
  const REQUESTS = ["pause", "resume", "stop", "takeover", "handback"];

  function post(path, body) {
    return fetch(path, {method: "POST", headers: {"Content-Type": "application/json", "X-Conway-Token": token},
                        body: JSON.stringify(body)}).then(r => r.json().then(j => ({ok: r.ok, body: j})));
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function makeTile(s) {
    const t = el("section", "tile");
    t.dataset.id = s.id;
    t.dataset.session = s.session || "";
    t.appendChild(el("h2", null, s.session + " · " + s.home));
    const st = el("p"); st.appendChild(el("span", "status")); t.appendChild(st);
    const img = el("img", "screen"); img.alt = "the session's screen"; img.tabIndex = 0; t.appendChild(img);
    const none = el("p", "noscreen", "this session has no screen: nothing to show, nothing to take over");
    none.hidden = true; t.appendChild(none);
    const ctl = el("div", "controls");
    for (const r of REQUESTS) {
      const b = el("button", null, r); b.dataset.request = r;
      b.addEventListener("click", () => {
        b.disabled = true;
        post("/api/control", {id: s.id, request: r}).then(res => {
          t.querySelector(".error").textContent = res.ok ? "" : res.body.error;
          t.querySelector(".answer").textContent = res.ok ? res.body.answer : "";
        }).finally(() => { b.disabled = false; });
      });
      ctl.appendChild(b);
    }
    t.appendChild(ctl);
    t.appendChild(el("p", "answer")); t.appendChild(el("p", "error"));
    t.appendChild(el("h3", null, "current decision")); t.appendChild(el("div", "decision"));
    t.appendChild(el("h3", null, "last actions")); t.appendChild(el("ul", "last"));
    img.addEventListener("click", ev => {
      if (!t.classList.contains("taken") || !img.naturalWidth) return;
      const box = img.getBoundingClientRect();
      const x = Math.round((ev.clientX - box.left) * img.naturalWidth / box.width);
      const y = Math.round((ev.clientY - box.top) * img.naturalHeight / box.height);
      img.focus();
      post("/api/input", {id: s.id, type: "click", x: x, y: y, button: "left"}).then(res => {
        t.querySelector(".error").textContent = res.ok ? "" : res.body.error;
      });
    });
    img.addEventListener("keydown", ev => {
      if (!t.classList.contains("taken")) return;
      ev.preventDefault();
      const body = ev.key.length === 1 && !ev.ctrlKey && !ev.altKey && !ev.metaKey
        ? {id: s.id, type: "type", text: ev.key} : {id: s.id, type: "key", key: ev.key};
      post("/api/input", body).then(res => { t.querySelector(".error").textContent = res.ok ? "" : res.body.error; });
    });
    tiles.appendChild(t);
    const state = {tile: t, img: img, busy: false, url: null};
    known.set(s.id, state);
    return state;
  }

  function update(state, s) {
    const t = state.tile;
    t.dataset.status = s.status;
    t.classList.toggle("taken", s.status === "taken over");
    state.img.hidden = !s.display;
    state.img.alt = s.display ? "the session's screen" : "this session has no screen";
    // a session with no screen (the mock's synthetic one) has no image to show and no display a person could act on
    t.querySelector(".noscreen").hidden = !!s.display;
    for (const r of ["takeover", "handback"]) t.querySelector("button[data-request=" + r + "]").hidden = !s.display;
    t.querySelector(".status").textContent = s.status + (s.step != null ? " · step " + s.step : "") +
      (s.phase ? " (" + s.phase + ")" : "") + (s.model ? " · " + s.model : "") + (s.video ? " · video: " + s.video : "");
    const d = s.decision;
    t.querySelector(".decision").textContent = d ? "step " + d.step + (d.discarded ? " (discarded)" : "") + ": " +
      (d.thought || "") + "\n→ " + d.actions.join("; ") : "none yet";
    const ul = t.querySelector(".last"); ul.textContent = "";
    for (const line of s.last) ul.appendChild(el("li", null, line));
  }

  function refreshScreen(id, state) {
    if (state.busy) return;
    state.busy = true;
    fetch("/api/screen?id=" + encodeURIComponent(id), {headers: {"X-Conway-Token": token}})
      .then(r => r.ok ? r.blob() : null)
      .then(b => {
        if (!b) return;
        const url = URL.createObjectURL(b);
        state.img.onload = () => { if (state.url) URL.revokeObjectURL(state.url); state.url = url; };
        state.img.src = url;
        state.img.dataset.frames = String(Number(state.img.dataset.frames || 0) + 1);
      })
      .catch(() => {})
      .finally(() => { state.busy = false; });
  }

  function poll() {
    fetch("/api/live", {headers: {"X-Conway-Token": token}}).then(r => r.json()).then(data => {
      const seen = new Set();
      for (const s of data.sessions) {
        seen.add(s.id);
        update(known.get(s.id) || makeTile(s), s);
      }
      for (const [id, state] of known) {
        if (!seen.has(id)) { state.tile.remove(); known.delete(id); }
      }
      note.textContent = data.sessions.length ? data.sessions.length + " running session(s)" :
        "no session is running (this page follows new ones as they start)";
    }).catch(() => { note.textContent = "the server does not answer"; });
  }

  poll();
  setInterval(poll, 1000);
  setInterval(() => { for (const [id, state] of known) if (!state.img.hidden) refreshScreen(id, state); }, 400);
})();
