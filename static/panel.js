// One view on the dashboard: its table (Tabulator, bound to the view by web/adapters/tabulator.js),
// its toolbar (pause, group, chart, columns, quick filters), its figures, its chart, and what it
// says when it has no rows to show.

import { TabulatorFull } from "/static/vendor/tabulator/tabulator_esm.min.js";
import { TabulatorBinding, tabulatorOptions } from "/web/adapters/tabulator.js";
import { Columns } from "/static/columns.js";
import { Sparkline } from "/static/sparkline.js";
import { formatNumber } from "/static/format.js";

const LEFT_NOTE_MS = 10_000;
/** An OOF's reason (docs/protocol.md, Delta subscriptions and OOF), as a reader says it. */
const OOF_REASONS = /** @type {Record<string, string>} */ ({
  match: "no longer matches the filter",
  deleted: "deleted",
  expired: "expired",
  entitlement: "no longer entitled to it",
  stale: "gone while the connection was down",
});

/**
 * What a panel needs from the page.
 * @typedef {{
 *   client: any, keyFields: (topic: string) => Set<string>, connection: () => { state: string, attempt: number },
 *   showError: (message: string) => void, changed: () => void, closed: (panel: Panel) => void,
 * }} PanelHost
 */

export function formatBytes(/** @type {number} */ bytes) {
  if (bytes < 1024) return `${bytes | 0} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export function formatMs(/** @type {number} */ ms) {
  return ms < 10 ? `${ms.toFixed(1)} ms` : ms < 10_000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(0)} s`;
}

function formatAge(/** @type {number} */ seconds) {
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  return `${Math.floor(seconds / 3600)} h`;
}

/** The view's options with `timestamp` (each update then carries the server's `ts`, from which
 * the panel shows its latency); the URL and the panel's title keep the options as typed. */
function withTimestamp(/** @type {string} */ options) {
  const list = (options || "").split(",").map((o) => o.trim()).filter(Boolean);
  if (!list.includes("timestamp")) list.push("timestamp");
  return list.join(",");
}

export class Panel {
  /** @param {PanelHost} host @param {import("/static/settings.js").ViewSettings} settings */
  constructor(host, settings) {
    this.host = host;
    this.settings = settings;
    const { topic, filter, options } = settings;
    const fragment = /** @type {HTMLTemplateElement} */ (document.getElementById("view-template")).content.cloneNode(true);
    this.element = /** @type {HTMLElement} */ (/** @type {DocumentFragment} */ (fragment).querySelector(".view"));
    this.$(".topic").textContent = topic;
    this.$(".filter").textContent = filter || "all records";
    this.$(".options").textContent = options || "";
    this.$(".close").addEventListener("click", () => this.close());
    this.empty = document.createElement("div");
    this.empty.className = "empty-state";
    document.getElementById("views")?.appendChild(this.element);
    this.table = new TabulatorFull(this.$(".table"), {
      ...tabulatorOptions(),
      height: "100%",
      layout: "fitData",
      // Rows of one height (the stylesheet's: 4 px padding, a 19 px line, a 1 px border): Tabulator
      // then lays out a redrawn row without measuring each of its cells, half the cost.
      rowHeight: 28,
      movableColumns: true,
      columnCalcs: "both",
      placeholder: this.empty,
      groupHeader: (/** @type {unknown} */ value, /** @type {number} */ count) =>
        document.createTextNode(`${value ?? "(none)"} · ${formatNumber(count, 0)} ${count === 1 ? "row" : "rows"}`),
      columnDefaults: { resizable: true },
      headerFilterLiveFilterDelay: 250,
    });
    this.view = host.client.sowAndDeltaSubscribe(topic, { filter: filter || undefined, options: withTimestamp(options) });
    this.binding = new TabulatorBinding(this.view, this.table, {
      onOof: (key, record, reason) => this.left(key, record, reason),
      onColumns: (fields, records) => {
        this.columns.add(fields, records).catch((error) => console.warn("columns", error));
        this.toolbarFields();
      },
    });
    this.columns = new Columns({
      table: this.table, binding: this.binding, settings, keyFields: () => host.keyFields(topic),
      changed: () => host.changed(), chartColumn: (field) => this.chartColumn(field), groupBy: (field) => this.groupBy(field),
    });
    this.table.on("columnMoved", () => { this.columns.touched = true; host.changed(); });
    this.table.on("columnResized", (/** @type {any} */ column) => {
      this.columns.touched = true;
      this.columns.resized.add(column.getField());
      host.changed();
    });
    this.table.on("columnVisibilityChanged", () => { this.columns.touched = true; this.toolbarFields(); host.changed(); });
    this.table.on("dataSorted", () => host.changed());
    this.table.on("dataFiltered", () => host.changed());
    /** @type {Sparkline | null} */
    this.sparkline = null;
    this.lastUpdates = 0;
    this.lastMessageAt = 0;
    this.shownRows = "";
    this.established = false;
    /** @type {string | null} why the topic holds no records, when the server says it keeps none */
    this.notConfigured = null;
    this.view.on("change", () => { this.lastMessageAt = Date.now(); });
    this.view.on("error", (/** @type {{ reason: string }} */ { reason }) => this.refused(reason));
    this.view.on("unsubscribed", (/** @type {{ reason: string }} */ { reason }) => host.showError(`${topic}: the server dropped this view (${reason})`));
    // While the connection is down the rows stay, dimmed: the last values received, maybe old.
    this.view.on("stale", (/** @type {{ stale: boolean }} */ { stale }) => this.element.classList.toggle("stale", stale));
    this.view.ready.then(() => this.ready(), () => {});
    this.wireToolbar();
    if (settings.chart) this.chartColumn(settings.chart);
    this.showEmpty();
  }

