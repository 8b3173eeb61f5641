// A detail pane: every field of the row selected in a view, one per line, as that view formats
// them, live. It follows the view's selection (the first row selected); the record itself is a
// subscription of its own on the server (a filter on its key fields), so it stays live wherever
// the row is scrolled, and says so when the record is deleted or expires.

import { cellDisplay } from "/static/display.js";
import { both, equals } from "/static/tree.js";

/** How long a changed value stays marked. */
const CHANGED_MS = 1500;

export class DetailPane {
  /** @param {import("/static/panel.js").Panel} panel  the view it follows */
  constructor(panel) {
    this.panel = panel;
    const { topic } = panel.settings;
    this.element = document.createElement("section");
    this.element.className = "detail-pane";
    this.heading = document.createElement("h3");
    this.note = document.createElement("p");
    this.note.className = "detail-note";
    this.note.setAttribute("role", "status");
    this.list = document.createElement("dl");
    this.element.append(this.heading, this.note, this.list);
    this.topic = topic;
    /** @type {any} the live view of the record shown (web/view.js), or null */
    this.view = null;
    /** @type {string} the filter it was opened with */
    this.filter = "";
    /** @type {any} */
    this.record = null;
    /** @type {Map<string, number>} when each field last changed */
    this.changedAt = new Map();
    this.show(null, 0);
  }

  /** The view's selection changed: show its first row. @param {any[]} records */
  select(records) {
    const [first] = records;
    const keys = [...this.panel.host.keyFields(this.topic)];
    const filter = first && keys.length ? both(...keys.map((field) => equals(field, first[field]))) : "";
    this.more = Math.max(0, records.length - 1);
    if (filter === this.filter && this.view) {
      this.draw();
      return;
    }
    this.view?.close();
    this.view = null;
    this.filter = filter;
    this.changedAt.clear();
    this.show(first ?? null, this.more);
    if (!filter) return; // (a topic without keys: the row as it was selected)
    const view = (this.view = this.panel.host.client.sowAndSubscribe(this.topic, { filter, options: "oof" }));
    view.on("change", (/** @type {any} */ change) => {
      if (view !== this.view) return;
      if (change.kind === "oof") {
        this.gone = change.reason === "expired" ? "expired" : change.reason === "deleted" ? "was deleted" : "is no longer yours to see";
      } else {
        this.gone = "";
        this.show(change.record, this.more);
      }
      this.draw();
    });
  }

  /** @param {any} record @param {number} more  rows selected besides it */
  show(record, more) {
    const before = this.record;
    if (before && record) {
      const now = performance.now();
      for (const field of new Set([...Object.keys(before), ...Object.keys(record)])) {
        if (JSON.stringify(before[field]) !== JSON.stringify(record[field])) this.changedAt.set(field, now);
      }
    }
    this.record = record;
    this.more = more;
    this.gone = "";
    this.draw();
  }

  /** The fields in the view's column order (then any it does not show), each as it formats it. */
  draw() {
    const { panel, record } = this;
    const keys = [...panel.host.keyFields(this.topic)];
    const name = record ? keys.map((field) => `${field} ${record[field]}`).join(", ") || "the selected row" : "";
    this.heading.textContent = record ? `${this.topic} · ${name}` : this.topic;
    this.note.textContent = !record
      ? `Select a row in the ${this.topic} view to see all its fields here.`
      : this.gone ? `${name} ${this.gone}: these are its last values.`
      : this.more ? `${this.more} more ${this.more === 1 ? "row" : "rows"} selected: this is the first.` : "";
    this.element.classList.toggle("gone", Boolean(this.gone));
    if (!record) {
      this.list.replaceChildren();
      return;
    }
    const shown = panel.columns.visible();
    const fields = [...shown, ...Object.keys(record).filter((field) => !shown.includes(field))];
    const now = performance.now();
    this.list.replaceChildren(...fields.filter((field) => field in record).map((field) => {
      const row = document.createElement("div");
      row.dataset.field = field;
      const term = document.createElement("dt");
      term.textContent = field;
      const value = document.createElement("dd");
      const text = cellDisplay(panel.columns.format(field), record[field]);
      value.textContent = text.text;
      value.classList.toggle("negative", text.negative);
      value.classList.toggle("changed", now - (this.changedAt.get(field) ?? -Infinity) < CHANGED_MS);
      row.append(term, value);
      return row;
    }));
  }

  close() {
    this.view?.close();
    this.view = null;
    this.element.remove();
  }
}
