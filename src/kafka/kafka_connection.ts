import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import type { StreamConnection } from "../runtime/network/network.ts";
import { assert, isBug } from "../runtime/assert.ts";
import type { BufferPool } from "../runtime/memory/buffers.ts";
import { FrameError, FrameSplitter } from "./wire/frame_codec.ts";
import { KafkaDecodeError } from "./wire/kafka_codec.ts";
import { KafkaProtocolError, type KafkaResponse, type KafkaSession } from "./kafka_session.ts";

export interface ConnectionLimits {
  /** `max_frame_bytes`: a larger request frame closes the connection. */
  maxFrameBytes: number;
  /** `max_in_flight_requests`: requests read and not yet answered, at most. */
  requestsInFlightMax: number;
  /** `connection_idle_timeout`: a connection with no request and no answer owed this long is closed. */
  idleTimeoutMs: number;
}

/** What a connection's loop shares with the rest of the process: time, the piece gate's turns, logs. */
export interface ConnectionRuntime {
  clock: Clock;
  /** Awaited after each `connectionPieceBytes` read or written: the process's piece gate. */
  turn: () => Promise<void>;
  logger: Logger;
  /**
   * The listener's frame buffers: a frame of `pooledFrameBytesMin` or more (a produce's batches) is
   * copied into one lent from here and given back once its request is handled; absent, every frame
   * gets a buffer of its own.
   */
  frames?: BufferPool;
}

/** Frames from this size on are copied into the listener's pooled buffers; smaller ones cost little to make. */
export const pooledFrameBytesMin = 64 * 1024;

/**
 * Bytes a connection reads, or writes, between two turns at most (a read or write is at most one
 * socket chunk more). Socket reads and writes on loopback often complete at once, so without turns a
 * large frame would be read, or a large answer written, without the loop ever reaching its timers.
 */
export const connectionPieceBytes = 1024 * 1024;

/** Why a connection was closed by the server, for the metric; null: the peer closed it. */
export type CloseReason = string | null;

const sizeFieldBytes = 4;

/** Answers up to this size are copied behind their size field and written at once. */
const joinedWriteBytesMax = 64 * 1024;

/**
 * Serves one connection until it closes: cuts what it receives into frames, hands each to the
 * session as soon as it is whole (so pipelined requests are handled together), and writes the
 * answers in request order. At most `requestsInFlightMax` requests are between read and answered;
 * at the bound the connection is not read until an answer is written. A malformed frame, a request
 * the session refuses and a connection error close it, with one log line, and so does
 * `idleTimeoutMs` without a byte read or an answer written while none is owed (a long-polling fetch
 * is owed its answer, so it keeps the connection); resolves with the reason.
 */
export async function serveConnection(
  connection: StreamConnection,
  session: KafkaSession,
  limits: ConnectionLimits,
  runtime: ConnectionRuntime,
): Promise<CloseReason> {
  const { clock, turn, logger } = runtime;
  assert(limits.requestsInFlightMax >= 1, "at least one request in flight");
  assert(limits.idleTimeoutMs > 0, "an idle timeout");
  const { frames } = runtime;
  // Frames are copied out of each read, so that the connection may read into one buffer throughout.
  const splitter = new FrameSplitter(limits.maxFrameBytes, (size) => {
    const pooled = frames !== undefined && size >= pooledFrameBytesMin ? frames.takeBounded(size) : null;
    return pooled ?? new Uint8Array(size);
  });
  const idle = new IdleWatch(clock, limits.idleTimeoutMs, () => connection.close());
  const answers = new AnswerQueue(connection, limits.requestsInFlightMax, turn, () => idle.active());
  idle.isIdle = () => answers.owed === 0;
  let reason: CloseReason = null;
  let readSinceTurnBytes = 0;
  // The frames of the last read, and how many of them have been handed to the session.
  const pending: Uint8Array[] = [];
  let handedCount = 0;
  try {
    for (let chunk = await connection.read(); chunk !== null; chunk = await connection.read()) {
      idle.active();
      readSinceTurnBytes += chunk.length;
      if (readSinceTurnBytes >= connectionPieceBytes) {
        await turn();
        readSinceTurnBytes = 0;
      }
      pending.length = 0;
      handedCount = 0;
      splitter.push(chunk, pending);
      for (; handedCount < pending.length; handedCount++) {
        await answers.room();
        const frame = pending[handedCount]!;
        const handled = session.handle(frame);
        // Once handled, nothing reads the request's bytes: its buffer goes back to the pool.
        if (frames !== undefined) handled.then(() => frames.give(frame), () => frames.give(frame));
        answers.add(handled);
      }
    }
    await answers.drained();
  } catch (error) {
    reason = closeReason(error);
    if (!idle.fired || isBug(error)) logClose(logger, connection.remoteAddress, reason, error);
  } finally {
    idle.stop();
    connection.close();
    session.closed();
    // Frames never handed to the session, and one half gathered, go back to the pool too.
    if (frames !== undefined) {
      for (const frame of pending.slice(handedCount)) frames.give(frame);
      const partial = splitter.discard();
      if (partial !== null) frames.give(partial);
    }
  }
  if (!idle.fired) return reason;
  logger.info("closed an idle Kafka connection", { remote: connection.remoteAddress });
  return "idle";
}

/** The one line a connection closed by a failure logs: loudly when the failure is a bug. */
function logClose(logger: Logger, remote: string, reason: CloseReason, error: unknown): void {
  if (isBug(error)) {
    logger.error("bug: serving a Kafka request threw; its connection stops", { remote, error });
  } else {
    logger.warn("closing Kafka connection", { remote, reason, error });
  }
}

