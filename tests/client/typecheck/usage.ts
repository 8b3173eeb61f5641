// A typed use of the JavaScript client, checked by tsc against web/*.d.ts
// (tests/client/test_declarations.py). Each `assertType` pins what a declaration must say, and
// each `@ts-expect-error` what it must refuse: a declaration that is wrong, or looser than the
// client, fails the check.

import {
  CLOSE_CODES,
  CommandRefused,
  ConnectionClosed,
  LatencyWindow,
  PushClient,
  PushError,
  REFUSAL_CODES,
  RequestAborted,
  RequestTimeout,
  ViewDropped,
  applyPatch,
  backoffDelay,
  mergeRecord,
  topicWarning,
} from "../../../web/index.js";
import type {
  Ack,
  Change,
  ChangeKind,
  ClientOptions,
  ConnectionState,
  Percentiles,
  PushErrorCode,
  RefusalCode,
  StateEvent,
  TopicWarning,
  View,
  ViewErrorEvent,
} from "../../../web/index.js";

/** Compiles only when A and B are the same type. */
type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;
function assertType<A, B>(..._proof: Equal<A, B> extends true ? [] : [never]): void {}

interface Order {
  order: number;
  qty: number;
  side: "B" | "S";
}

export async function trade(url: string): Promise<void> {
  const options: ClientOptions = { clientName: "desk-1", requestTimeoutMs: 5000, heartbeatMs: 0 };
  const client = new PushClient(url, options);
  client.on("state", (event) => assertType<typeof event, StateEvent>());
  client.on("transaction", ({ views }) => assertType<typeof views, Set<View>>());
  assertType<typeof client.state, ConnectionState>();

  // Commands made before connect() wait for it.
  const early = client.sow<Order>("orders", { timeoutMs: 2000 });
  const controller = new AbortController();
  await client.connect({ signal: controller.signal, timeoutMs: 10_000 });
  assertType<Awaited<typeof early>, Order[]>();

  const ack = await client.publish<Order>("orders", { order: 1, qty: 5, side: "B" }, { timeoutMs: 1000 });
  assertType<typeof ack, Ack>();
  const deleted: number | undefined = (await client.sowDelete("orders", { filter: "/qty = 0" })).records_deleted;
  await client.deltaPublish<Order>("orders", { order: 1, qty: 6 }, { expiration: 30 });
  await client.transaction([
    { c: "publish", t: "orders", data: { order: 2, qty: 1, side: "S" } },
    { c: "sow_delete", t: "orders", filter: "/qty = 0" },
  ]);
  await client.flush({ signal: AbortSignal.timeout(1000) });
  const rows = await client.sow<Order>("orders", { filter: "/qty > 1", orderby: "/qty DESC", topN: 10 });
  assertType<typeof rows, Order[]>();

  const view = client.sowAndDeltaSubscribe<Order>("orders", { filter: "/qty > 10", options: "oof", timeoutMs: 5000 });
  view.on("change", (change) => assertType<typeof change, Change<Order>>());
  view.on("error", (event) => assertType<typeof event, ViewErrorEvent>());
  view.on("stale", ({ stale }) => assertType<typeof stale, boolean>());
  // A topic the server does not keep (a typo): the view goes on, as plain pub/sub, and says so.
  view.on("warning", (warning) => assertType<typeof warning, TopicWarning>());
  client.on("warning", ({ reason, didYouMean }) => console.log(reason, didYouMean.join(", ")));
  assertType<typeof view.warning, TopicWarning | null>();
  assertType<ReturnType<typeof topicWarning>, TopicWarning | null>();
  const near: string[] | undefined = ack.did_you_mean;
  // @ts-expect-error a warning is not a refusal: its code is its own
  const notRefused: RefusalCode = view.warning!.code;
  assertType<Awaited<typeof view.ready>, View<Order>>();
  assertType<typeof view.records, Map<string, Order>>();
  const latency: Percentiles = view.latency.percentiles();
  for await (const change of view) {
    assertType<typeof change, Change<Order>>();
    assertType<typeof change.kind, ChangeKind>();
    if (change.kind === "oof") console.log(change.reason, latency.p99, deleted);
    else console.log(change.record.qty);
    break; // stops this loop only
  }
  const closed = view.close();
  assertType<typeof closed, Promise<void>>();
  await closed;

  try {
    await client.subscribe("orders", { filter: "/qty >" }).ready;
  } catch (error) {
    if (error instanceof CommandRefused) assertType<typeof error.code, RefusalCode>();
    if (error instanceof ConnectionClosed) console.log(error.closeCode, error.code === "bad_credentials");
    if (error instanceof RequestTimeout) assertType<typeof error.code, "timeout">();
    if (error instanceof RequestAborted || error instanceof ViewDropped) console.log(error.command);
    if (error instanceof PushError) {
      assertType<typeof error.code, PushErrorCode>();
      switch (error.code) {
        case "bad_filter":
        case "timeout":
        case "aborted":
        case "replaced":
          console.log(error.reason);
          break;
        default:
          break;
      }
    }
  }
  const refusal: RefusalCode | undefined = REFUSAL_CODES["bad filter"];
  console.log(refusal, CLOSE_CODES[4002], backoffDelay({ initialMs: 200, maxMs: 1000, factor: 2, jitter: 0.5 }, 2, 0.5));
  console.log(applyPatch({ a: 1 }, [{ op: "replace", path: "/a", value: 2 }]), mergeRecord({ a: 1 }, { b: 2 }));
  new LatencyWindow().add("2024-01-01T00:00:00Z");
  client.close();

  // What the declarations must refuse:
  // @ts-expect-error: there is no such event
  view.on("chnage", () => {});
  // @ts-expect-error: there is no such code
  const typo: PushErrorCode = "bad_filtr";
  // @ts-expect-error: a record of the wrong shape
  await client.publish<Order>("orders", { order: "1", qty: 1, side: "B" });
  // @ts-expect-error: the deadline is a number of milliseconds
  await client.sow("orders", { timeoutMs: "1s" });
  // @ts-expect-error: a view's changes are Change objects, not records
  for await (const change of view) console.log(change.qty);
  // @ts-expect-error: state is read-only
  client.state = "open";
  console.log(typo);
}
