import type { Socket } from "node:net";

/**
 * Ties a proxied connection's two sockets together: both are kept in `open` while open, and an
 * error or a close of either destroys both. Returns what destroys both, for the proxy's own use.
 */
export function tieSockets(client: Socket, upstream: Socket, open: Set<Socket>): () => void {
  open.add(client).add(upstream);
  const closeBoth = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const socket of [client, upstream]) {
    socket.on("error", closeBoth);
    socket.on("close", () => {
      open.delete(socket);
      closeBoth();
    });
  }
  return closeBoth;
}
