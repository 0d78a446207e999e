import { rethrowBug } from "../runtime/assert.ts";
import type { Coordinator, KeyValue, Watch, WatchEvent } from "../coordinator/coordinator.ts";
import type { Clock } from "../runtime/clock/clock.ts";
import type { Logger } from "../runtime/logger.ts";
import {
  type ApplyHook,
  type ControlCommand,
  ControlEpochMismatchError,
  type ControlLog,
  type SubmitPrecondition,
} from "../tier/control/control_log.ts";
import type { ClusterKeys } from "./node/cluster_keys.ts";
import {
  commandsOf,
  decodeFloorRecord,
  encodeFloorRecord,
  type FloorRecord,
  recordAfter,
} from "./floor_record.ts";
import { decodePartitionState } from "./controller/partition_state.ts";

/** Reads and compares one submission makes at most before it gives up (another write raced each). */
export const floorSubmitAttemptsMax = 8;
/** Watch events waiting to be applied at most; beyond, the log reads the floors again instead. */
export const floorEventsPendingMax = 10_000;
/** Pause before the floors are read again after the watch ended. */
const reloadRetryMs = 200;

export interface ReplicatedControlLogDeps {
  coordinator: Coordinator;
  keys: ClusterKeys;
  clock: Clock;
  logger: Logger;
}

/**
 * The control log of a cluster: each tiered partition's committed floor is one key in etcd
 * (`{prefix}/floors/{stream}/{topic}/{partition}`). A leader commits a floor with a transaction
 * that compares the partition's state (so it commits only while that state names its epoch) and
 * the floor key (so floors only rise); every replica hears each commit through a watch and applies
 * it, `max(current, up_to)`, to its own superblock. A command's index is the etcd revision that
 * wrote it. The log has no epoch of its own: each partition's is its leader epoch, which the
 * submitter names (docs/DESIGN.md, "Tiering across replicas").
 */
export class ReplicatedControlLog implements ControlLog {
  readonly #deps: ReplicatedControlLogDeps;
  #apply: ApplyHook | null = null;
  #watch: Watch | null = null;
  #applying: Promise<void> = Promise.resolve();
  #pendingEvents = 0;
  #committed = 0;
  #closed = false;

  constructor(deps: ReplicatedControlLogDeps) {
    this.#deps = deps;
  }

  /** 0: the epochs are the partitions' own, named by each submission. */
  epoch(): number {
    return 0;
  }

  committed(): number {
    return this.#committed;
  }

  /** The floors live in etcd, which keeps them: nothing here to cut. */
  snapshot(_index: number): Promise<void> {
    return Promise.resolve();
  }

  async replay(apply: ApplyHook): Promise<void> {
    if (this.#apply !== null) throw new Error("Cannot replay the control log: it was replayed already");
    this.#apply = apply;
    await this.#load();
  }

  async submit(command: ControlCommand, precondition: SubmitPrecondition): Promise<number> {
    if (command.kind === "replace_remote_segments") {
      // The merger runs on a single node only (docs/DESIGN.md, "The adjacent-segment merger").
      throw new Error(
        `Cannot commit a replace of remote segments of ${command.partition}: a cluster does not merge them`,
      );
    }
    const { coordinator, keys } = this.#deps;
    const stateKey = `${keys.partitions}${command.partition}`;
    const floorKey = keys.floor(command.partition);
    if (keys.addressOf(stateKey) === null) throw new Error(`Cannot commit a floor for ${command.partition}`);
    for (let attempt = 1; attempt <= floorSubmitAttemptsMax; attempt++) {
      const read = await coordinator.txn({
        compare: [],
        success: [{ kind: "range", key: stateKey }, { kind: "range", key: floorKey }],
      });
      const [state, floor] = read.responses.map((r) => (r.kind === "range" ? r.kvs[0] : undefined));
      const epoch = state === undefined ? -1 : decodePartitionState(stateKey, state.value).leaderEpoch;
      if (epoch !== precondition.expectedEpoch) {
        throw new ControlEpochMismatchError(precondition.expectedEpoch, epoch);
      }
      const current = floor === undefined ? null : decodeFloorRecord(floorKey, floor.value);
      const next = recordAfter(current, command, epoch);
      if (next === null) {
        // Committed already, or overtaken: applying is max(current, up_to), so this is a no-op.
        await this.#applyOne(floor!.modRevision, command);
        return floor!.modRevision;
      }
      const written = await coordinator.txn({
        compare: [
          { key: stateKey, target: "modRevision", result: "equal", value: state!.modRevision },
          { key: floorKey, target: "modRevision", result: "equal", value: floor?.modRevision ?? 0 },
        ],
        success: [{ kind: "put", key: floorKey, value: encodeFloorRecord(next) }],
      });
      if (!written.succeeded) continue;
      await this.#applyOne(written.revision, command);
      return written.revision;
    }
    throw new Error(
      `Cannot commit the floor of ${command.partition}: its state changed during each of ${floorSubmitAttemptsMax} attempts`,
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#watch?.close();
    await this.#applying;
  }

  /** Reads every floor, applies them in key order, and watches from the revision after the read. */
  async #load(): Promise<void> {
    const { coordinator, keys } = this.#deps;
    const { kvs, revision } = await coordinator.range({ key: keys.floors, prefix: true });
    await this.#applyKvs(kvs);
    if (this.#closed) return;
    this.#watch = coordinator.watch({ key: keys.floors, prefix: true }, revision + 1, {
      events: (events) => this.#events(events),
      ended: (error) => this.#ended(error),
    });
  }

