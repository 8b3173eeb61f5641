// A live table for one view: one row per record (keyed by SowKey), updated cell by cell.
// Only cells whose text changed are touched, and they flash; rows out of focus fade out.

const FADE_MS = 600;

/** @param {unknown} value */
function text(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** @param {unknown} a @param {unknown} b */
function compare(a, b) {
  if (a === b) return 0;
  if (a === undefined || a === null || a === "") return 1; // NULLs last
  if (b === undefined || b === null || b === "") return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "number") return -1; // numbers before strings, as the server orders them
  if (typeof b === "number") return 1;
  return text(a) < text(b) ? -1 : 1;
}

export class Grid {
  /** @param {HTMLTableElement} table */
  constructor(table) {
    this.head = /** @type {HTMLTableRowElement} */ (table.tHead.rows[0]);
    this.body = table.tBodies[0];
    /** @type {string[]} */
    this.columns = [];
    /** @type {Map<string, {tr: HTMLTableRowElement, cells: HTMLTableCellElement[], record: any, removing?: number}>} */
    this.rows = new Map();
    /** @type {{column: string, descending: boolean} | null} */
    this.sort = null;
    this.sortDirty = false;
    this.head.addEventListener("click", (event) => {
      const th = /** @type {HTMLElement} */ (event.target).closest("th");
      if (th) this.toggleSort(th.dataset.column);
    });
  }

  /** @param {Record<string, unknown>} record */
  _columnsFor(record) {
    for (const name of Object.keys(record ?? {})) {
      if (this.columns.includes(name)) continue;
      this.columns.push(name);
      const th = document.createElement("th");
      th.textContent = name;
      th.dataset.column = name;
      this.head.appendChild(th);
      for (const row of this.rows.values()) row.cells.push(row.tr.appendChild(document.createElement("td")));
    }
  }

  /** Insert or update the row of `key`; `flash` marks the cells that changed. */
  upsert(key, record, flash) {
    this._columnsFor(record);
    let row = this.rows.get(key);
    if (!row) {
      const tr = document.createElement("tr");
      tr.dataset.key = key;
      const cells = this.columns.map(() => tr.appendChild(document.createElement("td")));
      row = { tr, cells, record };
      this.rows.set(key, row);
      this.body.appendChild(tr);
      flash = false;
    } else if (row.removing !== undefined) {
      clearTimeout(row.removing); // back in focus before it faded out
      row.removing = undefined;
      row.tr.classList.remove("oof");
      row.tr.removeAttribute("title");
    }
    row.record = record;
    this.columns.forEach((name, index) => {
      const cell = row.cells[index];
      const raw = record?.[name];
      const value = text(raw);
      if (cell.textContent !== value) {
        cell.textContent = value;
        if (typeof raw === "number") cell.dataset.num = "";
        else delete cell.dataset.num;
        // Two alternating animations restart the flash without forcing a layout.
        if (flash) cell.className = cell.className === "flash" ? "flash-b" : "flash";
      }
    });
    if (this.sort) this.sortDirty = true;
  }

  /** The record left the view: the row fades out, showing why, then goes. */
  remove(key, reason) {
    const row = this.rows.get(key);
    if (!row || row.removing !== undefined) return;
    row.tr.classList.add("oof");
    row.tr.title = `out of focus: ${reason}`;
    row.tr.dataset.reason = reason;
    row.removing = window.setTimeout(() => {
      row.tr.remove();
      this.rows.delete(key);
    }, FADE_MS);
  }

  /** @param {string | undefined} column */
  toggleSort(column) {
    if (!column) return;
    const descending = this.sort?.column === column && !this.sort.descending;
    this.sort = { column, descending };
    for (const th of this.head.cells) {
      th.dataset.sort = th.dataset.column === column ? (descending ? "desc" : "asc") : "";
    }
    this.applySort();
  }

  applySort() {
    this.sortDirty = false;
    if (!this.sort) return;
    const { column, descending } = this.sort;
    const rows = [...this.rows.values()];
    rows.sort((a, b) => {
      const order = compare(a.record?.[column], b.record?.[column]);
      return descending && order !== 0 ? -order : order;
    });
    const fragment = document.createDocumentFragment();
    for (const row of rows) fragment.appendChild(row.tr);
    this.body.appendChild(fragment);
  }
}
