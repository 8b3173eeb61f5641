// Binds a live view (snapshot, then inserts, updates and OOF notices) to a Tabulator table
// (https://tabulator.info, MIT): the dashboard draws its grids through it, and a team with its own
// Tabulator page can use it as it is.
//
// Changes wait in a buffer, one entry per record (a record changed five times between two frames
// is drawn once, with its newest value), and the page applies them with `flush(budget)` from its
// animation frame. Values changed in place are drawn cell by cell, every frame. Rows added,
// removed or moved to another group wait for one another, `structureMs` or four times the last
// such flush's cost, and are drawn under one blockRedraw: Tabulator lays out every row on screen
// again for each such flush. A
// transaction's changes are applied in one flush, whatever the budget. While `paused`, nothing is
// applied and the buffer says how much waits. A record that leaves the view stays `lingerMs` on
// screen, marked with the reason, then goes. Sorting and quick filters are applied again every
// `refreshMs` while records change, but not while the pointer is over the table: rows never move
// under the user's hand. Totals (Tabulator's column calculations) follow every `totalsMs`.

/** The field holding each row's SOW key; records' own fields are shown as they are. */
export const KEY_FIELD = "__sowKey";

/**
 * The Tabulator options a bound table needs: rows found by SOW key, fields with dots or slashes
 * taken literally, groups following the records' values.
 * @returns {Record<string, unknown>}
 */
export function tabulatorOptions() {
  return { index: KEY_FIELD, nestedFieldSeparator: false, groupUpdateOnCellEdit: true };
}

/**
 * @typedef {{ record: any, kind: string, reason?: string }} Change
 * @typedef {{
 *   lingerMs?: number,
 *   refreshMs?: number,
 *   totalsMs?: number,
 *   structureMs?: number,
 *   onOof?: (key: string, record: any, reason: string) => void,
 *   onColumns?: (fields: string[], records: any[]) => void,
 * }} BindingOptions
 */

export class TabulatorBinding {
  /**
   * @param {any} view  a view from PushClient (sowAndSubscribe, sowAndDeltaSubscribe, ...)
   * @param {any} table  a Tabulator built with `tabulatorOptions()`
   * @param {BindingOptions} [options]
   */
  constructor(view, table, options = {}) {
    this.view = view;
    this.table = table;
    this.lingerMs = options.lingerMs ?? 3000;
    this.refreshMs = options.refreshMs ?? 1000;
    this.onOof = options.onOof ?? (() => {});
    this.onColumns = options.onColumns ?? (() => {});
    /** @type {Map<string, Change>} changes not yet applied, by key */
    this.pending = new Map();
    /** @type {Map<string, any>} what the table holds, by key (rows leaving included) */
    this.records = new Map();
    /** @type {Map<string, any>} each record's Tabulator row component, by key: Tabulator finds a
     * row by its index field with a scan of every row, which at 10,000 rows costs more than
     * drawing the change. Filled as rows are added; a key it lacks makes it read them all again. */
    this.rows = new Map();
    /** @type {Map<string, number>} rows leaving the view: when each goes */
    this.leaving = new Map();
    /** @type {string[]} every field seen, in the order first seen */
    this.fields = [];
    this.paused = false;
    this.transactionWaiting = false;
    /** True while this binding writes values into the table: a cell drawn then is a change (it
     * may flash); a cell drawn at any other time is a row scrolled into sight. */
    this.updating = false;
    this.built = false;
    this.hovered = false;
    this.refreshDue = false;
    this.lastRefresh = 0;
    this.totalsMs = options.totalsMs ?? 500;
    this.structureMs = options.structureMs ?? 250;
    /** When rows may next be added, removed or regrouped (performance.now() time). */
    this.nextStructure = -Infinity;
    this.totalsDue = false;
    this.lastTotals = 0;
    table.on("tableBuilt", () => { this.built = true; });
    const element = table.element;
    this._pointerIn = () => { this.hovered = true; };
    this._pointerOut = () => { this.hovered = false; };
    element.addEventListener("pointerenter", this._pointerIn);
    element.addEventListener("pointerleave", this._pointerOut);
    this._off = [
      view.on("change", (/** @type {any} */ change) => this._buffer(change)),
      view.client.on("transaction", (/** @type {{ views: Set<any> }} */ { views }) => {
        if (views.has(view)) this.transactionWaiting = true;
      }),
    ];
  }

