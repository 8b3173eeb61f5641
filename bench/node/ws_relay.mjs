// A plain Node.js relay on the `ws` package: every message is forwarded to every other socket.
import { WebSocketServer } from "ws";

const port = Number(process.argv[2]);
const server = new WebSocketServer({ host: "127.0.0.1", port, path: "/ws", perMessageDeflate: false });
server.on("connection", (socket) => {
  socket.on("message", (data, isBinary) => {
    for (const client of server.clients) {
      if (client !== socket && client.readyState === 1) client.send(data, { binary: isBinary });
    }
  });
});
