// pincer dashboard: follows the decision trace live and polls pincer's status.
"use strict";

const $ = (id) => document.getElementById(id);
const MAX_ROWS = 500;
const SVG = "http://www.w3.org/2000/svg";

// T holds the page's texts in its locale, by key (see package texts).
const T = JSON.parse(document.body.dataset.texts);

// tr returns the text of key with args in place of its verbs: %s, %d, or
// %[n]s and %[n]d for the nth argument.
function tr(key, ...args) {
  let next = 0;
  return T[key].replace(/%(?:\[(\d+)\])?[sd]/g, (_, n) => {
    const i = n ? Number(n) - 1 : next;
    next = i + 1;
    return String(args[i]);
  });
}

// el makes an element with a class and text; text is never parsed as HTML.
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

function isZero(iso) { return !iso || iso.startsWith("0001-"); }

function fmtTime(iso) {
  if (isZero(iso)) return "";
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  const lang = document.documentElement.lang; // the page's locale, not the browser's
  return today ? d.toLocaleTimeString(lang) : d.toLocaleString(lang);
}

function fmtDuration(ms) {
  let s = Math.max(0, Math.floor(ms / 1000));
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  if (d) return tr("dashboard.daysHours", d, h);
  if (h) return tr("dashboard.hoursMinutes", h, m);
  if (m) return tr("dashboard.minutesSeconds", m, s);
  return tr("dashboard.seconds", s);
}

async function getJSON(url) {
  const res = await fetch(url, { credentials: "same-origin", cache: "no-store" });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

// outcomeOf is the last verdict among a record's steps.
function outcomeOf(rec) {
  for (let i = rec.steps.length - 1; i >= 0; i--) if (rec.steps[i].outcome) return rec.steps[i].outcome;
  return "";
}

function outcomeClass(o) {
  if (/fail|error|refused|timed out/i.test(o)) return "bad";
  if (/^not |^no |dropped|ignored|skipped|silent|held/i.test(o)) return "skip";
  if (/sent|triggered|replied|answered/i.test(o)) return "good";
  return "info";
}

function recKey(rec) { return rec.chat + "|" + rec.key.id; }

// ---- decision rows ----

const expanded = new Set();

function stepsList(rec) {
  const ol = el("ol", "steps");
  for (const s of rec.steps) {
    const li = el("li", "step");
    li.append(el("time", "muted", fmtTime(s.at)), el("span", "stage", s.stage));
    if (s.outcome) li.append(el("span", "badge " + outcomeClass(s.outcome), s.outcome));
    li.append(el("span", "detail", s.detail));
    ol.append(li);
  }
  return ol;
}

// fillRow renders a record into its list item.
function fillRow(li, rec) {
  li.replaceChildren();
  li.dataset.ms = String(Date.parse(rec.at));
  li.dataset.key = recKey(rec);
  const o = outcomeOf(rec);
  const head = el("div", "row");
  head.tabIndex = 0;
  head.setAttribute("role", "button");
  head.setAttribute("aria-expanded", expanded.has(recKey(rec)) ? "true" : "false");
  const chat = el("a", "chat", rec.chat);
  chat.href = "#chat=" + encodeURIComponent(rec.chat);
  chat.addEventListener("click", (e) => { e.preventDefault(); e.stopPropagation(); showChat(rec.chat); });
  head.append(el("time", "muted", fmtTime(rec.at)), chat, el("span", "sender", rec.sender || ""),
    el("span", "preview", rec.preview || ""), el("span", "badge outcome " + outcomeClass(o), o || "…"));
  const toggle = () => {
    const k = recKey(rec);
    if (expanded.has(k)) expanded.delete(k); else expanded.add(k);
    fillRow(li, li.rec);
  };
  head.addEventListener("click", toggle);
  head.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); } });
  li.append(head);
  if (expanded.has(recKey(rec))) { li.classList.add("open"); li.append(stepsList(rec)); } else li.classList.remove("open");
  li.rec = rec;
  li.hidden = !matchesFilter(rec);
}