  /** How many records have changes waiting to be drawn. */
  get waiting() {
    return this.pending.size;
  }

  /** @param {{ key: string, record: any, kind: string, reason?: string }} change */
  _buffer({ key, record, kind, reason }) {
    const earlier = this.pending.get(key);
    if (kind === "oof" && earlier && earlier.kind === "insert" && !this.records.has(key)) {
      this.pending.delete(key); // arrived and left before it was ever drawn
      return;
    }
    const isNew = !this.records.has(key) && kind !== "oof";
    this.pending.set(key, { record, kind: isNew ? "insert" : kind, reason });
  }

  /** Resume drawing; what waited is drawn whole in the next flush. */
  resume() {
    this.paused = false;
    this.transactionWaiting = true;
  }

  /**
   * Apply up to `budget` waiting changes (all of them when a transaction or a resume waits);
   * returns how many were applied. Call it once per animation frame.
   * @param {number} budget
   * @param {number} now  performance.now()
   */
  flush(budget, now) {
    if (!this.built || this.paused) return 0;
    if (this.transactionWaiting) {
      this.transactionWaiting = false;
      budget = Infinity;
    }
    // Rows added, removed or moved to another group make Tabulator lay out every row on screen
    // again: they are applied together, at most once every `structureMs` (a row arriving after a
    // quiet spell is drawn at once); values changed in place are drawn every frame.
    const structural = budget === Infinity || now >= this.nextStructure;
    const groupBy = this.table.options.groupBy;
    /** @type {[string, any][]} */
    const written = [];
    const gone = [];
    for (const [key, change] of this.pending) {
      if (written.length + gone.length >= budget) break;
      if (!structural && this._moves(key, change, groupBy)) continue;
      this.pending.delete(key);
      if (change.kind !== "oof") written.push([key, change.record]);
      else if (this.records.has(key)) gone.push({ key, change });
    }
    const expired = structural ? this._expired(now) : [];
    if (written.length + gone.length + expired.length === 0) {
      this._refresh(now);
      return 0;
    }
    this._learnFields(written);
    const adds = [];
    /** @type {[string, Record<string, unknown>, boolean][]} key, data, whether it moves the row */
    const updates = [];
    const returned = [];
    // Rows added, removed or moved to another group are drawn under one blockRedraw. Values
    // changed in place need no redraw, only the totals held back: restoring a blocked redraw
    // measures every header again, which costs more than the changes themselves.
    let redraw = gone.length + expired.length > 0;
    for (const [key, record] of written) {
      const moves = this._moves(key, { record, kind: "update" }, groupBy);
      redraw = redraw || moves;
      if (this.records.has(key)) updates.push([key, this._rowData(key, record), moves]);
      else adds.push({ ...record, [KEY_FIELD]: key });
      this.records.set(key, record);
      if (this.leaving.delete(key)) returned.push(key);
    }
    const calcs = this.table.modules?.columnCalcs;
    const started = performance.now();
    if (redraw) this.table.blockRedraw();
    else calcs?.blockRedraw();
    this.updating = true;
    try {
      for (const [key, data, moves] of updates) this._update(this._rowOf(key), data, moves);
      if (adds.length) this._add(adds);
      for (const { key, change } of gone) this._leave(key, change.record, change.reason ?? "");
      this._forget(expired);
    } finally {
      this.updating = false;
      // Totals are summed again every `totalsMs`, not every frame: summing 10,000 rows and
      // redrawing the totals row each frame would cost more than drawing the changes. (Tabulator
      // has no public switch for this; its calculations module notes the need in this flag.)
      if (calcs?.recalcAfterBlock) {
        calcs.recalcAfterBlock = false;
        this.totalsDue = true;
      }
      if (redraw) this.table.restoreRedraw();
      else if (calcs) calcs.blocked = false;
    }
    // The next such flush waits `structureMs`, or four times what this one took when that is
    // longer: however slow the machine, laying rows out takes at most a fifth of the page's time.
    if (redraw) this.nextStructure = now + Math.max(this.structureMs, 4 * (performance.now() - started));
    this.refreshDue = this.refreshDue || updates.length > 0 || adds.length > 0;
    this._refresh(now);
    // Rows that came back into the view while leaving are ordinary rows again.
    for (const key of returned) this._rowElement(key)?.classList.remove("leaving");
    return written.length + gone.length;
  }

