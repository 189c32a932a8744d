"""``fleet web``'s one page: HTML, CSS and a small hand-written script, no build step.

Made for a phone first (390 px wide: cards that wrap, never a row wider than the screen; buttons a
thumb can hit) and readable on a desktop (one column, at most 48 rem wide). The page itself carries
no agent data: its script asks ``/api/view`` every few seconds and draws what comes back with
``textContent`` only, so a label, phase or session name an agent chose is shown as text, never read
as markup. The access token comes in the URL once; the script keeps it in this origin's
``localStorage`` (scoped to this port, unlike a cookie), takes it out of the address bar and sends it
as ``Authorization: Bearer`` on every request. The inline script and style run only with the nonce
of the response that carried them (the Content-Security-Policy of :mod:`.app`).
"""

from __future__ import annotations

STYLE = """
*, *::before, *::after { box-sizing: border-box; }
:root { color-scheme: light dark; --bg: #fafafa; --card: #fff; --line: #d8d8d8; --muted: #666;
  --ink: #1a1a1a; --accent: #2458c6; }
@media (prefers-color-scheme: dark) { :root { --bg: #15171a; --card: #1f2226; --line: #3a3e44;
  --muted: #a0a4aa; --ink: #eceff2; --accent: #7aa7ff; } }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 16px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header { position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap; align-items: baseline;
  gap: .25rem .75rem; padding: .6rem 1rem; background: var(--card); border-bottom: 1px solid var(--line); }
header h1 { margin: 0; font-size: 1.15rem; }
#status { color: var(--muted); font-size: .85rem; }
main { max-width: 48rem; margin: 0 auto; padding: .5rem .75rem 4rem; }
h2 { font-size: 1rem; margin: 1.1rem .25rem .5rem; }
p, li, div, span, strong, dd, dt { overflow-wrap: anywhere; min-width: 0; }
ol, ul { list-style: none; margin: 0; padding: 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: .6rem; padding: .65rem .75rem;
  margin: 0 0 .6rem; max-width: 100%; }
.entry { border-left: .3rem solid #c0392b; }
.entry.tier1 { border-left-color: #d35400; }
.entry.tier2 { border-left-color: #b7950b; }
.head { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem .5rem; }
.label { font-weight: 650; font-size: 1.05rem; }
.small, .where, .age { color: var(--muted); font-size: .85rem; }
.facts { display: flex; flex-wrap: wrap; gap: .15rem 1rem; margin: .35rem 0 0; font-size: .9rem; }
.facts span { white-space: normal; }
.waits { margin-top: .35rem; font-size: .9rem; }
.waits:empty, .phase:empty { display: none; }
.phase { margin-top: .2rem; font-size: .9rem; }
.badge { display: inline-block; padding: .05rem .5rem; border-radius: 1rem; font-size: .8rem;
  background: #e3e6ea; color: #222; }
.badge[data-kind="needs-you"] { background: #1e8449; color: #fff; }
.badge[data-kind="error"], .badge[data-kind="exited"], .badge[data-kind="unknown"] { background: #c0392b; color: #fff; }
.badge[data-kind="paused"] { background: #d35400; color: #fff; }
.badge[data-kind="limited"] { background: #b7950b; color: #fff; }
.badge[data-kind="working"] { background: #2458c6; color: #fff; }
.badge[data-kind="done"], .badge[data-kind="stopped"] { background: #7f8c8d; color: #fff; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; margin-top: .55rem; align-items: center; }
button { font: inherit; min-height: 2.6rem; padding: .3rem .9rem; border-radius: .5rem;
  border: 1px solid var(--line); background: var(--card); color: var(--accent); cursor: pointer; }
button:disabled { opacity: .5; }
.entry button { padding: .3rem .6rem; font-size: .95rem; }
.raise { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin: 0; }
.raise label { display: flex; align-items: center; gap: .3rem; }
.raise input { font: inherit; width: 4.5rem; min-height: 2.6rem; padding: .3rem .4rem; border-radius: .5rem;
  border: 1px solid var(--line); background: var(--bg); color: var(--ink); }
.raise[hidden], [hidden] { display: none !important; }
#usage li { font-size: .9rem; margin: .2rem .25rem; }
#silent, #snoozed, .empty { color: var(--muted); font-size: .9rem; margin: .3rem .25rem; }
#toast { position: fixed; left: .75rem; right: .75rem; bottom: .75rem; max-width: 46rem; margin: 0 auto;
  padding: .7rem .9rem; border-radius: .6rem; background: #222; color: #fff; font-size: .95rem; display: none; }
#toast.on { display: block; }
#toast.bad { background: #922b21; }
"""