/**
 * Closes a connection once it has been idle `idleTimeoutMs`: no byte read and no answer written
 * since, and nothing owed.
 * One timer at a time, re-armed for what is left when it fires early.
 */
class IdleWatch {
  fired = false;
  /** Whether nothing is owed; a connection owed an answer is never idle. */
  isIdle: () => boolean = () => true;
  readonly #clock: Clock;
  readonly #idleTimeoutMs: number;
  readonly #close: () => void;
  #lastActiveMs: number;
  #cancel: (() => void) | null = null;

  constructor(clock: Clock, idleTimeoutMs: number, close: () => void) {
    this.#clock = clock;
    this.#idleTimeoutMs = idleTimeoutMs;
    this.#close = close;
    this.#lastActiveMs = clock.nowMs();
    this.#arm(idleTimeoutMs);
  }

  active(): void {
    this.#lastActiveMs = this.#clock.nowMs();
  }

  stop(): void {
    this.#cancel?.();
    this.#cancel = null;
  }

  #arm(delayMs: number): void {
    this.#cancel = this.#clock.schedule(delayMs, () => this.#check());
  }

  #check(): void {
    const idleMs = this.#clock.nowMs() - this.#lastActiveMs;
    if (!this.isIdle()) {
      this.#arm(this.#idleTimeoutMs);
    } else if (idleMs < this.#idleTimeoutMs) {
      this.#arm(this.#idleTimeoutMs - idleMs);
    } else {
      this.fired = true;
      this.#cancel = null;
      this.#close();
    }
  }
}

function closeReason(error: unknown): string {
  if (isBug(error)) return "bug";
  if (error instanceof FrameError) return "malformed_frame";
  if (error instanceof KafkaDecodeError) return "malformed_request";
  if (error instanceof KafkaProtocolError) return error.reason;
  return "connection_error";
}

/**
 * The answers of one connection in request order, written one after the other as each is ready.
 * The first failure (a handler's or a write's) is kept and thrown to the reader by `room` or
 * `drained`, which closes the connection.
 */
class AnswerQueue {
  readonly #connection: StreamConnection;
  readonly #inFlightMax: number;
  readonly #turn: () => Promise<void>;
  readonly #onWritten: () => void;
  readonly #answers: Promise<KafkaResponse | null>[] = [];
  #writing = false;
  #failure: { error: unknown } | null = null;
  #wake: (() => void) | null = null;

  constructor(
    connection: StreamConnection,
    inFlightMax: number,
    turn: () => Promise<void>,
    onWritten: () => void,
  ) {
    this.#connection = connection;
    this.#inFlightMax = inFlightMax;
    this.#turn = turn;
    this.#onWritten = onWritten;
  }

  /** Resolves once one more request may be handled; rejects once the connection failed. */
  async room(): Promise<void> {
    while (this.#failure === null && this.#answers.length >= this.#inFlightMax) await this.#changed();
    if (this.#failure !== null) throw this.#failure.error;
  }

  /** Resolves once every answer is written; rejects once the connection failed. */
  async drained(): Promise<void> {
    while (this.#failure === null && this.#answers.length > 0) await this.#changed();
    if (this.#failure !== null) throw this.#failure.error;
  }

  /** Answers not yet written. */
  get owed(): number {
    return this.#answers.length;
  }

  add(answer: Promise<KafkaResponse | null>): void {
    assert(this.#answers.length < this.#inFlightMax, "room() before add()");
    // Observed at once, so that a rejection waiting behind earlier answers is never unhandled.
    answer.catch(() => {});
    this.#answers.push(answer);
    if (!this.#writing) void this.#writeAll();
  }

  async #writeAll(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#answers.length > 0 && this.#failure === null) {
        const response = await this.#answers[0]!;
        try {
          if (response !== null) await this.#write(response.pieces);
        } finally {
          response?.release?.();
        }
        if (response?.closeAfter !== undefined) {
          throw new KafkaProtocolError(response.closeAfter, "Closing the connection after its answer");
        }
        this.#answers.shift();
        this.#onWritten();
        this.#notify();
      }
    } catch (error) {
      this.#failure = { error };
      // The answers behind the failed one will never be written: each gives back what it holds.
      for (const later of this.#answers.slice(1)) later.then((r) => r?.release?.(), () => {});
      // The reader learns of it from its read, which the close ends.
      this.#connection.close();
      this.#notify();
    } finally {
      this.#writing = false;
    }
  }

  /**
   * One frame: the size field, then the pieces; small answers go out in one write, large ones with a
   * turn before each `connectionPieceBytes` after the first (a piece larger than that is one write).
   */
  async #write(pieces: readonly Uint8Array[]): Promise<void> {
    const size = pieces.reduce((sum, piece) => sum + piece.length, 0);
    if (size <= joinedWriteBytesMax) {
      const frame = new Uint8Array(sizeFieldBytes + size);
      new DataView(frame.buffer).setInt32(0, size);
      let at = sizeFieldBytes;
      for (const piece of pieces) {
        frame.set(piece, at);
        at += piece.length;
      }
      await this.#connection.write(frame);
      return;
    }
    const field = new Uint8Array(sizeFieldBytes);
    new DataView(field.buffer).setInt32(0, size);
    await this.#connection.write(field);
    let writtenSinceTurnBytes = 0;
    for (const piece of pieces) {
      if (writtenSinceTurnBytes > 0 && writtenSinceTurnBytes + piece.length > connectionPieceBytes) {
        await this.#turn();
        writtenSinceTurnBytes = 0;
      }
      await this.#connection.write(piece);
      writtenSinceTurnBytes += piece.length;
    }
  }

  #changed(): Promise<void> {
    return new Promise((resolve) => (this.#wake = resolve));
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}
