import type { TopicDescription } from "../../broker/catalog/catalog.ts";
import type { ReadReplicaSource } from "../../broker/catalog/topic_options.ts";
import { badRequest } from "../api_errors.ts";

/** Creates a read-replica topic; null where tiered storage is off (no bucket to follow). */
export type ReadReplicaRunner =
  | ((stream: string, topic: string, source: ReadReplicaSource) => Promise<TopicDescription>)
  | null;

const sourceFields = ["cluster_id", "stream", "topic", "bucket"];

/**
 * The source of a create request with `read_replica_of` (docs/API.md, "Read replicas"):
 * `{cluster_id, stream, topic, bucket?}`, each a non-empty string (`bucket` another bucket of the same
 * service, absent or null for the server's own); null when the request has no such field.
 * A read replica takes its options from its source: a request that sets any is refused.
 */
export function parseReadReplicaSource(body: Record<string, unknown>): ReadReplicaSource | null {
  const value = body["read_replica_of"];
  if (value === undefined || value === null) return null;
  const other = Object.keys(body).find((f) => f !== "name" && f !== "read_replica_of");
  if (other !== undefined) {
    throw badRequest(
      "invalid_body",
      `Cannot create a read replica with "${other}": its options are its source's`,
    );
  }
  if (typeof value !== "object" || Array.isArray(value)) {
    throw badRequest("invalid_body", `Cannot create a read replica: "read_replica_of" must be an object`);
  }
  const fields = value as Record<string, unknown>;
  for (const field of Object.keys(fields)) {
    if (!sourceFields.includes(field)) {
      throw badRequest(
        "invalid_body",
        `Cannot create a read replica: unknown field "read_replica_of.${field}"`,
      );
    }
  }
  const text = (field: string): string => {
    const v = fields[field];
    if (typeof v !== "string" || v === "") {
      throw badRequest(
        "invalid_body",
        `Cannot create a read replica: "read_replica_of.${field}" must be a non-empty string`,
      );
    }
    return v;
  };
  const bucket = fields["bucket"] === undefined || fields["bucket"] === null ? null : text("bucket");
  if (bucket !== null && !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw badRequest(
      "invalid_body",
      `Cannot create a read replica: "read_replica_of.bucket" must be a bucket name (3 to 63 lower-case letters, digits, dots and hyphens)`,
    );
  }
  return { clusterId: text("cluster_id"), stream: text("stream"), topic: text("topic"), bucket };
}
