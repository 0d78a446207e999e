/**
 * A checker of one partition's history in the manner of Jepsen's Maelstrom "kafka" workload: what a
 * test's producers sent (and how each send ended) and what its consumers polled, judged against
 * the partition as finally read whole. Pure: the history in, the anomalies out.
 */

/** How a send ended: acknowledged (at `offset`), refused, or unknown (a timeout, a lost connection). */
export type SendOutcome = { kind: "acked"; offset: number } | { kind: "failed" } | { kind: "unknown" };

export interface SendRecord {
  value: string;
  outcome: SendOutcome;
}

export interface PolledRecord {
  offset: number;
  value: string;
}

/** One consumer's polls, in the order it made them. */
export interface ConsumerHistory {
  consumer: string;
  polls: PolledRecord[][];
}

export interface History {
  sends: SendRecord[];
  consumers: ConsumerHistory[];
  /** The partition from its first offset to its end, read once every fault is over. */
  final: PolledRecord[];
}

export type Anomaly =
  /** An acknowledged record the final log does not hold. */
  | { kind: "lost"; value: string; offset: number }
  /** An acknowledged offset that holds another record. */
  | { kind: "wrong_offset"; value: string; offset: number; found: string | null }
  /** A record at two offsets of the final log. */
  | { kind: "duplicate"; value: string; offsets: number[] }
  /** A consumer saw an offset not above the one it saw before. */
  | { kind: "nonmonotonic"; consumer: string; after: number; offset: number }
  /** A consumer was served a record the final log does not hold there: served, then truncated. */
  | { kind: "served_then_truncated"; consumer: string; offset: number; value: string; final: string | null };

/** Anomalies reported at most; a broken run does not need ten thousand lines to say so. */
export const anomaliesMax = 100;

export interface Verdict {
  valid: boolean;
  anomalies: Anomaly[];
  counts: { acked: number; failed: number; unknown: number; final: number; polled: number };
}

/** Judges `history`: valid when no acknowledged record is lost or misplaced, no record sits at two
 * offsets, every consumer's offsets only grow, and nothing served was later truncated. */
export function checkHistory(history: History): Verdict {
  const anomalies: Anomaly[] = [];
  const report = (anomaly: Anomaly) => {
    if (anomalies.length < anomaliesMax) anomalies.push(anomaly);
  };
  const finalAt = new Map(history.final.map((r) => [r.offset, r.value]));
  const offsetsOf = new Map<string, number[]>();
  for (const r of history.final) offsetsOf.set(r.value, [...(offsetsOf.get(r.value) ?? []), r.offset]);
  for (const [value, offsets] of offsetsOf) {
    if (offsets.length > 1) report({ kind: "duplicate", value, offsets });
  }
  const counts = { acked: 0, failed: 0, unknown: 0, final: history.final.length, polled: 0 };
  for (const send of history.sends) {
    counts[send.outcome.kind]++;
    if (send.outcome.kind !== "acked") continue;
    const { offset } = send.outcome;
    const found = finalAt.get(offset) ?? null;
    if (!offsetsOf.has(send.value)) report({ kind: "lost", value: send.value, offset });
    else if (found !== send.value) report({ kind: "wrong_offset", value: send.value, offset, found });
  }
  for (const { consumer, polls } of history.consumers) {
    let last = -1;
    for (const record of polls.flat()) {
      counts.polled++;
      if (record.offset <= last) {
        report({ kind: "nonmonotonic", consumer, after: last, offset: record.offset });
      }
      last = Math.max(last, record.offset);
      const final = finalAt.get(record.offset) ?? null;
      if (final !== record.value) {
        report({
          kind: "served_then_truncated",
          consumer,
          offset: record.offset,
          value: record.value,
          final,
        });
      }
    }
  }
  return { valid: anomalies.length === 0, anomalies, counts };
}