SCRIPT = """
"use strict";
const KEY = "fleet-web-token";
const query = new URLSearchParams(location.search);
if (query.get("token")) {
  localStorage.setItem(KEY, query.get("token"));
  history.replaceState(null, "", location.pathname);
}
const token = localStorage.getItem(KEY) || "";
const INTERVAL = __INTERVAL__;
const $ = (id) => document.getElementById(id);
const cards = new Map();
let last = "";
let busy = 0;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function toast(text, bad) {
  const box = $("toast");
  box.textContent = text;
  box.className = "on" + (bad ? " bad" : "");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.className = ""; }, 6000);
}

function age(seconds) {
  seconds = Math.max(0, Math.floor(seconds));
  if (seconds < 60) return seconds + " s";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min";
  const h = Math.floor(seconds / 3600), m = Math.floor(seconds % 3600 / 60);
  return h < 48 ? h + " h " + String(m).padStart(2, "0") : Math.floor(h / 24) + " d";
}

async function api(path, body) {
  const init = { headers: { "Authorization": "Bearer " + token }, cache: "no-store" };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const answer = await fetch(path, init);
  const data = await answer.json().catch(() => ({ error: answer.status + " " + answer.statusText }));
  if (answer.status === 401) throw new Error("Not signed in: open the URL that fleet web printed (it carries the access token).");
  if (!answer.ok) throw new Error(data.error || answer.status + " " + answer.statusText);
  return data;
}

async function act(button, path, body, question) {
  if (question && !confirm(question)) return;
  button.disabled = true;
  busy += 1;
  toast("Working on it…");
  try {
    const done = await api(path, body);
    toast(done.said || "Done.");
  } catch (error) {
    toast(error.message, true);
  } finally {
    button.disabled = false;
    busy -= 1;
    refresh();
  }
}

function seen(agent) {
  return { host: agent.host, socket: agent.socket, pane: agent.pane, identity: agent.identity };
}

function card(agent) {
  const node = el("article", "card agent");
  const head = el("div", "head");
  head.append(el("span", "label"), el("span", "badge"));
  node.append(head, el("div", "where"), el("div", "phase"), el("div", "facts"), el("div", "waits"));
  const actions = el("div", "actions");
  const restart = el("button", "restart", "Restart");
  restart.type = "button";
  restart.addEventListener("click", () => {
    const a = node.agent;
    act(restart, "/api/restart", seen(a),
        "Restart " + a.where + "? Its Claude stops and starts again, resuming its conversation.");
  });
  const raise = el("form", "raise");
  const label = el("label", "", "Budget +$");
  const amount = el("input");
  amount.type = "number"; amount.min = "0.01"; amount.step = "0.01"; amount.value = "5";
  amount.inputMode = "decimal"; amount.setAttribute("aria-label", "dollars to add");
  label.append(amount);
  const go = el("button", "", "Raise budget");
  go.type = "submit";
  raise.append(label, go);
  raise.addEventListener("submit", (event) => {
    event.preventDefault();
    const a = node.agent;
    act(go, "/api/budget", Object.assign(seen(a), { add_usd: Number(amount.value) }),
        "Raise the " + (a.budget_scope || "") + " budget of " + a.where + " by $" + amount.value + "?");
  });
  actions.append(restart, raise);
  node.append(actions);
  return node;
}

function fill(node, agent) {
  node.agent = agent;
  node.dataset.kind = agent.kind;
  node.querySelector(".label").textContent = agent.label;
  const badge = node.querySelector(".badge");
  badge.textContent = agent.state;
  badge.dataset.kind = agent.kind;
  const where = [agent.fleet + ":" + agent.window];
  if (agent.host !== "local") where.unshift(agent.host);
  if (agent.session) where.push("session " + agent.session);
  node.querySelector(".where").textContent = where.join(" · ");
  node.querySelector(".phase").textContent = agent.phase ? (agent.skill ? agent.skill + ": " : "") + agent.phase : "";
  const facts = node.querySelector(".facts");
  facts.replaceChildren(el("span", "", "context " + agent.context), el("span", "", "spent " + agent.spend));
  node.querySelector(".waits").textContent = agent.waits_for ? "Waits for " + agent.waits_for : "";
  node.querySelector(".restart").hidden = !agent.restartable;
  node.querySelector(".raise").hidden = !agent.raisable;
}

function drawQueue(doc) {
  const list = $("queue");
  list.replaceChildren();
  for (const entry of doc.queue) {
    const item = el("li", "card entry tier" + entry.tier);
    const head = el("div", "head");
    head.append(el("span", "label", entry.words), el("span", "badge", entry.tier_name));
    head.lastChild.dataset.kind = entry.kind;
    item.append(head, el("div", "where", entry.where), el("div", "age", "waiting " + age(entry.age)));
    const actions = el("div", "actions");
    const show = el("button", "", "Show");
    show.type = "button";
    show.addEventListener("click", () => {
      for (const node of cards.values()) {
        const a = node.agent;
        if (a.host === entry.host && a.socket === entry.socket && a.identity === entry.agent) {
          node.scrollIntoView({ behavior: "smooth", block: "center" });
          (node.querySelector(".raise:not([hidden]) input") || node.querySelector("button")).focus({ preventScroll: true });
        }
      }
    });
    actions.append(show);
    for (const [text, until] of [["Snooze 1 h", "hour"], ["Until it changes", "change"]]) {
      const button = el("button", "", text);
      button.type = "button";
      button.addEventListener("click", () => act(button, "/api/snooze", { key: entry.key, opened: entry.opened, until }));
      actions.append(button);
    }
    item.append(actions);
    list.append(item);
  }
  if (!doc.queue.length) list.append(el("li", "empty", "Nothing needs you."));
  $("count").textContent = doc.queue.length ? "(" + doc.queue.length + ")" : "";
  $("snoozed").textContent = doc.snoozed.length
    ? doc.snoozed.length + " snoozed: " + doc.snoozed.map((e) => e.words).join("; ") : "";
}

function draw(doc) {
  const text = JSON.stringify([doc.queue.map((e) => [e.key, e.count, e.opened, Math.floor(e.age / 60)]), doc.snoozed.map((e) => e.key)]);
  if (text !== last) { drawQueue(doc); last = text; }
  const list = $("agents");
  const keep = new Set();
  doc.agents.forEach((agent, index) => {
    keep.add(agent.key);
    let node = cards.get(agent.key);
    if (!node) { node = card(agent); cards.set(agent.key, node); }
    fill(node, agent);
    if (list.children[index] !== node) list.insertBefore(node, list.children[index] || null);
  });
  for (const [key, node] of cards) if (!keep.has(key)) { node.remove(); cards.delete(key); }
  $("none").hidden = doc.agents.length > 0;
  $("usage").replaceChildren(...doc.usage.map((line) => el("li", "", line)));
  $("usage-head").hidden = !doc.usage.length;
  $("silent").textContent = doc.silent.length ? "Did not answer: " + doc.silent.join("; ") : "";
  const fleets = doc.fleets.map((f) => f.name + " (" + f.agents + ", " + f.spent + ")").join(", ");
  $("status").textContent = (fleets || "no fleet running") + " · " + new Date(doc.seen_at * 1000).toLocaleTimeString();
}

async function refresh() {
  try {
    draw(await api("/api/view"));
  } catch (error) {
    $("status").textContent = error.message;
  }
}

refresh();
setInterval(() => { if (!busy && !document.hidden) refresh(); }, INTERVAL);
document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
"""

