// One view's table: a <regular-table> (FINOS, Apache-2.0, vendored) whose data listener answers
// from a RowTree, so the table asks for the rows on screen and the tree moves the server's
// viewports to them; the scrollbar is as long as the view's count. Cells are formatted per
// column, negatives red, changed values flash (green up, red down, blue otherwise); group rows
// carry their totals and open or close from their header; each column header sorts on the server
// (click, Enter or Space), has a quick filter and a menu, and can be resized by its edge.

import "/static/vendor/regular-table/regular-table.js";
import { columnHead } from "/static/column_head.js";
import { cellDisplay, colourCell, colourRule } from "/static/display.js";
import { formatNumber } from "/static/format.js";
import { Selection, reveal } from "/static/selection.js";
import { COUNT } from "/static/tree.js";

const FLASH_MS = 800;
/** A record seen on screen this recently and changed since is flashed. */
const SEEN_MS = 2000;
const FLASHES = ["flash-up", "flash-down", "flash-changed", "flash-up-b", "flash-down-b", "flash-changed-b"];

/**
 * What a grid needs from its panel.
 * @typedef {{
 *   columns: import("/static/columns.js").Columns,
 *   tree: () => import("/static/tree.js").RowTree | null,
 *   sortOf: (field: string) => "asc" | "desc" | null,
 *   sort: (field: string) => void,
 *   quick: (field: string, text: string) => void,
 *   quickText: (field: string) => string,
 *   menu: (field: string, anchor: HTMLElement) => void,
 *   toggle: (row: import("/static/tree.js").Row) => void,
 *   resized: (field: string, width: number) => void,
 *   flashes: (field: string) => boolean,
 *   selected: (records: any[]) => void,
 * }} GridHost
 */

export class Grid {
  /** @param {HTMLElement} container @param {GridHost} host */
  constructor(container, host) {
    this.host = host;
    this.table = /** @type {any} */ (document.createElement("regular-table"));
    container.appendChild(this.table);
    /** @type {Map<string, HTMLElement>} each column's header, kept across draws */
    this.heads = new Map();
    /** @type {import("/static/tree.js").Row[]} the rows of the last answer, from `y0` */
    this.shown = [];
    this.y0 = 0;
    /** @type {string[]} the columns of the last answer: pinned ones, then those that scroll */
    this.fields = [];
    /** @type {string[]} */
    this.scrolled = [];
    /** @type {(string | null)[]} the row headers' fields (null: a group's label) */
    this.headerFields = [];
    this.grouped = false;
    /** @type {Map<string, { record: any, at: number }>} rows as last drawn, by key */
    this.seen = new Map();
    /** @type {Map<string, Map<string, { dir: string, at: number }>>} */
    this.flashes = new Map();
    this.layoutKey = "";
    this.pending = false;
    this.selection = new Selection();
    this.table.tabIndex = 0; // it takes the keyboard: ↑ ↓ move the selection, Ctrl+C copies it
    // The browser's own copy (Ctrl+C, ⌘C, the menu), which needs no clipboard permission and
    // works on a page served over plain http too.
    this.table.addEventListener("copy", (/** @type {ClipboardEvent} */ event) => {
      if (!this.selection.records.size || !event.clipboardData) return;
      event.clipboardData.setData("text/plain", this.selection.text(this.fields));
      event.preventDefault();
    });
    this.table.setDataListener(
      (/** @type {number} */ x0, /** @type {number} */ y0, /** @type {number} */ x1, /** @type {number} */ y1) => this.slice(x0, y0, x1, y1),
      { virtual_mode: "both" },
    );
    this.table.addStyleListener(() => this.style());
    this.table.addEventListener("click", (/** @type {MouseEvent} */ event) => this.clicked(event));
    this.table.addEventListener("keydown", (/** @type {KeyboardEvent} */ event) => {
      const th = /** @type {HTMLElement} */ (event.target).closest?.("tbody th");
      if (th && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        this.toggleAt(/** @type {HTMLElement} */ (th));
      } else if (event.target === this.table) {
        this.selectionKey(event);
      }
    });
    // A column's edge dragged: its width is the user's, kept in the URL. Done here with the
    // table's public sizes (the table's own drag starts from widths it may not have measured).
    container.addEventListener("mousedown", (/** @type {MouseEvent} */ event) => this.resizing(event), true);
    // The table draws what fits its box: a box that changes size (another view opened beside it,
    // the window resized) shows more or fewer rows and columns.
    this.resized = new ResizeObserver(() => this.draw());
    this.resized.observe(container);
  }

