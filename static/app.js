// The dashboard: live grids of views, opened from the URL (/?topic=orders&filter=...&options=oof)
// or from the form. Each view is a window onto the server's view (docs/protocol.md, Viewports):
// however large the view, only the rows on screen cross the wire.

import { PushClient } from "/web/index.js";
import { Companions } from "/static/companions.js";
import { FORMAT, companionIds, layoutMenu } from "/static/layouts.js";
import { choices, follow, linkedFilter, parseLink } from "/static/links.js";
import { Panel } from "/static/panel.js";
import { fromQuery, newSettings, toQuery } from "/static/settings.js";
import { Workspace } from "/static/workspace.js";

const scheme = location.protocol === "https:" ? "wss" : "ws";
const url = `${scheme}://${location.host}/ws`;
// Someone is watching: a dead connection is noticed within 10 s, and retried at least every 5 s.
// The socket says which tab it is, so the server's /status can say whose screen is slow.
const client = new PushClient(url, { heartbeatMs: 5000, maxBackoffMs: 5000, label: tabLabel() });
/** @type {Set<Panel>} */
const panels = new Set();
/** @type {Map<string, Panel>} each open view by its pane */
const panes = new Map();
/** @type {WeakMap<Panel, string>} */
const paneOf = new WeakMap();
let panesOpened = 0;
/** @type {string[] | null} while a layout opens: the panes its views go in, in order */
let restoring = null;
/** @type {Map<string, Set<string>>} each configured topic's key fields (shown without separators) */
const keyFieldsByTopic = new Map();
/** @type {Map<string, string[]>} each configured topic's kept orders (its `orders` setting) */
const keptOrdersByTopic = new Map();
const connection = { state: "idle", attempt: 0 };

document.getElementById("endpoint").textContent = url;

/** "dashboard, tab 3f9a": the tab's id lives in sessionStorage, so a reload keeps it and another
 * tab gets its own. */
function tabLabel() {
  const key = "sowpush.tab";
  let tab = null;
  try {
    tab = sessionStorage.getItem(key);
    if (!tab) {
      tab = Math.random().toString(16).slice(2, 6).padEnd(4, "0");
      sessionStorage.setItem(key, tab);
    }
  } catch {
    // Storage refused (a sandboxed frame, say): an id for this page load only.
    tab ??= Math.random().toString(16).slice(2, 6).padEnd(4, "0");
  }
  return `dashboard, tab ${tab}`;
}

/** What every panel gets from the page. */
const host = {
  client,
  keyFields: (/** @type {string} */ topic) => keyFieldsByTopic.get(topic) ?? new Set(),
  connection: () => connection,
  showError,
  changed: () => { urlDirty = true; },
  place: (/** @type {Panel} */ panel) => {
    // The view's one title (it has no heading of its own): what it shows, its options too.
    const { topic, filter, options } = panel.settings;
    const title = [topic, filter, options].filter(Boolean).join(" · ");
    const id = restoring?.shift() ?? `view-${++panesOpened}`;
    paneOf.set(panel, id);
    panes.set(id, panel);
    if (restoring) {
      workspace.fill(id, panel.element);
      workspace.setTitle(id, title);
    } else {
      workspace.add(id, title, panel.element);
    }
  },
  selected: (/** @type {Panel} */ panel, /** @type {any[]} */ records) => {
    follow(panel, records, panels);
    companions.selected(panel, records);
  },
  companions: (/** @type {Panel} */ panel) => companions.sync(panel),
  linkChoices: (/** @type {Panel} */ panel) => choices(panel, panels),
  // A link just chosen (or dropped): the view follows what its source has selected now.
  relink: (/** @type {Panel} */ panel) => {
    const link = parseLink(panel.settings.link);
    const source = link && [...panels].find((other) => other.settings.topic === link.topic);
    panel.setLinked(link && source && source !== panel ? linkedFilter(link.field, [...source.grid.selection.records.values()]) : "");
  },
  closed: (/** @type {Panel} */ panel) => {
    companions.closeAll(panel);
    panels.delete(panel);
    const id = paneOf.get(panel) ?? "";
    panes.delete(id);
    workspace.remove(id);
    // A view that followed this one follows the next view of its topic, or nothing.
    for (const other of panels) if (other.settings.link) host.relink(other);
    writeUrl();
  },
};
// A pane closed from its tab closes its view (which then closes nothing more: it is gone).
const workspace = new Workspace(/** @type {HTMLElement} */ (document.getElementById("views")), {
  closed: (id) => {
    panes.get(id)?.close();
    companions.closed(id);
  },
});
const companions = new Companions(workspace, (panel) => paneOf.get(panel) ?? "", () => { urlDirty = true; });

/** A view, and the companion panes its settings ask for. @param {import("/static/settings.js").ViewSettings} settings */
function addPanel(settings) {
  const panel = new Panel(host, settings);
  panels.add(panel);
  companions.sync(panel);
}
let urlDirty = false;

function showError(message) {
  document.getElementById("form-error").textContent = message;
}

function openView(topic, filter = "", options = "") {
  showError("");
  // A topic the server does not keep (a typo) is not checked here: the server refuses its view
  // in its own words, with the topics it does keep that are close (docs/protocol.md, Topics the
  // server does not keep), and the pane goes with the reason shown (Panel.refused).
  const settings = newSettings(topic, filter, options);
  // A topic that keeps orders (docs/protocol.md, Kept orders) opens in its first one: a first
  // screen at once at any size. Written into the URL, so the link opens it the same way.
  settings.orderby = keptOrdersByTopic.get(topic)?.[0] ?? "";
  addPanel(settings);
  writeUrl();
}