  /** Whether applying `change` adds, removes or regroups a row. @param {string} key
   * @param {Change} change @param {unknown} groupBy */
  _moves(key, change, groupBy) {
    const old = this.records.get(key);
    if (change.kind === "oof" || old === undefined) return true;
    return Boolean(groupBy) && (typeof groupBy !== "string" || old?.[groupBy] !== change.record?.[groupBy]);
  }

  /** Sorting and quick filters again, when records changed and the pointer is elsewhere; the
   * totals again when they are due. @param {number} now */
  _refresh(now) {
    if (this.totalsDue && now - this.lastTotals >= this.totalsMs) {
      this.totalsDue = false;
      this.lastTotals = now;
      this.table.recalc();
    }
    if (!this.refreshDue || this.hovered || now - this.lastRefresh < this.refreshMs) return;
    this.refreshDue = false;
    this.lastRefresh = now;
    if (this.table.getHeaderFilters().length) this.table.refreshFilter();
    else if (this.table.getSorters().length) this.table.setSort(this.table.getSorters().map(
      (/** @type {any} */ sorter) => ({ column: sorter.field, dir: sorter.dir })));
  }

  /** New rows; their components are indexed by key once Tabulator has made them.
   * @param {Record<string, unknown>[]} adds */
  _add(adds) {
    const made = this.table.getDataCount() === 0 ? this.table.setData(adds) : this.table.addData(adds);
    made.then((/** @type {any[] | undefined} */ rows) => {
      for (const row of rows ?? []) this.rows.set(row.getData()[KEY_FIELD], row);
    }, () => {});
  }

  /** Write `data` into `row`. A row never drawn holds its values only in its data: written
   * there, it shows them when it is drawn (Tabulator's update would first build all its cells),
   * unless the row changes group (Tabulator must move it). A row on screen is written cell by
   * cell: Tabulator's row update measures the row's height once written, a layout of the whole
   * page for every row, where cells written one by one are laid out with the frame.
   * @param {any} row @param {Record<string, unknown>} data @param {boolean} moves */
  _update(row, data, moves) {
    if (!row) return;
    if (!moves && row._row?.cells?.length === 0) {
      Object.assign(row.getData(), data);
      this.totalsDue = true; // no cell changed, so Tabulator's calculations were not told
      return;
    }
    if (!row.getElement()?.isConnected) {
      row.update(data);
      return;
    }
    const held = row.getData();
    /** @type {Record<string, unknown>} */
    const rest = {};
    let others = 0;
    for (const field in data) {
      if (held[field] === data[field]) continue;
      const cell = row.getCell(field);
      if (cell) cell.setValue(data[field]);
      else {
        rest[field] = data[field];
        others += 1;
      }
    }
    if (others) row.update(rest);
  }