// upsert shows rec in list, keeping it newest first; a snapshot with fewer
// steps than the one shown is older and ignored.
function upsert(list, rows, rec, max) {
  const k = recKey(rec);
  const li = rows.get(k);
  if (li) {
    if (rec.steps.length >= li.rec.steps.length) fillRow(li, rec);
    return;
  }
  const n = el("li", "decision");
  fillRow(n, rec);
  rows.set(k, n);
  let before = null;
  const ms = Date.parse(rec.at);
  for (const c of list.children) { if (Number(c.dataset.ms) < ms) { before = c; break; } }
  list.insertBefore(n, before);
  while (list.children.length > max) {
    const last = list.lastElementChild;
    rows.delete(last.dataset.key);
    last.remove();
  }
}

const stream = $("stream");
const streamRows = new Map();

function streamChanged() { $("stream-empty").hidden = stream.children.length > 0; }

function matchesFilter(rec) {
  const f = $("filter").value.trim().toLowerCase();
  if (!f) return true;
  return [rec.chat, rec.sender, rec.preview, outcomeOf(rec)].some((v) => (v || "").toLowerCase().includes(f));
}

$("filter").addEventListener("input", () => {
  for (const li of stream.children) li.hidden = !matchesFilter(li.rec);
});

async function loadRecent() {
  try {
    const body = await getJSON("api/trace?limit=200");
    for (const rec of body.records) upsert(stream, streamRows, rec, MAX_ROWS);
    streamChanged();
  } catch (e) {
    $("live").textContent = tr("dashboard.traceFailed", e.message);
  }
}

function follow() {
  const es = new EventSource("api/trace/stream");
  es.addEventListener("open", () => {
    $("live").textContent = tr("dashboard.live");
    $("live").className = "ok";
    loadRecent(); // fills in what was missed while disconnected
  });
  es.addEventListener("error", () => {
    $("live").textContent = tr("dashboard.reconnecting");
    $("live").className = "bad";
  });
  es.addEventListener("step", (e) => {
    const ev = JSON.parse(e.data);
    upsert(stream, streamRows, ev.record, MAX_ROWS);
    streamChanged();
    if (ev.record.chat === currentChat) scheduleChat();
  });
}

// ---- status ----

function fact(dl, name, value) {
  if (value === undefined || value === null || value === "") return;
  dl.append(el("dt", "", name), el("dd", "", value));
}

function renderStatus(st) {
  $("version").textContent = st.version ? "pincer " + st.version : "";
  const dl = $("facts");
  dl.replaceChildren();
  fact(dl, tr("dashboard.version"), st.version);
  if (!isZero(st.started)) {
    fact(dl, tr("dashboard.started"), fmtTime(st.started));
    fact(dl, tr("dashboard.uptime"), fmtDuration(new Date(st.now) - new Date(st.started)));
  }
  renderConfig(st.config);
  renderQueues(st.queues);
  renderTokens(st.tokens);
  renderAccounts(st.accounts);
  renderErrors(st.errors);
  renderRates(st.rates);
}

function renderConfig(c) {
  const box = $("config");
  box.replaceChildren();
  const head = el("p", "", tr("dashboard.config"));
  const bad = c.errors.length > 0;
  head.append(el("span", "badge " + (bad ? "bad" : c.ok ? "good" : "skip"),
    bad ? tr("dashboard.configErrors", c.errors.length)
      : c.warnings.length ? tr("dashboard.configWarnings", c.warnings.length)
        : tr(c.ok ? "dashboard.configOK" : "dashboard.configUnknown")));
  box.append(head);
  const ul = el("ul", "lines");
  for (const e of c.errors) ul.append(el("li", "bad", e));
  for (const w of c.warnings) ul.append(el("li", "warn", w));
  if (ul.children.length) box.append(ul);
}

function renderQueues(qs) {
  const box = $("queues");
  box.replaceChildren();
  if (!qs.length) return;
  box.append(el("h3", "", tr("dashboard.queues")));
  for (const q of qs) {
    const row = el("div", "queue");
    const meter = el("meter");
    meter.max = q.capacity || 1;
    meter.value = q.depth;
    meter.high = (q.capacity || 1) * 0.8;
    row.append(el("span", "", q.name), meter, el("span", "muted", q.depth + " / " + q.capacity));
    box.append(row);
  }
}

// renderTokens lists today's largest token use by people and by chats.
function renderTokens(t) {
  const box = $("tokens");
  box.replaceChildren();
  if (!t || (!t.users.length && !t.chats.length)) return;
  box.append(el("h3", "", tr("dashboard.tokens", t.day)));
  for (const [key, list] of [["dashboard.tokensUsers", t.users], ["dashboard.tokensChats", t.chats]]) {
    if (!list.length) continue;
    const dl = el("dl", "tokens");
    dl.append(el("dt", "muted", tr(key)), el("dd"));
    for (const c of list) fact(dl, c.key, String(c.tokens));
    box.append(dl);
  }
}