/** The URL says what every view shows; written when something changed, at most once a second. */
function writeUrl() {
  urlDirty = false;
  const query = toQuery([...panels].map((panel) => panel.current()));
  // A link that already says this stays as it was written.
  if (query === toQuery(fromQuery(location.search)) && location.pathname === "/") return;
  history.replaceState(null, "", query ? `/?${query}` : "/");
}

/** The views open and how their panes stand (static/layouts.js). */
function captureLayout() {
  const views = [...panels];
  return {
    format: FORMAT,
    version: 1,
    query: toQuery(views.map((panel) => panel.current())),
    panes: views.map((panel) => paneOf.get(panel) ?? ""),
    arrangement: workspace.arrangement(),
  };
}

/** A layout in place of the views open now; when it cannot be laid out, the views come back as
 * they were and the error says why. @param {import("/static/layouts.js").Layout} layout */
function openLayout(layout) {
  const before = captureLayout();
  try {
    replaceViews(layout);
  } catch (error) {
    replaceViews(before);
    throw error;
  }
}

/** @param {import("/static/layouts.js").Layout} layout */
function replaceViews(layout) {
  const views = fromQuery(`?${layout.query}`);
  if (views.length !== layout.panes.length) throw new Error("this layout has not one pane per view");
  for (const panel of [...panels]) panel.close();
  workspace.arrange(layout.arrangement);
  const all = workspace.ids();
  // Companion panes are their views' (static/layouts.js): placed only beside a view of the layout.
  const companionPanes = companionIds(layout.panes);
  const placed = all.filter((id) => !companionPanes.has(id)).sort();
  const placedCompanions = all.filter((id) => companionPanes.has(id));
  if (JSON.stringify(placed) !== JSON.stringify([...layout.panes].sort())) {
    for (const id of all) workspace.remove(id);
    throw new Error("this layout's arrangement does not place each of its panes");
  }
  restoring = [...layout.panes];
  try {
    for (const settings of views) addPanel(settings);
  } finally {
    restoring = null;
  }
  // A companion pane whose view does not ask for it (a hand-edited layout) is not left empty.
  const open = companions.ids();
  for (const id of placedCompanions) if (!open.has(id)) workspace.remove(id);
  // New panes are numbered past the layout's (parseLayout lets only view-<1 to 9 digits> in).
  for (const id of placed) panesOpened = Math.max(panesOpened, Number(id.slice("view-".length)));
  writeUrl();
}

function readUrl() {
  for (const settings of fromQuery(location.search)) addPanel(settings);
}

/** @param {boolean} [always] also when not connected (at load) */
async function refreshTopics(always = false) {
  if (!always && client.state !== "open") return; // the banner says the server is away; asked on return
  try {
    // "omit": with [auth], /topics asks for HTTP Basic credentials; the dashboard has none, and a
    // 401 to a request without credentials does not make the browser prompt for them.
    const response = await fetch("/topics", { credentials: "omit" });
    const topics = response.ok ? await response.json() : [];
    for (const topic of topics) {
      keyFieldsByTopic.set(topic.name, new Set(topic.key.map((/** @type {string} */ path) => path.replace(/^\//, ""))));
      keptOrdersByTopic.set(topic.name, topic.orders ?? []);
    }
    const list = document.getElementById("topics");
    list.replaceChildren(...topics.map((topic) => {
      const item = document.createElement("li");
      item.innerHTML = "<span></span><small></small>";
      item.firstElementChild.textContent = topic.name;
      const parts = [topic.records ?? "", topic.durable ? "durable" : ""].filter((part) => part !== "");
      item.lastElementChild.textContent = parts.join(" · ");
      const orders = (topic.orders ?? []).map((/** @type {string} */ order) => order || "by SowKey");
      item.title = `key ${topic.key.join(", ")}` + (orders.length ? ` · kept orders ${orders.join(", ")}` : "");
      // A click opens the topic, all its records; the form is for a filter or options.
      item.title += " · click to open a view of all its records";
      item.addEventListener("click", () => {
        /** @type {HTMLInputElement} */ (document.querySelector("[name=topic]")).value = topic.name;
        openView(topic.name);
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
  Object.assign(connection, { state, attempt });
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
  // What a view says while it waits is of this state: said again now, not at the next tick.
  for (const panel of panels) panel.showEmpty();
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

async function start() {
  client.on("state", showState);
  // The topics' keys first (one request, answered at once): a key column is shown as a name.
  await refreshTopics(true);
  readUrl();
  layoutMenu(/** @type {HTMLElement} */ (document.getElementById("layouts")), { capture: captureLayout, open: openLayout });
  setInterval(() => {
    panels.forEach((panel) => panel.tick());
    if (urlDirty) writeUrl();
  }, 1000);
  setInterval(() => refreshTopics(), 5000);
  // A failed first attempt is retried by the client itself, with backoff, like any reconnect.
  client.connect().catch(() => {});
}

// For the curious and for the tests: the client and the open views.
window.dashboard = { client, panels, workspace, companions };

start();
