import { connect, createServer, type Server, type Socket } from "node:net";
import { assert } from "../assert.ts";
import type { ListenAddress, Network, StreamConnection, StreamListener } from "./network.ts";

/** Bytes received and not yet read past which a connection stops reading from its socket. */
export const receivedBytesHighWater = 256 * 1024;

/** Connections accepted by the system and not yet taken by `accept`, at most; more are closed. */
export const acceptedBacklogMax = 1024;

/** `Network` over `node:net`, as Node and Deno's Node compatibility both provide it. */
export class NodeNetwork implements Network {
  async listen(address: ListenAddress): Promise<StreamListener> {
    const server = createServer({ noDelay: true });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(address.port, address.hostname, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return new NodeListener(server);
  }

  connect(address: ListenAddress, timeoutMs: number): Promise<StreamConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: address.hostname, port: address.port, noDelay: true });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          new Error(
            `Cannot connect to ${address.hostname}:${address.port}: no answer within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(new NodeConnection(socket));
      });
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(
          new Error(`Cannot connect to ${address.hostname}:${address.port}: ${error.message}`, {
            cause: error,
          }),
        );
      });
    });
  }
}

class NodeListener implements StreamListener {
  readonly address: ListenAddress;
  readonly #server: Server;
  readonly #backlog: Socket[] = [];
  #waiter: ((connection: StreamConnection | null) => void) | null = null;
  #closed = false;

  constructor(server: Server) {
    this.#server = server;
    const bound = server.address();
    assert(bound !== null && typeof bound === "object", "a listening server has an address");
    this.address = { hostname: bound.address, port: bound.port };
    server.on("connection", (socket) => this.#arrived(socket));
  }

  accept(): Promise<StreamConnection | null> {
    assert(this.#waiter === null, "one accept at a time");
    const socket = this.#backlog.shift();
    if (socket !== undefined) return Promise.resolve(new NodeConnection(socket));
    if (this.#closed) return Promise.resolve(null);
    return new Promise((resolve) => (this.#waiter = resolve));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#server.close();
    for (const socket of this.#backlog.splice(0)) socket.destroy();
    this.#wake(null);
  }

  #arrived(socket: Socket): void {
    if (this.#closed || (this.#waiter === null && this.#backlog.length >= acceptedBacklogMax)) {
      socket.destroy();
      return;
    }
    if (this.#waiter !== null) this.#wake(new NodeConnection(socket));
    else this.#backlog.push(socket);
  }

  #wake(connection: StreamConnection | null): void {
    const waiter = this.#waiter;
    this.#waiter = null;
    waiter?.(connection);
  }
}

class NodeConnection implements StreamConnection {
  readonly remoteAddress: string;
  readonly #socket: Socket;
  readonly #received: Uint8Array[] = [];
  #receivedBytes = 0;
  #ended = false;
  #error: Error | null = null;
  #waiter: (() => void) | null = null;

  constructor(socket: Socket) {
    this.#socket = socket;
    this.remoteAddress = `${socket.remoteAddress}:${socket.remotePort}`;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.#push(chunk));
    socket.on("end", () => this.#finish(null));
    socket.on("close", () => this.#finish(null));
    socket.on("error", (error) => this.#finish(error));
  }

  async read(): Promise<Uint8Array | null> {
    assert(this.#waiter === null, "one read at a time");
    while (this.#received.length === 0 && !this.#ended) {
      await new Promise<void>((resolve) => (this.#waiter = resolve));
    }
    const chunk = this.#received.shift();
    if (chunk === undefined) {
      if (this.#error !== null) throw this.#error;
      return null;
    }
    this.#receivedBytes -= chunk.length;
    if (this.#receivedBytes < receivedBytesHighWater && this.#socket.isPaused()) this.#socket.resume();
    return chunk;
  }

  write(bytes: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#socket.write(bytes, (error) => (error ? reject(error) : resolve()));
    });
  }

  close(): void {
    this.#socket.destroy();
    this.#finish(null);
  }

  #push(chunk: Buffer): void {
    this.#received.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    this.#receivedBytes += chunk.length;
    if (this.#receivedBytes >= receivedBytesHighWater) this.#socket.pause();
    this.#wakeReader();
  }

  #finish(error: Error | null): void {
    if (error !== null && this.#error === null) this.#error = error;
    this.#ended = true;
    this.#wakeReader();
  }

  #wakeReader(): void {
    const waiter = this.#waiter;
    this.#waiter = null;
    waiter?.();
  }
}