function stateClass(s) {
  if (s === "connected") return "good";
  if (s === "failed" || s === "refused") return "bad";
  return "skip";
}

function renderAccounts(accts) {
  const box = $("accounts");
  box.replaceChildren();
  if (!accts.length) { box.append(el("p", "muted", tr("dashboard.noAccounts"))); return; }
  for (const a of accts) {
    const card = el("div", "account");
    card.dataset.account = a.channel + ":" + a.id;
    const head = el("div", "account-head");
    head.append(el("strong", "", a.channel + ":" + a.id), el("span", "badge state " + stateClass(a.state), a.state || tr("dashboard.stateUnknown")));
    card.append(head);
    const dl = el("dl");
    const self = [a.name, a.self ? "(" + a.self + ")" : ""].filter(Boolean).join(" ");
    fact(dl, tr("dashboard.bot"), self);
    fact(dl, tr("dashboard.implementation"), [a.implementation, a.version].filter(Boolean).join(" "));
    if (a.last_error) fact(dl, tr("dashboard.lastError"), a.last_error + (isZero(a.last_error_at) ? "" : " (" + fmtTime(a.last_error_at) + ")"));
    if (a.hint) fact(dl, tr("dashboard.hint"), a.hint);
    if (!isZero(a.last_pong)) fact(dl, tr("dashboard.lastPong"), fmtTime(a.last_pong));
    card.append(dl);
    box.append(card);
  }
}

function renderErrors(lines) {
  const ul = $("errors");
  ul.replaceChildren();
  if (!lines.length) { ul.append(el("li", "muted", tr("dashboard.none"))); return; }
  for (const l of lines) {
    const li = el("li", l.level === "ERROR" ? "bad" : "warn");
    li.append(el("time", "muted", fmtTime(l.at)), el("span", "", " " + l.message + " "), el("code", "", l.attrs || ""));
    ul.append(li);
  }
}

// renderRates draws the series as bars (messages) and a line (replies).
function renderRates(rates) {
  const pts = rates.points;
  const W = 600, H = 140, P = 18;
  const max = Math.max(1, ...pts.map((p) => Math.max(p.messages, p.replies)));
  const bw = (W - P) / pts.length;
  const y = (v) => H - P - (v / max) * (H - 2 * P);
  const chart = svg("svg", { id: "rate-chart", viewBox: "0 0 " + W + " " + H, role: "img" });
  const title = svg("title");
  const totalM = pts.reduce((a, p) => a + p.messages, 0), totalR = pts.reduce((a, p) => a + p.replies, 0);
  const minutes = Math.round(pts.length * rates.bucket_seconds / 60);
  title.textContent = tr("dashboard.ratesSummary", minutes, totalM, totalR);
  chart.append(title);
  chart.append(svg("line", { x1: P, y1: H - P, x2: W, y2: H - P, class: "axis" }));
  const top = svg("text", { x: 0, y: P - 4, class: "tick" });
  top.textContent = String(max);
  chart.append(top);
  const now = svg("text", { x: W, y: H - 4, class: "tick end" });
  now.textContent = tr("dashboard.now");
  chart.append(now);
  const ago = svg("text", { x: P, y: H - 4, class: "tick" });
  ago.textContent = tr("dashboard.minutesAgo", minutes);
  chart.append(ago);
  pts.forEach((p, i) => {
    if (!p.messages) return;
    const r = svg("rect", { x: P + i * bw + 0.5, y: y(p.messages), width: Math.max(1, bw - 1), height: H - P - y(p.messages), class: "bar-messages" });
    const t = svg("title");
    t.textContent = tr("dashboard.bar", fmtTime(p.at), p.messages, p.replies);
    r.append(t);
    chart.append(r);
  });
  const line = pts.map((p, i) => (P + i * bw + bw / 2).toFixed(1) + "," + y(p.replies).toFixed(1)).join(" ");
  chart.append(svg("polyline", { points: line, class: "line-replies" }));
  $("rates").replaceChildren(chart);
  $("rates-total").textContent = "(" + title.textContent + ")";
}

