// Socket.IO on Node.js: a "publish" event carries one record (idiomatic: one event per update) or
// a list of them (batched); the server broadcasts it to every other socket as "update" / "updates".
import { createServer } from "node:http";
import { Server } from "socket.io";

const port = Number(process.argv[2]);
const http = createServer();
const io = new Server(http, { transports: ["websocket"], perMessageDeflate: false, serveClient: false });
http.listen(port, "127.0.0.1");
io.on("connection", (socket) => {
  socket.on("publish", (payload) => {
    socket.broadcast.emit(Array.isArray(payload) ? "updates" : "update", payload);
  });
});
