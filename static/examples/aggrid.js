// A view drawn by AG Grid through web/adapters/aggrid.js: ?topic=orders&filter=/qty > 10&options=oof.
// With ?viewport=1 (and &orderby=/qty DESC) it is a server viewport drawn through
// web/adapters/aggrid-viewport.js instead: only the rows on screen cross the wire.
// Its columns are the records' fields as they appear. It is also the target of benchmarks:
// `window.example` holds the client, the view, the grid's API and the binding, and
// `example.applied` counts the view changes that reached the grid.

import { PushClient } from "/web/index.js";
import { bindAgGrid, sowRowId } from "/web/adapters/aggrid.js";
import { bindAgGridViewport, viewportGridOptions } from "/web/adapters/aggrid-viewport.js";

const agGrid = /** @type {any} */ (globalThis).agGrid;
const params = new URLSearchParams(location.search);
const topic = params.get("topic") || "orders";
const filter = params.get("filter") || undefined;
const options = params.get("options") ?? "oof";
const viewportMode = params.get("viewport") === "1";
const OOFS_SHOWN = 20;

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
$("topic").textContent = topic;
$("filter").textContent = filter ?? "all records";

const dark = matchMedia("(prefers-color-scheme: dark)").matches;
const api = agGrid.createGrid($("grid"), {
  theme: dark ? agGrid.themeQuartz.withPart(agGrid.colorSchemeDark) : agGrid.themeQuartz,
  ...(viewportMode ? viewportGridOptions() : { getRowId: sowRowId }),
  columnDefs: [],
  // A viewport's filter is the server's: the grid's own filters are not used there.
  defaultColDef: { sortable: true, filter: !viewportMode, resizable: true, flex: 1, minWidth: 90 },
  suppressFieldDotNotation: true, // a field named "a.b" is that field, not b inside a
  onModelUpdated: (/** @type {{ api: any }} */ { api }) => {
    $("rows").textContent = api.getDisplayedRowCount().toLocaleString();
  },
});

/** The fields seen so far, in the order they appeared: the grid's columns. */
const fields = new Set();

/** Add a column for each field of `record` not seen before. @param {any} record */
function addColumns(record) {
  let added = false;
  for (const field in record) {
    if (fields.has(field)) continue;
    fields.add(field);
    added = true;
  }
  if (!added) return;
  api.setGridOption("columnDefs", [...fields].map((field) => column(field, record[field])));
}

/** @param {string} field @param {any} sample */
function column(field, sample) {
  const def = /** @type {Record<string, any>} */ ({ field, headerName: field });
  if (typeof sample === "number") def.type = "numericColumn";
  if (sample !== null && typeof sample === "object") {
    def.valueFormatter = (/** @type {{ value: any }} */ p) => JSON.stringify(p.value);
  }
  return def;
}

/** @type {Array<{ key: string, record: any, reason: string | undefined }>} */
const oofs = [];

/** @param {string} key @param {any} record @param {string | undefined} reason */
function showOof(key, record, reason) {
  oofs.push({ key, record, reason });
  const item = document.createElement("li");
  const why = document.createElement("b");
  why.textContent = reason ?? "left";
  const body = document.createElement("code");
  body.textContent = JSON.stringify(record ?? key);
  item.append(why, " ", body);
  const list = $("oofs");
  list.prepend(item);
  while (list.children.length > OOFS_SHOWN) list.lastElementChild?.remove();
}

const scheme = location.protocol === "https:" ? "wss" : "ws";
const client = new PushClient(`${scheme}://${location.host}/ws`, { heartbeatMs: 5000, maxBackoffMs: 5000 });
client.on("state", (/** @type {{ state: string, attempt: number }} */ { state, attempt }) => {
  $("state").dataset.state = state;
  $("state").textContent = state === "waiting" || (state === "connecting" && attempt > 1)
    ? `${state} (attempt ${attempt})` : state;
});
await client.connect();

if (viewportMode) {
  const orderby = params.get("orderby") || undefined;
  const viewport = client.viewport(topic, { filter, orderby, rows: [0, 99] });
  viewport.on("error", (/** @type {{ reason: string }} */ { reason }) => { $("message").textContent = reason; });
  await viewport.ready;
  if (viewport.rows[0]) addColumns(viewport.rows[0]);
  const binding = bindAgGridViewport(viewport, api);
  Object.assign(globalThis, { example: { client, viewport, api, binding } });
} else {
  const view = client.sowAndDeltaSubscribe(topic, { filter, options });
  view.on("change", (/** @type {{ record: any, kind: string }} */ { record, kind }) => {
    if (kind !== "oof") addColumns(record);
  });
  view.on("error", (/** @type {{ reason: string }} */ { reason }) => { $("message").textContent = reason; });
  const binding = bindAgGrid(view, api, { flash: true, onOof: showOof });

  let counted = 0;
  setInterval(() => {
    $("rate").textContent = (binding.stats.changes - counted).toLocaleString();
    counted = binding.stats.changes;
  }, 1000);

  /** For benchmarks and tests. */
  const example = {
    client, view, api, binding, oofs,
    /** View changes that reached the grid so far. */
    get applied() { return binding.stats.changes; },
  };
  Object.assign(globalThis, { example });
}