async function pollStatus() {
  try {
    renderStatus(await getJSON("api/dashboard/status"));
  } catch (e) {
    $("facts").replaceChildren(el("p", "bad", tr("dashboard.statusFailed", e.message)));
  }
}

// ---- chat view ----

let currentChat = "";
let chatTimer = 0;

function scheduleChat() {
  if (chatTimer) return;
  chatTimer = setTimeout(() => { chatTimer = 0; if (currentChat) loadChat(currentChat); }, 500);
}

function section(title) {
  const s = el("div", "chat-section");
  s.append(el("h3", "", title));
  return s;
}

async function loadChat(chat) {
  const box = $("chat-view");
  let view, traces;
  try {
    [view, traces] = await Promise.all([
      getJSON("api/dashboard/chat?chat=" + encodeURIComponent(chat)),
      getJSON("api/trace?limit=50&chat=" + encodeURIComponent(chat)),
    ]);
  } catch (e) {
    box.replaceChildren(el("p", "bad", e.message));
    return;
  }
  if (chat !== currentChat) return;
  box.replaceChildren(el("p", "chat-name", view.chat));

  const sess = section(tr("dashboard.session"));
  if (view.session) {
    const dl = el("dl");
    fact(dl, tr("dashboard.sessionKey"), view.session.key);
    fact(dl, tr("dashboard.model"), view.session.model);
    fact(dl, tr("dashboard.turns"), String(view.session.turns));
    if (!isZero(view.session.updated)) fact(dl, tr("dashboard.updated"), fmtTime(view.session.updated));
    sess.append(dl);
  } else sess.append(el("p", "muted", tr("dashboard.noSession")));
  box.append(sess);

  const win = section(tr("dashboard.window"));
  if (view.window) {
    win.append(el("p", "", tr("dashboard.windowOpen", fmtTime(view.window.opened), view.window.messages) +
      (isZero(view.window.closes) ? "" : tr("dashboard.windowFlush", fmtTime(view.window.closes)))));
  } else win.append(el("p", "muted", tr("dashboard.noWindow")));
  box.append(win);

  const hist = section(tr("dashboard.history", view.history.length));
  if (view.history.length) {
    const ul = el("ul", "lines");
    for (const l of view.history) {
      const li = el("li");
      li.append(el("time", "muted", fmtTime(l.at)), el("strong", "", " " + l.sender + ": "), el("span", "", l.text));
      ul.append(li);
    }
    hist.append(ul);
  } else hist.append(el("p", "muted", tr("dashboard.empty")));
  box.append(hist);

  const dig = section(tr("dashboard.digests"));
  if (view.digests.length) {
    const ul = el("ul", "lines");
    for (const d of view.digests) {
      const li = el("li");
      li.append(el("time", "muted", fmtTime(d.at)), el("p", "digest", d.text));
      ul.append(li);
    }
    dig.append(ul);
  } else dig.append(el("p", "muted", tr("dashboard.none")));
  box.append(dig);

  if (view.settings && view.settings.length) {
    const set = section(tr("dashboard.settings"));
    const table = el("table", "settings");
    for (const s of view.settings) {
      const row = el("tr");
      row.append(el("td", "", s.path), el("td", "", s.value), el("td", "muted", s.layer));
      table.append(row);
    }
    set.append(table);
    box.append(set);
  }

  const recent = section(tr("dashboard.recent"));
  const ol = el("ol", "chat-traces");
  const rows = new Map();
  for (const rec of traces.records) upsert(ol, rows, rec, 50);
  recent.append(traces.records.length ? ol : el("p", "muted", tr("dashboard.noTraced")));
  box.append(recent);
}

function showChat(chat) {
  chat = chat.trim();
  if (!chat) return;
  currentChat = chat;
  $("chat-input").value = chat;
  history.replaceState(null, "", "#chat=" + encodeURIComponent(chat));
  loadChat(chat);
  $("chat-card").scrollIntoView({ behavior: "smooth", block: "start" });
}

$("chat-form").addEventListener("submit", (e) => { e.preventDefault(); showChat($("chat-input").value); });

// ---- start ----

follow();
pollStatus();
setInterval(pollStatus, 5000);
setInterval(() => { if (currentChat) loadChat(currentChat); }, 10000);
const m = location.hash.match(/^#chat=(.+)$/);
if (m) showChat(decodeURIComponent(m[1]));
streamChanged();
