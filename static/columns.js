// The columns of one view: made as the records' fields appear (key fields first), in the order,
// widths and visibility the URL asks for; each knows its kind and number format, and the total a
// group row shows for it (a sum, an average for a level such as a price, a count, or none).

import { ColumnFormat, inferDecimals, kindOf } from "/static/format.js";
import { path } from "/static/tree.js";

/** Words in a field's name that make its numbers levels, not amounts: their total is an average. */
const LEVEL_WORDS = new Set(["px", "price", "mark", "mid", "bid", "ask", "rate", "avg", "average", "mean",
  "pct", "percent", "ratio", "yield", "spread"]);

/** Whether a field is named like a level (`limit_px`, `avgPrice`, `mark`). @param {string} field */
export function averaged(field) {
  const words = field.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase().split(/[^a-z0-9]+/);
  return words.some((word) => LEVEL_WORDS.has(word));
}

const AGGREGATE = /** @type {Record<string, string>} */ ({ sum: "SUM", avg: "AVG", count: "COUNT" });

export class Columns {
  /** @param {import("/static/settings.js").ViewSettings} settings @param {() => Set<string>} keyFields */
  constructor(settings, keyFields) {
    this.settings = settings;
    this.keyFields = keyFields;
    /** @type {string[]} every field seen, in the order shown (hidden ones included) */
    this.fields = [];
    /** @type {Map<string, ColumnFormat>} */
    this.formats = new Map();
    /** @type {Set<string>} */
    this.hidden = new Set(settings.columns.filter((c) => c.hidden).map((c) => c.field));
    /** @type {Map<string, number>} widths the user set (px) */
    this.widths = new Map(settings.columns.filter((c) => c.width).map((c) => [c.field, /** @type {number} */ (c.width)]));
    /** Whether the user moved, hid or sized a column (only then does the URL list them). */
    this.touched = settings.columns.length > 0;
  }

  /** The kind of a column ("number", "timestamp", "text"). @param {string} field */
  kind(field) {
    return this.formats.get(field)?.kind ?? "text";
  }

  /** @param {string} field */
  format(field) {
    let format = this.formats.get(field);
    if (!format) {
      format = new ColumnFormat("text", this.keyFields().has(field), 0, this.settings.decimals[field]);
      format.display = this.settings.formats[field] ?? "";
      this.formats.set(field, format);
    }
    return format;
  }

  /** Learn the fields of these records; true when a column was added. @param {any[]} records */
  learn(records) {
    const seen = new Set(this.fields);
    /** @type {string[]} */
    const added = [];
    for (const record of records) {
      if (!record || typeof record !== "object") continue;
      for (const field of Object.keys(record)) {
        if (!seen.has(field) && !field.startsWith("__")) {
          seen.add(field);
          added.push(field);
        }
      }
    }
    if (added.length === 0) return false;
    const sample = records.slice(0, 500);
    for (const field of added) {
      const values = sample.map((record) => record?.[field]);
      const format = new ColumnFormat(kindOf(values), this.keyFields().has(field), inferDecimals(values), this.settings.decimals[field]);
      format.display = this.settings.formats[field] ?? "";
      this.formats.set(field, format);
    }
    // The URL's order first, then key fields, then the others as they came; columns already
    // shown keep their places (the user may have moved them).
    const rank = new Map(this.settings.columns.map((column, index) => [column.field, index]));
    const keys = this.keyFields();
    const place = (/** @type {string} */ f) => rank.get(f) ?? (keys.has(f) ? 1e6 : 2e6);
    added.sort((a, b) => place(a) - place(b));
    this.fields = this.fields.length === 0 ? added : [...this.fields, ...added];
    return true;
  }

  /** The columns shown, in order: the pinned ones first. */
  visible() {
    const shown = this.fields.filter((field) => !this.hidden.has(field));
    const pinned = shown.filter((field) => this.pinned(field));
    return pinned.length ? [...pinned, ...shown.filter((field) => !this.pinned(field))] : shown;
  }

  /** Whether a column stays at the left as the table scrolls sideways: the key fields always,
   * and the columns the user pinned. @param {string} field */
  pinned(field) {
    return this.keyFields().has(field) || this.settings.pin.includes(field);
  }

  /** @param {string} field @param {boolean} shown */
  show(field, shown) {
    if (shown) this.hidden.delete(field);
    else this.hidden.add(field);
    this.touched = true;
  }

  /** Move a column one place among the visible ones. @param {string} field @param {-1 | 1} step */
  move(field, step) {
    const shown = this.visible();
    const at = shown.indexOf(field);
    const other = shown[at + step];
    if (at < 0 || other === undefined) return;
    const [i, j] = [this.fields.indexOf(field), this.fields.indexOf(other)];
    [this.fields[i], this.fields[j]] = [this.fields[j], this.fields[i]];
    this.touched = true;
  }

  /** The total a group row shows for a column: the URL's choice, else a count for a key, an
   * average for a number named like a price or a ratio (a sum of prices means nothing), a sum
   * for any other number. @param {string} field */
  total(field) {
    const chosen = this.settings.totals[field];
    if (chosen) return chosen;
    if (this.keyFields().has(field)) return "none"; // each group row counts its records already
    if (this.kind(field) !== "number") return "none";
    return averaged(field) ? "avg" : "sum";
  }

  /** The aggregates of a group level's projection: one per column with a total, under the
   * column's own name. @param {string[]} grouped  fields grouped on at this level and above */
  projection(grouped) {
    return this.fields
      .filter((field) => !grouped.includes(field) && this.total(field) !== "none")
      .map((field) => `${AGGREGATE[this.total(field)]}(${path(field)}) AS ${path(field)}`);
  }

  /** The layout as the URL keeps it: every column once the user moved, resized or hid one. */
  layout() {
    if (!this.touched) return this.settings.columns;
    return this.fields.map((field) => {
      /** @type {import("/static/settings.js").ColumnSetting} */
      const setting = { field };
      if (this.hidden.has(field)) setting.hidden = true;
      const width = this.widths.get(field);
      if (width) setting.width = width;
      return setting;
    });
  }
}
