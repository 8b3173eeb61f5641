// Types of aggrid-viewport.js: a viewport (client.viewport(), client.aggregate()) drawn by AG Grid
// Community's Infinite Row Model.

import type { Listenable } from "./aggrid.js";

/** What the binding uses of a viewport made by the client (web/viewport.d.ts). */
export interface BindableViewport<T = any> extends Listenable {
  readonly ready: Promise<unknown>;
  readonly rows: T[];
  readonly first: number;
  readonly last: number;
  readonly count: number | null;
  readonly orderby: string | undefined;
  readonly filter: string | undefined;
  readonly stale: boolean;
  readonly wanted: { first: number; last: number; orderby: string | undefined; filter: string | undefined };
  moveTo(first: number, last: number): Promise<{ superseded: boolean }>;
  sortBy(orderby: string | undefined): Promise<{ superseded: boolean }>;
  filterBy(filter: string | undefined): Promise<{ superseded: boolean }>;
}

/** A column's sort, as AG Grid's sortModel has it. */
export interface SortModelItem {
  colId: string;
  sort: "asc" | "desc";
}

/** The part of AG Grid's IGetRowsParams the binding uses. */
export interface GetRowsParams {
  startRow: number;
  /** exclusive */
  endRow: number;
  sortModel: SortModelItem[];
  filterModel: any;
  successCallback(rows: any[], lastRow?: number): void;
  failCallback(): void;
}

/** The part of AG Grid's `GridApi` the binding uses (a grid with the Infinite Row Model). */
export interface AgGridInfiniteApi {
  getGridOption(key: any): any;
  setGridOption(key: any, value: any): void;
  addEventListener(name: any, listener: (event: any) => void): void;
  removeEventListener(name: any, listener: (event: any) => void): void;
  getDisplayedRowAtIndex(index: number): { data: any; setData(data: any): void } | undefined;
  getFirstDisplayedRowIndex(): number;
  getLastDisplayedRowIndex(): number;
  setRowCount(count: number, maxRowFound?: boolean): void;
  redrawRows(): void;
  isDestroyed(): boolean;
}

export interface ViewportGridOptions {
  /** Rows per block the grid asks for (50). */
  blockSize?: number;
  /** Blocks the grid keeps (4). */
  blocks?: number;
}

export interface AgGridViewportOptions {
  /** Rows kept live above and below the screen (50). */
  margin?: number;
  /** A grid sort as an orderby (default: each column id as a path, "/qty DESC, /order");
   * undefined: the viewport's own order, the one it had when bound. */
  orderbyOf?: (sortModel: SortModelItem[]) => string | undefined;
  /** A grid filter as a filter (undefined: the viewport's own, when bound); without one the
   * grid's filters are not used. */
  filterOf?: (filterModel: any) => string | undefined;
  /** The row class while the viewport is stale (the connection is down): "sow-stale". */
  staleClass?: string;
}

export interface AgGridViewportStats {
  /** blocks answered */
  blocks: number;
  /** moves asked of the viewport */
  moves: number;
  /** row nodes given a new record by live changes */
  redrawn: number;
}

export interface AgGridViewportBinding {
  readonly stats: AgGridViewportStats;
  /** Draw the live changes that wait for the next animation frame, now. */
  flush(): void;
  /** Stop: blocks still waiting fail, the grid options the binding set are put back. */
  unbind(): void;
}

/** The grid options a viewport binding needs, to spread into createGrid's. */
export declare function viewportGridOptions(options?: ViewportGridOptions): {
  rowModelType: "infinite";
  cacheBlockSize: number;
  maxBlocksInCache: number;
  maxConcurrentDatasourceRequests: number;
  infiniteInitialRowCount: number;
};

/** The default orderby of a grid sort: "/qty DESC, /order". */
export declare function orderbyOfSortModel(sortModel: SortModelItem[]): string | undefined;

/** Draw the viewport in a grid made with viewportGridOptions(): its datasource, row count and live rows. */
export declare function bindAgGridViewport<T = any>(
  viewport: BindableViewport<T>,
  gridApi: AgGridInfiniteApi,
  options?: AgGridViewportOptions,
): AgGridViewportBinding;