  /** @param {string} selector @returns {HTMLElement} */
  $(selector) {
    return /** @type {HTMLElement} */ (this.element.querySelector(selector));
  }

  ready() {
    this.established = true;
    this.lastMessageAt = Date.now();
    if (this.view.records.size === 0) {
      // An empty snapshot: an empty topic, or a name the server keeps no records for. Its answer
      // to a `sow` tells which, in its own words.
      this.host.client.sow(this.settings.topic, { topN: 1 }).then(
        () => { this.notConfigured = null; },
        (/** @type {any} */ error) => { this.notConfigured = String(error?.reason ?? error?.message ?? error); },
      ).finally(() => this.showEmpty());
    }
    this.showEmpty();
  }

  /** A view the server refuses at once (a bad filter) goes; one it refuses after a reconnect
   * (the topic or the user's rights changed) stays on screen, stale, with the reason, and in the URL.
   * @param {string} reason */
  refused(reason) {
    if (!this.established) {
      this.host.showError(reason);
      this.close();
      return;
    }
    this.element.classList.add("stale", "failed");
    this.$(".view-error").textContent = `refused after reconnecting: ${reason}`;
  }

  close() {
    this.binding.unbind();
    if (!this.view.error) this.view.close();
    this.sparkline?.destroy();
    this.table.destroy();
    this.element.remove();
    this.host.closed(this);
  }

  /** A record left the view: said under the toolbar, named by its key fields, with the reason in
   * words. @param {string} key @param {any} record @param {string} reason */
  left(key, record, reason) {
    const keyFields = [...this.host.keyFields(this.settings.topic)].filter((field) => record?.[field] !== undefined);
    const name = keyFields.length ? keyFields.map((field) => `${field} ${record[field]}`).join(", ") : key;
    const note = this.$(".left-note");
    note.textContent = `${name} left the view: ${OOF_REASONS[reason] ?? reason}`;
    note.dataset.at = String(Date.now());
  }

  /** Apply up to `budget` waiting changes; returns how many it applied. @param {number} budget @param {number} now */
  render(budget, now) {
    const applied = this.binding.flush(budget, now);
    const rows = String(this.view.records.size);
    if (rows !== this.shownRows) {
      // Written only when it changes: any DOM write costs a style pass over every row.
      this.$(".rows").textContent = rows;
      this.shownRows = rows;
    }
    return applied;
  }

  wireToolbar() {
    const pause = /** @type {HTMLButtonElement} */ (this.$(".pause"));
    pause.addEventListener("click", () => {
      if (this.binding.paused) this.binding.resume();
      else this.binding.paused = true;
      pause.setAttribute("aria-pressed", String(this.binding.paused));
      pause.textContent = this.binding.paused ? "Resume" : "Pause";
      this.element.classList.toggle("paused", this.binding.paused);
      this.tick();
    });
    const group = /** @type {HTMLSelectElement} */ (this.$("select.group"));
    group.addEventListener("change", () => this.groupBy(group.value));
    const chart = /** @type {HTMLSelectElement} */ (this.$("select.chart"));
    chart.addEventListener("change", () => this.chartColumn(chart.value));
    this.$(".clear-quick").addEventListener("click", () => this.table.clearHeaderFilter());
  }

  /** The toolbar's lists of fields: group by any, chart a number, show or hide any. */
  toolbarFields() {
    const fields = this.binding.fields;
    const fill = (/** @type {HTMLSelectElement} */ select, /** @type {string[]} */ names, /** @type {string} */ chosen) => {
      select.replaceChildren(new Option("none", ""), ...names.map((name) => new Option(name, name)));
      select.value = chosen;
    };
    fill(/** @type {HTMLSelectElement} */ (this.$("select.group")), fields, this.settings.group);
    fill(/** @type {HTMLSelectElement} */ (this.$("select.chart")), fields.filter((f) => this.columns.kind(f) === "number"), this.settings.chart);
    const list = this.$(".column-list");
    list.replaceChildren(...fields.map((field) => {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      const column = this.table.getColumn(field);
      box.checked = column ? column.isVisible() : true;
      box.addEventListener("change", () => {
        const current = this.table.getColumn(field);
        if (!current) return;
        if (box.checked) current.show();
        else current.hide();
      });
      label.append(box, document.createTextNode(` ${field}`));
      return label;
    }));
  }

