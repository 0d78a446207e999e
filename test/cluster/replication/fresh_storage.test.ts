import t from "tap";
import { withoutNode } from "../../../src/cluster/replication/fresh_storage.ts";
import { noLeader, type PartitionState } from "../../../src/cluster/controller/partition_state.ts";

const p = (leader: number, leaderEpoch: number, isr: number[], eligible: number[] = []): PartitionState => ({
  leader,
  leaderEpoch,
  isr,
  replicas: [1, 2, 3],
  ...(eligible.length > 0 ? { eligible } : {}),
});

t.test("a new data directory leaves the in-sync set, and the leadership under a new epoch", (t) => {
  t.same(withoutNode(p(2, 4, [2, 3, 1]), 3), p(2, 4, [2, 1]), "a follower leaves the set");
  t.same(
    withoutNode({ ...p(3, 4, [3, 1]), leaderSession: 9 }, 3),
    p(noLeader, 5, [1]),
    "the leader leaves it all",
  );
  t.same(withoutNode(p(2, 4, [2], [3, 1]), 3), p(2, 4, [2], [1]), "an eligible one stops being so");
  t.end();
});

t.test("a node in no set, or the last one holding the records, changes nothing", (t) => {
  t.equal(withoutNode(p(2, 4, [2, 1]), 3), null);
  t.equal(withoutNode(p(3, 4, [3]), 3), null, "nothing else holds the records: the state stays");
  t.same(withoutNode(p(3, 4, [3], [1]), 3), p(noLeader, 5, [], [1]), "an eligible replica still holds them");
  t.end();
});
