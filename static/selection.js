// The rows a desk has selected in a view's table: a click selects a row, Ctrl (or ⌘) and a click
// adds or removes one, Shift and a click selects the rows between (those on screen); ↑ and ↓ move the selection
// (with Shift they extend it), Ctrl+C copies the selected rows as tab-separated text with the
// column names first, ready to paste into a spreadsheet. Rows are known by their key, so a
// selection stays on its records as they change and move; the copy has their latest values.

import { inert } from "/static/csv.js";

/** @typedef {import("/static/tree.js").Row} Row */

export class Selection {
  constructor() {
    /** @type {Map<string, any>} each selected record row's latest record, by key, in selection order */
    this.records = new Map();
    /** @type {number | null} where the last plain or Ctrl click was (a row's place in the view) */
    this.anchor = null;
    /** @type {number | null} the row the keyboard moves from (its place when last seen) */
    this.cursor = null;
    /** @type {string | null} that row's key: the place is found again when the row has moved */
    this.cursorKey = null;
  }

  /** @param {string | undefined} key */
  has(key) {
    return key !== undefined && this.records.has(key);
  }

  /** The rows now drawn (from place ``y0``): selected ones keep their latest record, and the
   * keyboard's row its place. @param {Row[]} rows @param {number} [y0] */
  seen(rows, y0 = 0) {
    rows.forEach((row, at) => {
      if (row.key && this.records.has(row.key)) this.records.set(row.key, row.record);
      if (row.key && row.key === this.cursorKey) this.cursor = y0 + at; // a live change moved it
    });
  }

  /**
   * A click on the row at place ``y`` of the view.
   * @param {number} y @param {{ shiftKey: boolean, ctrlKey: boolean, metaKey: boolean }} keys
   * @param {(y: number) => Row | undefined} rowAt the drawn row at a place, if it is drawn
   */
  click(y, keys, rowAt) {
    const row = rowAt(y);
    if (!row?.key || row.kind === "group") return;
    if (keys.shiftKey && this.anchor !== null) {
      this.records.clear();
      const [from, to] = this.anchor <= y ? [this.anchor, y] : [y, this.anchor];
      for (let at = from; at <= to; at++) {
        const between = rowAt(at);
        if (between?.key && between.kind !== "group") this.records.set(between.key, between.record);
      }
    } else if (keys.ctrlKey || keys.metaKey) {
      if (this.records.has(row.key)) this.records.delete(row.key);
      else this.records.set(row.key, row.record);
      this.anchor = y;
    } else {
      this.records.clear();
      this.records.set(row.key, row.record);
      this.anchor = y;
    }
    this.cursor = y;
    this.cursorKey = row.key;
  }

  /**
   * ↑ or ↓: the next row up or down is selected (added, with Shift); its place, or null when
   * there is none drawn there.
   * @param {-1 | 1} step @param {boolean} extend @param {(y: number) => Row | undefined} rowAt
   */
  move(step, extend, rowAt) {
    if (this.cursor === null) return null;
    let y = this.cursor + step;
    while (rowAt(y)?.kind === "group") y += step;
    const row = rowAt(y);
    if (!row?.key) return null;
    if (!extend) {
      this.records.clear();
      this.anchor = y;
    }
    this.records.set(row.key, row.record);
    this.cursor = y;
    this.cursorKey = row.key;
    return y;
  }

  clear() {
    this.records.clear();
    this.anchor = this.cursor = null;
    this.cursorKey = null;
  }

  /** The selected rows as tab-separated text, ``fields`` first. @param {string[]} fields */
  text(fields) {
    const cell = (/** @type {any} */ value) => {
      if (value === null || value === undefined) return "";
      const text = (typeof value === "object" ? JSON.stringify(value) : String(value)).replace(/[\t\r\n]+/g, " ");
      return typeof value === "string" ? inert(text) : text; // pasted as text, never as a formula
    };
    const lines = [fields.join("\t")];
    for (const record of this.records.values()) lines.push(fields.map((field) => cell(record?.[field])).join("\t"));
    return `${lines.join("\n")}\n`;
  }
}

/** Scroll ``table`` (a <regular-table>) so that the row at place ``y`` is on screen.
 * @param {HTMLElement} table @param {number} y */
export function reveal(table, y) {
  const row = table.querySelector("tbody tr");
  if (!row) return;
  const height = row.getBoundingClientRect().height;
  const head = table.querySelector("thead")?.getBoundingClientRect().height ?? 0;
  const rows = Math.max(1, Math.floor((table.clientHeight - head) / height) - 1);
  const first = Math.ceil(table.scrollTop / height);
  if (y < first) table.scrollTop = Math.max(0, y) * height;
  else if (y >= first + rows) table.scrollTop = (y - rows + 1) * height;
}
