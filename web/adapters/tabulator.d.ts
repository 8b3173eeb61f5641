// Types of tabulator.js: a view of the push server kept in a Tabulator table.

/** The field holding each row's SowKey (the table's `index`); records' own fields are shown as they are. */
export declare const KEY_FIELD: "__sowKey";

/** The Tabulator options a bound table needs: spread them into the table's options. */
export declare function tabulatorOptions(): Record<string, unknown>;

export interface TabulatorBindingOptions {
  /** How long a row that left the view stays, marked with the reason (ms, default 3000; 0: at once). */
  lingerMs?: number;
  /** How often sorting and quick filters are applied again while records change (ms, default 1000). */
  refreshMs?: number;
  /** How often the totals are summed again while records change (ms, default 500). */
  totalsMs?: number;
  /** How long rows added, removed or moved to another group may wait for one another, to be laid
   * out together (ms, default 250; longer when laying them out took more than a fifth of that);
   * values changed in place are drawn every flush. */
  structureMs?: number;
  /** Called for every record that leaves the view, with the server's reason. */
  onOof?: (key: string, record: any, reason: string) => void;
  /** Called with fields seen for the first time, and the records that brought them: make their columns. */
  onColumns?: (fields: string[], records: any[]) => void;
}

export declare class TabulatorBinding<T = any> {
  /**
   * @param view a view from the client (`client.sowAndDeltaSubscribe(...)` and the like)
   * @param table a Tabulator table built with `tabulatorOptions()`
   */
  constructor(view: any, table: any, options?: TabulatorBindingOptions);
  readonly view: any;
  readonly table: any;
  /** What the table holds, by key (rows still leaving included). */
  readonly records: Map<string, T>;
  /** Rows leaving the view: when each goes (performance.now() time). */
  readonly leaving: Map<string, number>;
  /** Every field seen, in the order first seen. */
  readonly fields: string[];
  /** While true, nothing is drawn: changes wait (each record at its latest state). */
  paused: boolean;
  /** True while the binding writes values into the table: a cell formatted then is a change. */
  readonly updating: boolean;
  /** How many records have changes waiting to be drawn. */
  readonly waiting: number;
  /** Draw again: what waited is drawn whole in the next flush. */
  resume(): void;
  /**
   * Apply up to `budget` waiting changes (all of them when a transaction or a resume waits);
   * returns how many were applied. Call it once per animation frame with performance.now().
   */
  flush(budget: number, now: number): number;
  /** Stop following the view; the table keeps what it shows. */
  unbind(): void;
}

/** A Tabulator formatter whose cells flash when this binding changes them: `flash-up` when a
 * number rises, `flash-down` when it falls, `flash-changed` otherwise (CSS classes to style). */
export declare function flashing(
  binding: { readonly updating: boolean },
  formatter: (cell: any) => any,
): (cell: any) => any;
