import type { ReplicaFetchResponse } from "../../cluster/replication/replica_fetch.ts";
import { serveReplicaFetch } from "../../cluster/replication/replica_serving.ts";
import type { KafkaApi } from "../kafka_api.ts";
import {
  encodeReplicaFetchResponse,
  readReplicaFetchRequest,
  replicaFetchApiKey,
  replicaFetchVersion,
} from "./replica_fetch_codec.ts";

/**
 * ReplicaFetch, on a cluster node: a follower's fetch of the partitions this node leads. The
 * credential is checked first: a wrong one is answered with the authentication error and closes the
 * connection. The rest is the leader's side of the fetch (`serveReplicaFetch`), encoded.
 */
export const replicaFetchApi: KafkaApi = {
  apiKey: replicaFetchApiKey,
  name: "replica_fetch",
  minVersion: replicaFetchVersion,
  maxVersion: replicaFetchVersion,
  async handle(header, body, serving) {
    const request = readReplicaFetchRequest(body);
    const cluster = serving.cluster;
    if (cluster === null || !cluster.verifyNode(request.replicaId, request.token)) {
      serving.logger.warn("a replica fetch's credentials were refused", { replica_id: request.replicaId });
      const refused: ReplicaFetchResponse = { error: "authentication", partitions: [] };
      return {
        pieces: encodeReplicaFetchResponse(header, refused),
        errorCount: 1,
        closeAfter: "authentication_failed",
      };
    }
    const served = await serveReplicaFetch(cluster.replicas, serving.clock, request, serving.logger);
    return {
      pieces: encodeReplicaFetchResponse(header, served.response),
      errorCount: served.errorCount,
      release: served.release,
    };
  },
};
