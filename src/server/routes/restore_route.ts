import type { RestoreReport, RestoreRequest } from "../../broker/restore/bucket_restore.ts";
import { badRequest } from "../api_errors.ts";

/** Restores from the bucket; null where tiered storage is off (no bucket to restore from). */
export type RestoreRunner = ((request: RestoreRequest) => Promise<RestoreReport>) | null;

const knownFields = new Set(["stream", "topic", "partition", "as", "cluster_id", "dry_run"]);

/**
 * The body of `POST /admin/restore` (docs/API.md, "Restore"): `{stream, topic, partition?, as?,
 * cluster_id?, dry_run?}`; anything else, or a field of the wrong type, is a 400 naming it.
 */
export function parseRestoreRequest(body: Record<string, unknown>): RestoreRequest {
  for (const field of Object.keys(body)) {
    if (!knownFields.has(field)) throw badRequest("invalid_body", `Cannot restore: unknown field "${field}"`);
  }
  const text = (field: string, required: boolean): string | undefined => {
    const value = body[field];
    if (value === undefined && !required) return undefined;
    if (typeof value !== "string" || value === "") {
      throw badRequest("invalid_body", `Cannot restore: "${field}" must be a non-empty string`);
    }
    return value;
  };
  const partition = body["partition"];
  if (partition !== undefined && (!Number.isInteger(partition) || (partition as number) < 0)) {
    throw badRequest(
      "invalid_body",
      `Cannot restore: "partition" must be a partition id (an integer from 0)`,
    );
  }
  const dryRun = body["dry_run"] ?? false;
  if (typeof dryRun !== "boolean") {
    throw badRequest("invalid_body", `Cannot restore: "dry_run" must be true or false`);
  }
  const as = text("as", false);
  const clusterId = text("cluster_id", false);
  return {
    stream: text("stream", true)!,
    topic: text("topic", true)!,
    ...(partition === undefined ? {} : { partition: partition as number }),
    ...(as === undefined ? {} : { as }),
    ...(clusterId === undefined ? {} : { clusterId }),
    dryRun,
  };
}
