// A viewport of the push server (client.viewport(), client.aggregate(): web/viewport.js) drawn by
// AG Grid Community's Infinite Row Model: a view of any size scrolls in a grid while only the
// rows on screen, and a margin around them, cross the wire. Sorting a column is the server's
// (a new `orderby` on the same viewport), and so is filtering when `filterOf` says how.
//
//   const grid = agGrid.createGrid(element, { columnDefs, ...viewportGridOptions() });
//   const viewport = client.viewport("orders", { orderby: "/qty DESC", rows: [0, 99] });
//   const binding = bindAgGridViewport(viewport, grid);
//   binding.unbind();
//
// How the grid and the viewport meet, the way AG Grid's own row models work:
// - The grid asks its datasource for blocks of rows, getRows({ startRow, endRow, sortModel,
//   filterModel }), as they scroll into view. The binding answers a block from the viewport's
//   rows when its window holds them, in the order and filter asked; otherwise it moves the
//   viewport there (moveTo, sortBy, filterBy) and answers once the rows are in.
// - The grid's scrollbar is sized by the view's `count` (setRowCount); while the count is not
//   known (a viewport made with `count: false`) the grid learns the end when a block comes back
//   short, as with any infinite datasource.
// - The window follows the screen: when the rows displayed ("viewportChanged") are no longer
//   inside it, it moves to them with `margin` rows on each side.
// - Live changes (the viewport's "rows" event) are drawn in place, at most once per animation
//   frame: each row node the grid holds inside the window gets the record now at its index
//   (rowNode.setData), so rows that move, arrive or leave are redrawn where they now are,
//   without asking the datasource again. Rows are positions here: the grid is given no row ids
//   (a row id would be a record's key, but a node of the infinite model stays at its index).
//   Blocks the grid keeps outside the window show what they last held until they scroll into
//   view again, when the window follows and they are brought up to date.
// - While the viewport is stale (the connection is down) every row has the class `staleClass`.
//
// What AG Grid Enterprise's Viewport Row Model would add: the grid itself tells the datasource
// which rows are on screen (setViewportRange(first, last)) and takes rows by index pushed at any
// time (params.setRowData({ [index]: data })) and the row count (params.setRowCount(count)), with
// no blocks, no block cache and no getRows round trips: the shape this viewport already has.
// With it a binding would be setViewportRange -> viewport.moveTo, "rows" -> setRowData, "count"
// -> setRowCount, and nothing more. Community has no such row model; the Infinite Row Model
// plus "viewportChanged" and setData in place gives the same result.

/**
 * @typedef {object} Listenable
 * @property {(name: string, listener: (event: any) => void) => unknown} on
 * @property {(name: string, listener: (event: any) => void) => unknown} [off]
 *
 * @typedef {object} MoveResultLike
 * @property {boolean} superseded
 *
 * @typedef {object} ViewportLike  what the binding uses of a client's viewport (web/viewport.js)
 * @property {any[]} rows
 * @property {number} first
 * @property {number} last
 * @property {number | null} count
 * @property {string | undefined} orderby
 * @property {string | undefined} filter
 * @property {boolean} stale
 * @property {Promise<unknown>} ready
 * @property {{ first: number, last: number, orderby: string | undefined, filter: string | undefined }} wanted
 * @property {(first: number, last: number) => Promise<MoveResultLike>} moveTo
 * @property {(orderby: string | undefined) => Promise<MoveResultLike>} sortBy
 * @property {(filter: string | undefined) => Promise<MoveResultLike>} filterBy
 * @typedef {ViewportLike & Listenable} BindableViewport
 *
 * @typedef {{ colId: string, sort: "asc" | "desc" }} SortModelItem
 *
 * @typedef {object} GetRowsParams  AG Grid's IGetRowsParams, the part the binding uses
 * @property {number} startRow
 * @property {number} endRow  exclusive
 * @property {SortModelItem[]} sortModel
 * @property {any} filterModel
 * @property {(rows: any[], lastRow?: number) => void} successCallback
 * @property {() => void} failCallback
 *
 * @typedef {object} RowNodeLike
 * @property {any} data
 * @property {(data: any) => void} setData
 *
 * @typedef {object} AgGridInfiniteApi  the part of AG Grid's GridApi the binding uses
 * @property {(key: string) => any} getGridOption
 * @property {(key: string, value: any) => void} setGridOption
 * @property {(name: string, listener: (event: any) => void) => void} addEventListener
 * @property {(name: string, listener: (event: any) => void) => void} removeEventListener
 * @property {(index: number) => RowNodeLike | undefined} getDisplayedRowAtIndex
 * @property {() => number} getFirstDisplayedRowIndex
 * @property {() => number} getLastDisplayedRowIndex
 * @property {(count: number, maxRowFound?: boolean) => void} setRowCount
 * @property {() => void} redrawRows
 * @property {() => boolean} isDestroyed
 *
 * @typedef {object} ViewportGridOptions
 * @property {number} [blockSize]  rows per block the grid asks for (50)
 * @property {number} [blocks]  blocks the grid keeps (4)
 *
 * @typedef {object} AgGridViewportOptions
 * @property {number} [margin]  rows kept live above and below the screen (50)
 * @property {(sortModel: SortModelItem[]) => string | undefined} [orderbyOf]  a grid sort as an
 *   orderby (by default: the column id as a path, "/qty DESC, /order"); undefined: the
 *   viewport's own order, the one it had when bound
 * @property {(filterModel: any) => string | undefined} [filterOf]  a grid filter as a filter;
 *   undefined: the viewport's own, the one it had when bound (without filterOf the grid's
 *   filters are not used: the viewport keeps whatever filterBy gives it)
 * @property {string} [staleClass]  the row class while the viewport is stale ("sow-stale")
 *
 * @typedef {object} AgGridViewportStats
 * @property {number} blocks  blocks answered
 * @property {number} moves  moves asked of the viewport
 * @property {number} redrawn  row nodes given a new record by live changes
 *
 * @typedef {object} AgGridViewportBinding
 * @property {AgGridViewportStats} stats
 * @property {() => void} flush  draw what waits now
 * @property {() => void} unbind  stop: blocks still waiting fail, the grid options set are put back
 */