  /** @param {string} field  "" for no grouping */
  groupBy(field) {
    this.settings.group = field;
    this.table.setGroupBy(field || false);
    /** @type {HTMLSelectElement} */ (this.$("select.group")).value = field;
    this.host.changed();
  }

  /** @param {string} field  "" for no chart */
  chartColumn(field) {
    this.settings.chart = field;
    /** @type {HTMLSelectElement} */ (this.$("select.chart")).value = field;
    this.sparkline?.destroy();
    this.sparkline = null;
    const box = this.$(".sparkline");
    box.hidden = !field;
    if (field) {
      this.$(".chart-label").textContent = `Σ ${field}`;
      this.sparkline = new Sparkline(this.$(".chart-canvas"));
    }
    this.host.changed();
  }

  /** What the view looks like now, for the URL. @returns {import("/static/settings.js").ViewSettings} */
  current() {
    const hasColumns = this.table.getColumns().length > 0;
    if (!hasColumns) return this.settings;
    const [sorter] = this.table.getSorters();
    /** @type {Record<string, string>} */
    const quick = {};
    for (const { field, value } of this.table.getHeaderFilters()) if (value !== "") quick[field] = String(value);
    this.settings.columns = this.columns.layout();
    this.settings.sort = sorter ? { field: sorter.field, dir: sorter.dir } : null;
    this.settings.quick = quick;
    return this.settings;
  }

  /** Once a second: the figures, the chart, the empty state, the stale badge. */
  tick() {
    const { updates, bytes, bytesSaved } = this.view.stats;
    this.$(".rate").textContent = String(updates - this.lastUpdates);
    this.lastUpdates = updates;
    this.$(".received").textContent = formatBytes(bytes);
    this.$(".saved").textContent = formatBytes(bytesSaved);
    const { p50, p99 } = this.view.latency.percentiles();
    this.$(".latency").textContent = p50 === null ? "–" : `${formatMs(p50)} / ${formatMs(p99)}`;
    const age = this.lastMessageAt ? formatAge((Date.now() - this.lastMessageAt) / 1000) : "–";
    this.$(".age").textContent = age;
    const waiting = this.binding.waiting;
    this.$(".waiting").textContent = this.binding.paused ? `paused: ${formatNumber(waiting, 0)} rows with changes waiting` : "";
    this.$(".clear-quick").hidden = this.table.getHeaderFilters().every((/** @type {any} */ f) => f.value === "");
    const note = this.$(".left-note");
    if (note.dataset.at && Date.now() - Number(note.dataset.at) > LEFT_NOTE_MS) {
      note.textContent = "";
      delete note.dataset.at;
    }
    if (this.sparkline && this.settings.chart) {
      let sum = 0;
      for (const record of this.binding.records.values()) {
        const value = record?.[this.settings.chart];
        if (typeof value === "number") sum += value;
      }
      this.sparkline.add(Date.now() / 1000, sum);
      this.$(".chart-value").textContent = formatNumber(sum, 2);
      this.$(".chart-value").classList.toggle("negative", sum < 0);
    }
    const { state, attempt } = this.host.connection();
    this.$(".stale-badge").textContent = this.view.stale
      ? `stale · last message ${age} ago · ${state === "open" ? "resubscribing" : `reconnecting, attempt ${attempt}`}`
      : "stale";
    this.columns.redrawWidened();
    this.showEmpty();
  }

  /** The words in an empty table: why it has no rows. */
  showEmpty() {
    const { topic, filter } = this.settings;
    const { state, attempt } = this.host.connection();
    let text;
    let kind;
    if (this.view.error) [kind, text] = ["refused", `The server refused this view: ${this.view.error}`];
    else if (!this.established && state !== "open") [kind, text] = ["disconnected", `Not connected to the server (attempt ${attempt}); the view opens when it answers.`];
    else if (!this.established) [kind, text] = ["waiting", `Waiting for the snapshot of ${topic}…`];
    else if (this.binding.records.size > 0) [kind, text] = ["quick", "No rows match the quick filters."];
    else if (this.notConfigured) [kind, text] = ["unknown", `${topic} is not a topic the server keeps records of (it says: ${this.notConfigured}). Live publishes to it appear here.`];
    else if (filter) [kind, text] = ["no-match", `No record of ${topic} matches ${filter} yet.`];
    else [kind, text] = ["no-records", `${topic} has no records yet.`];
    if (this.empty.textContent !== text) this.empty.textContent = text;
    this.empty.dataset.kind = kind;
  }
}
