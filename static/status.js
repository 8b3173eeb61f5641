// The status page: polls /status.json and draws it. Every value goes in as text, never as HTML
// (client names and addresses come from clients).

const POLL_MS = 2000;
const TOKEN_KEY = "sowpush.metricsToken";

const $ = (id) => document.getElementById(id);

function cell(row, value, numeric = false) {
  const td = row.insertCell();
  td.textContent = value === null || value === undefined ? "–" : String(value);
  if (numeric) td.dataset.num = "";
  return td;
}

function millis(value) {
  return value === null || value === undefined ? "–" : `${value.toFixed(value < 10 ? 2 : 0)} ms`;
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function fill(table, rows, draw, empty) {
  const body = $(table).tBodies[0];
  body.replaceChildren();
  if (!rows.length) {
    const td = body.insertRow().insertCell();
    td.colSpan = $(table).tHead.rows[0].cells.length;
    td.className = "none";
    td.textContent = empty;
    return;
  }
  for (const item of rows) draw(body.insertRow(), item);
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

function draw(status) {
  const queued = status.topics.reduce((sum, t) => sum + t.queued, 0);
  $("cards").replaceChildren(
    card("connections", status.connections),
    card("topics", status.topics.length),
    card("records", status.topics.reduce((sum, t) => sum + t.records, 0)),
    card("subscriptions", status.topics.reduce((sum, t) => sum + t.subscriptions, 0)),
    card("queued messages", queued),
    card("queued", bytes(status.queued_bytes)),
    card("commands", status.commands),
    card("running since (UTC)", status.started.replace("T", " ").slice(0, 19), "small"),
  );
  $("window").textContent = `latency over the last ${status.latency_window_s} s`;
  fill("topics", status.topics, (row, t) => {
    cell(row, t.topic);
    cell(row, t.sow ? (t.durable ? "sow, durable" : "sow") : "plain");
    for (const key of ["records", "subscriptions", "aggregations", "groups", "queued", "conflated", "dropped", "unsubscribed", "closed_slow"]) {
      cell(row, t.sow || !["records", "aggregations", "groups"].includes(key) ? t[key] : null, true);
    }
    cell(row, millis(t.written.p50_ms), true);
    cell(row, millis(t.written.p99_ms), true);
    cell(row, millis(t.persisted.p50_ms), true);
    cell(row, millis(t.persisted.p99_ms), true);
  }, "no topics");
  fill("sockets", status.slowest, (row, s) => {
    cell(row, s.session, true);
    cell(row, s.client_name);
    cell(row, s.user);
    cell(row, s.peer);
    cell(row, s.subscriptions, true);
    cell(row, s.queued_messages, true);
    cell(row, bytes(s.queued_bytes), true);
    cell(row, s.sent, true);
    cell(row, s.conflated, true);
    cell(row, `${(s.conflation_ratio * 100).toFixed(1)} %`, true);
    cell(row, s.hidden ? "hidden" : "visible");
  }, "no sockets");
  const cluster = status.cluster;
  $("cluster").hidden = !cluster;
  if (cluster) {
    fill("nodes", cluster.nodes, (row, node) => {
      cell(row, node);
      cell(row, node === cluster.node ? (cluster.healthy ? "yes, serving" : "yes, unavailable") : "");
    }, "no live node found in Redis");
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
    show("open", `updated ${new Date().toLocaleTimeString()}`);
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