  /** Draw again (at most once per animation frame). */
  draw() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      if (!this.table.isConnected) return;
      this.restoreWidths();
      this.table.draw().catch((/** @type {unknown} */ error) => console.warn("draw", error));
    });
  }

  /** Forget column sizes (the columns changed) and draw. */
  relayout() {
    this.layoutKey = "";
    this.draw();
  }

  /** The widths the user set, given to the table when the columns shown change. */
  restoreWidths() {
    const fields = this.host.columns.visible();
    const grouped = (this.host.tree()?.grouping.length ?? 0) > 0;
    const key = `${grouped}|${fields.join("\u0000")}`;
    if (key === this.layoutKey) return;
    this.layoutKey = key;
    /** @type {Record<number, number>} */
    const sizes = {};
    fields.forEach((field, x) => {
      const width = this.host.columns.widths.get(field);
      if (width) sizes[x + (grouped ? 1 : 0)] = width;
    });
    this.table.resetAutoSize?.();
    this.table.restoreColumnSizes(sizes);
  }

  /** A drag of a column's edge, from mousedown to mouseup. @param {MouseEvent} event */
  resizing(event) {
    const target = /** @type {HTMLElement} */ (event.target);
    if (event.button !== 0 || !target.classList?.contains("rt-column-resize")) return;
    const th = /** @type {HTMLElement} */ (target.closest("th"));
    const meta = th && this.table.getMeta(th);
    const field = th ? this.fieldOf(th) : null;
    if (!meta || field === null) return;
    event.stopPropagation();
    event.preventDefault();
    const start = event.pageX;
    const from = th.getBoundingClientRect().width;
    let width = from;
    const move = (/** @type {MouseEvent} */ moved) => {
      width = Math.max(40, Math.round(from + moved.pageX - start));
      this.table.restoreColumnSizes({ ...this.table.saveColumnSizes(), [meta.size_key]: width });
      this.draw();
    };
    const up = () => {
      removeEventListener("mousemove", move);
      removeEventListener("mouseup", up);
      if (field && width !== from) this.host.resized(field, width);
    };
    addEventListener("mousemove", move);
    addEventListener("mouseup", up);
  }

  /** The header of a column, made once and kept across draws (static/column_head.js). @param {string} field */
  head(field) {
    let head = this.heads.get(field);
    if (!head) this.heads.set(field, (head = columnHead(field, this.host)));
    return head;
  }

  /** The quick filter box of a column. @param {string} field */
  quickInput(field) {
    return /** @type {HTMLInputElement} */ (this.head(field).querySelector("input.quick"));
  }

  /** The data listener: the rows y0..y1 (exclusive) of columns x0..x1, as text.
   * @param {number} x0 @param {number} y0 @param {number} x1 @param {number} y1 */
  async slice(x0, y0, x1, y1) {
    const tree = this.host.tree();
    const fields = this.host.columns.visible();
    const grouped = (tree?.grouping.length ?? 0) > 0;
    const rows = tree && y1 > y0 ? await tree.rows(y0, y1 - 1) : [];
    const numRows = tree ? tree.size() : 0;
    // Pinned columns (first among the visible: columns.js) are row headers, which the table
    // keeps at its left edge as the others scroll sideways; a grouped table's first row header
    // is the group's label (its field null).
    const pinned = fields.filter((field) => this.host.columns.pinned(field));
    const scrolled = fields.slice(pinned.length);
    this.fields = fields;
    this.scrolled = scrolled;
    /** @type {(string | null)[]} */
    this.headerFields = grouped ? [null, ...pinned] : pinned;
    this.grouped = grouped;
    this.shown = rows;
    this.y0 = y0;
    this.noteChanges(rows, fields.filter((field) => this.host.flashes(field)));
    this.selection.seen(rows, y0);
    const columns = scrolled.slice(x0, x1);
    /** @type {any} */
    const response = {
      num_rows: numRows,
      num_columns: scrolled.length,
      column_headers: columns.map((field) => [this.head(field)]),
      data: columns.map((field) => rows.map((row) => this.text(row, field))),
    };
    if (this.headerFields.length) {
      response.row_headers = rows.map((row) => this.headerFields.map((field) => (field === null ? this.label(row) : this.text(row, field))));
      response.merge_headers = "column"; // (never rows: equal keys in a row apart stay apart)
    }
    return response;
  }

  /** @param {import("/static/tree.js").Row} row @param {string} field */
  text(row, field) {
    const value = row.record?.[field];
    if (value === undefined) return "";
    const { columns } = this.host;
    const format = columns.format(field);
    if (row.kind === "group" && typeof value === "number" && !this.host.tree()?.grouping.includes(field)) {
      // A group's total says what it is when it is not a sum: a count, or an average.
      const total = columns.total(field);
      if (total === "count") return `n ${formatNumber(value, 0)}`;
      if (total === "avg") return `avg ${formatNumber(value, Math.max(format.decimals, 2), format.plain)}`;
    }
    return cellDisplay(format, value).text;
  }

  /** A row's header: for a group, its value and how many records it holds. @param {import("/static/tree.js").Row} row */
  label(row) {
    if (row.kind !== "group") return "";
    const value = row.values?.[row.depth];
    const count = row.record?.[COUNT];
    const rows = typeof count === "number" ? ` · ${formatNumber(count, 0)} ${count === 1 ? "row" : "rows"}` : "";
    return `${row.open ? "▾" : "▸"} ${value === null || value === undefined || value === "" ? "(none)" : String(value)}${rows}`;
  }

  /** Which cells changed since they were last drawn, to flash them.
   * @param {import("/static/tree.js").Row[]} rows @param {string[]} fields */
  noteChanges(rows, fields) {
    const now = performance.now();
    for (const row of rows) {
      if (!row.record || !row.key) continue;
      const before = this.seen.get(row.key);
      if (before && before.record !== row.record && now - before.at < SEEN_MS) {
        for (const field of fields) {
          const [a, b] = [before.record[field], row.record[field]];
          if (a === b || (typeof a === "object" && JSON.stringify(a) === JSON.stringify(b))) continue;
          const dir = typeof a === "number" && typeof b === "number" ? (b > a ? "up" : "down") : "changed";
          let cells = this.flashes.get(row.key);
          if (!cells) this.flashes.set(row.key, (cells = new Map()));
          cells.set(field, { dir, at: now });
        }
      }
      this.seen.set(row.key, { record: row.record, at: now });
    }
    if (this.seen.size > 4 * Math.max(rows.length, 500)) {
      for (const [key, { at }] of this.seen) if (now - at > SEEN_MS) this.seen.delete(key);
      for (const [key, cells] of this.flashes) {
        for (const [field, { at }] of cells) if (now - at > FLASH_MS) cells.delete(field);
        if (cells.size === 0) this.flashes.delete(key);
      }
    }
  }

  /** Classes that depend on the data: number alignment, negatives, flashes, group rows, sort state. */
  style() {
    const now = performance.now();
    const { columns } = this.host;
    const rules = new Map(this.fields.map((field) => [field, colourRule(columns.settings.colours[field])]));
    const largest = new Map(); // a scale's largest magnitude on screen, per column
    for (const [field, rule] of rules) {
      if (rule?.kind !== "scale") continue;
      largest.set(field, Math.max(0, ...this.shown.map((row) => Math.abs(Number(row.kind === "group" ? 0 : row.record?.[field]) || 0))));
    }
    for (const td of this.table.querySelectorAll("tbody td, tbody th")) {
      const field = this.fieldOf(td);
      if (field === null) continue;
      const meta = this.table.getMeta(td);
      const row = this.shown[meta.y - this.y0];
      const value = row?.record?.[field];
      td.classList.toggle("number", columns.kind(field) === "number");
      td.classList.toggle("negative", typeof value === "number" && value < 0);
      td.classList.toggle("group-total", row?.kind === "group");
      td.dataset.field = field;
      colourCell(td, row?.kind === "group" ? null : rules.get(field) ?? null, value, largest.get(field) ?? 0);
      const text = value === undefined ? null : cellDisplay(columns.format(field), value);
      if (text?.title) td.title = text.title;
      else td.removeAttribute("title");
      const flash = row && this.flashes.get(row.key)?.get(field);
      if (flash && now - flash.at < FLASH_MS) {
        if (td.dataset.flash !== String(flash.at)) {
          // Another flash on a flashing cell restarts it: the other of two identical animations.
          const again = td.classList.contains(`flash-${flash.dir}`);
          td.classList.remove(...FLASHES);
          td.classList.add(again ? `flash-${flash.dir}-b` : `flash-${flash.dir}`);
          td.dataset.flash = String(flash.at);
        }
      } else if (td.dataset.flash) {
        td.classList.remove(...FLASHES);
        delete td.dataset.flash;
      }
    }
    for (const th of this.table.querySelectorAll("tbody th")) {
      const meta = this.table.getMeta(th);
      if (!meta || this.headerFields[meta.row_header_x] !== null) continue; // a pinned column's
      const row = this.shown[meta.y - this.y0];
      const group = row?.kind === "group";
      th.classList.toggle("group", group);
      th.classList.toggle("open", Boolean(group && row?.open));
      th.style.paddingLeft = group ? `${8 + 16 * (row?.depth ?? 0)}px` : "";
      th.tabIndex = group ? 0 : -1;
      if (group) th.setAttribute("aria-expanded", String(Boolean(row?.open)));
      else th.removeAttribute("aria-expanded");
    }
    for (const tr of this.table.querySelectorAll("tbody tr")) {
      const first = tr.firstElementChild;
      const meta = first ? this.table.getMeta(first) : undefined;
      const row = meta ? this.shown[meta.y - this.y0] : undefined;
      tr.classList.toggle("group-row", row?.kind === "group");
      tr.classList.toggle("selected", this.selection.has(row?.key));
      tr.setAttribute("aria-selected", String(this.selection.has(row?.key)));
      tr.dataset.depth = String(row?.depth ?? 0);
      if (row?.key) tr.dataset.key = row.key;
    }
    for (const th of this.table.querySelectorAll("thead th")) {
      const meta = this.table.getMeta(th);
      if (meta?.type === "corner" && !this.headerFields[meta.row_header_x]) th.textContent = this.grouped ? "group" : "";
      const field = this.fieldOf(th);
      if (field === null) continue;
      // A pinned column's header goes between the corner cell's own span and its resize handle,
      // which the table keeps: so the cell, and a quick filter being typed in, stay as they are.
      const head = this.head(field);
      if (meta.type === "corner" && head.parentElement !== th) th.insertBefore(head, th.querySelector(".rt-column-resize"));
      th.classList.toggle("pinned", meta.type === "corner");
      const sort = this.host.sortOf(field);
      th.setAttribute("aria-sort", sort === "asc" ? "ascending" : sort === "desc" ? "descending" : "none");
      th.classList.toggle("number", columns.kind(field) === "number");
      th.dataset.field = field;
    }
  }

  /** The field of a cell or header: a scrolled column's, or a pinned one's; null for a group's
   * label and the table's own cells. @param {Element} cell @returns {string | null} */
  fieldOf(cell) {
    const meta = this.table.getMeta(cell);
    if (meta?.type === "body" || meta?.type === "column_header") return this.scrolled[meta.x] ?? null;
    if (meta?.type === "row_header" || meta?.type === "corner") return this.headerFields[meta.row_header_x] ?? null;
    return null;
  }

  /** @param {MouseEvent} event */
  clicked(event) {
    const target = /** @type {HTMLElement} */ (event.target);
    const th = target.closest?.("tbody th");
    if (th) this.toggleAt(/** @type {HTMLElement} */ (th));
    const cell = target.closest?.("tbody td, tbody th");
    const meta = cell && this.fieldOf(cell) !== null ? this.table.getMeta(cell) : undefined;
    if (!meta) return;
    this.selection.click(meta.y, event, (y) => this.shown[y - this.y0]);
    this.table.focus({ preventScroll: true });
    this.draw();
    this.host.selected([...this.selection.records.values()]);
  }

  /** ↑ ↓ (with Shift: extending) and Escape on the table (Ctrl+C is the page's copy: see above).
   * @param {KeyboardEvent} event */
  async selectionKey(event) {
    if (event.key === "Escape") {
      this.selection.clear();
      this.draw();
      this.host.selected([]);
    } else if ((event.key === "ArrowDown" || event.key === "ArrowUp") && this.selection.cursor !== null) {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      reveal(this.table, this.selection.cursor + step);
      await this.table.draw(); // the row moved to is drawn, to be selected
      this.selection.move(step, event.shiftKey, (y) => this.shown[y - this.y0]);
      this.draw();
      this.host.selected([...this.selection.records.values()]);
    }
  }

  /** Open or close the group whose header is `th`. @param {HTMLElement} th */
  toggleAt(th) {
    const meta = this.table.getMeta(th);
    const row = meta ? this.shown[meta.y - this.y0] : undefined;
    if (row?.kind === "group") this.host.toggle(row);
  }

  destroy() {
    this.resized.disconnect();
    this.table.remove();
  }
}
