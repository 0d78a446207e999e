import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { ListenAddress, StreamConnection, StreamListener } from "../runtime/network/network.ts";
import { assert } from "../runtime/assert.ts";
import { BufferPool } from "../runtime/memory/buffers.ts";
import { type ConnectionLimits, serveConnection } from "./kafka_connection.ts";
import type { KafkaMetrics } from "./kafka_metrics.ts";
import type { KafkaSession } from "./kafka_session.ts";

export interface KafkaListenerDeps {
  limits: ConnectionLimits;
  /** `max_connections`: connections served at once at most. */
  connectionsMax: number;
  /** A new session for each connection accepted. */
  openSession(remoteAddress: string): KafkaSession;
  metrics: KafkaMetrics;
  clock: Clock;
  /** The process's piece gate: a connection takes a turn per piece it reads or writes. */
  turn: () => Promise<void>;
  logger: Logger;
}

/** A pooled frame buffer: a produce of up to this size is read into one without a fresh allocation. */
export const frameBufferBytes = 1024 * 1024;
/** Frame buffers lent at once at most; past it a frame gets a buffer of its own. */
export const frameBuffersMax = 32;

/**
 * Accepts Kafka connections and serves each with its own session, at most `connectionsMax` at once:
 * one more is closed as soon as it is accepted, and counted.
 */
export class KafkaListener {
  readonly address: ListenAddress;
  readonly #deps: KafkaListenerDeps;
  readonly #listener: StreamListener;
  readonly #open = new Map<StreamConnection, Promise<void>>();
  readonly #accepting: Promise<void>;
  /** Buffers for large request frames, shared by every connection (`pooledFrameBytesMin`). */
  readonly #frames = new BufferPool({ bufferBytes: frameBufferBytes, buffersMax: frameBuffersMax });

  /** Starts accepting on `listener`, which it owns from then on. */
  constructor(listener: StreamListener, deps: KafkaListenerDeps) {
    assert(deps.connectionsMax >= 1, "at least one connection");
    this.#deps = deps;
    this.#listener = listener;
    this.address = listener.address;
    this.#accepting = this.#acceptAll();
  }

  get connectionCount(): number {
    return this.#open.size;
  }

  /** Stops accepting, closes every connection and waits for their sessions to end. */
  async close(): Promise<void> {
    this.#listener.close();
    await this.#accepting;
    for (const connection of this.#open.keys()) connection.close();
    await Promise.all(this.#open.values());
  }

  async #acceptAll(): Promise<void> {
    const { metrics } = this.#deps;
    for (let connection = await this.#accept(); connection !== null; connection = await this.#accept()) {
      if (this.#open.size >= this.#deps.connectionsMax) {
        connection.close();
        metrics.connectionsRefused.inc();
        continue;
      }
      // Served from the next microtask on, so that the entry exists before the serve can end.
      this.#open.set(connection, Promise.resolve().then(() => this.#serve(connection)));
      metrics.connections.set(this.#open.size);
    }
  }

  async #accept(): Promise<StreamConnection | null> {
    try {
      return await this.#listener.accept();
    } catch (error) {
      this.#deps.logger.error("Cannot accept Kafka connections: the listener failed", {
        error,
      });
      return null;
    }
  }

  async #serve(connection: StreamConnection): Promise<void> {
    const { limits, clock, turn, logger, metrics } = this.#deps;
    try {
      const session = this.#deps.openSession(connection.remoteAddress);
      const reason = await serveConnection(connection, session, limits, {
        clock,
        turn,
        logger,
        frames: this.#frames,
      });
      if (reason !== null) metrics.connectionsClosed.inc({ reason });
    } catch (error) {
      // serveConnection handles its own failures; this is a session that could not be opened.
      connection.close();
      metrics.connectionsClosed.inc({ reason: "session_error" });
      logger.error("Cannot serve a Kafka connection", {
        remote: connection.remoteAddress,
        error,
      });
    } finally {
      this.#open.delete(connection);
      metrics.connections.set(this.#open.size);
    }
  }
}
