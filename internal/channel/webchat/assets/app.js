// pincer web chat: posts messages and renders the streamed reply events.
// It uses no API limited to secure contexts, so it works as well when
// opened by IP address over plain HTTP.
"use strict";

const $ = (id) => document.getElementById(id);
const log = $("log");
const form = $("composer");
const input = $("input");
const send = $("send");
const stop = $("stop");
const newChat = $("new");
const status = $("status");
const model = $("model");
const welcome = $("welcome");

// T holds the page's texts in its locale, by key (see package texts).
const T = JSON.parse(document.body.dataset.texts);

// tr returns the text of key with args in place of its %s.
function tr(key, ...args) {
  let i = 0;
  return T[key].replace(/%s/g, () => String(args[i++]));
}

// The style sheet marks a reply cut short (.msg.stopped::after) with this.
document.documentElement.style.setProperty("--stopped-mark", JSON.stringify(tr("webchat.stoppedMark")));

// current is the bubble of the reply being streamed, null when idle.
let current = null;

// newID returns 128 random bits in hex for an idempotent post, or "" so
// the server issues one. crypto.getRandomValues, unlike randomUUID, works
// outside secure contexts.
function newID() {
  const c = window.crypto;
  if (!c || typeof c.getRandomValues !== "function") return "";
  return Array.from(c.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function setStatus(text, kind) {
  status.textContent = text;
  status.dataset.kind = kind || "";
}

function scrollDown() { log.scrollTop = log.scrollHeight; }

function updateWelcome() { welcome.hidden = log.querySelector(".msg") !== null; }

function bubble(role, text, extra) {
  const div = document.createElement("div");
  div.className = "msg " + role + (extra ? " " + extra : "");
  div.textContent = text;
  log.appendChild(div);
  updateWelcome();
  scrollDown();
  return div;
}

function note(text) {
  const div = document.createElement("div");
  div.className = "note";
  div.textContent = text;
  log.appendChild(div);
  scrollDown();
  return div;
}

function clearView() {
  for (const el of Array.from(log.children)) if (el !== welcome) el.remove();
  updateWelcome();
}

// The server renders replies from Markdown without raw HTML. As a second
// line of defence the page keeps only these elements and attributes, and
// links only to http, https and mailto.
const allowedTags = new Set(["P", "BR", "STRONG", "EM", "DEL", "CODE", "PRE", "A", "UL", "OL", "LI", "BLOCKQUOTE",
  "H1", "H2", "H3", "H4", "H5", "H6", "HR", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD"]);
const allowedAttrs = {
  A: (name, value) => (name === "href" && /^(https?:|mailto:)/i.test(value)) || name === "target" || name === "rel",
  CODE: (name, value) => name === "class" && /^language-[\w+#.-]+$/.test(value),
  TH: (name) => name === "align",
  TD: (name) => name === "align",
  OL: (name) => name === "start",
};

function sanitize(root) {
  for (const el of Array.from(root.querySelectorAll("*"))) {
    if (!allowedTags.has(el.tagName)) {
      el.replaceWith(document.createTextNode(el.textContent));
      continue;
    }
    for (const attr of Array.from(el.attributes)) {
      const ok = allowedAttrs[el.tagName];
      if (!ok || !ok(attr.name, attr.value)) el.removeAttribute(attr.name);
    }
  }
}

// copyText copies text to the clipboard: with the Clipboard API where the
// page may use it (secure contexts only), else through a hidden textarea
// and execCommand("copy"), which works over plain HTTP too.
async function copyText(text) {
  if (window.isSecureContext && navigator.clipboard && navigator.clipboard.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (_) { /* denied: fall back */ }
  }
  const ta = document.createElement("textarea");
  ta.value = text;
  ta.setAttribute("readonly", "");
  ta.className = "offscreen";
  document.body.appendChild(ta);
  const focused = document.activeElement;
  ta.focus();
  ta.select();
  ta.setSelectionRange(0, text.length);
  let ok = false;
  try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
  ta.remove();
  if (focused && focused.focus) focused.focus();
  return ok;
}

// decorate gives code blocks a copy button and lets wide tables scroll.
function decorate(root) {
  for (const pre of Array.from(root.querySelectorAll("pre"))) {
    const box = document.createElement("div");
    box.className = "code";
    pre.replaceWith(box);
    box.appendChild(pre);
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "copy";
    btn.textContent = tr("webchat.copy");
    btn.setAttribute("aria-label", tr("webchat.copyCode"));
    btn.addEventListener("click", async () => {
      const ok = await copyText(pre.textContent);
      btn.textContent = tr(ok ? "webchat.copied" : "webchat.copyFailed");
    });
    box.appendChild(btn);
  }
  for (const table of Array.from(root.querySelectorAll("table"))) {
    const box = document.createElement("div");
    box.className = "table";
    table.replaceWith(box);
    box.appendChild(table);
  }
}

// showReply puts a whole reply into div: its rendered Markdown when the
// server sent some, else its text.
function showReply(div, data) {
  div.className = "msg assistant" + (data.error ? " error" : "");
  if (data.html && !data.error) {
    const tpl = document.createElement("template");
    tpl.innerHTML = data.html; // inert: nothing in a template runs or loads
    sanitize(tpl.content);
    decorate(tpl.content);
    div.classList.add("md");
    div.replaceChildren(tpl.content);
  } else {
    div.textContent = data.text;
  }
  scrollDown();
}

function showModel(name) {
  model.textContent = name || "";
  model.hidden = !name;
}

async function fetchSession() {
  const res = await fetch("api/session", { credentials: "same-origin" });
  if (!res.ok) throw new Error(tr("webchat.loadFailed"));
  return res.json();
}

async function loadSession() {
  const view = await fetchSession();
  showModel(view.model);
  $("no-model").hidden = !view.noModel;
  for (const t of view.transcript) {
    if (t.role === "user") {
      // The transcript keeps the envelope the agent saw; show only the user's words.
      bubble("user", t.text.replace(/^\[[^\]]*\] /, ""));
    } else if (t.partial) {
      bubble("assistant", t.text, "stopped");
    } else {
      showReply(bubble("assistant", ""), t);
    }
  }
  updateWelcome();
}

// readEvents parses a text/event-stream body and calls onEvent(name, data).
async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let name = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(name, JSON.parse(data));
    }
  }
}

// postMessage posts text and calls onEvent for each event of the answer.
// It returns an error text when the post was refused, else "".
async function postMessage(text, onEvent) {
  const body = { text };
  const id = newID();
  if (id) body.id = id;
  const res = await fetch("api/messages", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) {
    const err = await res.json().catch(() => ({ error: res.statusText }));
    return err.error || res.statusText;
  }
  await readEvents(res.body, onEvent);
  return "";
}

// command sends a command without showing it as a message and returns its
// replies ({text, html, error}).
async function command(text) {
  const replies = [];
  const refused = await postMessage(text, (name, data) => {
    if (name === "reply") replies.push(data);
    else if (name === "fail") replies.push({ text: data.error, error: true });
  });
  if (refused) replies.push({ text: refused, error: true });
  return replies;
}

function setBusy(on) {
  send.hidden = on;
  stop.hidden = !on;
  stop.disabled = false;
}

async function chat(text) {
  bubble("user", text);
  const reply = bubble("assistant", "", "partial");
  current = reply;
  let streamed = "", replies = 0;
  const refused = await postMessage(text, (name, data) => {
    if (name === "delta") {
      if (replies > 0) return;
      streamed += data.text;
      reply.textContent = streamed;
      scrollDown();
    } else if (name === "reply") {
      showReply(replies++ === 0 ? reply : bubble("assistant", ""), data);
    } else if (name === "fail") {
      reply.textContent = data.error;
      reply.className = "msg assistant error";
    }
  });
  current = null;
  if (refused) {
    reply.textContent = refused;
    reply.className = "msg assistant error";
    return;
  }
  if (reply.classList.contains("partial")) {
    reply.classList.remove("partial");
    if (streamed) reply.classList.add("stopped"); // the reply was cut before it was complete
    else reply.remove();
    updateWelcome();
  }
}

const newWords = /^[/!](new|reset)$/i;
const modelWords = /^[/!]model\b/i;

async function startOver() {
  if (current) await command("/stop");
  const replies = await command("/new");
  const failed = replies.find((r) => r.error);
  if (failed || replies.length === 0) {
    note(failed ? failed.text : tr("webchat.newFailed"));
    return;
  }
  clearView();
  note(replies.map((r) => r.text).join("\n"));
  input.focus();
}

form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const text = input.value.trim();
  if (!text || current) return;
  input.value = "";
  autosize();
  setBusy(true);
  setStatus(tr("webchat.writing"));
  try {
    if (newWords.test(text)) await startOver();
    else await chat(text);
    setStatus("");
    if (modelWords.test(text)) showModel((await fetchSession()).model);
  } catch (err) {
    setStatus(tr("webchat.connectionLost", err.message), "error");
  } finally {
    current = null;
    setBusy(false);
    input.focus();
  }
});