BODY = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>fleet web</title>
<style nonce="__NONCE__">__STYLE__</style>
</head>
<body>
<header><h1>fleet</h1><span id="status">looking at the fleets…</span></header>
<main>
<section aria-labelledby="queue-head">
<h2 id="queue-head">Needs you <span id="count"></span></h2>
<ol id="queue"></ol>
<p id="snoozed"></p>
</section>
<section aria-labelledby="agents-head">
<h2 id="agents-head">Agents</h2>
<div id="agents"></div>
<p id="none" class="empty" hidden>No fleet is running: start one with fleet start LAYOUT.</p>
</section>
<section aria-labelledby="usage-head">
<h2 id="usage-head" hidden>Usage windows</h2>
<ul id="usage"></ul>
</section>
<p id="silent"></p>
</main>
<div id="toast" role="status" aria-live="polite"></div>
<script nonce="__NONCE__">__SCRIPT__</script>
</body>
</html>
"""


def html(nonce: str, interval: float) -> str:
    """The page, its inline style and script marked with *nonce*; it asks for news every *interval* s."""
    script = SCRIPT.replace("__INTERVAL__", str(max(500, round(interval * 1000))))
    return BODY.replace("__STYLE__", STYLE).replace("__SCRIPT__", script).replace("__NONCE__", nonce)
