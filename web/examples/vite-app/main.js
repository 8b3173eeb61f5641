// A live view of a topic through the npm package: the server's address from ?server=, else the
// page's own host (a Vite dev server proxies nothing: start sowpush on :8000 and open
// http://localhost:5173/?server=ws://127.0.0.1:8000/ws).
import { PushClient } from "@sowpush/client";

const server = new URLSearchParams(location.search).get("server") ?? `ws://${location.host}/ws`;
const topic = new URLSearchParams(location.search).get("topic") ?? "orders";
const client = new PushClient(server);
client.on("state", ({ state }) => { document.getElementById("state").textContent = state; });
const view = client.sowAndSubscribe(topic, { options: "oof" });
const rows = document.getElementById("rows");

function draw() {
  rows.replaceChildren(...[...view.records].slice(0, 100).map(([key, record]) => {
    const row = document.createElement("tr");
    for (const text of [key, JSON.stringify(record)]) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.append(cell);
    }
    return row;
  }));
}

view.on("change", draw);
client.connect().catch((error) => { document.getElementById("state").textContent = String(error); });
