import type { PartitionIncarnation } from "../../src/tier/bucket/object_keys.ts";

// What the housekeeping tests share: the harness's cluster root, its partition's incarnations and
// a metric read from the registry.

/** The cluster root of the tier harness (prefix "strata", cluster "c1"). */
export const root = "strata/c1/";

/** The harness partition's incarnation under `revision` and purge `generation`. */
export const incOf = (revision: string, generation: number): PartitionIncarnation => ({
  prefix: "strata",
  clusterId: "c1",
  streamId: 1,
  topicId: 1,
  partitionId: 0,
  createdRevision: revision,
  purgeGeneration: generation,
});

/** The value the first match of `pattern` captures in the registry's exposition, 0 when absent. */
export async function metric(registry: { metrics(): Promise<string> }, pattern: RegExp): Promise<number> {
  const match = pattern.exec(await registry.metrics());
  return match === null ? 0 : Number(match[1]);
}
