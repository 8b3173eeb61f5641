// Types of aggrid.js: a view of the push server kept in an AG Grid through its transaction API.

/** Something with events, as the client and its views are. */
export interface Listenable {
  on(name: string, listener: (event: any) => void): unknown;
  off?(name: string, listener: (event: any) => void): unknown;
}

/** What the adapter reads of a view made by the client (`client.sowAndDeltaSubscribe(...)`). */
export interface BindableView<T = any> extends Listenable {
  readonly records: Map<string, T>;
  readonly stale: boolean;
}

/** The part of AG Grid's `GridApi` the adapter uses (any AG Grid build's API fits). */
export interface AgGridApi {
  applyTransaction(tx: { add?: any[]; update?: any[]; remove?: any[] }): unknown;
  applyTransactionAsync(
    tx: { add?: any[]; update?: any[]; remove?: any[] },
    callback?: (result: any) => void,
  ): void;
  flushAsyncTransactions(): void;
  getGridOption(key: any): any;
  setGridOption(key: any, value: any): void;
  redrawRows(): void;
  isDestroyed(): boolean;
}

export interface AgGridBindingOptions {
  /** Flash the cells whose value changes (`enableCellChangeFlash` in `defaultColDef`). Off by default. */
  flash?: boolean;
  /** Called for every record that leaves the view, with the server's reason (or "stale"), before
   * its row is removed. */
  onOof?: (key: string, record: any, reason: string | undefined) => void;
  /** The row class while the view is stale (the connection is down): "sow-stale". */
  staleClass?: string;
  /** The view's client, whose "transaction" events hand a server transaction over at once
   * (by default the client that made the view). */
  client?: Listenable;
}

export interface AgGridBindingStats {
  /** grid transactions handed over */
  batches: number;
  /** view changes handed over (those collapsed into others included) */
  changes: number;
  added: number;
  updated: number;
  removed: number;
}

export interface AgGridBinding {
  readonly stats: AgGridBindingStats;
  /** Apply whatever waits, in the binding and in AG Grid's queue, now. */
  flush(): void;
  /** Stop following the view: the rows stay, the grid options the binding set are put back. */
  unbind(): void;
}

/** The grid option `getRowId` for grids bound to views: the record's SowKey. */
export declare function sowRowId(params: { data: any }): string;

/** Keep the grid's rows equal to the view's records (the grid needs `getRowId: sowRowId`). */
export declare function bindAgGrid<T = any>(
  view: BindableView<T>,
  gridApi: AgGridApi,
  options?: AgGridBindingOptions,
): AgGridBinding;
