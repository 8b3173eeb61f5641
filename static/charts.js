// A chart pane: a number column of the rows selected in a view, over time, one line per row (uPlot,
// vendored in static/vendor/uplot). Like the detail pane (static/details.js), the rows are a
// subscription of their own on the server (a filter on their keys), so the lines stay live wherever
// the rows are scrolled; each line is sampled once a second and on every change, and the chart
// keeps the last MINUTES minutes.

import uPlot from "/static/vendor/uplot/uPlot.esm.js";
import { both, equals } from "/static/tree.js";

/** Lines at most (the first rows selected). */
export const MAX_SERIES = 8;
/** Minutes of history a chart keeps. */
const MINUTES = 5;
const COLOURS = ["#35a0d4", "#e8a33d", "#4caf7d", "#d45d79", "#8e7cc3", "#c0ca33", "#26a69a", "#ef6c00"];

/** A line's name: its record's key fields and values (`trader ben`). @param {any} record @param {string[]} keys */
function labelOf(record, keys) {
  return keys.map((field) => `${field} ${record?.[field]}`).join(", ") || "the selected row";
}

export class ChartPane {
  /** @param {import("/static/panel.js").Panel} panel  the view it follows @param {string} field */
  constructor(panel, field) {
    this.panel = panel;
    this.field = field;
    this.topic = panel.settings.topic;
    this.element = document.createElement("section");
    this.element.className = "chart-pane";
    this.heading = document.createElement("h3");
    this.note = document.createElement("p");
    this.note.className = "chart-note";
    this.note.setAttribute("role", "status");
    this.plotBox = document.createElement("div");
    this.plotBox.className = "chart-plot";
    this.element.append(this.heading, this.note, this.plotBox);
    /** @type {any} the live view of the rows charted (web/view.js) */
    this.view = null;
    this.filter = "";
    /** @type {{ key: string, label: string }[]} one per line */
    this.series = [];
    /** @type {Map<string, number | null>} each line's value now, by SowKey */
    this.now = new Map();
    /** @type {number[][]} uPlot's data: the times (s), then each line's values */
    this.data = [[]];
    /** @type {any} */
    this.plot = null;
    this.timer = setInterval(() => this.sample(), 1000);
    this.resized = new ResizeObserver(() => this.fit());
    this.resized.observe(this.plotBox);
    this.select([]);
  }

  /** The column charted changed (from its menu). @param {string} field */
  chart(field) {
    if (field === this.field) return;
    this.field = field;
    const selected = this.selected ?? [];
    this.filter = "";
    this.select(selected);
  }

  /** The view's selection changed: a line for each of its first MAX_SERIES rows. @param {any[]} records */
  select(records) {
    this.selected = records;
    const keys = [...this.panel.host.keyFields(this.topic)];
    const rows = records.slice(0, MAX_SERIES);
    const filter = keys.length ? rows.map((record) => both(...keys.map((key) => equals(key, record[key])))).filter(Boolean).map((one) => `(${one})`).join(" OR ") : "";
    const title = `${this.topic} · ${this.field}`;
    this.heading.textContent = title;
    if (filter === this.filter && this.view) return;
    this.view?.close();
    this.view = null;
    this.filter = filter;
    this.series = rows.map((record) => ({ key: "", label: labelOf(record, keys) }));
    this.now.clear();
    this.data = [[], ...this.series.map(() => [])];
    this.note.textContent = !rows.length
      ? `Select rows in the ${this.topic} view to chart their ${this.field} here, one line each.`
      : records.length > MAX_SERIES ? `The first ${MAX_SERIES} of ${records.length} rows selected.` : "";
    this.draw(true);
    if (!filter) return;
    const view = (this.view = this.panel.host.client.sowAndSubscribe(this.topic, { filter, options: "oof" }));
    view.on("change", (/** @type {any} */ change) => {
      if (view !== this.view) return;
      const at = this.lineOf(change.key, change.record, keys);
      if (at < 0) return;
      const value = change.kind === "oof" ? null : change.record?.[this.field];
      this.now.set(change.key, typeof value === "number" && Number.isFinite(value) ? value : null);
      this.sample();
    });
  }

  /** The line of a record: its SowKey learnt from its first message. @param {string} key @param {any} record @param {string[]} keys */
  lineOf(key, record, keys) {
    const known = this.series.findIndex((line) => line.key === key);
    if (known >= 0) return known;
    const label = labelOf(record, keys);
    const found = this.series.findIndex((line) => line.key === "" && line.label === label);
    if (found >= 0) this.series[found].key = key;
    return found;
  }

  /** A point on every line: now, at each row's value now. */
  sample() {
    if (!this.series.length) return;
    const [times, ...lines] = this.data;
    times.push(Date.now() / 1000);
    this.series.forEach((line, index) => lines[index].push(/** @type {number} */ (this.now.get(line.key) ?? null)));
    const since = Date.now() / 1000 - MINUTES * 60;
    let drop = 0;
    while (drop < times.length && times[drop] < since) drop++;
    if (drop) this.data = this.data.map((column) => column.slice(drop));
    this.draw(false);
  }

  /** @param {boolean} anew  the lines changed: a new plot */
  draw(anew) {
    if (anew || !this.plot) {
      this.plot?.destroy();
      this.plot = null;
      if (!this.series.length) return;
      const { width, height } = this.size();
      // The canvas takes colours, not CSS variables: the theme's, as they are now.
      const style = getComputedStyle(this.element);
      const ink = style.color;
      const grid = { stroke: style.getPropertyValue("--line").trim() || "#8884", width: 1 };
      this.plot = new uPlot({
        width, height,
        series: [{}, ...this.series.map((line, index) => ({ label: line.label, stroke: COLOURS[index % COLOURS.length], width: 1.5, spanGaps: false }))],
        axes: [{ stroke: ink, grid, ticks: grid }, { stroke: ink, grid, ticks: grid, size: 70 }],
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
      }, /** @type {any} */ (this.data), this.plotBox);
      return;
    }
    this.plot.setData(this.data);
  }

  size() {
    return { width: Math.max(200, this.plotBox.clientWidth), height: Math.max(120, this.plotBox.clientHeight - 40) };
  }

  fit() {
    this.plot?.setSize(this.size());
  }

  close() {
    clearInterval(this.timer);
    this.resized.disconnect();
    this.view?.close();
    this.view = null;
    this.plot?.destroy();
    this.element.remove();
  }
}
