import type {
  LeaderLink,
  LeaderLinkFactory,
  ReplicaFetchRequest,
  ReplicaFetchResponse,
} from "../cluster/replication/replica_fetch.ts";
import { assert } from "../runtime/assert.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Rng } from "../runtime/rng.ts";

/** How the simulated network treats each message, drawn from its seed. */
export interface SimNetworkFaults {
  /** One-way delay of a message, milliseconds: from, to. */
  delayMs: readonly [number, number];
  /** Chance that a request or its answer is lost: the link breaks, as a reset connection does. */
  lossRate: number;
  /** Chance that a request is delivered twice; the second answer is dropped. */
  duplicateRate: number;
}

export const reliableNetwork: SimNetworkFaults = { delayMs: [0, 0], lossRate: 0, duplicateRate: 0 };

/** What a node serves to the replica fetches of others. */
export type ReplicaFetchHandler = (request: ReplicaFetchRequest) => Promise<ReplicaFetchResponse>;

/** A node's serving: its handler, and a promise that resolves (null) when the serving ends. */
interface Serving {
  handler: ReplicaFetchHandler;
  ended: Promise<null>;
  end(): void;
}

/** A fetch that could not be carried: the node is down, cut off, or the link broke. */
export class SimNetworkError extends Error {
  override name = "SimNetworkError";
}

/** Milliseconds a fetch to an unreachable node takes to fail, as a connect timeout would. */
export const unreachableFailMs = 1000;
/** Requests in flight at most on the whole network; one more fails at once. */
export const inFlightMax = 10_000;

/**
 * The network between the simulator's nodes, for replica fetches: on the virtual clock, each
 * message takes a seeded delay and may be lost (the link breaks) or a request delivered twice;
 * any two nodes can be cut apart, and a node with no handler (down) refuses. Deterministic for a
 * given seed and call order.
 */
export class SimNetwork {
  readonly #clock: Clock;
  readonly #rng: Rng;
  faults: SimNetworkFaults;
  /** Each serving node's handler, and the end of its serving (a stop, or a new handler). */
  readonly #servings = new Map<number, Serving>();
  readonly #cuts = new Set<string>();
  #inFlight = 0;

  constructor(clock: Clock, rng: Rng, faults: SimNetworkFaults = reliableNetwork) {
    this.#clock = clock;
    this.#rng = rng;
    this.faults = faults;
  }

  /**
   * The node starts serving replica fetches (`handler`), or stops (null: down). Requests it was
   * handling when it stops fail, as connections to a killed process are reset.
   */
  serve(nodeId: number, handler: ReplicaFetchHandler | null): void {
    this.#servings.get(nodeId)?.end();
    this.#servings.delete(nodeId);
    if (handler === null) return;
    let end = () => {};
    const ended = new Promise<null>((resolve) => (end = () => resolve(null)));
    this.#servings.set(nodeId, { handler, ended, end });
  }

  /** Cuts the two nodes apart (both ways), or heals the cut. */
  setCut(a: number, b: number, cut: boolean): void {
    assert(a !== b, "Cannot cut a node from itself");
    const key = cutKey(a, b);
    if (cut) this.#cuts.add(key);
    else this.#cuts.delete(key);
  }

  isCut(a: number, b: number): boolean {
    return this.#cuts.has(cutKey(a, b));
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** The links node `from` opens to leaders, as the real node's factory opens TCP connections. */
  linkFactory(from: number): LeaderLinkFactory {
    return (to: number) => this.#link(from, to);
  }

  #link(from: number, to: number): LeaderLink {
    let broken = false;
    return {
      fetch: async (request) => {
        if (broken) throw new SimNetworkError(`Cannot fetch from node ${to}: the link is closed`);
        try {
          return await this.#carry(from, to, request);
        } catch (error) {
          broken = true;
          throw error;
        }
      },
      close: () => {
        broken = true;
      },
    };
  }

  /** One request there and its answer back, each delayed, either lost, the request maybe twice. */
  async #carry(from: number, to: number, request: ReplicaFetchRequest): Promise<ReplicaFetchResponse> {
    if (this.#inFlight >= inFlightMax) throw new SimNetworkError("Cannot fetch: the network is saturated");
    this.#inFlight++;
    try {
      await this.#clock.sleep(this.#delayMs());
      const serving = this.#servings.get(to);
      if (serving === undefined || this.isCut(from, to)) {
        await this.#clock.sleep(unreachableFailMs);
        throw new SimNetworkError(`Cannot fetch from node ${to}: unreachable from node ${from}`);
      }
      if (this.#rng.chance(this.faults.lossRate)) {
        throw new SimNetworkError(`Cannot fetch from node ${to}: the request was lost`);
      }
      // A duplicate delivery: the network serves the request twice and its answer goes nowhere.
      if (this.#rng.chance(this.faults.duplicateRate)) serving.handler(request).catch(() => {});
      const response = await Promise.race([serving.handler(request), serving.ended]);
      if (response === null) {
        throw new SimNetworkError(`Cannot fetch from node ${to}: it went down (connection reset)`);
      }
      await this.#clock.sleep(this.#delayMs());
      if (this.isCut(from, to) || this.#rng.chance(this.faults.lossRate)) {
        throw new SimNetworkError(`Cannot fetch from node ${to}: the answer was lost`);
      }
      return response;
    } finally {
      this.#inFlight--;
    }
  }

  #delayMs(): number {
    const [fromMs, toMs] = this.faults.delayMs;
    return fromMs >= toMs ? fromMs : fromMs + this.#rng.nextFloat() * (toMs - fromMs);
  }
}

function cutKey(a: number, b: number): string {
  return a < b ? `${a}-${b}` : `${b}-${a}`;
}
