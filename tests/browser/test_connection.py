"""web/connection.js, the client's connection state machine, in real Chromium with a scripted fake
transport: every way an attempt can fail leads to exactly one retry, one transport at a time, a
superseded transport is ignored, the backoff grows to its cap, and closing is final.

The page's clock is the test's (``clock`` in the harness): the machine's timers (``setTimeout``) and
``Date.now`` move only when the script lets time pass, with ``sleep(ms)`` or while ``waitFor``
waits, and due timers run in the order of their times. On a loaded machine real timers are late
by hundreds of milliseconds, which had dropped a socket for silence while the script was
answering it every 15 ms (a stall of the page between two answers); here a verdict follows from
the order of events, never from how fast the page runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from ..integration.server_process import ServerProcess, running
from .conftest import TOPICS

HARNESS = """async () => {
  const { Connection, backoffDelay } = await import("/web/connection.js");
  const { Emitter } = await import("/web/emitter.js");
  window.backoffDelay = backoffDelay;
  // The test's clock: what connection.js reads of time (setTimeout, clearTimeout, Date.now) is
  // replaced; a turn of the page's real event loop between two timers lets the promises and
  // events a timer started settle before the next one runs.
  const realTimeout = window.setTimeout.bind(window);
  const turn = () => new Promise((r) => realTimeout(r, 0));
  const clock = { now: 1e12, nextId: 1, timers: new Map() };
  window.setTimeout = (callback, ms = 0) => {
    const id = clock.nextId++;
    clock.timers.set(id, { due: clock.now + Math.max(0, ms), callback });
    return id;
  };
  window.clearTimeout = (id) => { clock.timers.delete(id); };
  Date.now = () => clock.now;
  /** Lets ms of the test's time pass: each timer due by then runs at its time, earliest first. */
  window.sleep = async (ms) => {
    const until = clock.now + ms;
    await turn();
    for (;;) {
      let next = null;
      for (const [id, timer] of clock.timers) {
        if (timer.due <= until && (next === null || timer.due < next[1].due)) next = [id, timer];
      }
      if (next === null) break;
      clock.timers.delete(next[0]);
      clock.now = next[1].due;
      next[1].callback();
      await turn();
    }
    clock.now = until;
  };
  /** Lets time pass a millisecond at a time until check() holds; at most ms of it. */
  window.waitFor = async (check, ms = 5000) => {
    const start = clock.now;
    while (!check()) {
      if (clock.now - start > ms) throw new Error("timed out waiting");
      await sleep(1);
    }
  };
  /** A transport the test drives: accept(), drop(code), frame(), and events after its end. */
  class FakeTransport extends Emitter {
    constructor(url) {
      super();
      this.url = url;
      this.ended = false;
      this.isOpen = false;
      this.sent = [];
      this.closedWith = null;
      this.aliveAtBirth = fakes.filter((t) => !t.ended).length;
      fakes.push(this);
    }
    open() {}
    send(message) {
      if (!this.isOpen || this.ended) return false;
      this.sent.push(message);
      return true;
    }
    close(code = 1000, reason = "") {
      this.closedWith = code;
      this._end(code, reason);
    }
    _end(code, reason) {
      if (this.ended) return;
      this.ended = true;
      this.isOpen = false;
      this.emit("close", { code, reason });
    }
    accept() { this.isOpen = true; this.emit("open"); }
    drop(code = 1006) { this._end(code, ""); }
    frame() { this.emit("frame", { messages: [{ c: "heartbeat" }], bytes: 17 }); }
    /** What a superseded socket might still report: all of it must be ignored. */
    late() {
      this.emit("open");
      this.emit("frame", { messages: [{ c: "late" }], bytes: 1 });
      this.emit("close", { code: 1006, reason: "late" });
    }
  }
  window.fakes = [];
  window.make = (options = {}) => {
    fakes.length = 0;
    const connection = new Connection("ws://fake/ws", {
      createTransport: (url) => new FakeTransport(url),
      backoff: { initialMs: 10, maxMs: 80, factor: 2, jitter: 0.5 },
      random: () => 0,
      heartbeatMs: 0,
      ...options,
    });
    connection.events = [];
    connection.frames = [];
    connection.on("state", (event) => connection.events.push(event));
    connection.on("frame", (frame) => connection.frames.push(frame));
    return connection;
  };
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Only serves /web/ here: one for the module."""
    with running(tmp_path_factory.mktemp("connection"), TOPICS) as process:
        yield process


def run(page: Page, server: ServerProcess, script: str) -> Any:
    page.goto(server.http + "/healthz")
    page.evaluate(HARNESS)
    return page.evaluate(script)


def test_a_failure_reported_three_ways_makes_one_retry(page: Page, server: ServerProcess) -> None:
    result = run(
        page,
        server,
        """async () => {
        // The handshake fails AND the socket closes AND (later) the connect timeout would fire.
        const connection = make({ handshake: async () => { throw new Error("logon lost"); },
                                  connectTimeoutMs: 30 });
        connection.start().catch(() => {});
        for (let n = 0; n < 4; n++) {
          await waitFor(() => fakes.length === n + 1);
          const transport = fakes[n];
          transport.accept();
          transport.drop();
          await sleep(0);
        }
        await waitFor(() => fakes.length === 5);
        await sleep(60); // long past every timer of the failed attempts
        connection.stop();
        return { created: fakes.length, alive: Math.max(...fakes.map((t) => t.aliveAtBirth)),
                 events: connection.events.map((e) => [e.state, e.attempt, e.delayMs ?? null]),
                 closed: fakes.every((t) => t.ended) };
    }""",
    )
    assert result["created"] == 5, "one transport per attempt, and one attempt per failure"
    assert result["alive"] == 0, "a new transport is made only once the previous one has ended"
    assert result["closed"]
    # Each attempt fails once; the delay doubles (10, 20, 40, 80) and the attempt counter moves.
    assert result["events"][:9] == [
        ["connecting", 1, None],
        ["waiting", 2, 10],
        ["connecting", 2, None],
        ["waiting", 3, 20],
        ["connecting", 3, None],
        ["waiting", 4, 40],
        ["connecting", 4, None],
        ["waiting", 5, 80],
        ["connecting", 5, None],
    ]
    assert result["events"][-1][0] == "closed"


def test_a_hung_attempt_times_out_and_its_late_events_are_ignored(page: Page, server: ServerProcess) -> None:
    result = run(
        page,
        server,
        """async () => {
        const connection = make({ connectTimeoutMs: 40 });
        const started = connection.start();
        await sleep(60); // the first transport never opens: abandoned with 4000
        const first = fakes[0];
        await waitFor(() => fakes.length === 2);
        first.late(); // open, a frame and a close from the superseded socket
        const stateAfterLate = connection.state;
        fakes[1].accept();
        await started;
        first.late();
        fakes[1].frame();
        return { firstClosedWith: first.closedWith, stateAfterLate, state: connection.state,
                 created: fakes.length, frames: connection.frames.length,
                 events: connection.events.map((e) => e.state) };
    }""",
    )
    assert result["firstClosedWith"] == 4000
    assert result["stateAfterLate"] == "connecting", "a superseded transport does not move the machine"
    assert result["state"] == "open"
    assert result["created"] == 2
    assert result["frames"] == 1, "only the current transport's frames are passed on"
    assert result["events"] == ["connecting", "waiting", "connecting", "open"]


def test_backoff_caps_with_jitter_and_resets_only_after_a_stable_connection(
    page: Page, server: ServerProcess
) -> None:
    result = run(
        page,
        server,
        """async () => {
        const b = { initialMs: 100, maxMs: 1000, factor: 2, jitter: 0.5 };
        const delays = [1, 2, 3, 4, 5, 8].map((n) => [backoffDelay(b, n, 0), backoffDelay(b, n, 0.5)]);

        // Open, then dropped at once (twice), then open long enough to count as stable.
        const connection = make({ stableMs: 1000 });
        connection.start();
        const waits = [];
        connection.on("state", (e) => { if (e.state === "waiting") waits.push(e.delayMs); });
        for (const [hold, fail] of [[0, 1], [0, 0], [1100, 0]]) {
          await waitFor(() => fakes.length && !fakes.at(-1).ended && connection.state === "connecting");
          for (let n = 0; n < fail; n++) {
            fakes.at(-1).drop();
            await waitFor(() => connection.state === "connecting");
          }
          fakes.at(-1).accept();
          await waitFor(() => connection.state === "open");
          await sleep(hold);
          fakes.at(-1).drop();
        }
        connection.stop();
        return { delays, waits };
    }""",
    )
    assert result["delays"] == [[100, 75], [200, 150], [400, 300], [800, 600], [1000, 750], [1000, 750]]
    # A failed attempt, then two opens that dropped at once: the backoff keeps climbing (10, 20,
    # 40); the stable open resets it (10).
    assert result["waits"] == [10, 20, 40, 10]


def test_final_codes_refusals_and_stop_end_it(page: Page, server: ServerProcess) -> None:
    result = run(
        page,
        server,
        """async () => {
        const outcomes = {};
        // Replaced by a newer logon (4002): closed, no retry, start() rejects.
        let connection = make();
        let started = connection.start().then(() => "open", (e) => e.message);
        await waitFor(() => fakes.length === 1);
        fakes[0].accept();
        await started;
        fakes[0].drop(4002);
        await sleep(40);
        outcomes.replaced = { state: connection.state, created: fakes.length };

        // A refused logon (final): closed, the socket closed by the client.
        const refusal = Object.assign(new Error("not entitled"), { final: true });
        connection = make({ handshake: async () => { throw refusal; } });
        started = connection.start().then(() => "open", (e) => e.message);
        await waitFor(() => fakes.length === 1);
        fakes[0].accept();
        outcomes.refused = { result: await started, state: connection.state, socketEnded: fakes[0].ended };
        await sleep(40);
        outcomes.refused.created = fakes.length;

        // stop() while waiting: no attempt after it; stop() while connecting closes the socket.
        connection = make({ backoff: { initialMs: 30, maxMs: 30 } });
        connection.start();
        await waitFor(() => fakes.length === 1);
        fakes[0].drop();
        connection.stop();
        await sleep(80);
        outcomes.stoppedWaiting = { state: connection.state, created: fakes.length };
        connection = make();
        started = connection.start().then(() => "open", (e) => e.message);
        await waitFor(() => fakes.length === 1);
        connection.stop();
        outcomes.stoppedConnecting = { result: await started, closedWith: fakes[0].closedWith };
        // And it can be started again, from scratch.
        connection.start();
        await waitFor(() => fakes.length === 2);
        fakes[1].accept();
        await waitFor(() => connection.state === "open");
        outcomes.restarted = connection.events.filter((e) => e.state === "connecting").map((e) => e.attempt);
        connection.stop();
        return outcomes;
    }""",
    )
    assert result["replaced"] == {"state": "closed", "created": 1}
    assert result["refused"] == {
        "result": "connection closed (1008: not entitled)",
        "state": "closed",
        "socketEnded": True,
        "created": 1,
    }
    assert result["stoppedWaiting"] == {"state": "closed", "created": 1}
    assert result["stoppedConnecting"]["result"].startswith("connection closed (1000")
    assert result["stoppedConnecting"]["closedWith"] == 1000
    assert result["restarted"] == [1, 1]


def test_heartbeats_and_a_silent_socket(page: Page, server: ServerProcess) -> None:
    result = run(
        page,
        server,
        """async () => {
        // Beats of 100 ms; a silence of two beats drops the socket.
        const connection = make({ heartbeatMs: 100 });
        connection.start();
        await waitFor(() => fakes.length === 1);
        const transport = fakes[0];
        transport.accept();
        await waitFor(() => connection.state === "open");
        // Answered (a frame every 15 ms) until it has sent two heartbeats: the socket stays.
        const beats = () => transport.sent.filter((m) => m.c === "heartbeat").length;
        const until = Date.now() + 3000;
        while (beats() < 2 && Date.now() < until) {
          await sleep(15);
          transport.frame();
        }
        const sentWhileAnswered = beats();
        const stillOpen = connection.state === "open";
        // Then silence: two more beats go out (the silence is 200 ms or less at each), the third
        // finds it longer and drops the socket with 4000; then one new attempt.
        await waitFor(() => transport.ended, 3000);
        const sentInSilence = beats() - sentWhileAnswered;
        await waitFor(() => fakes.length === 2);
        connection.stop();
        return { sentWhileAnswered, stillOpen, sentInSilence, closedWith: transport.closedWith,
                 created: fakes.length };
    }""",
    )
    assert result["sentWhileAnswered"] == 2
    assert result["stillOpen"]
    assert result["sentInSilence"] == 2
    assert result["closedWith"] == 4000
    assert result["created"] == 2
