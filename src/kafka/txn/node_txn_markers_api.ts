import { txnPartitionKey } from "../../transactions/core/txn_state.ts";
import type { KafkaApi } from "../kafka_api.ts";
import { kafkaErrorCode, kafkaErrorOf } from "../kafka_errors.ts";
import {
  encodeNodeTxnMarkersResponse,
  nodeTxnMarkersApiKey,
  type NodeTxnMarkersResponse,
  nodeTxnMarkersVersion,
  readNodeTxnMarkersRequest,
} from "./node_txn_markers_codec.ts";

/**
 * NodeTxnMarkers, on a cluster node: another node's transaction coordinator asks it to write the
 * markers of the partitions it leads. The credential is checked first: a wrong one is answered
 * with the authentication error and closes the connection. Each partition's marker is written as
 * the coordinator's own node writes those it leads (`LocalMarkerWriter.writeEach`), and answered
 * with its Kafka error code.
 */
export const nodeTxnMarkersApi: KafkaApi = {
  apiKey: nodeTxnMarkersApiKey,
  name: "node_txn_markers",
  minVersion: nodeTxnMarkersVersion,
  maxVersion: nodeTxnMarkersVersion,
  async handle(header, body, serving) {
    const request = readNodeTxnMarkersRequest(body);
    const cluster = serving.cluster;
    if (cluster === null || !cluster.verifyNode(request.nodeId, request.token)) {
      serving.logger.warn("transaction markers' credentials were refused", { node_id: request.nodeId });
      const refused: NodeTxnMarkersResponse = { refused: true, partitions: [] };
      return {
        pieces: [encodeNodeTxnMarkersResponse(header, refused)],
        errorCount: 1,
        closeAfter: "authentication_failed",
      };
    }
    const keys = request.partitions.map((p) => txnPartitionKey(p.topic, p.partition));
    const markers = serving.txnMarkers;
    const failures = markers === null
      ? keys.map((partition) => ({ partition, error: null }))
      : await markers.writeEach({ ...request, partitions: keys });
    const codes = new Map(failures.map((f) => [
      f.partition,
      f.error === null
        ? kafkaErrorCode.coordinatorNotAvailable
        : kafkaErrorOf(f.error, serving.logger, `write a transaction marker to ${f.partition}`),
    ]));
    const partitions = request.partitions.map((p, i) => ({
      ...p,
      errorCode: codes.get(keys[i]!) ?? kafkaErrorCode.none,
    }));
    return {
      pieces: [encodeNodeTxnMarkersResponse(header, { refused: false, partitions })],
      errorCount: codes.size,
    };
  },
};
