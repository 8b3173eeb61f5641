// The columns of one view's table: made as the records' fields appear, in the order, widths and
// visibility the URL asks for; numbers right-aligned with their headers, formatted and totalled;
// a quick filter above each; a menu on each header (group, totals, decimals, chart, hide); and
// headers that take the keyboard (Tab to reach, Enter or Space to sort).

import { flashing } from "/web/adapters/tabulator.js";
import { ColumnFormat, cellFormatter, formatNumber, inferDecimals, kindOf } from "/static/format.js";
import { quickFilterFunction } from "/static/quick.js";

/** Words in a field's name that make its numbers levels, not amounts: their total is an average. */
const LEVEL_WORDS = new Set(["px", "price", "mark", "mid", "bid", "ask", "rate", "avg", "average", "mean",
  "pct", "percent", "ratio", "yield", "spread"]);

/** Whether a field is named like a level (`limit_px`, `avgPrice`, `mark`). @param {string} field */
function averaged(field) {
  const words = field.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase().split(/[^a-z0-9]+/);
  return words.some((word) => LEVEL_WORDS.has(word));
}

/** The server's order over mixed values: numbers before strings, empty values last. */
function compare(/** @type {any} */ a, /** @type {any} */ b) {
  if (a === b) return 0;
  if (a === undefined || a === null || a === "") return 1;
  if (b === undefined || b === null || b === "") return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "number") return -1;
  if (typeof b === "number") return 1;
  return String(a) < String(b) ? -1 : 1;
}

/**
 * @typedef {{
 *   table: any, binding: import("/web/adapters/tabulator.js").TabulatorBinding,
 *   settings: import("/static/settings.js").ViewSettings, keyFields: () => Set<string>,
 *   changed: () => void, chartColumn: (field: string) => void, groupBy: (field: string) => void,
 * }} ColumnsHost
 */

export class Columns {
  /** @param {ColumnsHost} host */
  constructor(host) {
    this.host = host;
    /** @type {Map<string, ColumnFormat>} */
    this.formats = new Map();
    /** @type {Map<string, number>} per column, the longest total text fitted so far */
    this.totalWidths = new Map();
    /** Columns the user resized: only their widths go into the URL. */
    this.resized = new Set(host.settings.columns.filter((c) => c.width).map((c) => c.field));
    this.touched = host.settings.columns.length > 0;
  }

  /** The kind of a column ("number", "timestamp", "text"), once it exists. @param {string} field */
  kind(field) {
    return this.formats.get(field)?.kind ?? "text";
  }

  /**
   * Make columns for newly seen fields, placed as the URL says; `records` are the first records
   * that have them, from which each column learns its kind and decimals.
   * @param {string[]} fields @param {any[]} records
   */
  async add(fields, records) {
    const { table, settings } = this.host;
    const sample = records.slice(0, 500);
    const rank = new Map(settings.columns.map((column, index) => [column.field, index]));
    const ordered = [...fields].sort((a, b) => (rank.get(a) ?? Infinity) - (rank.get(b) ?? Infinity));
    const definitions = ordered.map((field) => {
      const values = sample.map((record) => record?.[field]);
      const format = new ColumnFormat(kindOf(values), this.host.keyFields().has(field), inferDecimals(values), settings.decimals[field]);
      this.formats.set(field, format);
      return this.definition(field, format);
    });
    if (table.getColumns().length === 0) {
      table.setColumns(definitions); // the first records: every column in one layout pass
    } else {
      for (const definition of definitions) {
        const before = this._neighbour(definition.field, rank);
        await (before ? table.addColumn(definition, true, before) : table.addColumn(definition));
      }
    }
    for (const field of ordered) {
      this._keyboard(table.getColumn(field));
      const quick = settings.quick[field];
      if (quick) table.setHeaderFilterValue(field, quick);
    }
    const sort = settings.sort;
    if (sort && fields.includes(sort.field)) table.setSort(sort.field, sort.dir);
    if (settings.group && fields.includes(settings.group)) this.host.groupBy(settings.group);
  }

  /** Widen a column whose total is wider than its values (the table sized it to them), unless
   * the user has sized it. @param {any} cell @param {number} length  the total's text length */
  _fitTotal(cell, length) {
    const element = cell.getElement();
    const column = cell.getColumn();
    if (!element?.isConnected || this.resized.has(column.getField())) return;
    // Measured only when a total is longer than any before (measuring forces a layout).
    this.totalWidths.set(column.getField(), length);
    const missing = element.scrollWidth - element.clientWidth;
    if (missing > 0) column.setWidth(column.getWidth() + missing + 1);
  }

  /** The column a new one goes before, to keep the URL's order. @param {string} field @param {Map<string, number>} rank */
  _neighbour(field, rank) {
    const mine = rank.get(field);
    if (mine === undefined) return null;
    let best = null;
    for (const column of this.host.table.getColumns()) {
      const theirs = rank.get(column.getField());
      if (theirs !== undefined && theirs > mine && (best === null || theirs < best[0])) best = [theirs, column];
    }
    return best ? best[1].getField() : null;
  }

