import type { Coordinator } from "../../src/coordinator/coordinator.ts";
import { ClusterController } from "../../src/cluster/controller/cluster_controller.ts";
import { ClusterKeys } from "../../src/cluster/node/cluster_keys.ts";
import { ClusterView } from "../../src/cluster/node/cluster_view.ts";
import { NodeSession } from "../../src/cluster/node/node_session.ts";
import type { Clock } from "../../src/runtime/clock/clock.ts";
import { Logger } from "../../src/runtime/logger.ts";

/** One node's control-plane parts (session, view, controller) in a test, ticked by the clock. */
export interface ControlPlaneNode {
  nodeId: number;
  session: NodeSession;
  view: ClusterView;
  controller: ClusterController;
  logs: string[];
  /** Stops the ticks, as a paused process would: no keepalive goes out. */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export const tickIntervalMs = 10;

export async function openControlPlaneNode(
  coordinator: Coordinator,
  clock: Clock,
  nodeId: number,
  prefix: string,
  leaseTtlMs: number,
): Promise<ControlPlaneNode> {
  const logs: string[] = [];
  const logger = new Logger({ level: "info", sink: (line) => logs.push(line), context: { node: nodeId } });
  const keys = new ClusterKeys(prefix);
  const record = { nodeId, kafka: `127.0.0.1:${9090 + nodeId}`, http: `127.0.0.1:${8080 + nodeId}` };
  const session = await NodeSession.open({ coordinator, keys, clock, logger, record, leaseTtlMs });
  const view = new ClusterView(coordinator, keys, clock, logger);
  await view.open();
  const controller = new ClusterController({
    coordinator,
    keys,
    clock,
    logger,
    session,
    view,
    defaultReplicationFactor: 3,
    minInsyncReplicas: 2,
  });
  controller.start();
  let paused = false;
  let closed = false;
  const tick = () => {
    if (closed) return;
    if (!paused) session.tick(clock.nowMs());
    clock.schedule(tickIntervalMs, tick);
  };
  tick();
  return {
    nodeId,
    session,
    view,
    controller,
    logs,
    pause: () => (paused = true),
    resume: () => (paused = false),
    close: async () => {
      closed = true;
      controller.close();
      view.close();
      await session.close();
    },
  };
}
