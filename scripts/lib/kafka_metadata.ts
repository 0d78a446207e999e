import { runKcat } from "./campaign/campaign_clients.ts";

/** What a cluster's Kafka Metadata says, read through kcat (`-L -J`): a partition's leader and in-sync set, the brokers. */

/** A partition as Metadata describes it. */
export interface PartitionView {
  leader: number;
  replicas: number[];
  isr: number[];
}

/** Milliseconds a Metadata request through kcat may take. */
const describeTimeoutMs = 5000;

/** The partition as the nodes at `brokers` ("host:port,…") describe it; null when none answers or it is unknown. */
export async function describePartition(
  brokers: string,
  topic: string,
  partition = 0,
): Promise<PartitionView | null> {
  if (brokers === "") return null;
  const listed = await runKcat(["-L", "-J", "-b", brokers, "-t", topic, "-m", "3"], describeTimeoutMs);
  if (!listed.ok) return null;
  try {
    const json = JSON.parse(listed.stdout);
    const found = json.topics?.find((x: { topic: string }) => x.topic === topic)?.partitions
      ?.find((p: { partition: number }) => p.partition === partition);
    if (found === undefined || found.leader === undefined) return null;
    return {
      leader: found.leader,
      replicas: found.replicas.map((r: { id: number }) => r.id),
      isr: found.isrs.map((r: { id: number }) => r.id),
    };
  } catch {
    return null;
  }
}

/** How many brokers the node at `broker` lists in its Metadata; 0 when it does not answer. */
export async function brokersListed(broker: string): Promise<number> {
  const listed = await runKcat(["-L", "-J", "-b", broker, "-m", "3"], describeTimeoutMs);
  try {
    return listed.ok ? (JSON.parse(listed.stdout).brokers?.length ?? 0) : 0;
  } catch {
    return 0;
  }
}
