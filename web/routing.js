// The client's side of its views (client.js): each frame's messages handed to the views, the
// acks and queries they name, and a transaction's messages gathered; each view subscribed once
// per connection, and forgotten; and the server's words about a topic it does not keep (a
// view's or a publish's), said once per topic.

import { CommandRefused, topicWarning } from "./errors.js";

/**
 * @typedef {import("./client.js").PushClient} PushClient
 * @typedef {import("./errors.js").TopicWarning} TopicWarning
 * @typedef {import("./requests.js").Ack} Ack
 * @typedef {import("./view.js").View} View
 */

/**
 * Apply a frame's messages.
 * @param {PushClient} client @param {any[]} messages @param {number} bytes
 */
export function receive(client, messages, bytes) {
  const share = messages.length ? bytes / messages.length : 0;
  for (const message of messages) {
    if (message.c === "ack") {
      client.requests.answer(message);
    } else if (message.c === "tx_begin") {
      client._tx = { tx: message.tx, views: new Set() };
    } else if (message.c === "tx_end") {
      // A transaction arrives in one frame and is applied in this one task: no paint falls
      // between its messages. Then one event names it and the views it changed.
      const done = client._tx;
      client._tx = null;
      if (done) client.emit("transaction", done);
    } else if (message.sids) {
      for (const sid of message.sids) {
        const view = client.views.get(String(sid));
        view?.handle(message, share);
        if (view && client._tx) client._tx.views.add(view);
      }
    } else if (message.query_id !== undefined) {
      if (!client.queries.receive(message)) client.views.get(String(message.query_id))?.handle(message, share);
    } else if (message.c === "unsubscribed") {
      const view = client.views.get(String(message.sub_id));
      if (view) client.views.delete(view.subId); // dropped: not opened again after a reconnect
      view?.handle(message, share);
    }
  }
}

/**
 * Subscribe `view` on the client's current connection: called once per connection per view
 * (when the view is made while open, or for every view when a connection opens), so the server
 * never sees its sub_id twice on one socket.
 * @param {PushClient} client @param {View} view
 */
export function open(client, view) {
  const opens = client.connection.opens;
  if (view.openedOn === opens) return;
  view.openedOn = opens;
  client.requests.request(view.request()).then(
    (ack) => {
      if (client.views.get(view.subId) !== view) return;
      view._noteWarning(ack); // a topic the server does not keep: plain pub/sub
      view.subscribed();
    },
    (error) => {
      if (error instanceof CommandRefused && client.views.get(view.subId) === view) {
        client.views.delete(view.subId);
        view.refused(error);
      }
    },
  );
}

/**
 * Forget a view and, when the server holds it, unsubscribe: resolves on the ack, or at once.
 * Never rejects (a lost connection took the subscription with it).
 * @param {PushClient} client @param {View} view
 * @returns {Promise<void>}
 */
export function unsubscribe(client, view) {
  if (client.views.get(view.subId) !== view) return Promise.resolve();
  client.views.delete(view.subId);
  if (client.state !== "open" || view.openedOn !== client.connection.opens) return Promise.resolve();
  const message = { c: "unsubscribe", sub_id: view.subId };
  return client.requests.request(message, { timeoutMs: client.options.requestTimeoutMs }).then(() => {}, () => {});
}

/**
 * Say a warning of the server (docs/protocol.md, Topics the server does not keep) once per topic
 * per client: console.warn, and the client's "warning" event.
 * @param {PushClient} client @param {TopicWarning} warning
 */
export function sayWarning(client, warning) {
  if (client._warnedTopics.has(warning.topic)) return;
  client._warnedTopics.add(warning.topic);
  console.warn(`sowpush: ${warning.reason}`);
  client.emit("warning", warning);
}

/**
 * A publish's (or delta publish's, sow delete's, transaction's) processed ack: its warning said.
 * @param {PushClient} client @param {Ack} ack @param {Record<string, any>} message  the command
 * @returns {Ack}
 */
export function publishAcked(client, ack, message) {
  const warning = topicWarning(ack, String(message.t ?? ""), message.c);
  if (warning) sayWarning(client, warning);
  return ack;
}
