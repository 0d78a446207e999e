import { connect, createServer, type Server, type Socket } from "node:net";
import { once } from "node:events";
import { tieSockets } from "./socket_pair.ts";

/** Connections one proxy keeps at once; more are refused. */
const connectionsMax = 256;

/**
 * A TCP proxy before a node's Kafka listener that can hold its traffic: while held, nothing
 * received on any of its connections is passed on either way (the sockets stop reading, so the
 * bytes wait in the kernel's buffers and the senders' requests go unanswered), and new
 * connections are accepted but not joined to the node; `release` lets everything flow again. A
 * node advertises the proxy's address, so that clients and the other nodes' links reach it
 * through the proxy. The node it forwards to (`target`) may be set after the proxy listens; until
 * then connections are refused.
 */
export class HoldingProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  /** Connections accepted while held, joined to the node at the release. */
  #waiting: Socket[] = [];
  /** Bytes read before a hold took effect, in order, passed on at the release. */
  #pending: { to: Socket; bytes: Buffer }[] = [];
  #held = false;
  /** The node connections go to. */
  target: { host: string; port: number } | null = null;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<HoldingProxy> {
    let proxy: HoldingProxy | null = null;
    const server = createServer((client) => proxy!.#accept(client));
    proxy = new HoldingProxy(server);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return proxy;
  }

  get port(): number {
    const address = this.#server.address();
    if (address === null || typeof address === "string") throw new Error("Cannot tell the proxy's port");
    return address.port;
  }

  /** Stops passing anything on, on every connection, until `release`. */
  hold(): void {
    this.#held = true;
    for (const socket of this.#sockets) socket.pause();
  }

  /** Passes everything on again, and joins the connections accepted meanwhile. */
  release(): void {
    this.#held = false;
    for (const { to, bytes } of this.#pending.splice(0)) if (!to.destroyed) to.write(bytes);
    for (const socket of this.#sockets) socket.resume();
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const client of waiting) this.#join(client);
  }

  #accept(client: Socket): void {
    if (this.target === null || this.#sockets.size >= connectionsMax) return void client.destroy();
    this.#sockets.add(client);
    client.on("close", () => this.#sockets.delete(client));
    client.on("error", () => client.destroy());
    if (this.#held) {
      client.pause();
      this.#waiting.push(client);
    } else {
      this.#join(client);
    }
  }

  #join(client: Socket): void {
    if (client.destroyed) return;
    const target = this.target!;
    const upstream = connect(target.port, target.host);
    tieSockets(client, upstream, this.#sockets);
    const pass = (to: Socket) => (bytes: Buffer) => {
      if (this.#held) this.#pending.push({ to, bytes });
      else to.write(bytes);
    };
    client.on("data", pass(upstream));
    upstream.on("data", pass(client));
  }

  async close(): Promise<void> {
    for (const socket of [...this.#sockets, ...this.#waiting]) socket.destroy();
    this.#server.close();
    await once(this.#server, "close");
  }
}
