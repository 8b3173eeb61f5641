// A live table for one view, virtualised: every record has a place in `keys` (display order),
// but only the rows in the scrolled-to window exist in the DOM. So 10,000 rows cost what the
// forty visible ones cost; an update to a visible record touches only the cells that changed
// (they flash), an update to any other one only replaces its record.

const ROW_HEIGHT = 27; // px, fixed by the stylesheet
const OVERSCAN = 8; // rows drawn above and below the window
const FADE_MS = 600;

/** @param {unknown} value */
function text(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** The server's order over mixed types: numbers before strings, NULL last. */
function compare(a, b) {
  if (a === b) return 0;
  if (a === undefined || a === null || a === "") return 1;
  if (b === undefined || b === null || b === "") return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "number") return -1;
  if (typeof b === "number") return 1;
  return text(a) < text(b) ? -1 : 1;
}

export class Grid {
  /** @param {HTMLElement} wrap  the scrolling element holding .head and .sizer */
  constructor(wrap) {
    this.wrap = wrap;
    this.headRow = /** @type {HTMLTableRowElement} */ (wrap.querySelector("table.head tr"));
    this.sizer = /** @type {HTMLElement} */ (wrap.querySelector(".sizer"));
    this.bodyTable = /** @type {HTMLTableElement} */ (wrap.querySelector("table.body"));
    this.body = this.bodyTable.tBodies[0];
    /** @type {string[]} */
    this.columns = [];
    /** @type {string[]} keys in display order */
    this.keys = [];
    /** @type {Map<string, any>} */
    this.records = new Map();
    /** @type {Map<string, string>} keys fading out, and why */
    this.fading = new Map();
    /** @type {Map<string, {tr: HTMLTableRowElement, cells: HTMLTableCellElement[]}>} rows in the DOM */
    this.drawn = new Map();
    /** @type {{column: string, descending: boolean} | null} */
    this.sort = null;
    this.sortDirty = false;
    this.layoutDirty = true;
    this.window = [0, 0];
    wrap.addEventListener("scroll", () => { this.layoutDirty = true; }, { passive: true });
    this.headRow.addEventListener("click", (event) => {
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
      this.headRow.appendChild(th);
      for (const row of this.drawn.values()) row.cells.push(row.tr.appendChild(document.createElement("td")));
    }
  }

  /** Insert or update the record of `key`; `flash` marks its changed cells when it is on screen. */
  upsert(key, record, flash) {
    this._columnsFor(record);
    if (!this.records.has(key)) {
      this.keys.push(key);
      this.layoutDirty = true;
    } else if (this.fading.delete(key)) {
      const faded = this.drawn.get(key); // back in focus before it faded out
      faded?.tr.classList.remove("oof");
      faded?.tr.removeAttribute("title");
    }
    this.records.set(key, record);
    const row = this.drawn.get(key);
    if (row) this._fill(row, record, flash);
    if (this.sort) this.sortDirty = true;
  }

  /** The record left the view: on screen it fades out, showing why; then it goes. */
  remove(key, reason) {
    if (!this.records.has(key) || this.fading.has(key)) return;
    const row = this.drawn.get(key);
    if (!row) {
      this._forget(key);
      return;
    }
    this.fading.set(key, reason);
    row.tr.classList.add("oof");
    row.tr.title = `out of focus: ${reason}`;
    row.tr.dataset.reason = reason;
    setTimeout(() => {
      if (this.fading.get(key) === reason) this._forget(key);
    }, FADE_MS);
  }

  _forget(key) {
    this.fading.delete(key);
    this.records.delete(key);
    const position = this.keys.indexOf(key);
    if (position >= 0) this.keys.splice(position, 1);
    this.layoutDirty = true;
  }

  _fill(row, record, flash) {
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
  }

  /** @param {string | undefined} column */
  toggleSort(column) {
    if (!column) return;
    const descending = this.sort?.column === column && !this.sort.descending;
    this.sort = { column, descending };
    for (const th of this.headRow.cells) {
      th.dataset.sort = th.dataset.column === column ? (descending ? "desc" : "asc") : "";
    }
    this.applySort();
  }

  applySort() {
    this.sortDirty = false;
    if (!this.sort) return;
    const { column, descending } = this.sort;
    const records = this.records;
    this.keys.sort((a, b) => {
      const order = compare(records.get(a)?.[column], records.get(b)?.[column]);
      return descending && order !== 0 ? -order : order;
    });
    this.layoutDirty = true;
  }

  /** Draw the rows of the visible window (called once per animation frame when needed). */
  layout() {
    this.layoutDirty = false;
    const total = this.keys.length;
    this.sizer.style.height = `${total * ROW_HEIGHT}px`;
    const first = Math.max(0, Math.floor(this.wrap.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const count = Math.ceil(this.wrap.clientHeight / ROW_HEIGHT) + 2 * OVERSCAN;
    const visible = this.keys.slice(first, first + count);
    this.bodyTable.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    const keep = new Set(visible);
    for (const [key, row] of this.drawn) {
      if (!keep.has(key)) {
        row.tr.remove();
        this.drawn.delete(key);
      }
    }
    let previous = null;
    for (const key of visible) {
      let row = this.drawn.get(key);
      if (!row) {
        const tr = document.createElement("tr");
        tr.dataset.key = key;
        const cells = this.columns.map(() => tr.appendChild(document.createElement("td")));
        row = { tr, cells };
        this.drawn.set(key, row);
        this._fill(row, this.records.get(key), false);
        if (this.fading.has(key)) tr.classList.add("oof");
      }
      const next = previous ? previous.nextSibling : this.body.firstChild;
      if (next !== row.tr) this.body.insertBefore(row.tr, next);
      previous = row.tr;
    }
  }
}
