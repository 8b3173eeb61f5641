// A view of the push server drawn by AG Grid (https://www.ag-grid.com, Community edition): the
// view's rows kept in the grid through its transaction API, whatever the grid's columns, sorting,
// filtering or grouping. The adapter imports nothing from AG Grid; it takes the grid's API object,
// so it works with any build of AG Grid (the UMD file, the ES modules, a bundler's copy).
//
//   const api = agGrid.createGrid(element, { columnDefs, getRowId: sowRowId });
//   const binding = bindAgGrid(view, api, { flash: true, onOof: (key, record, reason) => {} });
//   binding.unbind();
//
// How changes reach the grid:
// - Rows are the view's records as they are (no copies, nothing added to them); the SowKey is the
//   row id. A record does not carry its SowKey, so the adapter remembers which key each record
//   object it gave the grid belongs to, and `sowRowId` (the grid's `getRowId`) looks it up.
// - At bind the grid is given the view's records as its `rowData`: the binding owns the rows.
// - A snapshot (the view's "ready", also after a reconnect) is applied at once, as one
//   synchronous transaction: the rows are the server's as soon as they are known.
// - Live changes are collapsed per key (batch.js) and handed over once per animation frame as one
//   `applyTransactionAsync`; AG Grid applies what was handed over every `asyncTransactionWaitMillis`
//   (50 ms by default) in one go: one sort, one filter pass, one render for all of it. Measured
//   with static/examples/aggrid.html in headless Chromium, 10,000 rows sorted by a column: a
//   synchronous `applyTransaction` per frame re-sorts up to 60 times a second and painted 48 to 57
//   frames a second at 1,000 updates a second and 35 to 40 at 3,000; `applyTransactionAsync`
//   painted 58 to 60 and 51 to 52 (a 50 ms timer of the adapter's own did no better).
// - A server transaction that touched the view (the client's "transaction" event) is handed over
//   at once, as one grid transaction, so it is applied and painted whole. (Its messages arrive in
//   one WebSocket frame and are applied in one task, so no hand-off can fall between them.) It is
//   not applied synchronously: a publisher sending a transaction per update would otherwise cost
//   a re-sort per update.
// - A record that leaves the view (OOF) loses its row; `onOof` hears why first.
// - While the view is stale (connection lost) every row has the class `staleClass`.
// - In a hidden tab no frame comes: the batch waits, holding at most one entry per key.

import { RowBatch } from "./batch.js";

/**
 * @typedef {object} Listenable
 * @property {(name: string, listener: (event: any) => void) => unknown} on
 * @property {(name: string, listener: (event: any) => void) => unknown} [off]
 *
 * @typedef {object} ViewLike  what the adapter reads of a client's view (web/view.js)
 * @property {Map<string, any>} records
 * @property {boolean} stale
 * @property {Listenable} [client]
 * @typedef {ViewLike & Listenable} BindableView
 *
 * @typedef {{ key: string, record: any, kind: string, reason?: string }} Change
 *
 * @typedef {{ add?: any[], update?: any[], remove?: any[] }} RowDataTransaction
 *
 * @typedef {object} AgGridApi  the part of AG Grid's GridApi the adapter uses
 * @property {(tx: RowDataTransaction) => any} applyTransaction
 * @property {(tx: RowDataTransaction, callback?: (result: any) => void) => void} applyTransactionAsync
 * @property {() => void} flushAsyncTransactions
 * @property {(key: string) => any} getGridOption
 * @property {(key: string, value: any) => void} setGridOption
 * @property {() => void} redrawRows
 * @property {() => boolean} isDestroyed
 *
 * @typedef {object} AgGridBindingOptions
 * @property {boolean} [flash]  flash the cells whose value changes (AG Grid's
 *   `enableCellChangeFlash`, added to the grid's `defaultColDef`; a column that sets it keeps its
 *   own). Off by default.
 * @property {(key: string, record: any, reason: string | undefined) => void} [onOof]  called for
 *   every record that leaves the view (reason `match`, `deleted`, `expired`, `entitlement`, or
 *   `stale` for rows a reconnect's snapshot no longer has), before its row is removed
 * @property {string} [staleClass]  the row class while the view is stale ("sow-stale")
 * @property {Listenable} [client]  the view's client, whose "transaction" events hand a server
 *   transaction over at once (by default the client that made the view)
 *
 * @typedef {object} AgGridBindingStats
 * @property {number} batches  grid transactions handed over (at most one a frame, plus one per
 *   snapshot and per server transaction)
 * @property {number} changes  view changes handed over (those collapsed into others included)
 * @property {number} added  rows added
 * @property {number} updated  rows updated
 * @property {number} removed  rows removed
 *
 * @typedef {object} AgGridBinding
 * @property {AgGridBindingStats} stats
 * @property {() => void} flush  apply whatever waits, here and in AG Grid's queue, now
 * @property {() => void} unbind  stop following the view: changes not yet handed over are
 *   dropped, the rows stay as they are, and the grid options the binding set are put back
 */