/** The most rows one window may hold (the server's limit on `top_n`, web/viewport.js). */
const MAX_WINDOW = 10000;

const nextFrame = typeof requestAnimationFrame === "function"
  ? requestAnimationFrame
  : (/** @type {() => void} */ callback) => setTimeout(callback, 16);
const cancelFrame = typeof cancelAnimationFrame === "function" ? cancelAnimationFrame : clearTimeout;

/**
 * The grid options a viewport binding needs, to spread into createGrid's: the Infinite Row Model,
 * one block request at a time (the viewport holds one window), a small block cache.
 * @param {ViewportGridOptions} [options]
 */
export function viewportGridOptions({ blockSize = 50, blocks = 4 } = {}) {
  return {
    rowModelType: /** @type {"infinite"} */ ("infinite"),
    cacheBlockSize: blockSize,
    maxBlocksInCache: blocks,
    maxConcurrentDatasourceRequests: 1,
    infiniteInitialRowCount: blockSize,
  };
}

/**
 * The default orderby of a grid sort: each column's id as a path.
 * @param {SortModelItem[]} sortModel
 * @returns {string | undefined}
 */
export function orderbyOfSortModel(sortModel) {
  const items = sortModel.map(({ colId, sort }) => `/${colId}${sort === "desc" ? " DESC" : ""}`);
  return items.length ? items.join(", ") : undefined;
}

/**
 * Draw `viewport` in `gridApi`, a grid made with viewportGridOptions().
 * @param {BindableViewport} viewport  from client.viewport() or client.aggregate()
 * @param {AgGridInfiniteApi} gridApi
 * @param {AgGridViewportOptions} [options]
 * @returns {AgGridViewportBinding}
 */
