// pincer web chat: posts messages and renders the streamed reply events.
"use strict";

const log = document.getElementById("log");
const form = document.getElementById("composer");
const input = document.getElementById("input");
const send = document.getElementById("send");
const status = document.getElementById("status");

function bubble(role, text, extra) {
  const div = document.createElement("div");
  div.className = "msg " + role + (extra ? " " + extra : "");
  div.textContent = text;
  log.appendChild(div);
  log.scrollTop = log.scrollHeight;
  return div;
}

async function loadSession() {
  const res = await fetch("api/session", { credentials: "same-origin" });
  if (!res.ok) { status.textContent = "could not load the conversation"; return; }
  const view = await res.json();
  for (const t of view.transcript) {
    // The transcript keeps the envelope the agent saw; show only the user's words.
    const text = t.role === "user" ? t.text.replace(/^\[[^\]]*\] /, "") : t.text;
    bubble(t.role, text, t.partial ? "partial" : "");
  }
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

async function post(text) {
  bubble("user", text);
  const reply = bubble("assistant", "", "partial");
  let streamed = "";
  const id = crypto.randomUUID();
  const res = await fetch("api/messages", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ text, id }),
  });
  if (!res.ok) {
    const body = await res.json().catch(() => ({ error: res.statusText }));
    reply.textContent = body.error;
    reply.className = "msg assistant error";
    return;
  }
  let replies = 0;
  await readEvents(res.body, (name, data) => {
    if (name === "delta") {
      streamed += data.text;
      reply.textContent = streamed;
      log.scrollTop = log.scrollHeight;
    } else if (name === "reply") {
      const target = replies++ === 0 ? reply : bubble("assistant", "");
      target.textContent = data.text;
      target.className = "msg assistant" + (data.error ? " error" : "");
    } else if (name === "fail") {
      reply.textContent = data.error;
      reply.className = "msg assistant error";
    }
  });
  if (replies === 0 && reply.classList.contains("partial") && !streamed) reply.remove();
  reply.classList.remove("partial");
}

form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  send.disabled = true;
  status.textContent = "thinking…";
  try {
    await post(text);
    status.textContent = "";
  } catch (err) {
    status.textContent = "connection lost: " + err.message;
  } finally {
    send.disabled = false;
    input.focus();
  }
});

input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    form.requestSubmit();
  }
});

// Replies sent outside a turn (operator sends, later heartbeats) arrive here.
const events = new EventSource("api/events");
events.addEventListener("reply", (ev) => {
  const data = JSON.parse(ev.data);
  bubble("assistant", data.text, data.error ? "error" : "");
});

loadSession().catch((err) => { status.textContent = err.message; });
input.focus();
