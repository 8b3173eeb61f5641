// A typed use of the client's viewports (client.viewport, client.aggregate), checked by tsc
// against web/*.d.ts (tests/client/test_declarations.py), as usage.ts checks the rest.

import { DEFAULT_ROWS, MAX_ROWS, PushClient, Viewport } from "../../../web/index.js";
import type {
  AggregateSettings,
  Change,
  MoveResult,
  RowRange,
  RowsEvent,
  ViewErrorEvent,
  ViewportSettings,
} from "../../../web/index.js";

type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
function assertType<A, B>(..._proof: Equal<A, B> extends true ? [] : [never]): void {}

interface Order {
  order: number;
  qty: number;
  desk: string;
}

interface DeskTotal {
  desk: string;
  qty: number;
  orders: number;
}

export async function scroll(client: PushClient, signal: AbortSignal): Promise<void> {
  const settings: ViewportSettings = { filter: "/qty > 10", orderby: "/qty DESC", rows: [0, 49], signal };
  const view = client.viewport<Order>("orders", { ...settings, options: "conflation=250ms", timeoutMs: 5000 });
  assertType<typeof view, Viewport<Order>>();
  assertType<Awaited<typeof view.ready>, Viewport<Order>>();
  await view.ready;
  assertType<typeof view.rows, Order[]>();
  assertType<typeof view.keys, string[]>();
  assertType<typeof view.count, number | null>();
  const [first, last]: RowRange = [view.first, view.last];
  view.on("rows", (event) => assertType<typeof event, RowsEvent<Order>>());
  view.on("count", ({ count }) => assertType<typeof count, number | null>());
  view.on("change", (change) => assertType<typeof change, Change<Order>>());
  view.on("error", (event) => assertType<typeof event, ViewErrorEvent>());
  view.on("stale", ({ stale }) => assertType<typeof stale, boolean>());

  const moved = await view.moveTo(first + 50, last + 50);
  assertType<typeof moved, MoveResult>();
  if (!moved.superseded) console.log(moved.first, moved.count);
  await Promise.all([view.sortBy("/desk, /qty DESC"), view.filterBy(undefined), view.sortBy(undefined)]);
  console.log(DEFAULT_ROWS[1], MAX_ROWS, view.orderby, view.filter);
  for await (const change of view) {
    console.log(change.record.qty);
    break;
  }
  await view.close();

  const aggregate: AggregateSettings = {
    grouping: ["/desk"],
    projection: ["/desk", "SUM(/qty) AS /qty", "COUNT(/order) AS /orders"],
    orderby: "/qty DESC",
  };
  const groups = client.aggregate<DeskTotal>("orders", aggregate);
  assertType<typeof groups.rows, DeskTotal[]>();
  assertType<typeof groups.grouping, string[] | undefined>();
  await groups.moveTo(0, 9);

  // What the declarations must refuse:
  // @ts-expect-error: rows are a [first, last] pair
  client.viewport("orders", { rows: 50 });
  client.aggregate("orders", { projection: ["SUM(/qty) AS /qty"] }); // one group of every record
  // @ts-expect-error: an aggregate needs a grouping or a projection
  client.aggregate("orders", { orderby: "/qty" });
  // @ts-expect-error: grouping is a list of fields
  client.aggregate("orders", { grouping: "/desk" });
  // @ts-expect-error: moveTo takes the first and last rows
  view.moveTo([0, 9]);
  // @ts-expect-error: the rows are the viewport's to change
  view.rows = [];
  // @ts-expect-error: there is no such event
  view.on("row", () => {});
}
