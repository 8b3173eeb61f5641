// The JavaScript client's pure modules under Node's own test runner (node --test): no browser,
// no server. tests/client/test_npm_package.py runs it.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ChangeIterator } from "../../../web/changes.js";
import { logonCommand, publishCommand, sowCommand, sowDeleteCommand } from "../../../web/commands.js";
import { Deadline, underDeadline } from "../../../web/deadline.js";
import { mergeRecord } from "../../../web/merge.js";
import { applyPatch } from "../../../web/patch.js";

test("a patch applies to a copy and leaves its input as it was", () => {
  const held = { order: 1, legs: [{ qty: 5 }], tags: ["a"] };
  const patched = applyPatch(held, [
    { op: "replace", path: "/legs/0/qty", value: 6 },
    { op: "add", path: "/tags/-", value: "b" },
    { op: "remove", path: "/order" },
    { op: "add", path: "/a~1b", value: 1 },
  ]);
  assert.deepEqual(patched, { legs: [{ qty: 6 }], tags: ["a", "b"], "a/b": 1 });
  assert.deepEqual(held, { order: 1, legs: [{ qty: 5 }], tags: ["a"] });
  assert.throws(() => applyPatch(held, [{ op: "test", path: "/order", value: 2 }]));
});

test("a merge delta merges objects field by field and replaces arrays and scalars", () => {
  const held = { order: 1, px: { bid: 1, ask: 2 }, legs: [1, 2] };
  const merged = mergeRecord(held, { px: { ask: 3 }, legs: [3], qty: 5 });
  assert.deepEqual(merged, { order: 1, px: { bid: 1, ask: 3 }, legs: [3], qty: 5 });
  assert.deepEqual(held.px, { bid: 1, ask: 2 });
});

test("a slow reader gets the net change per record, in order", async () => {
  let detached = false;
  const changes = new ChangeIterator([["a", { v: 1 }]], () => { detached = true; });
  changes.push({ key: "a", record: { v: 2 }, kind: "update" }); // folds into the waiting snapshot
  changes.push({ key: "b", record: { v: 1 }, kind: "insert" });
  changes.push({ key: "b", record: { v: 1 }, kind: "oof" }); // never seen: nothing
  changes.push({ key: "c", record: { v: 1 }, kind: "update" });
  changes.push({ key: "c", record: { v: 1 }, kind: "oof", reason: "deleted" });
  assert.deepEqual((await changes.next()).value, { key: "a", record: { v: 2 }, kind: "snapshot" });
  assert.deepEqual((await changes.next()).value, { key: "c", record: { v: 1 }, kind: "oof", reason: "deleted" });
  const waiting = changes.next();
  changes.end(new Error("closed"));
  await assert.rejects(waiting, /closed/);
  assert.equal(detached, true);
  assert.deepEqual(await changes.next(), { value: undefined, done: true });
});

test("a deadline rejects a request that gets no answer, and an abort rejects it at once", async () => {
  await assert.rejects(underDeadline("sow", { timeoutMs: 20 }, () => {}), { code: "timeout" });
  const controller = new AbortController();
  const aborted = underDeadline("sow", { signal: controller.signal }, () => {});
  controller.abort();
  await assert.rejects(aborted, { code: "aborted" });
  assert.equal(await underDeadline("sow", { timeoutMs: 1000 }, (resolve) => resolve(7)), 7);
  let fired = 0;
  const deadline = new Deadline("sow", { timeoutMs: 10 }, () => { fired += 1; });
  deadline.clear();
  await new Promise((done) => setTimeout(done, 30));
  assert.equal(fired, 0);
});

test("a command carries the fields its caller gave, and no others", () => {
  assert.deepEqual(logonCommand({ clientName: "desk-1", label: "ann, blotter" }), {
    c: "logon",
    client_name: "desk-1",
    label: "ann, blotter",
  });
  assert.deepEqual(publishCommand("publish", "orders", { order: 1 }), { c: "publish", t: "orders", data: { order: 1 } });
  assert.deepEqual(publishCommand("delta_publish", "orders", { order: 1 }, 0), {
    c: "delta_publish",
    t: "orders",
    data: { order: 1 },
    e: 0,
  });
  assert.deepEqual(sowDeleteCommand("orders", { keys: ["a", "b"] }), { c: "sow_delete", t: "orders", sow_keys: "a,b" });
  assert.deepEqual(sowCommand("orders", "q1", { orderby: "/qty DESC", topN: 0 }), {
    c: "sow",
    t: "orders",
    query_id: "q1",
    orderby: "/qty DESC",
    top_n: 0,
  });
});
