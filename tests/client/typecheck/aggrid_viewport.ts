// A typed use of the viewport binding for AG Grid's Infinite Row Model, checked by tsc against
// web/adapters/aggrid-viewport.d.ts (tests/client/test_declarations.py).

import { PushClient } from "../../../web/index.js";
import { bindAgGridViewport, orderbyOfSortModel, viewportGridOptions } from "../../../web/adapters/aggrid-viewport.js";
import type { AgGridInfiniteApi, AgGridViewportBinding } from "../../../web/adapters/aggrid-viewport.js";

interface Order {
  order: number;
  qty: number;
}

export async function scrollInAgGrid(client: PushClient, grid: AgGridInfiniteApi): Promise<void> {
  const options = viewportGridOptions({ blockSize: 100 });
  const model: "infinite" = options.rowModelType;
  const viewport = client.viewport<Order>("orders", { orderby: "/qty DESC", rows: [0, 99] });
  const binding: AgGridViewportBinding = bindAgGridViewport(viewport, grid, {
    margin: 20,
    filterOf: (model) => (model.qty ? `/qty > ${model.qty.filter}` : undefined),
  });
  console.log(model, binding.stats.blocks, orderbyOfSortModel([{ colId: "qty", sort: "desc" }]));
  binding.flush();
  binding.unbind();
  const groups = client.aggregate("orders", { grouping: ["/desk"] });
  bindAgGridViewport(groups, grid).unbind();
  // @ts-expect-error: the viewport binding takes a viewport, not a plain view
  bindAgGridViewport(client.sowAndSubscribe<Order>("orders"), grid);
  // @ts-expect-error: the margin is a number of rows
  bindAgGridViewport(viewport, grid, { margin: "50" });
}
