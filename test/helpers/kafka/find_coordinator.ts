import { apiKey } from "../../../src/kafka/wire/frame_codec.ts";
import type { ClusterNodeProcess } from "../strata_cluster.ts";
import { realTime, waitFor } from "../wait_for.ts";
import { kafkaRequest, KafkaWireClient } from "./kafka_wire.ts";

/**
 * The Kafka port of the node that coordinates `key` (a group id, or a transactional id with key
 * type 1), as FindCoordinator v1 answers the first of `nodes`, asked until it names one.
 */
export async function coordinatorPort(
  key: string,
  nodes: ClusterNodeProcess[],
  keyType: number,
): Promise<number> {
  const wire = await KafkaWireClient.connect(Number(nodes[0]!.kafka.split(":")[1]));
  try {
    let attempt = 0;
    let port = 0;
    await waitFor(`a coordinator of ${key}`, async () => {
      wire.send(
        kafkaRequest(apiKey.findCoordinator, 1, attempt++, (w) => w.nullableString(key).int8(keyType)),
      );
      const answer = (await wire.next())!;
      answer.int32();
      answer.int32();
      const error = answer.int16();
      answer.nullableString();
      answer.int32();
      answer.string();
      port = answer.int32();
      return error === 0;
    }, { deadlineMs: 20_000, pace: realTime(100) });
    return port;
  } finally {
    wire.close();
  }
}