  /** @param {string} field @param {ColumnFormat} format */
  definition(field, format) {
    const { binding, settings } = this.host;
    const number = format.kind === "number";
    const setting = settings.columns.find((column) => column.field === field);
    const total = this.total(field);
    return {
      title: field,
      field,
      hozAlign: number ? "right" : "left",
      headerHozAlign: number ? "right" : "left",
      formatter: flashing(binding, cellFormatter(format)),
      sorter: compare,
      headerFilter: "input",
      headerFilterFunc: quickFilterFunction(),
      headerFilterPlaceholder: number ? ">10, 5..9" : "contains",
      bottomCalc: total === "none" ? undefined : total,
      bottomCalcParams: { precision: false }, // an average unrounded: the column formats it
      bottomCalcFormatter: (/** @type {any} */ cell, /** @type {unknown} */ _params, /** @type {(done: () => void) => void} */ onRendered) => {
        // Tabulator's average arrives as text (toFixed); the total chosen is read now, as the
        // header menu may have changed it since this column was made.
        const raw = cell.getValue();
        const value = typeof raw === "string" && raw !== "" ? Number(raw) : raw;
        if (typeof value !== "number" || Number.isNaN(value)) return document.createTextNode("");
        const total = this.total(field);
        const decimals = total === "count" ? 0 : total === "avg" ? Math.max(format.decimals, 2) : format.decimals;
        const text = `${total === "avg" ? "avg " : total === "count" ? "n " : ""}${formatNumber(value, decimals, false)}`;
        if (text.length > (this.totalWidths.get(field) ?? 0)) onRendered(() => this._fitTotal(cell, text.length));
        return document.createTextNode(text);
      },
      headerMenu: () => this.menu(field),
      visible: !setting?.hidden,
      ...(setting?.width ? { width: setting.width } : {}),
      minWidth: number ? 96 : 48,
    };
  }

  /** The total a column shows: the URL's choice, else a count for a key, an average for a
   * number named like a price or a ratio (a sum of prices means nothing), a sum for any other
   * number. @param {string} field */
  total(field) {
    const chosen = this.host.settings.totals[field];
    if (chosen) return chosen;
    if (this.host.keyFields().has(field)) return "count";
    if (this.formats.get(field)?.kind !== "number") return "none";
    return averaged(field) ? "avg" : "sum";
  }

  /** @param {string} field */
  menu(field) {
    const { table, settings } = this.host;
    const number = this.kind(field) === "number";
    const item = (/** @type {string} */ label, /** @type {() => void} */ action) => ({ label, action });
    const items = [
      item(settings.group === field ? "Stop grouping" : "Group by this column",
        () => this.host.groupBy(settings.group === field ? "" : field)),
      { separator: true },
      ...["sum", "avg", "count", "none"].map((total) => item(
        `${this.total(field) === total ? "✓ " : ""}Total: ${total === "avg" ? "average" : total}`,
        () => this.setTotal(field, total))),
    ];
    if (number) {
      items.push({ separator: true });
      for (const decimals of [undefined, 0, 2, 4]) {
        const current = settings.decimals[field];
        items.push(item(`${current === decimals ? "✓ " : ""}Decimals: ${decimals ?? "as the data"}`,
          () => this.setDecimals(field, decimals)));
      }
      items.push(item("Chart this column", () => this.host.chartColumn(field)));
    }
    items.push({ separator: true }, item("Hide this column", () => {
      table.getColumn(field).hide();
      this.touched = true;
      this.host.changed();
    }));
    return items;
  }

  /** @param {string} field @param {string} total */
  setTotal(field, total) {
    this.host.settings.totals[field] = total;
    this.host.table.getColumn(field).updateDefinition({ bottomCalc: total === "none" ? undefined : total })
      .then(() => {
        this._keyboard(this.host.table.getColumn(field));
        // The groups' totals rows are rebuilt by grouping again: recalculating them would keep
        // their cells in the order from before the column was remade.
        if (this.host.settings.group) this.host.groupBy(this.host.settings.group);
        else this.host.table.recalc();
      });
    this.host.changed();
  }

  /** @param {string} field @param {number | undefined} decimals */
  setDecimals(field, decimals) {
    const format = this.formats.get(field);
    if (!format) return;
    if (decimals === undefined) delete this.host.settings.decimals[field];
    else this.host.settings.decimals[field] = decimals;
    format.fixed = decimals;
    this.host.table.redraw(true);
    this.host.changed();
  }

  /** A column that grew its decimals redraws, once, at the next tick. */
  redrawWidened() {
    let widened = false;
    for (const format of this.formats.values()) {
      widened = widened || format.widened;
      format.widened = false;
    }
    if (widened) this.host.table.redraw(true);
  }

  /** The layout as the URL keeps it: every column once the user moved, resized or hid one. */
  layout() {
    if (!this.touched) return this.host.settings.columns;
    return this.host.table.getColumns().map((/** @type {any} */ column) => {
      const field = column.getField();
      /** @type {import("/static/settings.js").ColumnSetting} */
      const setting = { field };
      if (!column.isVisible()) setting.hidden = true;
      if (this.resized.has(field)) setting.width = column.getWidth();
      return setting;
    });
  }

  /** Headers reachable with Tab; Enter or Space sorts, ascending then descending. @param {any} column */
  _keyboard(column) {
    const element = column.getElement();
    if (element.tabIndex === 0) return;
    element.tabIndex = 0;
    element.addEventListener("keydown", (/** @type {KeyboardEvent} */ event) => {
      if (event.target !== element || (event.key !== "Enter" && event.key !== " ")) return;
      event.preventDefault();
      const [current] = this.host.table.getSorters();
      const dir = current?.field === column.getField() && current.dir === "asc" ? "desc" : "asc";
      this.host.table.setSort(column.getField(), dir);
    });
  }
}
