// The dashboard: live grids of views, opened from the URL (/?topic=orders&filter=...&options=oof)
// or from the form, rendered in animation frames so heavy update rates stay smooth.

import { PushClient } from "/web/index.js";
import { Grid } from "/static/grid.js";

// Changes drawn per animation frame (a large snapshot is drawn over a few frames), and the least
// each view gets. A transaction is always drawn whole, whatever these say.
const drawing = { changesPerFrame: 4000, leastPerPanel: 200 };
const SORT_EVERY_MS = 500;

const scheme = location.protocol === "https:" ? "wss" : "ws";
const url = `${scheme}://${location.host}/ws`;
// Someone is watching: a dead connection is noticed within 10 s, and retried at least every 5 s.
const client = new PushClient(url, { heartbeatMs: 5000, maxBackoffMs: 5000 });
/** @type {Set<Panel>} */
const panels = new Set();

document.getElementById("endpoint").textContent = url;

function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes | 0} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function formatMs(ms) {
  return ms < 10 ? `${ms.toFixed(1)} ms` : ms < 10_000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(0)} s`;
}

/** The view's options with `timestamp` (each update then carries the server's `ts`, from which
 * the panel shows its latency); the URL and the panel's title keep the options as typed. */
function withTimestamp(options) {
  const list = (options || "").split(",").map((o) => o.trim()).filter(Boolean);
  if (!list.includes("timestamp")) list.push("timestamp");
  return list.join(",");
}

class Panel {
  constructor(topic, filter, options) {
    this.topic = topic;
    this.filter = filter;
    this.options = options;
    const fragment = /** @type {HTMLTemplateElement} */ (document.getElementById("view-template")).content.cloneNode(true);
    this.element = /** @type {HTMLElement} */ (fragment.querySelector(".view"));
    this.element.querySelector(".topic").textContent = topic;
    this.element.querySelector(".filter").textContent = filter || "all records";
    this.element.querySelector(".options").textContent = options || "";
    this.element.querySelector(".close").addEventListener("click", () => this.close());
    this.grid = new Grid(this.element.querySelector(".table-wrap"));
    /** @type {Map<string, {record: any, kind: string, reason?: string}>} */
    this.pending = new Map();
    this.lastSort = 0;
    this.lastUpdates = 0;
    this.transactionWaiting = false;
    this.shownRows = "";
    document.getElementById("views").appendChild(this.element);
    this.view = client.sowAndDeltaSubscribe(topic, { filter: filter || undefined, options: withTimestamp(options) });
    this.view.on("change", ({ key, record, kind, reason }) => {
      const earlier = this.pending.get(key);
      // A record that arrived and left within one frame never needs a row.
      if (kind === "oof" && earlier && earlier.kind === "insert") this.pending.delete(key);
      else this.pending.set(key, { record, kind: earlier?.kind === "insert" ? "insert" : kind, reason });
    });
    this.view.on("error", ({ reason }) => this.refused(reason));
    this.view.on("unsubscribed", ({ reason }) => showError(`${topic}: the server dropped this view (${reason})`));
    // While the connection is down the rows stay, dimmed: the last values received, maybe old.
    this.view.on("stale", ({ stale }) => this.element.classList.toggle("stale", stale));
    this.established = false;
    this.view.ready.then(() => { this.established = true; }, () => {});
    panels.add(this);
  }

  /** A view the server refuses at once (a bad filter) goes; one it refuses after a reconnect
   * (the topic or the user's rights changed) stays on screen, stale, with the reason, and in the URL. */
  refused(reason) {
    if (!this.established) {
      showError(reason);
      this.close();
      return;
    }
    this.element.classList.add("stale", "failed");
    this.element.querySelector(".view-error").textContent = `refused after reconnecting: ${reason}`;
  }

  close() {
    panels.delete(this);
    if (!this.view.error) this.view.close();
    this.element.remove();
    writeUrl();
  }

  /** Apply up to `budget` waiting changes to the grid; returns how many it applied. */
  render(budget, now) {
    if (this.transactionWaiting) {
      // A transaction's changes are all waiting: drawn in this one frame with everything before
      // them, so the grid never shows part of one (PROTOCOL 11.3).
      this.transactionWaiting = false;
      budget = Infinity;
    }
    let applied = 0;
    for (const [key, change] of this.pending) {
      if (applied >= budget) break;
      this.pending.delete(key);
      if (change.kind === "oof") this.grid.remove(key, change.reason ?? "");
      else this.grid.upsert(key, change.record, change.kind === "update");
      applied += 1;
    }
    if (this.grid.sortDirty && now - this.lastSort > SORT_EVERY_MS) {
      this.grid.applySort();
      this.lastSort = now;
    }
    if (this.grid.layoutDirty) this.grid.layout();
    const rows = String(this.view.records.size);
    if (rows !== this.shownRows) {
      // Written only when it changes: any DOM write costs a style pass over every row.
      this.element.querySelector(".rows").textContent = rows;
      this.shownRows = rows;
    }
    return applied;
  }

  figures() {
    const { updates, bytes, bytesSaved } = this.view.stats;
    this.element.querySelector(".rate").textContent = String(updates - this.lastUpdates);
    this.lastUpdates = updates;
    this.element.querySelector(".received").textContent = formatBytes(bytes);
    this.element.querySelector(".saved").textContent = formatBytes(bytesSaved);
    const { p50, p99 } = this.view.latency.percentiles();
    this.element.querySelector(".latency").textContent = p50 === null ? "–" : `${formatMs(p50)} / ${formatMs(p99)}`;
  }
}

function frame(now) {
  let budget = drawing.changesPerFrame;
  for (const panel of panels) budget -= panel.render(Math.max(budget, drawing.leastPerPanel), now);
  requestAnimationFrame(frame);
}

function showError(message) {
  document.getElementById("form-error").textContent = message;
}

function openView(topic, filter = "", options = "") {
  showError("");
  new Panel(topic, filter, options);
  writeUrl();
}

function writeUrl() {
  const params = new URLSearchParams();
  for (const panel of panels) {
    params.append("topic", panel.topic);
    params.append("filter", panel.filter);
    params.append("options", panel.options);
  }
  const query = params.toString();
  history.replaceState(null, "", query ? `/?${query}` : "/");
}

function readUrl() {
  const params = new URLSearchParams(location.search);
  const topics = params.getAll("topic");
  const filters = params.getAll("filter");
  const options = params.getAll("options");
  topics.forEach((topic, index) => {
    if (topic) new Panel(topic, filters[index] ?? "", options[index] ?? "");
  });
}

/** @param {boolean} [always] also when not connected (at load) */
async function refreshTopics(always = false) {
  if (!always && client.state !== "open") return; // the banner says the server is away; asked on return
  try {
    // "omit": with [auth], /topics asks for HTTP Basic credentials; the dashboard has none, and a
    // 401 to a request without credentials does not make the browser prompt for them.
    const response = await fetch("/topics", { credentials: "omit" });
    const topics = response.ok ? await response.json() : [];
    const list = document.getElementById("topics");
    list.replaceChildren(...topics.map((topic) => {
      const item = document.createElement("li");
      item.innerHTML = "<span></span><small></small>";
      item.firstElementChild.textContent = topic.name;
      const parts = [topic.records ?? "", topic.durable ? "durable" : ""].filter((part) => part !== "");
      item.lastElementChild.textContent = parts.join(" · ");
      item.title = `key ${topic.key.join(", ")}`;
      item.addEventListener("click", () => {
        /** @type {HTMLInputElement} */ (document.querySelector("[name=topic]")).value = topic.name;
      });
      return item;
    }));
    document.getElementById("topic-names").replaceChildren(...topics.map((topic) => {
      const option = document.createElement("option");
      option.value = topic.name;
      return option;
    }));
  } catch {
    // The connection indicator already says the server is away; try again on the next tick.
  }
}

let everOpen = false;

/** The indicator in the bar, and a banner while the connection is down. */
function showState({ state, attempt, delayMs, reason }) {
  const indicator = document.getElementById("connection");
  indicator.dataset.state = state;
  const banner = document.getElementById("offline");
  const label = {
    idle: "idle",
    connecting: attempt > 1 ? `connecting (attempt ${attempt})` : "connecting",
    open: "connected",
    waiting: `reconnecting (attempt ${attempt})`,
    closed: "offline",
  }[state];
  indicator.querySelector("span").textContent = label;
  if (state === "open") {
    everOpen = true;
    banner.hidden = true;
    refreshTopics();
    return;
  }
  if (!everOpen && state === "connecting" && attempt <= 1) return;
  banner.hidden = false;
  banner.dataset.state = state;
  const what = everOpen ? "Connection to the server lost" : "Cannot reach the server";
  const next =
    state === "waiting" ? `attempt ${attempt} in ${(delayMs / 1000).toFixed(1)} s`
    : state === "connecting" ? `attempt ${attempt} under way`
    : `not retrying (${reason || "closed"})`;
  banner.querySelector(".what").textContent = `${what}: ${next}.`;
  banner.querySelector(".detail").textContent = state === "closed"
    ? "Reload the page to connect again."
    : "Rows show the last values received and may be out of date; the views come back by themselves.";
}

document.getElementById("open-view").addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(/** @type {HTMLFormElement} */ (event.target));
  openView(String(form.get("topic")).trim(), String(form.get("filter")).trim(), String(form.get("options")).trim());
});

function start() {
  client.on("state", showState);
  // The client applies a transaction to its views in one task, then says so: the panels showing
  // those views draw all their waiting changes in the next frame.
  client.on("transaction", ({ views }) => {
    for (const panel of panels) if (views.has(panel.view)) panel.transactionWaiting = true;
  });
  readUrl();
  requestAnimationFrame(frame);
  setInterval(() => panels.forEach((panel) => panel.figures()), 1000);
  refreshTopics(true);
  setInterval(() => refreshTopics(), 5000);
  // A failed first attempt is retried by the client itself, with backoff, like any reconnect.
  client.connect().catch(() => {});
}

// For the curious and for bench/browser_grid.py: the client and the open views.
window.dashboard = { client, panels, drawing };

start();
