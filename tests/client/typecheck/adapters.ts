// A typed use of the grid adapters, checked by tsc against web/adapters/*.d.ts
// (tests/client/test_declarations.py): a view bound to AG Grid and to Tabulator.

import { PushClient } from "../../../web/index.js";
import { bindAgGrid, sowRowId } from "../../../web/adapters/aggrid.js";
import type { AgGridApi, AgGridBinding } from "../../../web/adapters/aggrid.js";
import { KEY_FIELD, TabulatorBinding, flashing, tabulatorOptions } from "../../../web/adapters/tabulator.js";

interface Order {
  order: number;
  qty: number;
}

export function bind(client: PushClient, grid: AgGridApi, table: any): void {
  const view = client.sowAndDeltaSubscribe<Order>("orders", { options: "oof" });
  const binding: AgGridBinding = bindAgGrid(view, grid, {
    flash: true,
    onOof: (key: string, _record: Order, reason: string | undefined) => console.log(key, reason),
  });
  console.log(binding.stats.updated, sowRowId({ data: { order: 1 } }));
  binding.flush();
  binding.unbind();

  const options = { ...tabulatorOptions(), height: "100%" };
  const tabulator = new TabulatorBinding<Order>(view, table, { lingerMs: 0, onOof: (key) => console.log(key) });
  const format = flashing(tabulator, (cell) => String(cell.getValue()));
  const key: "__sowKey" = KEY_FIELD;
  const drawn: number = tabulator.flush(Infinity, performance.now());
  const held: Order | undefined = tabulator.records.get(key);
  tabulator.paused = true;
  console.log(options, format, drawn, held, tabulator.waiting);
  tabulator.resume();
  tabulator.unbind();

  // @ts-expect-error: flush needs the frame's time
  tabulator.flush(10);
  // @ts-expect-error: what the table holds is the binding's to change
  tabulator.records = new Map();
  // @ts-expect-error: the AG Grid binding takes a view, not a client
  bindAgGrid(client, grid);
}
