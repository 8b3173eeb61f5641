// A typed use of the grid adapters, checked by tsc against web/adapters/*.d.ts
// (tests/client/test_declarations.py): a view bound to AG Grid.

import { PushClient } from "../../../web/index.js";
import { bindAgGrid, sowRowId } from "../../../web/adapters/aggrid.js";
import type { AgGridApi, AgGridBinding } from "../../../web/adapters/aggrid.js";

interface Order {
  order: number;
  qty: number;
}

export function bind(client: PushClient, grid: AgGridApi): void {
  const view = client.sowAndDeltaSubscribe<Order>("orders", { options: "oof" });
  const binding: AgGridBinding = bindAgGrid(view, grid, {
    flash: true,
    onOof: (key: string, _record: Order, reason: string | undefined) => console.log(key, reason),
  });
  console.log(binding.stats.updated, sowRowId({ data: { order: 1 } }));
  binding.flush();
  binding.unbind();

  // @ts-expect-error: the AG Grid binding takes a view, not a client
  bindAgGrid(client, grid);
}
