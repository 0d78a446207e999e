import type { Test } from "tap";
import { loadConfig } from "../../../src/config/load_config.ts";
import type { KafkaListener } from "../../../src/kafka/kafka_listener.ts";
import { openKafkaListener } from "../../../src/kafka/kafka_service.ts";
import type { Clock } from "../../../src/runtime/clock/clock.ts";
import { type Logger, silentLogger } from "../../../src/runtime/logger.ts";
import { NodeNetwork } from "../../../src/runtime/network/node_network.ts";
import type { StrataServer } from "../../../src/server/server.ts";

/**
 * A Kafka listener over an in-process server, on a free loopback port through `node:net`; `env`
 * sets `[kafka]` keys as STRATA_KAFKA_* variables would. Closed when the test ends.
 */
export async function openTestListener(
  t: Test,
  server: StrataServer,
  clock: Clock,
  env: Record<string, string> = {},
  logger: Logger = silentLogger(),
): Promise<KafkaListener> {
  const { config } = loadConfig("", "test", { STRATA_KAFKA_ADDRESS: "127.0.0.1:0", ...env });
  const listener = await openKafkaListener({
    config: config.kafka,
    catalog: server.catalog,
    data: server.dataPlane,
    network: new NodeNetwork(),
    registry: server.registry,
    clock,
    turn: () => server.pieceGate.turn(),
    groups: server.groups,
    producerIds: server.producerIds,
    transactions: server.transactions,
    txnMarkers: server.txnMarkers,
    logger,
  });
  t.teardown(() => listener.close());
  return listener;
}
