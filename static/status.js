// The status page: polls /status.json and draws it. Every value goes in as text, never as HTML
// (client names and addresses come from clients).

const POLL_MS = 2000;
const TOKEN_KEY = "sowpush.metricsToken";

const $ = (id) => document.getElementById(id);

/** A whole number with thousands separators (the page is in English, whatever the browser's). */
function count(n) {
  return n === null || n === undefined ? null : n.toLocaleString("en-US");
}

function millis(value) {
  return value === null || value === undefined ? null : `${value.toFixed(value < 10 ? 2 : 0)} ms`;
}

function bytes(n) {
  if (n === null || n === undefined) return null; // (a worker of another version may not say)
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// Each table's columns, once: its header and every row's cells are made from the same list, so a
// header can never name a cell that is not there. [title, value of a row, numeric (right-aligned)]
const NUMBER = true;
const TOPICS = [
  ["topic", (t) => t.topic],
  ["kind", (t) => (t.sow ? (t.durable ? "sow, durable" : "sow") : "plain")],
  ["records", (t) => (t.sow ? count(t.records) : null), NUMBER],
  ["subscriptions", (t) => count(t.subscriptions), NUMBER],
  ["aggregations", (t) => (t.sow ? count(t.aggregations) : null), NUMBER],
  ["groups", (t) => (t.sow ? count(t.groups) : null), NUMBER],
  ["queued", (t) => count(t.queued), NUMBER],
  ["sent", (t) => bytes(t.sent_bytes), NUMBER],
  ["conflated", (t) => count(t.conflated), NUMBER],
  ["dropped", (t) => count(t.dropped), NUMBER],
  ["unsubscribed", (t) => count(t.unsubscribed), NUMBER],
  ["closed slow", (t) => count(t.closed_slow), NUMBER],
  ["to socket p50", (t) => millis(t.written.p50_ms), NUMBER],
  ["to socket p99", (t) => millis(t.written.p99_ms), NUMBER],
  ["to disk p50", (t) => millis(t.persisted.p50_ms), NUMBER],
  ["to disk p99", (t) => millis(t.persisted.p99_ms), NUMBER],
];
const SOCKETS = [
  ["client name", (s) => s.client_name],
  ["user", (s) => s.user],
  ["label", (s) => s.label],
  ["address", (s) => s.peer],
  ["session", (s) => s.session, NUMBER],
  ["subscriptions", (s) => count(s.subscriptions), NUMBER],
  ["queued", (s) => count(s.queued_messages), NUMBER],
  ["queued bytes", (s) => bytes(s.queued_bytes), NUMBER],
  ["sent", (s) => count(s.sent), NUMBER],
  ["conflated", (s) => count(s.conflated), NUMBER],
  ["conflation", (s) => `${(s.conflation_ratio * 100).toFixed(1)} %`, NUMBER],
  ["page", (s) => (s.hidden ? "hidden" : "visible")],
];
// With --workers: which worker holds the socket, and each worker's own totals.
const WORKER = ["worker", (s) => s.worker, NUMBER];
const WORKERS = [
  ["worker", (w) => w.worker, NUMBER],
  ["answered", (w) => (w.answered ? (w.worker === answeredBy ? "yes, this page" : "yes") : "no")],
  ["connections", (w) => count(w.connections), NUMBER],
  ["queued", (w) => (w.answered ? bytes(w.queued_bytes) : null), NUMBER],
  ["commands", (w) => count(w.commands), NUMBER],
];
let answeredBy = null;

function fill(table, columns, rows, empty) {
  const head = $(table).tHead;
  if (head.rows.length && head.rows[0].cells.length !== columns.length) head.replaceChildren();
  if (!head.rows.length) {
    const row = head.insertRow();
    for (const [title, , numeric] of columns) {
      const th = document.createElement("th");
      th.textContent = title;
      if (numeric) th.dataset.num = "";
      row.append(th);
    }
  }
  const body = $(table).tBodies[0];
  body.replaceChildren();
  if (!rows.length) {
    const td = body.insertRow().insertCell();
    td.colSpan = columns.length;
    td.className = "none";
    td.textContent = empty;
    return;
  }
  for (const item of rows) {
    const row = body.insertRow();
    for (const [, value, numeric] of columns) {
      const td = row.insertCell();
      const text = value(item);
      td.textContent = text === null || text === undefined ? "–" : String(text);
      if (numeric) td.dataset.num = "";
    }
  }
}

function card(label, value, className = "") {
  const div = document.createElement("div");
  div.className = `card ${className}`;
  const b = document.createElement("b");
  b.textContent = value;
  const span = document.createElement("span");
  span.textContent = label;
  div.append(b, span);
  return div;
}

/** A time as the page shows every time: UTC, to the second. @param {Date} date */
function utc(date) {
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

function draw(status) {
  const queued = status.topics.reduce((sum, t) => sum + t.queued, 0);
  $("cards").replaceChildren(
    card("connections", count(status.connections)),
    card("topics", count(status.topics.length)),
    card("records", count(status.topics.reduce((sum, t) => sum + t.records, 0))),
    card("subscriptions", count(status.topics.reduce((sum, t) => sum + t.subscriptions, 0))),
    card("queued messages", count(queued)),
    card("queued", bytes(status.queued_bytes)),
    card("commands", count(status.commands)),
    card("running since", utc(new Date(status.started)), "small"),
  );
  $("window").textContent = `latency over the last ${status.latency_window_s} s`;
  fill("topics", TOPICS, status.topics, "no topics");
  const workers = status.workers;
  answeredBy = status.answered_by ?? null;
  fill("sockets", workers ? [WORKER, ...SOCKETS] : SOCKETS, status.slowest, "no sockets");
  $("workers-section").hidden = !workers;
  if (workers) fill("workers", WORKERS, workers, "no workers");
  const cluster = status.cluster;
  $("cluster").hidden = !cluster;
  if (cluster) {
    const nodes = [
      ["node", (node) => node],
      ["this node", (node) => (node === cluster.node ? (cluster.healthy ? "yes, serving" : "yes, unavailable") : "")],
    ];
    fill("nodes", nodes, cluster.nodes, "no live node found in Redis");
  }
}

function show(state, text) {
  const badge = $("state");
  badge.dataset.state = state;
  badge.querySelector("span").textContent = text;
}

async function poll() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  try {
    const response = await fetch("/status.json", { headers, cache: "no-store" });
    if (response.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      $("token-form").hidden = false;
      show("closed", "token required");
      return;
    }
    if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
    draw(await response.json());
    $("problem").hidden = true;
    show("open", `updated ${utc(new Date()).slice(11)}`);
  } catch (error) {
    $("problem").hidden = false;
    $("problem").textContent = `cannot read /status.json: ${error.message}`;
    show("closed", "unreachable");
  }
  setTimeout(poll, POLL_MS);
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, new FormData(event.target).get("token"));
  $("token-form").hidden = true;
  poll();
});

poll();