stop.addEventListener("click", async () => {
  stop.disabled = true;
  if (current) current.classList.add("stopping");
  try {
    const failed = (await command("/stop")).find((r) => r.error);
    if (failed) note(failed.text);
  } catch (err) {
    setStatus(tr("webchat.connectionLost", err.message), "error");
  }
});

newChat.addEventListener("click", async () => {
  newChat.disabled = true;
  try {
    await startOver();
  } catch (err) {
    setStatus(tr("webchat.connectionLost", err.message), "error");
  } finally {
    newChat.disabled = false;
  }
});

function autosize() {
  input.style.height = "auto";
  input.style.height = input.scrollHeight + 2 + "px";
}
input.addEventListener("input", autosize);

input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    form.requestSubmit();
  }
});

// Replies sent outside a turn (operator sends, later heartbeats) arrive here.
const events = new EventSource("api/events");
events.addEventListener("open", () => {
  document.body.dataset.events = "open";
  if (status.dataset.kind === "offline") setStatus("");
});
events.addEventListener("error", () => {
  document.body.dataset.events = "closed";
  setStatus(tr("webchat.offline"), "offline");
});
events.addEventListener("reply", (ev) => {
  showReply(bubble("assistant", ""), JSON.parse(ev.data));
});

loadSession().catch((err) => { setStatus(err.message, "error"); updateWelcome(); });
input.focus();
