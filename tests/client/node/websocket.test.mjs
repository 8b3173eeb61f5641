// The client on a runtime without a WebSocket (Node.js 20): a clear refusal, and one passed in
// (the ws package's, on Node 20) is the one it connects with. Node's own test runner, no server:
// the socket passed in is a fake that answers the logon. tests/client/test_npm_package.py runs it.

import assert from "node:assert/strict";
import { test } from "node:test";

import { PushClient } from "../../../web/index.js";

class FakeSocket {
  static made = [];

  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    FakeSocket.made.push(this);
    setTimeout(() => {
      this.readyState = 1;
      this.onopen?.();
    }, 0);
  }

  send(text) {
    const message = JSON.parse(text);
    this.sent.push(message);
    if (message.c === "logon") {
      const ack = { c: "ack", a: "processed", cid: message.cid, status: "success", bm: "1" };
      setTimeout(() => this.onmessage?.({ data: JSON.stringify([ack]) }), 0);
    }
  }

  close(code = 1000, reason = "") {
    this.readyState = 3;
    setTimeout(() => this.onclose?.({ code, reason }), 0);
  }
}

test("without a WebSocket in the runtime, connecting says so", async () => {
  const own = globalThis.WebSocket;
  delete globalThis.WebSocket;
  try {
    const client = new PushClient("ws://127.0.0.1:9/ws", { reconnect: false, heartbeatMs: 0 });
    await assert.rejects(client.connect(), /this runtime has no WebSocket: use Node\.js 22 or later, or pass one/);
  } finally {
    if (own !== undefined) globalThis.WebSocket = own;
  }
});

test("a WebSocket passed in is the one the client connects with", async () => {
  const client = new PushClient("ws://push.example:8000/ws", {
    WebSocket: FakeSocket,
    heartbeatMs: 0,
    label: "node, a test",
  });
  await client.connect();
  assert.equal(FakeSocket.made.length, 1);
  const [socket] = FakeSocket.made;
  assert.equal(socket.url, "ws://push.example:8000/ws");
  assert.equal(socket.sent[0].c, "logon");
  assert.equal(socket.sent[0].label, "node, a test");
  client.close();
});