/** The SowKey of each record object given to a grid. Records are immutable (a change is a new
 * object), so an object belongs to one key; weak, so a record no grid holds is forgotten. */
const rowKeys = /** @type {WeakMap<object, string>} */ (new WeakMap());

/**
 * The grid option `getRowId` of grids bound to views: the row id is the record's SowKey.
 * @param {{ data: any }} params
 * @returns {string}
 */
export function sowRowId(params) {
  const key = rowKeys.get(params.data);
  if (key === undefined) throw new Error("sowRowId: a row that no view binding gave the grid");
  return key;
}

/** @template T @param {string} key @param {T & object} record @returns {T} */
function remember(key, record) {
  rowKeys.set(record, key);
  return record;
}

const nextFrame = typeof requestAnimationFrame === "function"
  ? requestAnimationFrame
  : (/** @type {() => void} */ callback) => setTimeout(callback, 16);
const cancelFrame = typeof cancelAnimationFrame === "function" ? cancelAnimationFrame : clearTimeout;

/**
 * Keep `gridApi`'s rows equal to `view`'s records.
 * @param {BindableView} view  a view from the client (`client.sowAndDeltaSubscribe(...)` and the like)
 * @param {AgGridApi} gridApi
 * @param {AgGridBindingOptions} [options]
 * @returns {AgGridBinding}
 */
export function bindAgGrid(view, gridApi, options = {}) {
  if (typeof gridApi.getGridOption("getRowId") !== "function") {
    throw new Error("bindAgGrid: the grid needs getRowId (sowRowId) to find a record's row");
  }
  const { flash = false, onOof, staleClass = "sow-stale" } = options;
  const client = options.client ?? view.client;
  const batch = new RowBatch();
  /** @type {AgGridBindingStats} */
  const stats = { batches: 0, changes: 0, added: 0, updated: 0, removed: 0 };
  let frame = /** @type {any} */ (null);
  let bound = true;

  // The grid options the binding changes, put back on unbind.
  const rowClassRules = gridApi.getGridOption("rowClassRules");
  const defaultColDef = gridApi.getGridOption("defaultColDef");
  // A rule, not a class put on row elements: AG Grid makes and recycles row elements as it
  // scrolls, and asks the rule again for each.
  gridApi.setGridOption("rowClassRules", { ...rowClassRules, [staleClass]: () => view.stale });
  if (flash) gridApi.setGridOption("defaultColDef", { ...defaultColDef, enableCellChangeFlash: true });

  gridApi.setGridOption("rowData", [...view.records].map(([key, record]) => remember(key, record)));
  batch.reset(view.records);

  /** Hand what waits to the grid as one transaction: queued (`now` false) or applied now. */
  function handOver(now = false) {
    if (frame !== null) cancelFrame(frame);
    frame = null;
    if (!bound) return;
    if (gridApi.isDestroyed()) {
      unbind();
      return;
    }
    if (batch.size > 0) {
      const { add, update, remove, changes } = batch.take();
      if (now) {
        gridApi.flushAsyncTransactions(); // what was queued before goes first
        gridApi.applyTransaction({ add, update, remove });
      } else {
        gridApi.applyTransactionAsync({ add, update, remove });
      }
      stats.batches += 1;
      stats.changes += changes;
      stats.added += add.length;
      stats.updated += update.length;
      stats.removed += remove.length;
    } else if (now) {
      gridApi.flushAsyncTransactions();
    }
  }

  /** @param {Change} change */
  function changed({ key, record, kind, reason }) {
    if (kind === "oof") {
      batch.drop(key);
      onOof?.(key, record, reason);
    } else {
      batch.set(key, remember(key, record));
    }
    // Snapshot records are applied together on "ready"; everything else after this frame.
    if (kind !== "snapshot" && frame === null) frame = nextFrame(() => handOver());
  }

  /** @param {{ views: Set<any> | any[] }} event */
  function transaction({ views }) {
    if (views instanceof Set ? views.has(view) : views.includes(view)) handOver();
  }

  function stale() {
    // Row classes are worked out when a row is drawn: draw the rows on screen again.
    if (!gridApi.isDestroyed()) gridApi.redrawRows();
  }

  /** @type {Array<[Listenable, string, (event: any) => void]>} */
  const listeners = [
    [view, "change", changed],
    [view, "ready", () => handOver(true)],
    [view, "stale", stale],
  ];
  if (client) listeners.push([client, "transaction", transaction]);
  for (const [emitter, name, listener] of listeners) emitter.on(name, listener);

  function unbind() {
    if (!bound) return;
    bound = false;
    if (frame !== null) cancelFrame(frame);
    frame = null;
    for (const [emitter, name, listener] of listeners) emitter.off?.(name, listener);
    if (!gridApi.isDestroyed()) {
      gridApi.setGridOption("rowClassRules", rowClassRules);
      if (flash) gridApi.setGridOption("defaultColDef", defaultColDef);
      if (view.stale) gridApi.redrawRows(); // without the stale class
    }
  }

  return { stats, flush: () => handOver(true), unbind };
}
