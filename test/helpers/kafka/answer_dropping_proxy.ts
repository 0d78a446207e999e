import { connect, createServer, type Server, type Socket } from "node:net";
import { once } from "node:events";
import { tieSockets } from "./socket_pair.ts";

/**
 * Cuts a stream of Kafka frames (a 4-byte big-endian size, then the frame) as bytes arrive; each
 * whole frame, size included, goes to `onFrame`. Frames larger than `frameBytesMax` are refused.
 */
class FrameCutter {
  #pending: Buffer = Buffer.alloc(0);
  readonly #onFrame: (frame: Buffer) => void;
  readonly #frameBytesMax: number;

  constructor(onFrame: (frame: Buffer) => void, frameBytesMax = 64 << 20) {
    this.#onFrame = onFrame;
    this.#frameBytesMax = frameBytesMax;
  }

  push(bytes: Buffer): void {
    this.#pending = this.#pending.length === 0 ? bytes : Buffer.concat([this.#pending, bytes]);
    // Each pass takes one whole frame off the front: the bytes received bound the loop.
    while (this.#pending.length >= 4) {
      const size = this.#pending.readInt32BE(0);
      if (size < 0 || size > this.#frameBytesMax) throw new Error(`Cannot proxy a frame of ${size} bytes`);
      if (this.#pending.length < 4 + size) return;
      this.#onFrame(this.#pending.subarray(0, 4 + size));
      this.#pending = this.#pending.subarray(4 + size);
    }
  }
}

/**
 * A TCP proxy before a Kafka listener that loses the answers to the first `dropsMax` requests of
 * API `apiKey`: it drops the connection instead of passing such an answer on, after the broker has
 * done the work, as a network that fails between the two would. The client then retries the request
 * on a new connection. The broker it forwards to (`target`) may be set after the proxy listens, so
 * that the broker can advertise the proxy's address; until then connections are refused. Connections
 * are closed with the proxy.
 */
export class AnswerDroppingProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #dropsLeft: number;
  /** Answers lost so far. */
  dropped = 0;
  /** The broker connections go to. */
  target: { host: string; port: number } | null = null;

  private constructor(server: Server, dropsMax: number) {
    this.#server = server;
    this.#dropsLeft = dropsMax;
  }

  static async start(apiKey: number, dropsMax: number) {
    let proxy: AnswerDroppingProxy | null = null;
    const server = createServer((client) => {
      const target = proxy!.target;
      if (target === null) client.destroy();
      else proxy!.#serve(client, target, apiKey);
    });
    proxy = new AnswerDroppingProxy(server, dropsMax);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return proxy;
  }

  get port(): number {
    const address = this.#server.address();
    if (address === null || typeof address === "string") throw new Error("Cannot tell the proxy's port");
    return address.port;
  }

  #serve(client: Socket, target: { host: string; port: number }, apiKey: number): void {
    const upstream = connect(target.port, target.host);
    const closeBoth = tieSockets(client, upstream, this.#sockets);
    /** The API key of each request in flight on this connection, by correlation id. */
    const keys = new Map<number, number>();
    const requests = new FrameCutter((frame) => {
      keys.set(frame.readInt32BE(8), frame.readInt16BE(4));
      upstream.write(frame);
    });
    const answers = new FrameCutter((frame) => {
      const correlation = frame.readInt32BE(4);
      const key = keys.get(correlation);
      keys.delete(correlation);
      if (key === apiKey && this.#dropsLeft > 0) {
        this.#dropsLeft--;
        this.dropped++;
        closeBoth();
        return;
      }
      client.write(frame);
    });
    client.on("data", (bytes: Buffer) => requests.push(bytes));
    upstream.on("data", (bytes: Buffer) => answers.push(bytes));
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.#server.close();
    await once(this.#server, "close");
  }
}