export function bindAgGridViewport(viewport, gridApi, options = {}) {
  if (gridApi.getGridOption("rowModelType") !== "infinite") {
    throw new Error("bindAgGridViewport: the grid needs the Infinite Row Model (viewportGridOptions())");
  }
  const { margin = 50, orderbyOf = orderbyOfSortModel, filterOf, staleClass = "sow-stale" } = options;
  /** @type {AgGridViewportStats} */
  const stats = { blocks: 0, moves: 0, redrawn: 0 };
  /** @type {GetRowsParams[]} blocks asked for and not answered yet */
  let waiting = [];
  let bound = true;
  let frame = /** @type {any} */ (null);
  let shownCount = /** @type {number | null} */ (null);
  // Until its first window is in, a viewport's rows answer nothing (they are not the server's yet).
  let ready = false;
  viewport.ready.then(() => {
    ready = true;
    if (bound) answer();
  }, () => {});

  const rowClassRules = gridApi.getGridOption("rowClassRules");
  gridApi.setGridOption("rowClassRules", { ...rowClassRules, [staleClass]: () => viewport.stale });

  // With no column sorted, the grid shows the viewport's own order (the one it was made with).
  const ownOrder = viewport.wanted.orderby;
  const ownFilter = viewport.wanted.filter;

  /** The order and filter a block asks for. @param {GetRowsParams} params */
  function shape(params) {
    const filter = filterOf ? filterOf(params.filterModel) ?? ownFilter : viewport.wanted.filter;
    return { orderby: orderbyOf(params.sortModel ?? []) ?? ownOrder, filter: filter || undefined };
  }

  /** Whether the rows the viewport holds answer this block. @param {GetRowsParams} params */
  function holds(params) {
    const { orderby, filter } = shape(params);
    return ready && viewport.orderby === orderby && viewport.filter === filter
      && viewport.first <= params.startRow && params.endRow - 1 <= viewport.last;
  }

  /** The last row's index + 1 when known, for the grid's scrollbar. */
  function lastRow() {
    if (viewport.count !== null) return viewport.count;
    const end = viewport.first + viewport.rows.length;
    return end <= viewport.last ? end : undefined; // the view ended inside the window
  }

  /** Answer the blocks the viewport now holds. */
  function answer() {
    const still = [];
    for (const params of waiting) {
      if (!holds(params)) {
        still.push(params);
        continue;
      }
      const from = params.startRow - viewport.first;
      const rows = viewport.rows.slice(from, from + params.endRow - params.startRow);
      stats.blocks += 1;
      params.successCallback(rows, lastRow());
    }
    waiting = still;
  }

  /**
   * Move the viewport where the blocks asked for and the screen are: their union, when one window
   * can hold it, else the newest block and the screen around it.
   */
  function follow() {
    const wanted = viewport.wanted;
    const newest = waiting.at(-1);
    if (newest) {
      const { orderby, filter } = shape(newest);
      if (orderby !== wanted.orderby) {
        stats.moves += 1;
        viewport.sortBy(orderby).catch(() => fail(orderby, undefined));
      }
      if (filterOf && filter !== wanted.filter) {
        stats.moves += 1;
        viewport.filterBy(filter).catch(() => fail(undefined, filter));
      }
    }
    // Move only when a block asked for or a row on screen is outside the window asked for: the
    // margin is the room the screen has before the next move.
    const shown = [gridApi.getFirstDisplayedRowIndex(), gridApi.getLastDisplayedRowIndex()];
    const onScreen = shown[0] >= 0 && shown[1] >= shown[0];
    const needed = waiting.map((params) => [params.startRow, params.endRow - 1]);
    if (onScreen) needed.push(shown);
    if (needed.every(([start, end]) => start >= wanted.first && end <= wanted.last)) return;
    const ranges = waiting.map((params) => [params.startRow, params.endRow - 1]);
    if (onScreen) ranges.push([Math.max(0, shown[0] - margin), shown[1] + margin]);
    let first = Math.min(...ranges.map(([start]) => start));
    let last = Math.max(...ranges.map(([, end]) => end));
    if (last - first + 1 > MAX_WINDOW) {
      const [start, end] = ranges[ranges.length - 1]; // too far apart: the screen (or the newest block)
      [first, last] = [start, Math.min(end, start + MAX_WINDOW - 1)];
    }
    stats.moves += 1;
    viewport.moveTo(first, last).catch(() => {}); // a failed move leaves the window: blocks wait on
  }

  /** A sort or filter the server refused: the blocks asking for it fail (the grid shows none).
   * @param {string | undefined} orderby @param {string | undefined} filter */
  function fail(orderby, filter) {
    const failed = waiting.filter((params) => {
      const asked = shape(params);
      return (orderby !== undefined && asked.orderby === orderby) || (filter !== undefined && asked.filter === filter);
    });
    waiting = waiting.filter((params) => !failed.includes(params));
    for (const params of failed) params.failCallback();
  }

  const datasource = {
    /** @param {GetRowsParams} params */
    getRows(params) {
      if (!bound) return;
      waiting.push(params);
      answer();
      if (waiting.length) follow();
    },
  };

  /** Live changes: every row node the grid holds in the window gets the record at its index. */
  function draw() {
    if (frame !== null) cancelFrame(frame);
    frame = null;
    if (!bound) return;
    if (gridApi.isDestroyed()) {
      unbind();
      return;
    }
    if (viewport.count !== null && viewport.count !== shownCount) {
      shownCount = viewport.count;
      gridApi.setRowCount(viewport.count, true);
    }
    const rows = viewport.rows;
    for (let i = 0; i < rows.length; i++) {
      const node = gridApi.getDisplayedRowAtIndex(viewport.first + i);
      if (node && node.data !== undefined && node.data !== rows[i]) {
        node.setData(rows[i]);
        stats.redrawn += 1;
      }
    }
  }

  function rowsChanged() {
    ready = true; // (its "rows" event comes before `ready` resolves)
    answer(); // blocks waiting for this window first
    if (frame === null) frame = nextFrame(draw);
  }

  function scrolled() {
    if (bound) follow();
  }

  function stale() {
    if (!gridApi.isDestroyed()) gridApi.redrawRows();
  }

  /** @type {Array<[string, (event: any) => void]>} */
  const listeners = [["rows", rowsChanged], ["stale", stale]];
  for (const [name, listener] of listeners) viewport.on(name, listener);
  gridApi.addEventListener("viewportChanged", scrolled);
  gridApi.setGridOption("datasource", datasource);

  function unbind() {
    if (!bound) return;
    bound = false;
    if (frame !== null) cancelFrame(frame);
    frame = null;
    for (const [name, listener] of listeners) viewport.off?.(name, listener);
    const failed = waiting;
    waiting = [];
    for (const params of failed) params.failCallback();
    if (!gridApi.isDestroyed()) {
      gridApi.removeEventListener("viewportChanged", scrolled);
      gridApi.setGridOption("rowClassRules", rowClassRules);
      if (viewport.stale) gridApi.redrawRows();
    }
  }

  return { stats, flush: draw, unbind };
}
