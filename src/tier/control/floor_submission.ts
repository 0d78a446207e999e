import { rethrowBug } from "../../runtime/assert.ts";
import type { Logger } from "../../runtime/logger.ts";
import {
  type ControlCommand,
  ControlEpochMismatchError,
  type ControlLog,
  ControlLogClosedError,
} from "./control_log.ts";
import type { UploadEffect } from "../upload/upload_state.ts";

/** The upload core's request to commit a partition's floor. */
export type SubmitFloor = Extract<UploadEffect, { kind: "submit_floor" }>;

/**
 * Submits the floor command the core asked for, under `expectedEpoch` (the log's own on a single
 * node, the partition's leader epoch here in a cluster). Every way it can fail ends in `failed`,
 * told whether the submitter was fenced (no epoch to submit under, or the epoch moved): the core
 * decides what follows.
 */
export function submitFloorCommand(
  effect: SubmitFloor,
  log: ControlLog | null,
  expectedEpoch: number | undefined,
  logger: Logger,
  failed: (fenced: boolean) => void,
): void {
  if (log === null) {
    logger.error("floor command not submitted: no control log attached", { partition: effect.partition });
    failed(false);
    return;
  }
  if (expectedEpoch === undefined) {
    failed(true);
    return;
  }
  const command: ControlCommand = {
    kind: "advance_tiered_floor",
    partition: effect.partition,
    purgeGeneration: effect.generation,
    upToOffset: effect.upToOffset,
  };
  log.submit(command, { expectedEpoch }).catch((error) => {
    rethrowBug(error, logger, "a floor command threw; the process stops", { partition: effect.partition });
    if (error instanceof ControlLogClosedError) {
      logger.info("floor command not submitted: the server is stopping", { partition: effect.partition });
    } else {
      logger.error("floor command failed", { partition: effect.partition, error });
    }
    failed(error instanceof ControlEpochMismatchError);
  });
}