  /** The row component of `key`, or undefined. @param {string} key */
  _rowOf(key) {
    let row = this.rows.get(key);
    if (row === undefined && this.records.has(key)) {
      this.rows.clear();
      for (const each of this.table.getRows()) this.rows.set(each.getData()[KEY_FIELD], each);
      row = this.rows.get(key);
    }
    return row;
  }

  /** A row's data for Tabulator's update, which changes only the fields it is given: every field
   * shown, so one the record no longer has is emptied. @param {string} key @param {any} record */
  _rowData(key, record) {
    /** @type {Record<string, unknown>} */
    const row = { [KEY_FIELD]: key };
    for (const field of this.fields) row[field] = record?.[field];
    return row;
  }

  /** @param {[string, any][]} written */
  _learnFields(written) {
    const known = new Set(this.fields);
    const added = [];
    for (const [, record] of written) {
      for (const field of Object.keys(record ?? {})) {
        if (!known.has(field)) {
          known.add(field);
          added.push(field);
        }
      }
    }
    if (added.length === 0) return;
    this.fields.push(...added);
    this.onColumns(added, written.map(([, record]) => record));
  }

  /** The row's element when the row is on screen, else null. @param {string} key */
  _rowElement(key) {
    const element = this._rowOf(key)?.getElement();
    return element?.isConnected ? element : null;
  }

  /** @param {string} key @param {any} record @param {string} reason */
  _leave(key, record, reason) {
    this.onOof(key, record, reason);
    const element = this._rowElement(key);
    if (!element || this.lingerMs <= 0) {
      this._forget([key]); // nobody sees it go: no need to linger
      return;
    }
    element.classList.add("leaving");
    element.dataset.reason = reason;
    element.title = `left the view: ${reason}`;
    this.leaving.set(key, performance.now() + this.lingerMs);
  }

  /** @param {number} now @returns {string[]} */
  _expired(now) {
    const expired = [];
    for (const [key, until] of this.leaving) if (until <= now) expired.push(key);
    return expired;
  }

  /** Remove these records' rows. @param {string[]} keys */
  _forget(keys) {
    const rows = [];
    for (const key of keys) {
      const row = this._rowOf(key);
      this.leaving.delete(key);
      this.records.delete(key);
      this.rows.delete(key);
      if (!row) continue;
      const element = row.getElement();
      element?.classList.remove("leaving");
      if (element) delete element.dataset.reason;
      rows.push(row);
    }
    // One by one: the table's deleteRow first sorts the rows it is given by their index among
    // all rows (an indexOf per comparison), which costs more than deleting them.
    for (const row of rows) row.delete();
  }

  /** Stop listening to the view; the table keeps what it shows. */
  unbind() {
    for (const off of this._off) off();
    this.table.element.removeEventListener("pointerenter", this._pointerIn);
    this.table.element.removeEventListener("pointerleave", this._pointerOut);
  }
}

/**
 * Wrap a Tabulator formatter so that a value this binding writes flashes: `up` when a number
 * rises, `down` when it falls, `changed` otherwise. Cells drawn on scrolling never flash.
 * @param {{ readonly updating: boolean }} binding  a TabulatorBinding
 * @param {(cell: any) => any} formatter
 */
export function flashing(binding, formatter) {
  return (/** @type {any} */ cell) => {
    const shown = formatter(cell);
    if (binding.updating) {
      const value = cell.getValue();
      const old = cell.getOldValue();
      if (value !== old && old !== undefined) {
        const direction = typeof value === "number" && typeof old === "number"
          ? (value > old ? "up" : "down") : "changed";
        const element = cell.getElement();
        // Two alternating classes restart the animation without forcing a layout.
        const second = element.classList.contains(`flash-${direction}`);
        element.classList.remove("flash-up", "flash-down", "flash-changed", "flash-up-b",
          "flash-down-b", "flash-changed-b");
        element.classList.add(second ? `flash-${direction}-b` : `flash-${direction}`);
      }
    }
    return shown;
  };
}
