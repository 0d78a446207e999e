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
import {
  decodeReplaceRecord,
  encodeReplaceRecord,
  replaceCommandOf,
  type ReplaceRecord,
} from "./replace_record.ts";
import type { ReplaceRemoteSegments } from "../log/segment/segment_replacement.ts";

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
 * it, `max(current, up_to)`, to its own superblock. A replace of remote segments (a merge) is a key
 * of its own (`{prefix}/replaces/{stream}/{topic}/{partition}/{start:020}`), committed under the
 * same compare on the partition's state, heard and applied the same way, floors first. A command's
 * index is the etcd revision that wrote it. The log has no epoch of its own: each partition's is
 * its leader epoch, which the submitter names (docs/DESIGN.md, "Tiering across replicas").
 */
export class ReplicatedControlLog implements ControlLog {
  readonly #deps: ReplicatedControlLogDeps;
  #apply: ApplyHook | null = null;
  /** The watches of the floors and of the replaces: either ending closes both and reads again. */
  #watches: Watch[] = [];
  /** Counts the pairs of watches opened: an end heard from an older pair is one handled already. */
  #watchGeneration = 0;
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
    if (command.kind === "replace_remote_segments") return await this.#submitReplace(command, precondition);
    const floorKey = this.#deps.keys.floor(command.partition);
    for (let attempt = 1; attempt <= floorSubmitAttemptsMax; attempt++) {
      const { state, epoch, other: floor } = await this.#readState(command.partition, floorKey, precondition);
      const current = floor === undefined ? null : decodeFloorRecord(floorKey, floor.value);
      const next = recordAfter(current, command, epoch);
      if (next === null) {
        // Committed already, or overtaken: applying is max(current, up_to), so this is a no-op.
        await this.#applyOne(floor!.modRevision, command);
        return floor!.modRevision;
      }
      const written = await this.#deps.coordinator.txn({
        compare: [
          { key: state.key, target: "modRevision", result: "equal", value: state.modRevision },
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

  /** Commits a replace under the partition's leader epoch: a put of its own key, then applied here. */
  async #submitReplace(command: ReplaceRemoteSegments, precondition: SubmitPrecondition): Promise<number> {
    const key = this.#deps.keys.replace(command.partition, command.markers[0]!.startOffset);
    for (let attempt = 1; attempt <= floorSubmitAttemptsMax; attempt++) {
      const { state, epoch } = await this.#readState(command.partition, null, precondition);
      const record = {
        purgeGeneration: command.purgeGeneration,
        leaderEpoch: epoch,
        markers: command.markers,
      };
      const written = await this.#deps.coordinator.txn({
        compare: [{ key: state.key, target: "modRevision", result: "equal", value: state.modRevision }],
        success: [{ kind: "put", key, value: encodeReplaceRecord(record) }],
      });
      if (!written.succeeded) continue;
      await this.#applyOne(written.revision, command);
      return written.revision;
    }
    throw new Error(
      `Cannot commit a replace of ${command.partition}: its state changed during each of ${floorSubmitAttemptsMax} attempts`,
    );
  }

  /**
   * The partition's state and the key `otherKey` (if any) as one read; throws `ControlEpochMismatchError`
   * unless the state names the submitter's epoch.
   */
  async #readState(
    label: string,
    otherKey: string | null,
    precondition: SubmitPrecondition,
  ): Promise<{ state: KeyValue; epoch: number; other: KeyValue | undefined }> {
    const stateKey = `${this.#deps.keys.partitions}${label}`;
    if (this.#deps.keys.addressOf(stateKey) === null) throw new Error(`Cannot commit a command for ${label}`);
    const read = await this.#deps.coordinator.txn({
      compare: [],
      success: [
        { kind: "range", key: stateKey },
        ...(otherKey === null ? [] : [{ kind: "range" as const, key: otherKey }]),
      ],
    });
    const [state, other] = read.responses.map((r) => (r.kind === "range" ? r.kvs[0] : undefined));
    const epoch = state === undefined ? -1 : decodePartitionState(stateKey, state.value).leaderEpoch;
    if (epoch !== precondition.expectedEpoch) {
      throw new ControlEpochMismatchError(precondition.expectedEpoch, epoch);
    }
    return { state: state!, epoch, other };
  }

  async committedReplaces(partition: string): Promise<ReplaceRemoteSegments[]> {
    const { coordinator, keys, logger } = this.#deps;
    const committed = await readCommittedReplaces(coordinator, keys, partition, logger);
    return committed.map(({ record }) => replaceCommandOf(partition, record));
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const watch of this.#watches) watch.close();
    await this.#applying;
  }

  /**
   * Reads every floor and every replace in one transaction, applies the floors then the replaces in
   * key order, and watches both from the revision after the read.
   */
  async #load(): Promise<void> {
    const { coordinator, keys } = this.#deps;
    const read = await coordinator.txn({
      compare: [],
      success: [
        { kind: "range", key: keys.floors, prefix: true },
        { kind: "range", key: keys.replaces, prefix: true },
      ],
    });
    for (const r of read.responses) if (r.kind === "range") await this.#applyKvs(r.kvs);
    if (this.#closed) return;
    const generation = ++this.#watchGeneration;
    const listener = {
      events: (events: readonly WatchEvent[]) => this.#events(events),
      ended: (error: Error | null) => this.#ended(generation, error),
    };
    this.#watches = [keys.floors, keys.replaces].map((key) =>
      coordinator.watch({ key, prefix: true }, read.revision + 1, listener)
    );
  }

  /** Applies a watch's events in order, one batch after the other; too many waiting: read again. */
  #events(events: readonly WatchEvent[]): void {
    const puts = events.filter((e) => e.kind === "put").map((e) => e.kv);
    if (this.#pendingEvents + puts.length > floorEventsPendingMax) {
      this.#deps.logger.warn("floor and replace commits arrive faster than they apply: reading them again");
      for (const watch of this.#watches) watch.close();
      return;
    }
    this.#pendingEvents += puts.length;
    this.#applying = this.#applying.then(() => this.#applyKvs(puts)).finally(() => {
      this.#pendingEvents -= puts.length;
    }).catch((error) => {
      rethrowBug(
        error,
        this.#deps.logger,
        "applying the floors' and replaces' events threw; the process stops",
      );
      this.#deps.logger.error("Cannot apply the floors' and replaces' events", { error });
    });
  }

  #ended(generation: number, error: Error | null): void {
    if (generation !== this.#watchGeneration) return;
    this.#watchGeneration++;
    for (const watch of this.#watches) watch.close();
    this.#watches = [];
    if (this.#closed) return;
    if (error !== null) {
      this.#deps.logger.warn("the floors' or replaces' watch ended; reading them again", { error });
    }
    this.#applying = this.#applying.then(() => this.#reload());
  }

  /** Reads the floors again until it succeeds or the log closes; floors are idempotent, so none is missed. */
  async #reload(): Promise<void> {
    while (!this.#closed) {
      try {
        await this.#load();
        return;
      } catch (error) {
        rethrowBug(error, this.#deps.logger, "reading the floors and replaces threw; the process stops");
        this.#deps.logger.warn("Cannot read the floors and replaces; trying again", { error });
        await this.#deps.clock.sleep(reloadRetryMs);
      }
    }
  }

  async #applyKvs(kvs: readonly KeyValue[]): Promise<void> {
    for (const kv of kvs) {
      if (this.#closed) return;
      const decoded = this.#commandsOf(kv);
      if (decoded === null) continue;
      const { label, commands } = decoded;
      try {
        for (const command of commands) await this.#applyOne(kv.modRevision, command);
      } catch (error) {
        rethrowBug(error, this.#deps.logger, "applying a committed command threw; the process stops", {
          partition: label,
        });
        // Not applied here (a superblock or remote table write failed): this replica evicts less,
        // or keeps the segments a merge replaced, until a later command or a reread applies; the
        // others go on.
        this.#deps.logger.error("Cannot apply a committed floor or replace", { partition: label, error });
      }
    }
  }

  /** The commands a floor's or a replace's key stands for; null (logged) for a record that is not one. */
  #commandsOf(kv: KeyValue): { label: string; commands: ControlCommand[] } | null {
    const { keys, logger } = this.#deps;
    try {
      const replace = keys.replaceOf(kv.key);
      if (replace !== null) {
        return {
          label: replace.label,
          commands: [replaceCommandOf(replace.label, decodeReplaceRecord(kv.key, kv.value))],
        };
      }
      const label = kv.key.slice(keys.floors.length);
      return { label, commands: commandsOf(label, decodeFloorRecord(kv.key, kv.value)) };
    } catch (error) {
      logger.error("a floor or replace record that is not one is ignored", { key: kv.key, error });
      return null;
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

/**
 * The partition's committed replaces as etcd holds them now, by their first replaced offset, in key
 * (offset) order; a record that is not one is logged and left out.
 */
export async function readCommittedReplaces(
  coordinator: Coordinator,
  keys: ClusterKeys,
  label: string,
  logger: Logger,
): Promise<{ startOffset: number; record: ReplaceRecord }[]> {
  const { kvs } = await coordinator.range({ key: `${keys.replaces}${label}/`, prefix: true });
  const committed: { startOffset: number; record: ReplaceRecord }[] = [];
  for (const kv of kvs) {
    const replace = keys.replaceOf(kv.key);
    try {
      if (replace === null) throw new Error(`Cannot read the replace at ${kv.key}: not a replace's key`);
      committed.push({ startOffset: replace.startOffset, record: decodeReplaceRecord(kv.key, kv.value) });
    } catch (error) {
      logger.error("a replace record that is not one is ignored", { key: kv.key, error });
    }
  }
  return committed;
}