  /** Applies a watch's events in order, one batch after the other; too many waiting: read again. */
  #events(events: readonly WatchEvent[]): void {
    const puts = events.filter((e) => e.kind === "put").map((e) => e.kv);
    if (this.#pendingEvents + puts.length > floorEventsPendingMax) {
      this.#deps.logger.warn("floor commits arrive faster than they apply: reading the floors again");
      this.#watch?.close();
      return;
    }
    this.#pendingEvents += puts.length;
    this.#applying = this.#applying.then(() => this.#applyKvs(puts)).finally(() => {
      this.#pendingEvents -= puts.length;
    }).catch((error) => {
      rethrowBug(error, this.#deps.logger, "applying the floors' events threw; the process stops");
      this.#deps.logger.error("Cannot apply the floors' events", { error });
    });
  }

  #ended(error: Error | null): void {
    this.#watch = null;
    if (this.#closed) return;
    if (error !== null) this.#deps.logger.warn("the floors' watch ended; reading them again", { error });
    this.#applying = this.#applying.then(() => this.#reload());
  }

  /** Reads the floors again until it succeeds or the log closes; floors are idempotent, so none is missed. */
  async #reload(): Promise<void> {
    while (!this.#closed) {
      try {
        await this.#load();
        return;
      } catch (error) {
        rethrowBug(error, this.#deps.logger, "reading the floors threw; the process stops");
        this.#deps.logger.warn("Cannot read the floors; trying again", { error });
        await this.#deps.clock.sleep(reloadRetryMs);
      }
    }
  }

  async #applyKvs(kvs: readonly KeyValue[]): Promise<void> {
    for (const kv of kvs) {
      if (this.#closed) return;
      const label = kv.key.slice(this.#deps.keys.floors.length);
      let record;
      try {
        record = decodeFloorRecord(kv.key, kv.value);
      } catch (error) {
        this.#deps.logger.error("a floor record that is not one is ignored", { key: kv.key, error });
        continue;
      }
      try {
        for (const command of commandsOf(label, record)) await this.#applyOne(kv.modRevision, command);
      } catch (error) {
        rethrowBug(error, this.#deps.logger, "applying a committed floor threw; the process stops", {
          partition: label,
        });
        // Not applied here (a superblock write failed): this replica evicts less until a later
        // floor of the partition, or a reread, applies; the others go on.
        this.#deps.logger.error("Cannot apply a committed floor", { partition: label, error });
      }
    }
  }

  async #applyOne(index: number, command: ControlCommand): Promise<void> {
    await this.#apply?.(index, command);
    this.#committed = Math.max(this.#committed, index);
  }
}

/** The partition's committed floor as etcd holds it now, or null when none was committed. */
export async function readCommittedFloor(
  coordinator: Coordinator,
  keys: ClusterKeys,
  label: string,
): Promise<FloorRecord | null> {
  const key = keys.floor(label);
  const { kvs } = await coordinator.range({ key });
  return kvs[0] === undefined ? null : decodeFloorRecord(key, kvs[0].value);
}
